//! snapshot: the bytes of a state machine snapshot, the pairs of the data table in key order,
//! written and read as a stream so that neither side holds the whole snapshot in memory.
//!
//! Format (all integers little-endian):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | magic `ARTDBSNP` |
//! | 8 | 4 | format version, 1 |
//! | 12 | ... | pairs: key length `u32`, value length `u32`, key, value |
//! | end - 16 | 4 | end marker `u32::MAX` (no key is that long) |
//! | end - 12 | 8 | number of pairs `u64` |
//! | end - 4 | 4 | CRC-32C of every byte before it |
//!
//! The meta (last log id, membership) travels beside the bytes, in openraft's `SnapshotMeta`.
//! Invariant: a [`Decoder`] yields `None` only after bytes an [`Encoder`] could have made:
//! right magic and version, each length within the tree's limits, keys strictly ascending, the
//! count and the checksum matching, nothing after the trailer. Any other input ends in one
//! `Err` item instead, after at most the pairs before the damage; the state machine loads the
//! pairs into a new table that such an `Err` abandons, so a damaged snapshot changes nothing.

use crate::codec::{io_error, RaftStoreError};
use std::io::{self, Read, Write};

const MAGIC: [u8; 8] = *b"ARTDBSNP";
const VERSION: u32 = 1;
const END_MARKER: u32 = u32::MAX;

/// Writes a snapshot's bytes to `W` from pairs given in ascending key order.
pub struct Encoder<W: Write = Vec<u8>> {
    out: W,
    crc: u32,
    count: u64,
}

impl Default for Encoder<Vec<u8>> {
    fn default() -> Encoder<Vec<u8>> {
        Encoder::new()
    }
}

fn header() -> [u8; 12] {
    let mut header = [0u8; 12];
    header[..8].copy_from_slice(&MAGIC);
    header[8..].copy_from_slice(&VERSION.to_le_bytes());
    header
}

impl Encoder<Vec<u8>> {
    /// An empty snapshot in memory.
    pub fn new() -> Encoder<Vec<u8>> {
        let header = header();
        Encoder {
            out: header.to_vec(),
            crc: crc32c::crc32c(&header),
            count: 0,
        }
    }
}

impl<W: Write> Encoder<W> {
    /// A snapshot written to `out` (give it a buffered writer: each pair is a few small writes).
    pub fn to_writer(out: W) -> Result<Encoder<W>, RaftStoreError> {
        let mut encoder = Encoder {
            out,
            crc: 0,
            count: 0,
        };
        encoder.write(&header())?;
        Ok(encoder)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), RaftStoreError> {
        self.crc = crc32c::crc32c_append(self.crc, bytes);
        self.out
            .write_all(bytes)
            .map_err(io_error("writing the snapshot"))
    }

    /// Appends a pair (keys must come in ascending order; the engine's iterators give them so).
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> Result<(), RaftStoreError> {
        let key_len = length_u32(key.len())?;
        let value_len = length_u32(value.len())?;
        self.write(&key_len.to_le_bytes())?;
        self.write(&value_len.to_le_bytes())?;
        self.write(key)?;
        self.write(value)?;
        self.count += 1;
        Ok(())
    }

    /// Pairs pushed so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Writes the trailer and returns the writer (flushed).
    pub fn finish(mut self) -> Result<W, RaftStoreError> {
        self.write(&END_MARKER.to_le_bytes())?;
        let count = self.count;
        self.write(&count.to_le_bytes())?;
        let crc = self.crc;
        self.out
            .write_all(&crc.to_le_bytes())
            .and_then(|()| self.out.flush())
            .map_err(io_error("writing the snapshot"))?;
        Ok(self.out)
    }
}

fn length_u32(len: usize) -> Result<u32, RaftStoreError> {
    u32::try_from(len)
        .ok()
        .filter(|&len| len != END_MARKER)
        .ok_or_else(|| malformed(format!("a key or value of {len} bytes")))
}

fn malformed(reason: String) -> RaftStoreError {
    RaftStoreError::Snapshot { reason }
}

/// A key and its value.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Reads a snapshot's pairs from `R` in order, checking as it goes (see the module's
/// invariant): an iterator of pairs that ends in `None` only after a whole, intact snapshot.
pub struct Decoder<R: Read> {
    input: R,
    crc: u32,
    count: u64,
    /// Bytes consumed, for the errors.
    offset: u64,
    previous: Option<Vec<u8>>,
    finished: bool,
}

impl<R: Read> Decoder<R> {
    /// A decoder of `input` (give it a buffered reader), whose header is checked here.
    pub fn new(input: R) -> Result<Decoder<R>, RaftStoreError> {
        let mut decoder = Decoder {
            input,
            crc: 0,
            count: 0,
            offset: 0,
            previous: None,
            finished: false,
        };
        let mut magic = [0u8; 8];
        decoder
            .read_exact(&mut magic)
            .map_err(|_| malformed("no artdb snapshot header".to_string()))?;
        if magic != MAGIC {
            return Err(malformed("no artdb snapshot header".to_string()));
        }
        let version = decoder.read_u32()?;
        if version != VERSION {
            return Err(malformed(format!(
                "format version {version}, not {VERSION}"
            )));
        }
        Ok(decoder)
    }

    /// Pairs yielded so far.
    pub fn pairs_read(&self) -> u64 {
        self.count
    }

    fn read_exact(&mut self, buffer: &mut [u8]) -> Result<(), RaftStoreError> {
        let at = self.offset;
        self.input
            .read_exact(buffer)
            .map_err(|error| match error.kind() {
                io::ErrorKind::UnexpectedEof => malformed(format!("it ends early, at byte {at}")),
                _ => RaftStoreError::Io {
                    what: format!("reading the snapshot at byte {at}"),
                    error,
                },
            })?;
        self.crc = crc32c::crc32c_append(self.crc, buffer);
        self.offset += buffer.len() as u64;
        Ok(())
    }

    fn read_u32(&mut self) -> Result<u32, RaftStoreError> {
        let mut bytes = [0u8; 4];
        self.read_exact(&mut bytes)?;
        Ok(u32::from_le_bytes(bytes))
    }

    /// `len` bytes, grown as they arrive: a hostile length allocates no more than the input has.
    fn read_vec(&mut self, len: usize) -> Result<Vec<u8>, RaftStoreError> {
        let at = self.offset;
        let mut bytes = Vec::with_capacity(len.min(1 << 16));
        (&mut self.input)
            .take(len as u64)
            .read_to_end(&mut bytes)
            .map_err(io_error(format!("reading the snapshot at byte {at}")))?;
        if bytes.len() != len {
            return Err(malformed(format!(
                "it ends early, inside the pair at byte {at}"
            )));
        }
        self.crc = crc32c::crc32c_append(self.crc, &bytes);
        self.offset += len as u64;
        Ok(bytes)
    }

    fn pair(&mut self) -> Result<Option<Pair>, RaftStoreError> {
        let at = self.offset;
        let key_len = self.read_u32()?;
        if key_len == END_MARKER {
            self.trailer()?;
            return Ok(None);
        }
        let value_len = self.read_u32()? as usize;
        let key_len = key_len as usize;
        if key_len > artdb_art::KEY_LEN_MAX || value_len > artdb_art::VALUE_LEN_MAX {
            return Err(malformed(format!("a pair over the limits at byte {at}")));
        }
        let key = self.read_vec(key_len)?;
        let value = self.read_vec(value_len)?;
        if self
            .previous
            .as_ref()
            .is_some_and(|previous| *previous >= key)
        {
            return Err(malformed(format!("keys out of order at byte {at}")));
        }
        self.previous = Some(key.clone());
        self.count += 1;
        Ok(Some((key, value)))
    }

    fn trailer(&mut self) -> Result<(), RaftStoreError> {
        let at = self.offset;
        let mut count = [0u8; 8];
        self.read_exact(&mut count)?;
        let stored_count = u64::from_le_bytes(count);
        let computed = self.crc;
        let stored_crc = self.read_u32()?;
        if stored_crc != computed {
            return Err(malformed("its checksum does not match".to_string()));
        }
        if stored_count != self.count {
            return Err(malformed(format!(
                "its trailer says {stored_count} pairs, but {} end at byte {at}",
                self.count
            )));
        }
        let mut extra = [0u8; 1];
        match self.input.read(&mut extra) {
            Ok(0) => Ok(()),
            Ok(_) => Err(malformed(format!(
                "bytes follow its trailer at byte {}",
                self.offset
            ))),
            Err(error) => Err(RaftStoreError::Io {
                what: "reading the snapshot after its trailer".to_string(),
                error,
            }),
        }
    }
}

impl<R: Read> Iterator for Decoder<R> {
    type Item = Result<Pair, RaftStoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.finished {
            return None;
        }
        match self.pair() {
            Ok(Some(pair)) => Some(Ok(pair)),
            Ok(None) => {
                self.finished = true;
                None
            }
            Err(error) => {
                self.finished = true;
                Some(Err(error))
            }
        }
    }
}

/// Checks `bytes` whole (see the module's invariant) and returns the number of pairs.
pub fn check(bytes: &[u8]) -> Result<u64, RaftStoreError> {
    let mut decoder = Decoder::new(bytes)?;
    for pair in decoder.by_ref() {
        pair?;
    }
    Ok(decoder.pairs_read())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut encoder = Encoder::new();
        for (key, value) in [(&b"a"[..], &b"1"[..]), (b"b", b""), (b"ca", b"333")] {
            encoder.push(key, value).unwrap();
        }
        encoder.finish().unwrap()
    }

    #[test]
    fn round_trip() {
        let bytes = sample();
        assert_eq!(check(&bytes).unwrap(), 3);
        let seen: Vec<_> = Decoder::new(&bytes[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[2], (b"ca".to_vec(), b"333".to_vec()));
        assert_eq!(check(&Encoder::new().finish().unwrap()).unwrap(), 0);
    }

    #[test]
    fn every_flipped_byte_and_every_cut_is_refused() {
        let bytes = sample();
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x41;
            assert!(check(&damaged).is_err(), "flip at {at} accepted");
            assert!(check(&bytes[..at]).is_err(), "cut at {at} accepted");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(check(&longer).is_err(), "a byte after the trailer accepted");
    }

    #[test]
    fn a_damaged_snapshot_ends_in_one_error_never_in_none() {
        let bytes = sample();
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x41;
            let Ok(decoder) = Decoder::new(&damaged[..]) else {
                continue;
            };
            let items: Vec<_> = decoder.collect();
            assert!(
                items.last().is_some_and(Result::is_err),
                "flip at {at}: the pairs ended without an error"
            );
            assert_eq!(items.iter().filter(|item| item.is_err()).count(), 1);
        }
    }

    #[test]
    fn a_hostile_length_allocates_only_what_arrives() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&(artdb_art::VALUE_LEN_MAX as u32).to_le_bytes());
        bytes.extend_from_slice(b"k");
        assert!(matches!(
            check(&bytes),
            Err(RaftStoreError::Snapshot { .. })
        ));
    }

    #[test]
    fn unordered_keys_are_refused_even_with_a_good_checksum() {
        let mut encoder = Encoder::new();
        encoder.push(b"b", b"").unwrap();
        encoder.push(b"a", b"").unwrap();
        assert!(matches!(
            check(&encoder.finish().unwrap()),
            Err(RaftStoreError::Snapshot { .. })
        ));
    }
}
