//! snapshot: the bytes of a state machine snapshot, the pairs of `sm_data` in key order.
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
//! Invariant: [`check`] accepts only bytes [`Encoder::finish`] could have made: right magic and
//! version, each length within the tree's limits and the buffer, keys strictly ascending, the
//! count and the checksum matching. The state machine checks a received snapshot whole before
//! its install transaction writes the first pair, so a damaged snapshot changes nothing.

use crate::codec::RaftStoreError;

const MAGIC: [u8; 8] = *b"ARTDBSNP";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 12;
const TRAILER_LEN: usize = 16;
const END_MARKER: u32 = u32::MAX;

/// Builds a snapshot's bytes from pairs given in ascending key order.
pub struct Encoder {
    bytes: Vec<u8>,
    count: u64,
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder::new()
    }
}

impl Encoder {
    /// An empty snapshot.
    pub fn new() -> Encoder {
        let mut bytes = Vec::with_capacity(HEADER_LEN + TRAILER_LEN);
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&VERSION.to_le_bytes());
        Encoder { bytes, count: 0 }
    }

    /// Appends a pair (keys must come in ascending order; the engine's iterators give them so).
    pub fn push(&mut self, key: &[u8], value: &[u8]) -> Result<(), RaftStoreError> {
        let key_len = length_u32(key.len())?;
        let value_len = length_u32(value.len())?;
        self.bytes.extend_from_slice(&key_len.to_le_bytes());
        self.bytes.extend_from_slice(&value_len.to_le_bytes());
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
        self.count += 1;
        Ok(())
    }

    /// The finished bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.bytes.extend_from_slice(&END_MARKER.to_le_bytes());
        self.bytes.extend_from_slice(&self.count.to_le_bytes());
        let crc = crc32c::crc32c(&self.bytes);
        self.bytes.extend_from_slice(&crc.to_le_bytes());
        self.bytes
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

fn read_u32(bytes: &[u8], at: usize) -> Result<u32, RaftStoreError> {
    bytes
        .get(at..at + 4)
        .and_then(|slice| slice.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| malformed(format!("it ends inside a length at byte {at}")))
}

/// Checks `bytes` whole (see the module's invariant) and returns the number of pairs.
pub fn check(bytes: &[u8]) -> Result<u64, RaftStoreError> {
    if bytes.len() < HEADER_LEN + TRAILER_LEN || bytes[..8] != MAGIC {
        return Err(malformed("no artdb snapshot header".to_string()));
    }
    let version = read_u32(bytes, 8)?;
    if version != VERSION {
        return Err(malformed(format!(
            "format version {version}, not {VERSION}"
        )));
    }
    let body_end = bytes.len() - 4;
    let stored_crc = read_u32(bytes, body_end)?;
    if crc32c::crc32c(&bytes[..body_end]) != stored_crc {
        return Err(malformed("its checksum does not match".to_string()));
    }
    pairs(bytes, |_, _| Ok(()))
}

/// Calls `visit` with each pair of checked `bytes`, in order, and returns the pair count.
pub fn pairs(
    bytes: &[u8],
    mut visit: impl FnMut(&[u8], &[u8]) -> Result<(), RaftStoreError>,
) -> Result<u64, RaftStoreError> {
    let mut at = HEADER_LEN;
    let mut count = 0u64;
    let mut previous: Option<&[u8]> = None;
    loop {
        let key_len = read_u32(bytes, at)?;
        if key_len == END_MARKER {
            break;
        }
        let value_len = read_u32(bytes, at + 4)? as usize;
        let key_len = key_len as usize;
        if key_len > artdb_art::KEY_LEN_MAX || value_len > artdb_art::VALUE_LEN_MAX {
            return Err(malformed(format!("a pair over the limits at byte {at}")));
        }
        let key_start = at + 8;
        let value_start = key_start + key_len;
        let end = value_start + value_len;
        if end > bytes.len().saturating_sub(TRAILER_LEN) {
            return Err(malformed(format!("a pair at byte {at} runs past the end")));
        }
        let key = &bytes[key_start..value_start];
        if previous.is_some_and(|previous| previous >= key) {
            return Err(malformed(format!("keys out of order at byte {at}")));
        }
        visit(key, &bytes[value_start..end])?;
        previous = Some(key);
        count += 1;
        at = end;
    }
    let stored_count = bytes
        .get(at + 4..at + 12)
        .and_then(|slice| slice.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| malformed("it ends inside the trailer".to_string()))?;
    if at + TRAILER_LEN != bytes.len() || stored_count != count {
        return Err(malformed(format!(
            "its trailer says {stored_count} pairs ending at byte {}, but {count} end at {at}",
            bytes.len() - TRAILER_LEN
        )));
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut encoder = Encoder::new();
        for (key, value) in [(&b"a"[..], &b"1"[..]), (b"b", b""), (b"ca", b"333")] {
            encoder.push(key, value).unwrap();
        }
        encoder.finish()
    }

    #[test]
    fn round_trip() {
        let bytes = sample();
        assert_eq!(check(&bytes).unwrap(), 3);
        let mut seen = Vec::new();
        pairs(&bytes, |key, value| {
            seen.push((key.to_vec(), value.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen[2], (b"ca".to_vec(), b"333".to_vec()));
        assert_eq!(check(&Encoder::new().finish()).unwrap(), 0);
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
    }

    #[test]
    fn unordered_keys_are_refused_even_with_a_good_checksum() {
        let mut encoder = Encoder::new();
        encoder.push(b"b", b"").unwrap();
        encoder.push(b"a", b"").unwrap();
        assert!(matches!(
            check(&encoder.finish()),
            Err(RaftStoreError::Snapshot { .. })
        ));
    }
}
