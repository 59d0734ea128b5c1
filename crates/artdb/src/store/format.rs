//! format: the fixed header and the two superblocks at the start of the database file.
//!
//! Byte tables: docs/file-format.md#header and #superblock. All integers little-endian.
//! The header (page 0) is written once, at create. The superblocks (pages 1 and 2) are written
//! alternately by checkpoints: generation `g` goes to slot `g % 2`, so the slot being written
//! never holds the newest durable superblock. Each slot holds the superblock twice, at the start
//! and in the middle of its page (different sectors), so that damage to one copy is told from a
//! torn write (which can break both) and survived. What open makes of the copies: see
//! `store::open_superblocks` and docs/recovery.md#open.
//!
//! Invariant: a superblock is written only after everything it names (node pages, catalog and
//! space blobs) has been synced (see docs/recovery.md).

use crate::error::{CorruptionKind, Error, Result};

/// Size of a page in bytes: the unit of allocation, checksumming and verification.
///
/// Why 32 KiB and not 4 KiB: images never span pages, and the tree's fullest node (a Node256 of
/// inline values, the leaf level of dense integer keys) is 2,080 bytes, so a 4 KiB page holds
/// only one (49% of the file would be padding); a 32 KiB page holds 15 (95% used). Cold reads do
/// not pay for it: a page fault on a file map reads ahead 128 KiB by default anyway, and the
/// first-use checksum of 32 KiB costs little beside the fault. The road not taken: images spanning pages with
/// an out-of-band checksum table (finer reuse, but a table to keep and read).
pub const PAGE_SIZE: u64 = 32 * 1024;
/// Byte offset of the header (page 0).
pub const HEADER_OFFSET: u64 = 0;
/// Byte offsets of the two superblock slots (pages 1 and 2).
pub const SUPERBLOCK_OFFSETS: [u64; 2] = [PAGE_SIZE, 2 * PAGE_SIZE];
/// Byte offsets of the two copies of a superblock inside its slot's page.
pub const SUPERBLOCK_COPY_OFFSETS: [u64; 2] = [0, PAGE_SIZE / 2];
/// First page that holds data (node pages, extents, catalog and space blobs).
pub const DATA_PAGE_FIRST: u64 = 3;
/// Byte offset of the first data page.
pub const DATA_OFFSET: u64 = DATA_PAGE_FIRST * PAGE_SIZE;

/// Magic number at byte 0 of the file: "artdb" NUL "db".
pub const HEADER_MAGIC: [u8; 8] = *b"artdb\0db";
/// The file format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

// Header fields: (offset, length).
const HEADER_MAGIC_AT: usize = 0;
const HEADER_VERSION_AT: usize = 8;
const HEADER_PAGE_SIZE_AT: usize = 12;
const HEADER_FILE_ID_AT: usize = 16;
pub(crate) const HEADER_CRC_AT: usize = 60;
/// Bytes of the header that are written (the rest of page 0 is zero).
pub const HEADER_LEN: usize = 64;
const _: () = assert!(HEADER_CRC_AT + 4 == HEADER_LEN);
const _: () = assert!(HEADER_FILE_ID_AT + 8 <= HEADER_CRC_AT);
const _: () = assert!(HEADER_LEN as u64 <= PAGE_SIZE);

/// Magic number at byte 0 of a superblock.
pub const SUPERBLOCK_MAGIC: [u8; 8] = *b"artdbSB1";
const SB_MAGIC_AT: usize = 0;
const SB_FILE_ID_AT: usize = 8;
const SB_GENERATION_AT: usize = 16;
const SB_PAGE_COUNT_AT: usize = 24;
pub(crate) const SB_CATALOG_OFFSET_AT: usize = 32;
pub(crate) const SB_CATALOG_LEN_AT: usize = 40;
pub(crate) const SB_CATALOG_CRC_AT: usize = 44;
pub(crate) const SB_SPACE_OFFSET_AT: usize = 48;
pub(crate) const SB_SPACE_LEN_AT: usize = 56;
pub(crate) const SB_SPACE_CRC_AT: usize = 64;
const SB_WAL_POSITION_AT: usize = 72;
const SB_FLAGS_AT: usize = 80;
const SB_LOG_EPOCH_AT: usize = 88;
/// Bit of the superblock's flags: written at close, the log holds nothing past
/// `wal_position` (see [`Superblock::log_closed`]).
const SB_FLAG_LOG_CLOSED: u64 = 1;
pub(crate) const SB_CRC_AT: usize = 124;
/// Bytes of a superblock that are written (the rest of its page is zero).
pub const SUPERBLOCK_LEN: usize = 128;
/// The largest generation and covered LSN a superblock may hold: 2^62, which a checkpoint or a
/// commit every nanosecond would take 146 years to reach. Larger values can only come from
/// damage or craft, and the counters that start from them (the next generation, the next LSN)
/// must not overflow (found by the engine's fuzz body, tests/fuzz_body.rs).
pub const SB_COUNTER_MAX: u64 = 1 << 62;
const _: () = assert!(SB_CRC_AT + 4 == SUPERBLOCK_LEN);
const _: () = assert!(SB_WAL_POSITION_AT + 8 <= SB_FLAGS_AT);
const _: () = assert!(SB_FLAGS_AT + 8 <= SB_LOG_EPOCH_AT);
const _: () = assert!(SB_LOG_EPOCH_AT + 8 <= SB_CRC_AT);
const _: () = assert!(SB_SPACE_CRC_AT + 4 <= SB_WAL_POSITION_AT);

/// The header: what kind of file this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// A random number chosen at create, repeated in each superblock, so a superblock copied
    /// from another database file is not mistaken for this file's.
    pub file_id: u64,
}

impl Header {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut bytes = [0u8; HEADER_LEN];
        bytes[HEADER_MAGIC_AT..HEADER_MAGIC_AT + 8].copy_from_slice(&HEADER_MAGIC);
        put_u32(&mut bytes, HEADER_VERSION_AT, FORMAT_VERSION);
        put_u32(&mut bytes, HEADER_PAGE_SIZE_AT, PAGE_SIZE as u32);
        put_u64(&mut bytes, HEADER_FILE_ID_AT, self.file_id);
        let crc = crc32c::crc32c(&bytes[..HEADER_CRC_AT]);
        put_u32(&mut bytes, HEADER_CRC_AT, crc);
        bytes
    }

    /// Parses and checks the header.
    pub fn decode(bytes: &[u8; HEADER_LEN]) -> Result<Header> {
        let at = HEADER_OFFSET;
        if bytes[HEADER_MAGIC_AT..HEADER_MAGIC_AT + 8] != HEADER_MAGIC {
            return Err(Error::corruption(at, CorruptionKind::BadMagic));
        }
        if crc32c::crc32c(&bytes[..HEADER_CRC_AT]) != get_u32(bytes, HEADER_CRC_AT) {
            return Err(Error::corruption(
                at + HEADER_CRC_AT as u64,
                CorruptionKind::HeaderChecksum,
            ));
        }
        let version = get_u32(bytes, HEADER_VERSION_AT);
        if version != FORMAT_VERSION {
            return Err(Error::corruption(
                at + HEADER_VERSION_AT as u64,
                CorruptionKind::UnsupportedVersion(version),
            ));
        }
        if u64::from(get_u32(bytes, HEADER_PAGE_SIZE_AT)) != PAGE_SIZE {
            return Err(Error::corruption(
                at + HEADER_PAGE_SIZE_AT as u64,
                CorruptionKind::HeaderField("page_size"),
            ));
        }
        Ok(Header {
            file_id: get_u64(bytes, HEADER_FILE_ID_AT),
        })
    }
}

/// A blob of metadata (catalog or space map) stored in whole pages, checked by the CRC that the
/// superblock holds for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlobRef {
    /// Byte offset of the blob (page aligned; 0 = no blob).
    pub offset: u64,
    /// Length of the blob in bytes.
    pub len: u64,
    /// CRC32C of the blob's bytes.
    pub crc: u32,
}

impl BlobRef {
    /// Number of pages the blob occupies.
    pub fn page_count(&self) -> u64 {
        self.len.div_ceil(PAGE_SIZE)
    }
}

/// A superblock: the root of one checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// Same as the header's.
    pub file_id: u64,
    /// Checkpoint sequence number, starting at 1 for the superblock written at create.
    pub generation: u64,
    /// Number of pages (from the start of the file) this checkpoint may reference.
    pub page_count: u64,
    /// The catalog: table names and roots.
    pub catalog: BlobRef,
    /// The space map: the use of every page.
    pub space: BlobRef,
    /// LSN of the last write-ahead log record this checkpoint covers (0: none).
    pub wal_position: u64,
    /// Written by the checkpoint at close: no log record follows `wal_position`, so a missing
    /// log loses nothing. False (the log is in use: commits after the checkpoint may be only
    /// in the log) for every other checkpoint, and made durable before the first record after
    /// an open (docs/recovery.md, Missing log). Files from before this flag read false.
    pub log_closed: bool,
    /// The write-ahead log's cycle (its header's epoch) when this checkpoint was written: the
    /// log that follows it is of this cycle, or of the next one begun by the recycle right after
    /// it. An older cycle is an older copy of the log (docs/recovery.md, Recovery). 0: not
    /// recorded (files from before the field).
    pub log_epoch: u64,
}

impl Superblock {
    /// The slot that generation `generation` is written to.
    pub fn slot(generation: u64) -> usize {
        (generation % 2) as usize
    }

    /// The superblock's bytes.
    pub fn encode(&self) -> [u8; SUPERBLOCK_LEN] {
        let mut bytes = [0u8; SUPERBLOCK_LEN];
        bytes[SB_MAGIC_AT..SB_MAGIC_AT + 8].copy_from_slice(&SUPERBLOCK_MAGIC);
        put_u64(&mut bytes, SB_FILE_ID_AT, self.file_id);
        put_u64(&mut bytes, SB_GENERATION_AT, self.generation);
        put_u64(&mut bytes, SB_PAGE_COUNT_AT, self.page_count);
        put_u64(&mut bytes, SB_CATALOG_OFFSET_AT, self.catalog.offset);
        put_u32(&mut bytes, SB_CATALOG_LEN_AT, self.catalog.len as u32);
        put_u32(&mut bytes, SB_CATALOG_CRC_AT, self.catalog.crc);
        put_u64(&mut bytes, SB_SPACE_OFFSET_AT, self.space.offset);
        put_u64(&mut bytes, SB_SPACE_LEN_AT, self.space.len);
        put_u32(&mut bytes, SB_SPACE_CRC_AT, self.space.crc);
        put_u64(&mut bytes, SB_WAL_POSITION_AT, self.wal_position);
        let flags = if self.log_closed {
            SB_FLAG_LOG_CLOSED
        } else {
            0
        };
        put_u64(&mut bytes, SB_FLAGS_AT, flags);
        put_u64(&mut bytes, SB_LOG_EPOCH_AT, self.log_epoch);
        let crc = crc32c::crc32c(&bytes[..SB_CRC_AT]);
        put_u32(&mut bytes, SB_CRC_AT, crc);
        bytes
    }

    /// Whether `bytes` carry the superblock magic and a matching checksum: bytes written whole
    /// by a checkpoint (not torn, not damaged since), whatever their fields say.
    pub fn is_sealed(bytes: &[u8; SUPERBLOCK_LEN]) -> bool {
        bytes[SB_MAGIC_AT..SB_MAGIC_AT + 8] == SUPERBLOCK_MAGIC
            && crc32c::crc32c(&bytes[..SB_CRC_AT]) == get_u32(bytes, SB_CRC_AT)
    }

    /// The generation field of sealed bytes (for error messages about an inconsistent one).
    pub fn generation_of(bytes: &[u8; SUPERBLOCK_LEN]) -> u64 {
        get_u64(bytes, SB_GENERATION_AT)
    }

    /// Parses and checks the superblock copy read from byte `at` of slot `slot` against the
    /// file's id. The file's length is checked by the caller: an older superblock may name pages
    /// past the end of a file that a later checkpoint shrank.
    pub fn decode(
        bytes: &[u8; SUPERBLOCK_LEN],
        at: u64,
        slot: usize,
        file_id: u64,
    ) -> Result<Superblock> {
        let field = |name| Error::corruption(at, CorruptionKind::SuperblockField(name));
        if bytes[SB_MAGIC_AT..SB_MAGIC_AT + 8] != SUPERBLOCK_MAGIC {
            return Err(field("magic"));
        }
        if crc32c::crc32c(&bytes[..SB_CRC_AT]) != get_u32(bytes, SB_CRC_AT) {
            return Err(Error::corruption(
                at + SB_CRC_AT as u64,
                CorruptionKind::PageChecksum,
            ));
        }
        let superblock = Superblock {
            file_id: get_u64(bytes, SB_FILE_ID_AT),
            generation: get_u64(bytes, SB_GENERATION_AT),
            page_count: get_u64(bytes, SB_PAGE_COUNT_AT),
            catalog: BlobRef {
                offset: get_u64(bytes, SB_CATALOG_OFFSET_AT),
                len: u64::from(get_u32(bytes, SB_CATALOG_LEN_AT)),
                crc: get_u32(bytes, SB_CATALOG_CRC_AT),
            },
            space: BlobRef {
                offset: get_u64(bytes, SB_SPACE_OFFSET_AT),
                len: get_u64(bytes, SB_SPACE_LEN_AT),
                crc: get_u32(bytes, SB_SPACE_CRC_AT),
            },
            wal_position: get_u64(bytes, SB_WAL_POSITION_AT),
            log_closed: get_u64(bytes, SB_FLAGS_AT) & SB_FLAG_LOG_CLOSED != 0,
            log_epoch: get_u64(bytes, SB_LOG_EPOCH_AT),
        };
        if get_u64(bytes, SB_FLAGS_AT) & !SB_FLAG_LOG_CLOSED != 0 {
            return Err(field("flags"));
        }
        if superblock.file_id != file_id {
            return Err(field("file_id"));
        }
        if superblock.generation == 0
            || superblock.generation > SB_COUNTER_MAX
            || Superblock::slot(superblock.generation) != slot
        {
            return Err(field("generation"));
        }
        if superblock.wal_position > SB_COUNTER_MAX {
            return Err(field("wal_position"));
        }
        if superblock.log_epoch > SB_COUNTER_MAX {
            return Err(field("log_epoch"));
        }
        let pages_len = superblock
            .page_count
            .checked_mul(PAGE_SIZE)
            .ok_or_else(|| field("page_count"))?;
        if superblock.page_count < DATA_PAGE_FIRST {
            return Err(field("page_count"));
        }
        for blob in [superblock.catalog, superblock.space] {
            let in_range = blob.offset % PAGE_SIZE == 0
                && blob.offset >= DATA_OFFSET
                && blob.len > 0
                && blob
                    .offset
                    .checked_add(blob.len)
                    .is_some_and(|end| end <= pages_len);
            if !in_range {
                return Err(field("blob"));
            }
        }
        Ok(superblock)
    }
}

pub(crate) use crate::bytes::{get_u16, get_u32, get_u64, put_u16, put_u32, put_u64};

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(generation: u64) -> Superblock {
        Superblock {
            file_id: 7,
            generation,
            page_count: 10,
            catalog: BlobRef {
                offset: DATA_OFFSET,
                len: 20,
                crc: 1,
            },
            space: BlobRef {
                offset: DATA_OFFSET + PAGE_SIZE,
                len: 30,
                crc: 2,
            },
            wal_position: 0,
            log_closed: generation % 2 == 0,
            log_epoch: 3,
        }
    }

    #[test]
    fn header_and_superblock_round_trip_and_every_byte_flip_is_caught() {
        let header = Header { file_id: 99 };
        let bytes = header.encode();
        assert_eq!(Header::decode(&bytes).unwrap(), header);
        for i in 0..HEADER_LEN {
            let mut flipped = bytes;
            flipped[i] ^= 0x10;
            assert!(
                matches!(Header::decode(&flipped), Err(Error::Corruption { .. })),
                "byte {i}"
            );
        }
        let superblock = sample(3);
        let bytes = superblock.encode();
        let at = SUPERBLOCK_OFFSETS[1];
        assert!(Superblock::is_sealed(&bytes));
        assert_eq!(Superblock::decode(&bytes, at, 1, 7).unwrap(), superblock);
        assert!(Superblock::decode(&bytes, at, 0, 7).is_err(), "wrong slot");
        assert!(Superblock::decode(&bytes, at, 1, 8).is_err(), "wrong file");
        for i in 0..SUPERBLOCK_LEN {
            let mut flipped = bytes;
            flipped[i] ^= 0x01;
            assert!(!Superblock::is_sealed(&flipped), "byte {i}");
            assert!(Superblock::decode(&flipped, at, 1, 7).is_err(), "byte {i}");
        }
    }

    #[test]
    fn counters_past_the_maximum_are_refused() {
        // The next generation and the next LSN are computed from these: no overflow.
        let at = SUPERBLOCK_OFFSETS[0];
        let decode = |superblock: Superblock| {
            let slot = Superblock::slot(superblock.generation);
            Superblock::decode(&superblock.encode(), at, slot, 7)
        };
        assert!(decode(sample(SB_COUNTER_MAX)).is_ok());
        assert!(decode(sample(SB_COUNTER_MAX + 2)).is_err());
        assert!(decode(sample(u64::MAX - 1)).is_err());
        let mut covered = sample(4);
        covered.wal_position = SB_COUNTER_MAX;
        assert!(decode(covered).is_ok());
        covered.wal_position = u64::MAX;
        assert!(decode(covered).is_err());
        let mut cycle = sample(4);
        cycle.log_epoch = SB_COUNTER_MAX;
        assert_eq!(decode(cycle).unwrap().log_epoch, SB_COUNTER_MAX);
        cycle.log_epoch = SB_COUNTER_MAX + 1;
        assert!(decode(cycle).is_err());
    }
}
