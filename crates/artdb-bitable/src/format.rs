//! The byte format: named offsets of the table header and of the page header, limits, checksums
//! and the varint. Specified as tables in `docs/bitable-format.md`; this file is the code's copy.
//!
//! All integers are little-endian. A file is `page_size`-sized pages:
//!
//! ```text
//! page 0            table header (written last), rest of the page zero
//! pages 1..=L0      level 0: leaf pages, contiguous, in key order
//! next L1 pages     level 1: branch pages over the leaves
//! ...               each higher level; the top level is one page, the root
//! large-value area  byte-granular values too large for a leaf, in key order; starts page-aligned
//! ```
//!
//! Page header (32 bytes, at the start of every leaf and branch page):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | CRC32C of the page number (u64) followed by bytes 4..page_size |
//! | 4 | 1 | kind: 1 leaf, 2 branch |
//! | 5 | 1 | layout: 1 fixed records, 2 slotted |
//! | 6 | 2 | level (0 = leaf) |
//! | 8 | 2 | count: pairs of a leaf, keys of a branch (children = keys + 1) |
//! | 10 | 2 | fixed layout: key length |
//! | 12 | 2 | fixed layout: value length |
//! | 14 | 2 | fixed layout: record stride |
//! | 16 | 2 | fixed layout: value offset within a record |
//! | 18 | 2 | fixed layout: offset of record 0 |
//! | 20 | 4 | zero |
//! | 24 | 8 | branch: level-relative index of the first child page; leaf: zero |
//!
//! Invariant: the checksum covers the page number, so a page copied to the wrong place fails it.

use crate::error::{corrupt, CorruptionKind, Error, Result};

/// The magic number at offset 0 of a table file.
pub(crate) const MAGIC: [u8; 8] = *b"artdbBT\x00";
/// The format version this library writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Smallest page size.
pub const PAGE_SIZE_MIN: usize = 512;
/// Largest page size (slots are 16-bit offsets).
pub const PAGE_SIZE_MAX: usize = 65536;
/// Default page size.
pub const PAGE_SIZE_DEFAULT: usize = 4096;
/// Largest key or value alignment.
pub const ALIGN_MAX: usize = 64;
/// Levels the header can name (leaf included). Branch fan-out is at least 4, so 16 levels of even
/// 512-byte pages index more than 4^15 leaf pages.
pub const LEVELS_MAX: usize = 16;

/// Size of the table header record at the start of page 0.
pub(crate) const HEADER_LEN: usize = 512;
pub(crate) const H_MAGIC: usize = 0;
pub(crate) const H_VERSION: usize = 8;
pub(crate) const H_PAGE_SIZE: usize = 12;
pub(crate) const H_PAIR_COUNT: usize = 16;
pub(crate) const H_FILE_LEN: usize = 24;
pub(crate) const H_LARGE_OFFSET: usize = 32;
pub(crate) const H_LARGE_LEN: usize = 40;
pub(crate) const H_LEVEL_COUNT: usize = 48;
pub(crate) const H_KEY_ALIGN_LOG2: usize = 52;
pub(crate) const H_VALUE_ALIGN_LOG2: usize = 53;
pub(crate) const H_KEY_BYTES: usize = 56;
pub(crate) const H_VALUE_BYTES: usize = 64;
pub(crate) const H_LARGE_COUNT: usize = 72;
pub(crate) const H_LEVELS: usize = 80;
/// Each level entry: start page (u64), page count (u64), used bytes (u64).
pub(crate) const H_LEVEL_ENTRY_LEN: usize = 24;
pub(crate) const H_CHECKSUM: usize = HEADER_LEN - 4;
const _: () = assert!(H_LEVELS + LEVELS_MAX * H_LEVEL_ENTRY_LEN <= H_CHECKSUM);
const _: () = assert!(HEADER_LEN <= PAGE_SIZE_MIN);

/// Size of the page header.
pub(crate) const PAGE_HEADER_LEN: usize = 32;
pub(crate) const P_CHECKSUM: usize = 0;
pub(crate) const P_KIND: usize = 4;
pub(crate) const P_LAYOUT: usize = 5;
pub(crate) const P_LEVEL: usize = 6;
pub(crate) const P_COUNT: usize = 8;
pub(crate) const P_KEY_LEN: usize = 10;
pub(crate) const P_VALUE_LEN: usize = 12;
pub(crate) const P_STRIDE: usize = 14;
pub(crate) const P_VALUE_OFFSET: usize = 16;
pub(crate) const P_DATA_START: usize = 18;
pub(crate) const P_FIRST_CHILD: usize = 24;
const _: () = assert!(P_FIRST_CHILD + 8 == PAGE_HEADER_LEN);

pub(crate) const KIND_LEAF: u8 = 1;
pub(crate) const KIND_BRANCH: u8 = 2;
pub(crate) const LAYOUT_FIXED: u8 = 1;
pub(crate) const LAYOUT_SLOTTED: u8 = 2;

/// Bytes of a slot (a u16 offset of the entry within the page).
pub(crate) const SLOT_LEN: usize = 2;
/// Bytes of a large-value reference stored in a leaf entry: area offset (u64) and CRC32C (u32).
pub(crate) const LARGE_REF_LEN: usize = 12;
/// Bytes a varint may take (LEB128 of a u64).
pub(crate) const VARINT_LEN_MAX: usize = 10;

/// Largest key for a page size: a quarter page less room for headers, so a branch page always
/// holds at least three keys (fan-out four) and a leaf always holds one pair.
pub const fn key_len_max(page_size: usize) -> usize {
    page_size / 4 - 32
}

/// Largest value stored inline in a leaf page; longer values go to the large-value area.
pub const fn value_inline_max(page_size: usize) -> usize {
    page_size / 4
}

/// Largest pair count of a page (bounded by the u16 count field and by one byte per pair).
pub(crate) const fn page_count_max(page_size: usize) -> usize {
    if page_size > u16::MAX as usize {
        u16::MAX as usize
    } else {
        page_size
    }
}

/// Checks that a page size is a power of two within the limits.
pub(crate) fn check_page_size(page_size: usize) -> Result<()> {
    if page_size.is_power_of_two() && (PAGE_SIZE_MIN..=PAGE_SIZE_MAX).contains(&page_size) {
        Ok(())
    } else {
        Err(Error::InvalidOption {
            what: "the page size must be a power of two from 512 to 65536 bytes",
        })
    }
}

/// The checksum of a page: CRC32C of its page number then of its bytes after the checksum field.
pub(crate) fn page_checksum(page_number: u64, page: &[u8]) -> u32 {
    let seed = crc32c::crc32c(&page_number.to_le_bytes());
    crc32c::crc32c_append(seed, page.get(P_CHECKSUM + 4..).unwrap_or(&[]))
}

#[inline]
pub(crate) fn read_u16(bytes: &[u8], at: usize) -> u16 {
    let mut raw = [0u8; 2];
    raw.copy_from_slice(&bytes[at..at + 2]);
    u16::from_le_bytes(raw)
}

#[inline]
pub(crate) fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut raw = [0u8; 4];
    raw.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(raw)
}

#[inline]
pub(crate) fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

#[inline]
pub(crate) fn write_u16(bytes: &mut [u8], at: usize, value: u16) {
    bytes[at..at + 2].copy_from_slice(&value.to_le_bytes());
}

#[inline]
pub(crate) fn write_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

#[inline]
pub(crate) fn write_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Bytes the LEB128 encoding of `value` takes.
#[inline]
pub(crate) fn varint_len(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Writes `value` as LEB128 at `at`; returns the offset after it.
pub(crate) fn write_varint(bytes: &mut [u8], mut at: usize, mut value: u64) -> usize {
    while value >= 0x80 {
        bytes[at] = (value as u8) | 0x80;
        value >>= 7;
        at += 1;
    }
    bytes[at] = value as u8;
    at + 1
}

/// Reads a LEB128 value at `at` within `bytes`; `None` if it runs off the end or overflows.
#[inline]
pub(crate) fn read_varint(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for index in 0..VARINT_LEN_MAX {
        let byte = *bytes.get(at + index)?;
        let shift = 7 * index as u32;
        let part = u64::from(byte & 0x7f);
        if shift == 63 && part > 1 {
            return None;
        }
        value |= part << shift;
        if byte & 0x80 == 0 {
            return Some((value, at + index + 1));
        }
    }
    None
}

/// One level's entry in the table header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LevelInfo {
    /// Absolute page number of the level's first page.
    pub start_page: u64,
    /// Pages in the level.
    pub page_count: u64,
    /// Bytes of those pages holding headers, slots, keys and values (the rest is free space).
    pub used_bytes: u64,
}

/// The decoded table header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub page_size: usize,
    pub pair_count: u64,
    pub file_len: u64,
    pub large_offset: u64,
    pub large_len: u64,
    pub key_align_log2: u8,
    pub value_align_log2: u8,
    pub key_bytes: u64,
    pub value_bytes: u64,
    pub large_count: u64,
    /// Leaf level first.
    pub levels: Vec<LevelInfo>,
}

impl Header {
    /// Encodes the header into the first `HEADER_LEN` bytes of `page` (which must be zeroed).
    pub(crate) fn encode(&self, page: &mut [u8]) {
        debug_assert!(
            self.levels.len() <= LEVELS_MAX,
            "level count checked by the builder"
        );
        page[H_MAGIC..H_MAGIC + 8].copy_from_slice(&MAGIC);
        write_u32(page, H_VERSION, FORMAT_VERSION);
        write_u32(page, H_PAGE_SIZE, self.page_size as u32);
        write_u64(page, H_PAIR_COUNT, self.pair_count);
        write_u64(page, H_FILE_LEN, self.file_len);
        write_u64(page, H_LARGE_OFFSET, self.large_offset);
        write_u64(page, H_LARGE_LEN, self.large_len);
        write_u32(page, H_LEVEL_COUNT, self.levels.len() as u32);
        page[H_KEY_ALIGN_LOG2] = self.key_align_log2;
        page[H_VALUE_ALIGN_LOG2] = self.value_align_log2;
        write_u64(page, H_KEY_BYTES, self.key_bytes);
        write_u64(page, H_VALUE_BYTES, self.value_bytes);
        write_u64(page, H_LARGE_COUNT, self.large_count);
        for (index, level) in self.levels.iter().enumerate() {
            let at = H_LEVELS + index * H_LEVEL_ENTRY_LEN;
            write_u64(page, at, level.start_page);
            write_u64(page, at + 8, level.page_count);
            write_u64(page, at + 16, level.used_bytes);
        }
        let checksum = crc32c::crc32c(&page[..H_CHECKSUM]);
        write_u32(page, H_CHECKSUM, checksum);
    }

    /// Decodes and checks the header of a file of `file_len` bytes whose first bytes are `bytes`.
    pub(crate) fn decode(bytes: &[u8], file_len: u64) -> Result<Header> {
        if bytes.len() < HEADER_LEN {
            if bytes.len() >= 8 && bytes[..8] != MAGIC {
                return Err(Error::NotABitable);
            }
            return Err(Error::Truncated {
                len: file_len,
                expected: HEADER_LEN as u64,
            });
        }
        if bytes[H_MAGIC..H_MAGIC + 8] != MAGIC {
            return Err(Error::NotABitable);
        }
        if crc32c::crc32c(&bytes[..H_CHECKSUM]) != read_u32(bytes, H_CHECKSUM) {
            return corrupt(0, CorruptionKind::HeaderChecksum);
        }
        let version = read_u32(bytes, H_VERSION);
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion { found: version });
        }
        let header = Header::decode_fields(bytes)?;
        if file_len < header.file_len {
            return Err(Error::Truncated {
                len: file_len,
                expected: header.file_len,
            });
        }
        if file_len > header.file_len {
            return corrupt(0, CorruptionKind::HeaderField("file_len"));
        }
        header.check_geometry()?;
        header.check_figures()?;
        Ok(header)
    }

    fn decode_fields(bytes: &[u8]) -> Result<Header> {
        let page_size = read_u32(bytes, H_PAGE_SIZE) as usize;
        if check_page_size(page_size).is_err() {
            return corrupt(0, CorruptionKind::HeaderField("page_size"));
        }
        let level_count = read_u32(bytes, H_LEVEL_COUNT) as usize;
        if level_count > LEVELS_MAX {
            return corrupt(0, CorruptionKind::HeaderField("level_count"));
        }
        let levels = (0..level_count)
            .map(|index| {
                let at = H_LEVELS + index * H_LEVEL_ENTRY_LEN;
                LevelInfo {
                    start_page: read_u64(bytes, at),
                    page_count: read_u64(bytes, at + 8),
                    used_bytes: read_u64(bytes, at + 16),
                }
            })
            .collect();
        Ok(Header {
            page_size,
            pair_count: read_u64(bytes, H_PAIR_COUNT),
            file_len: read_u64(bytes, H_FILE_LEN),
            large_offset: read_u64(bytes, H_LARGE_OFFSET),
            large_len: read_u64(bytes, H_LARGE_LEN),
            key_align_log2: bytes[H_KEY_ALIGN_LOG2],
            value_align_log2: bytes[H_VALUE_ALIGN_LOG2],
            key_bytes: read_u64(bytes, H_KEY_BYTES),
            value_bytes: read_u64(bytes, H_VALUE_BYTES),
            large_count: read_u64(bytes, H_LARGE_COUNT),
            levels,
        })
    }

    /// Checks that the levels and the large-value area tile the file as the format requires.
    fn check_geometry(&self) -> Result<()> {
        let field = |name| corrupt(0, CorruptionKind::HeaderField(name));
        let page_size = self.page_size as u64;
        if self.file_len % page_size != 0 && self.large_len == 0 {
            return field("file_len");
        }
        if usize::from(self.key_align_log2) > ALIGN_MAX.trailing_zeros() as usize
            || usize::from(self.value_align_log2) > ALIGN_MAX.trailing_zeros() as usize
        {
            return field("alignment");
        }
        if self.levels.is_empty() != (self.pair_count == 0) {
            return field("level_count");
        }
        let mut next_page = 1u64;
        for (index, level) in self.levels.iter().enumerate() {
            let is_top = index + 1 == self.levels.len();
            if level.start_page != next_page || level.page_count == 0 {
                return field("levels");
            }
            if is_top != (level.page_count == 1) {
                return field("levels");
            }
            if level.used_bytes > level.page_count.saturating_mul(page_size) {
                return field("levels");
            }
            next_page = match next_page.checked_add(level.page_count) {
                Some(next) => next,
                None => return field("levels"),
            };
        }
        let pages_end = next_page.checked_mul(page_size);
        if self.large_len == 0 {
            if pages_end != Some(self.file_len) {
                return field("file_len");
            }
        } else if pages_end != Some(self.large_offset)
            || self.large_offset.checked_add(self.large_len) != Some(self.file_len)
        {
            return field("large_value_area");
        }
        Ok(())
    }

    /// Checks that the counts and byte totals are ones a table of these levels can have (the
    /// bounds the builder keeps): `Table::stats` and `Table::len` report them without reading a
    /// page, so a header whose checksum holds but whose figures are impossible is refused here,
    /// where it is first read, instead of printed as if true. Each bound follows from the format:
    ///
    /// 1. every page holds its page header, so a level uses at least `PAGE_HEADER_LEN` bytes a
    ///    page;
    /// 2. a branch page has `1..=page_count_max + 1` children and a level's children are the
    ///    level below, so `pages <= pages below <= pages * (page_count_max + 1)`;
    /// 3. a leaf holds `1..=page_count_max` pairs;
    /// 4. a key is at most `key_len_max` bytes;
    /// 5. a large value is longer than `value_inline_max` and is stored whole in the large-value
    ///    area, whose length is their sum; an inline value is at most `value_inline_max` bytes.
    ///
    /// Upper bounds saturate (never refusing a real table); the lower bounds that multiply
    /// refuse on overflow, as no real table has such figures.
    fn check_figures(&self) -> Result<()> {
        let field = |name| corrupt(0, CorruptionKind::HeaderField(name));
        let per_page_max = page_count_max(self.page_size) as u64;
        let header_bytes = PAGE_HEADER_LEN as u64;
        for (index, level) in self.levels.iter().enumerate() {
            if level.used_bytes < level.page_count.saturating_mul(header_bytes) {
                return field("levels");
            }
            let Some(below) = index
                .checked_sub(1)
                .and_then(|below| self.levels.get(below))
            else {
                continue;
            };
            let children_max = level.page_count.saturating_mul(per_page_max + 1);
            if below.page_count < level.page_count || below.page_count > children_max {
                return field("levels");
            }
        }
        let leaf_pages = self.levels.first().map_or(0, |leaf| leaf.page_count);
        if self.pair_count < leaf_pages || self.pair_count > leaf_pages.saturating_mul(per_page_max)
        {
            return field("pair_count");
        }
        let key_bytes_max = self
            .pair_count
            .saturating_mul(key_len_max(self.page_size) as u64);
        if self.key_bytes > key_bytes_max {
            return field("key_bytes");
        }
        let inline_max = value_inline_max(self.page_size) as u64;
        let large_bytes_min = self.large_count.checked_mul(inline_max + 1);
        if self.large_count > self.pair_count
            || (self.large_count == 0) != (self.large_len == 0)
            || large_bytes_min.map_or(true, |min| self.large_len < min)
        {
            return field("large_count");
        }
        let inline_count = self.pair_count - self.large_count;
        let value_bytes_max = inline_count
            .saturating_mul(inline_max)
            .saturating_add(self.large_len);
        if self.value_bytes < self.large_len || self.value_bytes > value_bytes_max {
            return field("value_bytes");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_and_rejects_overflow() {
        let mut buffer = [0u8; VARINT_LEN_MAX];
        for value in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let end = write_varint(&mut buffer, 0, value);
            assert_eq!(end, varint_len(value));
            assert_eq!(read_varint(&buffer, 0), Some((value, end)));
        }
        assert_eq!(read_varint(&[0xff; 10], 0), None);
        assert_eq!(read_varint(&[0x80], 0), None);
    }
}
