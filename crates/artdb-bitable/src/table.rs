//! The reader: a table opened through a read-only memory map (or held in memory), point lookups,
//! and the first-use verification of pages.
//!
//! Invariants:
//! 1. The header was checked at open: the levels tile pages 1.. contiguously, the top level is one
//!    page, and the large-value area ends the file. So every (level, index < page_count) names a
//!    page inside the file. Its counts and byte totals are within the bounds the builder keeps
//!    (`Header::check_figures`), so `stats` and `len` never report figures no table can have.
//! 2. A page's bytes are used only after `page::validate` accepted them in this process; its bit in
//!    `verified` is set after that and never cleared. The file is immutable while mapped (the map is
//!    read-only and bitable files are never written in place; a process that rewrites the file
//!    under a reader breaks this contract, as with any memory-mapped format).
//! 3. A validated branch page's children lie inside the level below, so a descent visits exactly
//!    one page per level: it is bounded by the level count (at most `LEVELS_MAX`).
//!
//! The hot path (`get`) does no allocation, takes no lock and makes no system call: one atomic
//! load per page visited and a search in each. The exception is a table's first lookup, which
//! builds the flattened cached levels once (`top.rs`, `Table::init_top`; readers do not wait
//! for one another's build).

use crate::error::{corrupt, io, CorruptionKind, Error, Result};
use crate::format::*;
use crate::page::{self, Expect, Guess, PageRef, Probe, StoredValue};
use crate::top::{Top, TopBuilder};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Entries on each side of a guess whose lines `Table::page_guided` prefetches (the guided
/// search reads at least two on each side: `page::GUESS_REACH_ENTRIES`).
const GUESS_PREFETCH_ENTRIES: usize = 2;
/// At most this many bytes on each side of a guess are prefetched (long entries: the search's
/// binary probes then find the lines nearest the guess loaded, the rest come on demand).
const GUESS_PREFETCH_REACH_MAX: usize = 512;
/// Bytes of a cache line.
const CACHE_LINE: usize = 64;
/// A level of at most this many bytes is taken to stay in the CPU's caches while lookups run
/// (`Shape::cached`): the root and, in big tables, the level below it (36 pages, 144 KiB, at
/// 130M pairs of 32 bytes). Its pages are searched without prefetches, which only cost
/// instructions there. 256 KiB is a quarter of this machine's per-core L2 (1 MiB): the lines of
/// such levels that lookups read are reused every few dozen lookups, while the leaf and bottom
/// branch lines they share the caches with are each read about once.
pub(crate) const CACHED_LEVEL_BYTES_MAX: u64 = 256 * 1024;

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
    /// Per level, leaf first: the average shape of its pages, from the header (see `Shape`).
    shapes: [Shape; LEVELS_MAX],
    /// The cached branch levels flattened (`top.rs`), built by the first lookup; `None` where
    /// the table has no cached branch level, or a page of one failed validation or holds keys
    /// out of order (lookups then walk the pages, and report the damage where they meet it).
    top: OnceLock<Option<Top>>,
}

/// The average shape of a level's pages, derived from the header's level table at open (a few
/// divisions, no page read): where a guided search's window lies in a page before the page's
/// header is read. A hint for prefetching only: a crafted header gives useless prefetches, never
/// a wrong result or an out-of-range access (prefetches of addresses outside the page are
/// dropped, and the search reads the real layout from the validated page).
#[derive(Clone, Copy, Default)]
struct Shape {
    /// Absolute page number of the level's first page (from the header).
    start_page: u64,
    /// Byte offset of the level's first page in the file.
    start_byte: usize,
    /// Pages in the level.
    page_count: u64,
    /// Pages in the level below (0 for the leaf level): a branch page's children lie there.
    pages_below: u64,
    /// The level is small enough to stay cached (`CACHED_LEVEL_BYTES_MAX`): no prefetches, and a
    /// plain binary search where a guess misses.
    cached: bool,
    /// Bytes prefetched before a guessed entry's place (`prefetch_window`).
    reach_bytes: usize,
    /// Bytes prefetched after a guessed entry's place: `reach_bytes` and one more entry.
    window_bytes: usize,
    /// Bytes of entries in an average page (its used bytes less the page header).
    entry_bytes_per_page: usize,
    /// Children of every page of a branch level but its last, if they are all equal (as the
    /// builder makes them for fixed-length keys): the first page's, if the header's page counts
    /// agree with it; 0 if not, or for the leaf level. Where the pages differ it may be wrong,
    /// and a speculative prefetch then loads lines nothing reads.
    children_per_page: u64,
}

impl Shape {
    /// The shape of level `level` of `levels` in a table of `pair_count` pairs and pages of
    /// `page_size` bytes (a header that `Header::decode` accepted: the levels lie in the file).
    fn of(
        levels: &[LevelInfo],
        level: usize,
        pair_count: u64,
        page_size: usize,
        cached_bytes_max: u64,
    ) -> Shape {
        let Some(info) = levels.get(level) else {
            return Shape::default();
        };
        let below = level.checked_sub(1).and_then(|below| levels.get(below));
        let pages_below = below.map_or(0, |below| below.page_count);
        // A branch level's pages have one more child than keys, and cover the level below.
        let entries = match below {
            Some(below) => below.page_count.saturating_sub(info.page_count),
            None => pair_count,
        };
        let header_bytes = info.page_count.saturating_mul(PAGE_HEADER_LEN as u64);
        let level_entry_bytes = info.used_bytes.saturating_sub(header_bytes);
        // A one-page level's page has every page below as its child; with more pages, the
        // count is read from the level's first page once the table is open (`Table::open`).
        let children_per_page = match below {
            Some(below) if info.page_count == 1 => below.page_count,
            _ => 0,
        };
        let entry = ((level_entry_bytes / entries.max(1)) as usize).min(GUESS_PREFETCH_REACH_MAX);
        let reach_bytes =
            (GUESS_PREFETCH_ENTRIES * entry).clamp(CACHE_LINE, GUESS_PREFETCH_REACH_MAX);
        let level_bytes = info.page_count.saturating_mul(page_size as u64);
        Shape {
            start_page: info.start_page,
            start_byte: info.start_page.saturating_mul(page_size as u64) as usize,
            page_count: info.page_count,
            pages_below,
            cached: level_bytes <= cached_bytes_max,
            reach_bytes,
            window_bytes: reach_bytes + entry,
            entry_bytes_per_page: (level_entry_bytes / info.page_count.max(1)) as usize,
            children_per_page,
        }
    }

    /// Byte offset in the file of page `index` of this level (pages of `page_size` bytes).
    #[inline(always)]
    fn page_start(&self, index: u64, page_size: usize) -> usize {
        self.start_byte + index as usize * page_size
    }

    /// Prefetches the lines a guided search of a page of this level reads when its guess holds:
    /// the header line and the entries around `guess`, placed by the level's average entry
    /// bytes per page. With `header_on_its_way` (a speculative prefetch already asked for this
    /// page's header line), only the window's lines.
    ///
    /// The sampled search's 16 lines are not prefetched with them: where guesses hold (W3's
    /// keys: almost no leaf guess misses) they are lines nothing reads, and in big tables they
    /// were most of a lookup's misses in flight (several times the window's lines, on a core
    /// with 16 line-fill buffers). A missed guess then costs the fallback's rounds after the
    /// window's. Measured in `docs/bitable-format.md`: W3's warm lookups on evenly spread keys
    /// are faster without them, and no slower where most leaf guesses miss.
    #[inline(always)]
    fn prefetch_window(&self, page: &[u8], guess: Guess, header_on_its_way: bool) {
        if !header_on_its_way {
            crate::raw::prefetch(page, 0);
        }
        let center = PAGE_HEADER_LEN + guess.scale(self.entry_bytes_per_page);
        let start = center.saturating_sub(self.reach_bytes);
        crate::raw::prefetch_lines(page, start, center + self.window_bytes);
    }
}

impl Table {
    /// Opens the table file at `path` through a read-only memory map.
    ///
    /// Contract: the file must not be modified while the table is open (bitable files are
    /// written once and renamed into place; replace a table by building a new one and renaming
    /// it, which leaves open maps of the old file intact).
    pub fn open(path: impl AsRef<Path>) -> Result<Table> {
        // O_NONBLOCK: a FIFO's open returns at once instead of waiting for a writer, so it
        // can be refused below (for a regular file the flag changes nothing).
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path.as_ref());
        let file = io("open the table file", file)?;
        let metadata = io("read the table file's length", file.metadata())?;
        if !metadata.is_file() {
            return Err(Error::Io {
                operation: "open the table file",
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "it is {}, not a table file; give the path of a regular file",
                        special_kind(&metadata)
                    ),
                ),
            });
        }
        let len = metadata.len();
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
        let mut table = Table {
            backing,
            header,
            verified,
            shapes: [Shape::default(); LEVELS_MAX],
            top: OnceLock::new(),
        };
        table.shape_levels(CACHED_LEVEL_BYTES_MAX);
        Ok(table)
    }

    /// Derives every level's `Shape`, taking levels of at most `cached_bytes_max` bytes as cached.
    fn shape_levels(&mut self, cached_bytes_max: u64) {
        self.top = OnceLock::new();
        let header = &self.header;
        self.shapes = std::array::from_fn(|level| {
            Shape::of(
                &header.levels,
                level,
                header.pair_count,
                header.page_size,
                cached_bytes_max,
            )
        });
        self.read_children_per_page();
    }

    /// Takes levels of at most `bytes` as cached instead of `CACHED_LEVEL_BYTES_MAX` (tests: 0
    /// sends every level through the prefetching path, `u64::MAX` through the cached one).
    #[cfg(test)]
    pub(crate) fn set_cached_level_bytes_max(&mut self, bytes: u64) {
        self.shape_levels(bytes);
    }

    /// Sets `Shape::children_per_page` of each branch level of more than one page from its first
    /// page (validated here, one page per level: open stays constant-time), where the header's
    /// page counts agree: `c` children on every page but the last (which has `1..=c`) make
    /// `(pages - 1) * c + 1 ..= pages * c` pages below. A first page that fails validation is left
    /// for the lookup that needs it to report; the level then gets no speculative prefetch.
    fn read_children_per_page(&mut self) {
        for level in 1..self.header.levels.len() {
            let pages = self.header.levels[level].page_count;
            let below = self.header.levels[level - 1].page_count;
            if pages < 2 {
                continue;
            }
            let Ok(first) = self.page(level, 0) else {
                continue;
            };
            let children = first.count() as u64 + 1;
            if (pages - 1).saturating_mul(children) < below
                && pages.saturating_mul(children) >= below
            {
                self.shapes[level].children_per_page = children;
            }
        }
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

    /// Hints the CPU to load the lines of the leaf level from byte `from` to byte `to` of leaf
    /// `leaf` (offsets from that page's start; `to` may run into the pages after it, which
    /// follow it in the file). Clamped to the file; a hint only.
    #[inline]
    pub(crate) fn prefetch_leaf_bytes(&self, leaf: u64, from: usize, to: usize) {
        let start = self.shapes[0].page_start(leaf, self.header.page_size);
        crate::raw::prefetch_lines(self.data(), start + from, start + to);
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
        self.page_guided(level, index, None, false)
    }

    /// Page `index` of `level`, validated before its first use in this process, with the lines
    /// its search will read first already on their way: with a `guess`, the header line and the
    /// lines around the guessed entry (what `PageRef::search_guided` reads when the guess holds);
    /// without one, the header line and one line every 1/16 page (the first round of
    /// `PageRef::search`'s sampled search).
    /// `speculated`: `prefetch_child` already asked for this page's header line.
    /// Pages of a cached level (`Shape::cached`) get no prefetch.
    #[inline(always)]
    pub(crate) fn page_guided(
        &self,
        level: usize,
        index: u64,
        guess: Option<Guess>,
        speculated: bool,
    ) -> Result<PageRef<'_>> {
        let shape = &self.shapes[level];
        debug_assert!(
            index < shape.page_count,
            "callers keep page indexes inside the level"
        );
        let page_size = self.header.page_size;
        let start = shape.page_start(index, page_size);
        let bytes = &self.data()[start..start + page_size];
        // Start loading every line the search's first round reads together, before the header is
        // read: a cold page then costs about one miss latency for them all.
        if !shape.cached {
            match guess {
                Some(guess) => shape.prefetch_window(bytes, guess, speculated),
                None => crate::raw::prefetch_sixteenths(bytes),
            }
        }
        let page_number = shape.start_page + index;
        let word = &self.verified[(page_number / 64) as usize];
        let bit = 1u64 << (page_number % 64);
        if word.load(Ordering::Acquire) & bit == 0 {
            let expect = Expect {
                page_number,
                index,
                level,
                children_available: shape.pages_below,
                large_len: self.header.large_len,
            };
            page::validate(bytes, &expect)?;
            word.fetch_or(bit, Ordering::Release);
        }
        Ok(PageRef::new(bytes))
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

    /// Descends from the root to the leaf that would hold the probe's key and searches it:
    /// the leaf's index, its view, and the index of its first entry `>= key` (`> key` when
    /// `strict`), which is the leaf's count if there is none in it.
    ///
    /// The cached levels are passed in one search of their flattened separators (`Top`), which
    /// names the page of the level below them and its bounds; where there is no `Top`, the
    /// descent starts at the root.
    ///
    /// Each branch search narrows the keys below to `[low, high)`: the separator that chose the
    /// child (the child's first key) and the next one. Once both bounds are known (from the
    /// level below the root on, except along the table's left and right edges), every page is
    /// entered with a guess of where `key` lies in it, so the search reads the lines around the
    /// guess in the same round as the header (see `Guess`). The table must not be empty.
    #[inline(always)]
    pub(crate) fn locate(
        &self,
        probe: Probe<'_>,
        strict: bool,
    ) -> Result<(u64, PageRef<'_>, usize)> {
        match self.top() {
            Some(top) => {
                let (index, low, high) = top.find(probe);
                self.descend(top.level, index, low, high, probe, strict)
            }
            None => self.walk(probe, strict),
        }
    }

    /// [`Table::locate`] through every page from the root (no `Top`).
    #[inline(always)]
    pub(crate) fn walk(&self, probe: Probe<'_>, strict: bool) -> Result<(u64, PageRef<'_>, usize)> {
        let top = self.header.levels.len() - 1;
        self.descend(top, 0, None, None, probe, strict)
    }

    /// The descent of [`Table::locate`] from page `index` of `level`, the keys below it bounded
    /// by `low` and `high` where known.
    #[inline(always)]
    fn descend<'t>(
        &'t self,
        level: usize,
        mut index: u64,
        mut low: Option<&'t [u8]>,
        mut high: Option<&'t [u8]>,
        probe: Probe<'_>,
        strict: bool,
    ) -> Result<(u64, PageRef<'t>, usize)> {
        let mut guess = match (low, high) {
            (Some(low), Some(high)) => Guess::between_probe(low, high, probe),
            _ => None,
        };
        let mut speculated = None;
        for level in (1..=level).rev() {
            let child = guess.and_then(|guess| self.prefetch_child(level, index, guess));
            let page = self.page_guided(level, index, guess, speculated == Some(index))?;
            speculated = child;
            let slot = page.search_guided(probe, true, guess, self.shapes[level].cached);
            if let Some(separator) = slot.checked_sub(1) {
                low = Some(page.key(separator));
            }
            if slot < page.count() {
                high = Some(page.key(slot));
            }
            guess = match (low, high) {
                (Some(low), Some(high)) => Guess::between_probe(low, high, probe),
                _ => None,
            };
            index = page.first_child() + slot as u64;
        }
        let leaf = self.page_guided(0, index, guess, speculated == Some(index))?;
        let slot = leaf.search_guided(probe, strict, guess, self.shapes[0].cached);
        Ok((index, leaf, slot))
    }

    /// The flattened cached levels, built on first use (`top.rs`).
    #[inline(always)]
    fn top(&self) -> Option<&Top> {
        match self.top.get() {
            Some(top) => top.as_ref(),
            None => self.init_top(),
        }
    }

    /// Builds the flattened cached levels and publishes them. Readers never wait for another
    /// reader's build: threads that arrive before the first build is published build their own,
    /// and all but the first published are dropped (once per open table; an array is about 250
    /// KiB for W3's 24-byte keys at 130M pairs, and at most a few MiB for very short keys,
    /// bounded by the cached levels' bytes); `OnceLock::set` holds its cell only to move the
    /// finished value in.
    #[cold]
    #[inline(never)]
    fn init_top(&self) -> Option<&Top> {
        let _ = self.top.set(self.build_top());
        self.top.get().and_then(Option::as_ref)
    }

    /// The level the flattened cached levels name pages of, and how many separators they hold;
    /// `None` where lookups walk every page (tests).
    #[cfg(test)]
    pub(crate) fn top_shape(&self) -> Option<(usize, usize)> {
        self.top().map(|top| (top.level, top.len()))
    }

    /// Builds [`Top`] from the cached branch levels (every page of them read and validated, at
    /// most `CACHED_LEVEL_BYTES_MAX` bytes per level): `None` if the table has none, or if a
    /// page of them fails validation, holds keys out of order or does not cover the level below
    /// in order (the pages' own walk then answers, and reports what it meets).
    fn build_top(&self) -> Option<Top> {
        let levels = self.header.levels.len();
        let root = levels.checked_sub(1)?;
        // The lowest branch level of the cached run from the root down.
        let mut lowest = None;
        for level in (1..=root).rev() {
            if !self.shapes[level].cached {
                break;
            }
            lowest = Some(level);
        }
        let lowest = lowest?;
        let mut builder = TopBuilder::new();
        let mut next_child = 0u64;
        self.flatten(root, 0, lowest, &mut builder, &mut next_child)?;
        // The in-order walk met every page of the level below once, in order (and so pushed one
        // separator fewer than there are such pages).
        if next_child != self.shapes[lowest].pages_below {
            return None;
        }
        Some(builder.finish(lowest - 1))
    }

    /// The in-order walk of [`Table::build_top`] below page `index` of `level` (at least
    /// `lowest`): each key between two children, and at `lowest` the count of children, which
    /// must follow on from `next_child`.
    fn flatten(
        &self,
        level: usize,
        index: u64,
        lowest: usize,
        builder: &mut TopBuilder,
        next_child: &mut u64,
    ) -> Option<()> {
        let page = self.page(level, index).ok()?;
        if level == lowest {
            if page.first_child() != *next_child {
                return None;
            }
            *next_child += page.count() as u64 + 1;
            for slot in 0..page.count() {
                builder.push(page.key(slot))?;
            }
            return Some(());
        }
        for slot in 0..=page.count() {
            if let Some(separator) = slot.checked_sub(1) {
                builder.push(page.key(separator))?;
            }
            self.flatten(
                level - 1,
                page.first_child() + slot as u64,
                lowest,
                builder,
                next_child,
            )?;
        }
        Some(())
    }

    /// `Shape::children_per_page` of a level (tests).
    #[cfg(test)]
    pub(crate) fn children_per_page(&self, level: usize) -> u64 {
        self.shapes[level].children_per_page
    }

    /// Starts loading, speculatively, the lines that the search of the child of branch page
    /// `index` of `level` will read first, before the branch page itself has arrived: the guess
    /// places the key among the page's children as it places it among the page's keys, and the
    /// child's index follows from the page's index where every page of the level has the same
    /// number of children (`Shape::children_per_page`). When the guess holds, the branch page and
    /// the child are loaded in the same round; when it does not, a few lines were loaded for
    /// nothing. A hint only: nothing reads these lines unless the search leads there. Returns
    /// the child's index in the level below, if it prefetched one.
    #[inline(always)]
    fn prefetch_child(&self, level: usize, index: u64, guess: Guess) -> Option<u64> {
        let below = &self.shapes[level.checked_sub(1)?];
        let children = self.shapes[level].children_per_page;
        if children == 0 || below.cached {
            return None;
        }
        let first = index.checked_mul(children)?;
        let (slot, within) = guess.split(children);
        let child = first + slot;
        if child >= below.page_count {
            return None;
        }
        let page_size = self.header.page_size;
        let start = below.page_start(child, page_size);
        let page = self.data().get(start..start + page_size)?;
        below.prefetch_window(page, within, false);
        Some(child)
    }

    /// The value stored under `key`, borrowed from the table.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>> {
        if self.header.levels.is_empty() {
            return Ok(None);
        }
        let probe = Probe::new(key);
        let (leaf, page, slot) = self.locate(probe, false)?;
        if slot < page.count() && page.holds(slot, probe) {
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

/// What a file that is not a regular file is, in words.
fn special_kind(metadata: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}
