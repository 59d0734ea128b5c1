//! The reader: a table opened through a read-only memory map (or held in memory), point lookups,
//! and the first-use verification of pages.
//!
//! Invariants:
//! 1. The header was checked at open: the levels tile pages 1.. contiguously, the top level is one
//!    page, and the large-value area ends the file. So every (level, index < page_count) names a
//!    page inside the file.
//! 2. A page's bytes are used only after `page::validate` accepted them in this process; its bit in
//!    `verified` is set after that and never cleared. The file is immutable while mapped (the map is
//!    read-only and bitable files are never written in place; a process that rewrites the file
//!    under a reader breaks this contract, as with any memory-mapped format).
//! 3. A validated branch page's children lie inside the level below, so a descent visits exactly
//!    one page per level: it is bounded by the level count (at most `LEVELS_MAX`).
//!
//! The hot path (`get`) does no allocation, takes no lock and makes no system call: one atomic
//! load per page visited and a binary search in each.

use crate::error::{corrupt, io, CorruptionKind, Error, Result};
use crate::format::*;
use crate::page::{self, compare_keys, Expect, PageRef, StoredValue};
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where the table's bytes live.
enum Backing {
    Map(memmap2::Mmap),
    Bytes(Vec<u8>),
    Empty,
}

/// An open table: immutable, `Send + Sync`, shared by reference among threads.
pub struct Table {
    backing: Backing,
    pub(crate) header: Header,
    /// One bit per page, set once the page passed validation.
    verified: Box<[AtomicU64]>,
}

impl Table {
    /// Opens the table file at `path` through a read-only memory map.
    ///
    /// Contract: the file must not be modified while the table is open (bitable files are
    /// written once and renamed into place; replace a table by building a new one and renaming
    /// it, which leaves open maps of the old file intact).
    pub fn open(path: impl AsRef<Path>) -> Result<Table> {
        let file = io("open the table file", File::open(path.as_ref()))?;
        let len = io("read the table file's length", file.metadata())?.len();
        if len == 0 {
            return Table::from_backing(Backing::Empty);
        }
        let map = crate::raw::map_read_only(&file);
        let map = io("memory-map the table file", map)?;
        // Ask for huge pages: where the kernel caches the file in large folios (ext4 and xfs on
        // Linux 6.x) a fault then maps 2 MiB at once, so a lookup's leaf rarely misses the TLB.
        // A hint: ignored where unsupported, and correctness never depends on it.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        Table::from_backing(Backing::Map(map))
    }

    /// Opens a table held in memory (tests, fuzzing, tables received over a network). Values are
    /// aligned only as much as the vector's allocation is.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Table> {
        Table::from_backing(Backing::Bytes(bytes))
    }

    fn from_backing(backing: Backing) -> Result<Table> {
        let bytes = match &backing {
            Backing::Map(map) => &map[..],
            Backing::Bytes(bytes) => &bytes[..],
            Backing::Empty => &[],
        };
        let header = Header::decode(bytes, bytes.len() as u64)?;
        let pages = header
            .levels
            .last()
            .map_or(1, |top| top.start_page + top.page_count);
        let words = pages.div_ceil(64) as usize;
        let verified = (0..words).map(|_| AtomicU64::new(0)).collect();
        Ok(Table {
            backing,
            header,
            verified,
        })
    }

    /// The file's bytes.
    #[inline]
    pub(crate) fn data(&self) -> &[u8] {
        match &self.backing {
            Backing::Map(map) => map,
            Backing::Bytes(bytes) => bytes,
            Backing::Empty => &[],
        }
    }

    /// Pairs in the table.
    pub fn len(&self) -> u64 {
        self.header.pair_count
    }

    /// Whether the table holds no pair.
    pub fn is_empty(&self) -> bool {
        self.header.pair_count == 0
    }

    /// Page size of the table.
    pub fn page_size(&self) -> usize {
        self.header.page_size
    }

    /// Levels, leaf first.
    pub fn levels(&self) -> &[LevelInfo] {
        &self.header.levels
    }

    /// Pages in the leaf level.
    pub(crate) fn leaf_pages(&self) -> u64 {
        self.header.levels.first().map_or(0, |leaf| leaf.page_count)
    }

    /// Asks the kernel to read the whole file ahead (`MADV_WILLNEED`); a hint, errors ignored.
    pub fn advise_will_need(&self) {
        if let Backing::Map(map) = &self.backing {
            let _ = map.advise(memmap2::Advice::WillNeed);
        }
    }

    /// Asks the kernel not to read ahead around faults (`MADV_RANDOM`); a hint, errors ignored.
    pub fn advise_random(&self) {
        if let Backing::Map(map) = &self.backing {
            let _ = map.advise(memmap2::Advice::Random);
        }
    }

    /// Page `index` of `level`, validated before its first use in this process.
    #[inline]
    pub(crate) fn page(&self, level: usize, index: u64) -> Result<PageRef<'_>> {
        let info = &self.header.levels[level];
        debug_assert!(
            index < info.page_count,
            "callers keep page indexes inside the level"
        );
        let page_number = info.start_page + index;
        let page_size = self.header.page_size;
        let start = page_number as usize * page_size;
        let bytes = &self.data()[start..start + page_size];
        // Start loading the header line and the lines of the search's first round (one record
        // every 1/16 page: exactly its samples for 4 KiB pages of 32-byte records) together,
        // before the header is read: a cold page then costs about one miss latency for them all.
        for sixteenth in 0..16 {
            crate::raw::prefetch(bytes, sixteenth * page_size / 16);
        }
        let word = &self.verified[(page_number / 64) as usize];
        let bit = 1u64 << (page_number % 64);
        if word.load(Ordering::Acquire) & bit == 0 {
            let expect = Expect {
                page_number,
                index,
                level,
                children_available: self.children_available(level),
                large_len: self.header.large_len,
            };
            page::validate(bytes, &expect)?;
            word.fetch_or(bit, Ordering::Release);
        }
        Ok(PageRef::new(bytes))
    }

    fn children_available(&self, level: usize) -> u64 {
        match level.checked_sub(1) {
            Some(below) => self.header.levels[below].page_count,
            None => 0,
        }
    }

    /// Resolves a stored value to its bytes, checking a large value's checksum each time.
    #[inline]
    pub(crate) fn resolve<'t>(&'t self, leaf: u64, value: StoredValue<'t>) -> Result<&'t [u8]> {
        match value {
            StoredValue::Inline(bytes) => Ok(bytes),
            StoredValue::Large {
                offset,
                len,
                checksum,
            } => {
                let start = self.header.large_offset + offset;
                let bytes = &self.data()[start as usize..(start + len) as usize];
                if crc32c::crc32c(bytes) != checksum {
                    return corrupt(
                        self.header.levels[0].start_page + leaf,
                        CorruptionKind::LargeValue,
                    );
                }
                Ok(bytes)
            }
        }
    }

    /// Descends from the root to the leaf that would hold `key`: its index and view.
    #[inline]
    pub(crate) fn descend(&self, key: &[u8]) -> Result<(u64, PageRef<'_>)> {
        let top = self.header.levels.len() - 1;
        let mut index = 0u64;
        for level in (1..=top).rev() {
            let page = self.page(level, index)?;
            index = page.first_child() + page.search(key, true) as u64;
        }
        Ok((index, self.page(0, index)?))
    }

    /// The value stored under `key`, borrowed from the table.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        if self.header.levels.is_empty() {
            return Ok(None);
        }
        let (leaf, page) = self.descend(key)?;
        let slot = page.search(key, false);
        if slot < page.count() && compare_keys(page.key(slot), key).is_eq() {
            return self.resolve(leaf, page.value(slot)).map(Some);
        }
        Ok(None)
    }

    /// The first key of page `index` of `level` (for a branch, the first key of its leftmost leaf).
    pub(crate) fn first_key_of(&self, mut level: usize, mut index: u64) -> Result<&[u8]> {
        while level > 0 {
            index = self.page(level, index)?.first_child();
            level -= 1;
        }
        let page = self.page(0, index)?;
        Ok(page.key(0))
    }

    /// Resets the first-use marks so the next accesses validate pages again (tests, `verify`).
    pub(crate) fn forget_verified(&self) {
        for word in self.verified.iter() {
            word.store(0, Ordering::Relaxed);
        }
    }

    /// Whether the error is a corruption report (helper for tools).
    pub fn is_corruption(error: &Error) -> bool {
        matches!(error, Error::Corruption { .. })
    }
}
