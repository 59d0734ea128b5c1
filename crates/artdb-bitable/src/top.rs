//! The cached top of a table's branch levels, flattened into one sorted array of separators.
//!
//! The levels that stay in the CPU's caches (`Shape::cached`: the root and, in big tables, the
//! level below it) cost a lookup no cache misses, only instructions: at each of their pages a
//! descent reads and decodes the page header, checks the page's first-use mark, searches the
//! page and carries the bounds down. [`Top`] replaces that walk with one search of an array built
//! once per open table from those pages (read and validated as a descent would): the keys of
//! every cached branch page in key order (an in-order walk of the cached levels), which are
//! exactly the first keys of the pages of the level below them, but the first. A search for `key`
//! counts the separators `<= key` (the page of the level below that the descent would reach) and
//! takes the separators on either side of it as the bounds the descent would have carried (the
//! nearest ones, whatever level they were stored at).
//!
//! The search compares the keys' first eight bytes as big-endian integers (zero-padded past a
//! key's end, which keeps byte order: `page::head_of`), and only separators whose head equals the
//! key's are compared in full. The array holds at most the cached levels' bytes
//! (`CACHED_LEVEL_BYTES_MAX` per level), whatever the table's size, so building it is bounded
//! and open stays constant-time (it is built by the first lookup, not by `Table::open`).

use crate::page::{head_of, Probe};

/// Heads per block: one cache line.
const BLOCK: usize = 8;

/// Eight heads on one cache line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u64; BLOCK]);

/// The separators of a table's cached branch levels, in key order.
///
/// The heads are searched in two steps, each touching few lines, so that the search stays
/// cheap where the leaf traffic of big tables evicts the array from the nearer caches: the
/// first head of every block of eight (`summary`, 8 bytes per 64 of separators), then the one
/// block (one cache line) that the key falls in.
pub(crate) struct Top {
    /// The level whose pages a search names (the level below the lowest cached branch level).
    pub(crate) level: usize,
    /// First eight bytes of each separator (`page::head_of`), eight to a line; the last block
    /// is padded with `u64::MAX`, which no count includes.
    heads: Box<[Block]>,
    /// The first head of each block.
    summary: Box<[u64]>,
    /// The separators' bytes, one after another.
    bytes: Box<[u8]>,
    /// End of separator `i` in `bytes` (its start is the previous end, or 0).
    ends: Box<[usize]>,
}

/// Separator `index` of `bytes`, where separator `i` ends at `ends[i]` and starts where the one
/// before it ends (or at 0).
#[inline(always)]
fn separator<'s>(bytes: &'s [u8], ends: &[usize], index: usize) -> &'s [u8] {
    let start = index.checked_sub(1).map_or(0, |before| ends[before]);
    &bytes[start..ends[index]]
}

/// Collects a [`Top`] in key order.
pub(crate) struct TopBuilder {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl TopBuilder {
    /// An empty builder.
    pub(crate) fn new() -> TopBuilder {
        TopBuilder {
            bytes: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Appends the next separator; `None` if it does not sort after the last one (a page
    /// that passed its checksum but holds keys out of order: the caller then keeps the descent,
    /// whose answers on such a page are the ones `Table::verify` reports).
    pub(crate) fn push(&mut self, key: &[u8]) -> Option<()> {
        if let Some(last) = self.ends.len().checked_sub(1).map(|last| self.key(last)) {
            if last >= key {
                return None;
            }
        }
        self.bytes.extend_from_slice(key);
        self.ends.push(self.bytes.len());
        Some(())
    }

    fn key(&self, index: usize) -> &[u8] {
        separator(&self.bytes, &self.ends, index)
    }

    /// The finished array, whose searches name pages of `level`.
    pub(crate) fn finish(self, level: usize) -> Top {
        let len = self.ends.len();
        let heads: Box<[Block]> = (0..len.div_ceil(BLOCK))
            .map(|block| {
                let first = block * BLOCK;
                let mut heads = [u64::MAX; BLOCK];
                for (at, head) in heads.iter_mut().enumerate().take(len - first) {
                    *head = head_of(self.key(first + at));
                }
                Block(heads)
            })
            .collect();
        let summary = heads.iter().map(|block| block.0[0]).collect();
        Top {
            level,
            heads,
            summary,
            bytes: self.bytes.into_boxed_slice(),
            ends: self.ends.into_boxed_slice(),
        }
    }
}

impl Top {
    /// Separators held.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Separator `index` (`index < self.len()`).
    #[inline(always)]
    fn key(&self, index: usize) -> &[u8] {
        separator(&self.bytes, &self.ends, index)
    }

    /// The page of `self.level` that a descent for `probe` reaches, with the nearest separators
    /// below (`<= key`) and above (`> key`), if any: the number of separators `<= key`, and
    /// those two.
    #[inline(always)]
    pub(crate) fn find(&self, probe: Probe<'_>) -> (u64, Option<&[u8]>, Option<&[u8]>) {
        let head = probe.head();
        // The block the key falls in: the last whose first head is `<= head` (the blocks before
        // it hold only such heads, the ones after it none).
        let block = self.summary.partition_point(|&first| first <= head);
        let Some(block) = block.checked_sub(1) else {
            // Every separator sorts after the key.
            return (0, None, self.key_checked(0));
        };
        let mut in_block = 0;
        for &h in &self.heads[block].0 {
            in_block += usize::from(h <= head);
        }
        // Separators with a smaller head sort before the key, with a larger one after it.
        let through = (block * BLOCK + in_block).min(self.len());
        let mut index = through;
        // Those with the same head (usually none) are compared in full: from the first of them
        // (found by a binary search, since a table's keys may all share a head), the count of
        // those `<= key`.
        if through > 0 && self.head(through - 1) == head {
            let key = probe.key();
            let first = partition(0, through - 1, |i| self.head(i) < head);
            index = partition(first, through, |i| self.key(i) <= key);
        }
        let low = index.checked_sub(1).map(|before| self.key(before));
        (index as u64, low, self.key_checked(index))
    }

    /// Head `index` (`index < self.len()`).
    #[inline(always)]
    fn head(&self, index: usize) -> u64 {
        self.heads[index / BLOCK].0[index % BLOCK]
    }

    /// Separator `index`, if there is one.
    #[inline(always)]
    fn key_checked(&self, index: usize) -> Option<&[u8]> {
        (index < self.len()).then(|| self.key(index))
    }
}

/// The first index in `low..high` for which `before` is false, where `before` holds for a prefix
/// of that range (a binary search).
#[inline(always)]
fn partition(mut low: usize, mut high: usize, before: impl Fn(usize) -> bool) -> usize {
    while low < high {
        let middle = low + (high - low) / 2;
        if before(middle) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}
