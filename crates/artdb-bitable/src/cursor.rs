//! Cursors and iterators over a table.
//!
//! A cursor is either positioned on a pair or unpositioned (before the first / after the last /
//! after a failed seek). Seeks: `seek_lower_bound(k)` -> first key `>= k`; `seek_upper_bound(k)` ->
//! first key `> k` (C++ `upper_bound`); `seek(k)` -> exactly `k`. Then `next`/`prev` move one pair,
//! crossing leaf pages through their contiguous level-relative indexes (no sibling pointers are
//! needed because the leaves of a table are contiguous).
//!
//! Invariant: when positioned, `leaf < leaf_pages` and `slot < count` of that validated page, and
//! `entry` holds the resolved key and value (a large value's checksum was checked on arrival).

use crate::error::Result;
use crate::page::{compare_keys, PageRef, Probe, StoredValue};
use crate::table::Table;
use std::ops::Bound;

/// A position in a table.
pub struct Cursor<'t> {
    table: &'t Table,
    leaf: u64,
    slot: usize,
    entry: Option<(&'t [u8], &'t [u8])>,
    /// The leaf page last used, so steps inside a page skip the page lookup.
    page: Option<(u64, PageRef<'t>)>,
    /// How far ahead `next` has prefetched: a byte offset from the start of leaf `leaf` (it may
    /// run past the page into the next ones, which follow it in the file).
    ahead: usize,
}

/// Bytes that `next` keeps prefetched ahead of the entry it lands on. A scan reads its leaves
/// sequentially; a lookup's prefetches load only the lines around the key it seeks, so without
/// this a scan waits for each further line in turn until the hardware prefetcher catches up
/// (W3's scan100 lost ground to the sorted-array peer without it; see
/// `docs/bitable-format.md`). 1 KiB is 16 lines, the line-fill buffers of one core; each step
/// then asks for about one new line. (The only distance tried: not tuned.)
const SCAN_AHEAD_BYTES: usize = 1024;

impl<'t> Cursor<'t> {
    /// An unpositioned cursor over `table`.
    pub fn new(table: &'t Table) -> Cursor<'t> {
        Cursor {
            table,
            leaf: 0,
            slot: 0,
            entry: None,
            page: None,
            ahead: 0,
        }
    }

    /// The key under the cursor, if positioned.
    #[inline]
    pub fn key(&self) -> Option<&'t [u8]> {
        self.entry.map(|(key, _)| key)
    }

    /// The value under the cursor, if positioned.
    #[inline]
    pub fn value(&self) -> Option<&'t [u8]> {
        self.entry.map(|(_, value)| value)
    }

    /// The pair under the cursor, if positioned.
    #[inline]
    pub fn entry(&self) -> Option<(&'t [u8], &'t [u8])> {
        self.entry
    }

    /// Leaf page `leaf`, from the cache when the cursor is already on it.
    #[inline]
    fn leaf_page(&mut self, leaf: u64) -> Result<PageRef<'t>> {
        if let Some((cached, page)) = self.page {
            if cached == leaf {
                return Ok(page);
            }
        }
        let page = self.table.page(0, leaf)?;
        self.page = Some((leaf, page));
        Ok(page)
    }

    /// Positions on (leaf, slot), or past the end of that leaf onto the next leaf's first pair.
    #[inline]
    fn land(&mut self, leaf: u64, slot: usize) -> Result<bool> {
        let page = self.leaf_page(leaf)?;
        if slot < page.count() {
            return self.load(leaf, slot);
        }
        if leaf + 1 < self.table.leaf_pages() {
            return self.load(leaf + 1, 0);
        }
        self.entry = None;
        Ok(false)
    }

    #[inline]
    fn load(&mut self, leaf: u64, slot: usize) -> Result<bool> {
        let page = self.leaf_page(leaf)?;
        let key = page.key(slot);
        let value = self.table.resolve(leaf, page.value(slot))?;
        self.ahead = match leaf.checked_sub(self.leaf) {
            Some(0) => self.ahead,
            Some(1) => self.ahead.saturating_sub(self.table.page_size()),
            _ => 0,
        };
        self.leaf = leaf;
        self.slot = slot;
        self.entry = Some((key, value));
        Ok(true)
    }

    /// Moves to the first pair; `false` if the table is empty.
    pub fn first(&mut self) -> Result<bool> {
        if self.table.leaf_pages() == 0 {
            self.entry = None;
            return Ok(false);
        }
        self.load(0, 0)
    }

    /// Moves to the last pair; `false` if the table is empty.
    pub fn last(&mut self) -> Result<bool> {
        let pages = self.table.leaf_pages();
        if pages == 0 {
            self.entry = None;
            return Ok(false);
        }
        let count = self.leaf_page(pages - 1)?.count();
        self.load(pages - 1, count - 1)
    }

    /// Moves to the first key `>= key`; `false` (unpositioned) if there is none.
    pub fn seek_lower_bound(&mut self, key: &[u8]) -> Result<bool> {
        self.seek_bound(key, false)
    }

    /// Moves to the first key `> key`; `false` (unpositioned) if there is none.
    pub fn seek_upper_bound(&mut self, key: &[u8]) -> Result<bool> {
        self.seek_bound(key, true)
    }

    fn seek_bound(&mut self, key: &[u8], strict: bool) -> Result<bool> {
        if self.table.leaf_pages() == 0 {
            self.entry = None;
            return Ok(false);
        }
        let (leaf, page, slot) = self.table.locate(Probe::new(key), strict)?;
        self.page = Some((leaf, page));
        self.ahead = 0;
        self.land(leaf, slot)
    }

    /// Moves to exactly `key`; `false` (unpositioned) if it is absent.
    pub fn seek(&mut self, key: &[u8]) -> Result<bool> {
        if self.seek_lower_bound(key)? && self.key() == Some(key) {
            return Ok(true);
        }
        self.entry = None;
        Ok(false)
    }

    /// Moves to the next pair; from unpositioned, to the first. `false` past the last pair.
    // The issue names the movement `next`/`prev`; a cursor is not an iterator (it moves both
    // ways and reports errors), so the name is kept on purpose.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<bool> {
        if self.entry.is_none() {
            return self.first();
        }
        // Fast path: the next pair is an inline value on the same page.
        if let Some((leaf, page)) = self.page {
            let slot = self.slot + 1;
            if leaf == self.leaf && slot < page.count() {
                if let StoredValue::Inline(value) = page.value(slot) {
                    self.slot = slot;
                    self.entry = Some((page.key(slot), value));
                    self.stream_ahead(page.entry_offset(slot));
                    return Ok(true);
                }
            }
        }
        let moved = self.land(self.leaf, self.slot + 1)?;
        if moved {
            if let Some((_, page)) = self.page {
                self.stream_ahead(page.entry_offset(self.slot));
            }
        }
        Ok(moved)
    }

    /// Keeps the lines from the entry at byte `at` of the current leaf to `SCAN_AHEAD_BYTES`
    /// past it on their way (only the lines not asked for yet).
    #[inline(always)]
    fn stream_ahead(&mut self, at: usize) {
        let want = at + SCAN_AHEAD_BYTES;
        if want > self.ahead {
            self.table
                .prefetch_leaf_bytes(self.leaf, self.ahead.max(at), want);
            self.ahead = want;
        }
    }

    /// Moves to the previous pair; from unpositioned, to the last. `false` before the first pair.
    pub fn prev(&mut self) -> Result<bool> {
        if self.entry.is_none() {
            return self.last();
        }
        if self.slot > 0 {
            return self.load(self.leaf, self.slot - 1);
        }
        if self.leaf > 0 {
            let count = self.leaf_page(self.leaf - 1)?.count();
            return self.load(self.leaf - 1, count - 1);
        }
        self.entry = None;
        Ok(false)
    }
}

/// Pairs in a key range, in order.
pub struct Range<'t, 'k> {
    cursor: Cursor<'t>,
    start: Option<Bound<&'k [u8]>>,
    end: Bound<&'k [u8]>,
    prefix: Option<&'k [u8]>,
    done: bool,
}

impl<'t, 'k> Range<'t, 'k> {
    fn advance(&mut self) -> Result<bool> {
        match self.start.take() {
            Some(Bound::Included(key)) => self.cursor.seek_lower_bound(key),
            Some(Bound::Excluded(key)) => self.cursor.seek_upper_bound(key),
            Some(Bound::Unbounded) => self.cursor.first(),
            None => self.cursor.next(),
        }
    }

    fn in_range(&self, key: &[u8]) -> bool {
        let below_end = match self.end {
            Bound::Included(end) => compare_keys(key, end).is_le(),
            Bound::Excluded(end) => compare_keys(key, end).is_lt(),
            Bound::Unbounded => true,
        };
        below_end && self.prefix.map_or(true, |prefix| key.starts_with(prefix))
    }
}

impl<'t, 'k> Iterator for Range<'t, 'k> {
    type Item = Result<(&'t [u8], &'t [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                return None;
            }
            Err(error) => {
                self.done = true;
                return Some(Err(error));
            }
        }
        let entry = self.cursor.entry()?;
        if self.in_range(entry.0) {
            Some(Ok(entry))
        } else {
            self.done = true;
            None
        }
    }
}

impl Table {
    /// A cursor over the table, unpositioned.
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor::new(self)
    }

    /// Pairs with keys between the bounds, in order.
    pub fn range<'t, 'k>(&'t self, start: Bound<&'k [u8]>, end: Bound<&'k [u8]>) -> Range<'t, 'k> {
        Range {
            cursor: Cursor::new(self),
            start: Some(start),
            end,
            prefix: None,
            done: false,
        }
    }

    /// Pairs whose keys start with `prefix`, in order.
    pub fn prefix<'t, 'k>(&'t self, prefix: &'k [u8]) -> Range<'t, 'k> {
        Range {
            cursor: Cursor::new(self),
            start: Some(Bound::Included(prefix)),
            end: Bound::Unbounded,
            prefix: Some(prefix),
            done: false,
        }
    }

    /// All pairs, in order.
    pub fn iter(&self) -> Range<'_, 'static> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }

    /// The first pair.
    pub fn first(&self) -> Result<Option<(&[u8], &[u8])>> {
        let mut cursor = self.cursor();
        cursor.first()?;
        Ok(cursor.entry())
    }

    /// The last pair.
    pub fn last(&self) -> Result<Option<(&[u8], &[u8])>> {
        let mut cursor = self.cursor();
        cursor.last()?;
        Ok(cursor.entry())
    }
}
