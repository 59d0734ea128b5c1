//! space: the use of every page of the file, and the allocator that reuses freed pages.
//!
//! One `u16` per page: `FREE`, a live node count (a packed page, or 1 for an extent's first
//! page), `EXTENT_TAIL` (a later page of an extent, freed with its first page), `META` (a page of
//! the newest checkpoint's catalog or space blob) or `RESERVED` (header and superblocks).
//!
//! Reuse rule (docs/recovery.md#space-reuse): a page whose last node was released by checkpoint
//! `g` is still reachable from the durable superblock `g - 1` until superblock `g` is synced, and
//! from any snapshot taken before that checkpoint. So it goes to a pending list tagged with the
//! checkpoint's *epoch*, and becomes allocatable at the start of a later checkpoint once no live
//! snapshot was taken at or before that epoch. Meta pages of checkpoint `g - 1` are freed by
//! checkpoint `g` and reusable from checkpoint `g + 1` on (no snapshot reads them).
//!
//! Ordering: the tree requires a persisted child to lie at a smaller offset than its parent (this
//! bounds every descent over file data). The allocator therefore takes a lowest page: the writer
//! asks for the lowest free run at or above the page after the image's largest child offset
//! (docs/file-format.md#ordering).

use super::format::{get_u16, get_u64, put_u16, put_u64, DATA_PAGE_FIRST, PAGE_SIZE};
use crate::error::{CorruptionKind, Error, Result};
use std::collections::BTreeSet;

/// A free page.
pub const FREE: u16 = 0;
/// A later page of an extent.
pub const EXTENT_TAIL: u16 = 0xFFFE;
/// A page of the newest checkpoint's catalog or space blob.
pub const META: u16 = 0xFFFD;
/// The header and superblock pages.
pub const RESERVED: u16 = 0xFFFC;
/// Most nodes a packed page can hold (each image is at least 8 bytes).
pub const NODES_PER_PAGE_MAX: u16 = (PAGE_SIZE / 8) as u16;
const _: () = assert!(NODES_PER_PAGE_MAX < RESERVED);

const SPACE_MAGIC: [u8; 4] = *b"SPCE";
const SPACE_PAGE_COUNT_AT: usize = 8;
/// Bytes before the per-page entries in a space blob.
pub const SPACE_BLOB_HEADER_LEN: usize = 16;

/// The space map and allocator (see the module docs).
#[derive(Debug, Clone)]
pub struct SpaceMap {
    counts: Vec<u16>,
    /// The free pages, built from `counts` on first use (`None` until then): an open reads the
    /// space blob and checks it, but builds no set of its free pages unless something is
    /// written (a file with many free pages opened measurably slower when the set was built
    /// there). Every change of `counts` goes through `parts`, which builds it first, because later
    /// `FREE` entries may be pending pages, which are not free.
    free: Option<BTreeSet<u64>>,
    pending_nodes: Vec<(u64, Vec<u64>)>,
    pending_meta: Vec<u64>,
    /// No allocation goes below this page (0: none). Set by `Db::compact` for its first dense
    /// copy, so that copy lands above every page of the old version.
    floor: u64,
}

impl SpaceMap {
    /// The space map of a new file: only the header and superblocks.
    pub fn new() -> SpaceMap {
        SpaceMap {
            counts: vec![RESERVED; DATA_PAGE_FIRST as usize],
            free: Some(BTreeSet::new()),
            pending_nodes: Vec::new(),
            pending_meta: Vec::new(),
            floor: 0,
        }
    }

    /// Sets the page below which nothing is allocated (0: no floor).
    pub fn set_floor(&mut self, page: u64) {
        self.floor = page;
    }

    /// Pages in the file's used range (the high-water mark).
    pub fn page_count(&self) -> u64 {
        self.counts.len() as u64
    }

    /// Entry of `page` (`FREE` past the end).
    pub fn entry(&self, page: u64) -> u16 {
        self.counts.get(page as usize).copied().unwrap_or(FREE)
    }

    /// Pages free now (allocatable).
    pub fn free_pages(&self) -> u64 {
        match &self.free {
            Some(free) => free.len() as u64,
            // Nothing changed since the blob was read: every `FREE` entry is free.
            None => self.counts.iter().filter(|&&entry| entry == FREE).count() as u64,
        }
    }

    /// The entries and the set of free pages, for a change: the one way to change an entry.
    /// The set is built from the entries on first use, before any change (see the field's
    /// docs), so no method can change an entry without it.
    fn parts(&mut self) -> (&mut Vec<u16>, &mut BTreeSet<u64>) {
        let counts = &mut self.counts;
        let free = self.free.get_or_insert_with(|| {
            counts
                .iter()
                .enumerate()
                .filter(|(page, &entry)| entry == FREE && *page as u64 >= DATA_PAGE_FIRST)
                .map(|(page, _)| page as u64)
                .collect()
        });
        (counts, free)
    }

    /// Pages freed but waiting for snapshots or the next checkpoint.
    pub fn pending_pages(&self) -> u64 {
        self.pending_nodes
            .iter()
            .map(|(_, pages)| pages.len() as u64)
            .sum::<u64>()
            + self.pending_meta.len() as u64
    }

    /// Pending node pages that a snapshot pinning `epoch` keeps from reuse (those released by
    /// checkpoints at or after `epoch`).
    pub fn pages_pinned_at(&self, epoch: u64) -> u64 {
        self.pending_nodes
            .iter()
            .filter(|(released_at, _)| *released_at >= epoch)
            .map(|(_, pages)| pages.len() as u64)
            .sum()
    }

    /// Keeps every page free now from reuse until the pins allow epoch `0` (a writer opening
    /// beside a reader of another process that reads an older checkpoint, which may reach pages
    /// that the file's space map records as free).
    pub fn hold_free_pages(&mut self) {
        let (_, free) = self.parts();
        let held: Vec<u64> = std::mem::take(free).into_iter().collect();
        if !held.is_empty() {
            self.pending_nodes.insert(0, (0, held));
        }
    }

    /// The smallest epoch of a pending page, if any.
    pub fn pending_epoch_min(&self) -> Option<u64> {
        self.pending_nodes.first().map(|(epoch, _)| *epoch)
    }

    /// Starts a checkpoint: promotes pending pages that no snapshot pinned at or before their
    /// epoch can reach (`pinned_epoch_min` = the smallest epoch of a live snapshot, if any) and
    /// leaves the rest pending.
    pub fn begin_checkpoint(&mut self, pinned_epoch_min: Option<u64>) {
        let meta = std::mem::take(&mut self.pending_meta);
        let pending = std::mem::take(&mut self.pending_nodes);
        let (_, free) = self.parts();
        free.extend(meta);
        let mut kept = Vec::new();
        for (epoch, pages) in pending {
            if pinned_epoch_min.map_or(true, |pinned| pinned > epoch) {
                free.extend(pages);
            } else {
                kept.push((epoch, pages));
            }
        }
        self.pending_nodes = kept;
    }

    /// Allocates `pages` consecutive pages, the lowest free run at or above `page_min`, else at
    /// the end of the file; returns the first page.
    pub fn allocate(&mut self, pages: u64, page_min: u64) -> u64 {
        debug_assert!(pages > 0, "allocation of zero pages");
        let page_min = page_min.max(DATA_PAGE_FIRST).max(self.floor);
        let (counts, free) = self.parts();
        let first = find_free_run(free, pages, page_min).unwrap_or_else(|| {
            let end = counts.len() as u64;
            let first = end.max(page_min);
            free.extend(end..first);
            counts.resize((first + pages) as usize, FREE);
            first
        });
        for page in first..first + pages {
            free.remove(&page);
        }
        first
    }

    /// Drops free pages (not pending ones) from the end of the file's used range, so the file
    /// can shrink.
    pub fn trim_free_tail(&mut self) {
        let (counts, free) = self.parts();
        while counts.len() as u64 > DATA_PAGE_FIRST {
            let last = counts.len() as u64 - 1;
            if counts[last as usize] != FREE || !free.remove(&last) {
                break;
            }
            counts.pop();
        }
    }

    /// Marks an allocated page as holding one more node.
    pub fn add_node(&mut self, page: u64) {
        let entry = &mut self.parts().0[page as usize];
        debug_assert!(
            *entry < NODES_PER_PAGE_MAX,
            "page {page} entry {entry} cannot take a node"
        );
        *entry += 1;
    }

    /// Marks pages `first..first + pages` as an extent holding one node.
    pub fn add_extent(&mut self, first: u64, pages: u64) {
        let (counts, _) = self.parts();
        counts[first as usize] = 1;
        for page in first + 1..first + pages {
            counts[page as usize] = EXTENT_TAIL;
        }
    }

    /// Marks pages as the newest checkpoint's metadata.
    pub fn add_meta(&mut self, first: u64, pages: u64) {
        let (counts, _) = self.parts();
        for page in first..first + pages {
            counts[page as usize] = META;
        }
    }

    /// Returns allocated pages that were never published (a failed bulk load) to the free set.
    pub fn unallocate(&mut self, pages: impl IntoIterator<Item = u64>) {
        let (counts, free) = self.parts();
        for page in pages {
            if let Some(entry) = counts.get_mut(page as usize) {
                *entry = FREE;
                free.insert(page);
            }
        }
    }

    /// Frees the meta pages of the previous checkpoint (reusable from the next checkpoint on).
    pub fn release_meta(&mut self, first: u64, pages: u64) {
        let (counts, _) = self.parts();
        let mut released = Vec::new();
        for page in first..first + pages {
            if let Some(entry @ &mut META) = counts.get_mut(page as usize) {
                *entry = FREE;
                released.push(page);
            }
        }
        self.pending_meta.extend(released);
    }

    /// Releases the node at byte `offset`; pages whose last node goes are pending with `epoch`.
    pub fn release_node(&mut self, offset: u64, epoch: u64) -> Result<()> {
        let page = offset / PAGE_SIZE;
        let entry = self.entry(page);
        if entry == FREE || entry > NODES_PER_PAGE_MAX {
            return Err(Error::corruption(
                offset,
                CorruptionKind::Invariant(format!(
                    "released a node in page {page} whose space entry is {entry:#x}"
                )),
            ));
        }
        let (counts, _) = self.parts();
        counts[page as usize] = entry - 1;
        if entry == 1 {
            let mut freed = vec![page];
            let mut tail = page + 1;
            while let Some(entry @ &mut EXTENT_TAIL) = counts.get_mut(tail as usize) {
                *entry = FREE;
                freed.push(tail);
                tail += 1;
            }
            match self.pending_nodes.last_mut() {
                Some((last, pages)) if *last == epoch => pages.extend(freed),
                _ => self.pending_nodes.push((epoch, freed)),
            }
        }
        Ok(())
    }

    /// The space blob's length in bytes for `page_count` pages.
    pub fn blob_len(page_count: u64) -> u64 {
        SPACE_BLOB_HEADER_LEN as u64 + 2 * page_count
    }

    /// The space blob (docs/file-format.md#space-blob). Pending pages are stored as free: after
    /// a reopen no snapshot can reach them.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![0u8; Self::blob_len(self.page_count()) as usize];
        bytes[..4].copy_from_slice(&SPACE_MAGIC);
        put_u64(&mut bytes, SPACE_PAGE_COUNT_AT, self.page_count());
        for (page, &entry) in self.counts.iter().enumerate() {
            put_u16(&mut bytes, SPACE_BLOB_HEADER_LEN + 2 * page, entry);
        }
        bytes
    }

    /// Parses a space blob read from byte `at`; `page_count` is the superblock's.
    pub fn decode(bytes: &[u8], at: u64, page_count: u64) -> Result<SpaceMap> {
        let bad = |what| Error::corruption(at, CorruptionKind::Metadata(what));
        if bytes.len() < SPACE_BLOB_HEADER_LEN || bytes[..4] != SPACE_MAGIC {
            return Err(bad("space blob magic"));
        }
        if get_u64(bytes, SPACE_PAGE_COUNT_AT) != page_count
            || bytes.len() as u64 != Self::blob_len(page_count)
        {
            return Err(bad("space blob page count"));
        }
        let mut map = SpaceMap::new();
        map.counts.clear();
        for page in 0..page_count {
            let entry = get_u16(bytes, SPACE_BLOB_HEADER_LEN + 2 * page as usize);
            let valid = match entry {
                RESERVED => page < DATA_PAGE_FIRST,
                _ if page < DATA_PAGE_FIRST => false,
                EXTENT_TAIL => {
                    page > 0
                        && matches!(map.counts.last(), Some(&previous) if previous == 1 || previous == EXTENT_TAIL)
                }
                META | FREE => true,
                count => count <= NODES_PER_PAGE_MAX,
            };
            if !valid {
                return Err(bad("space blob entry"));
            }
            map.counts.push(entry);
        }
        // Built on first use (the field's docs).
        map.free = None;
        Ok(map)
    }

    /// Node count per page, for `verify` to compare with what the trees reach.
    pub fn entries(&self) -> &[u16] {
        &self.counts
    }
}

/// The lowest run of `pages` consecutive free pages at or above `page_min`.
fn find_free_run(free: &BTreeSet<u64>, pages: u64, page_min: u64) -> Option<u64> {
    let mut run_first = 0;
    let mut run_len = 0;
    for &page in free.range(page_min..) {
        if run_len > 0 && page == run_first + run_len {
            run_len += 1;
        } else {
            run_first = page;
            run_len = 1;
        }
        if run_len == pages {
            return Some(run_first);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_respects_the_minimum_and_reuse_waits_for_pins() {
        let mut map = SpaceMap::new();
        map.begin_checkpoint(None);
        let a = map.allocate(1, 0);
        let b = map.allocate(3, 0);
        let c = map.allocate(1, 0);
        assert!(a < b && b + 3 <= c);
        map.add_node(a);
        map.add_node(a);
        map.add_extent(b, 3);
        map.add_node(c);
        map.release_node(a * PAGE_SIZE + 24, 5).unwrap();
        assert_eq!(map.entry(a), 1);
        map.release_node(a * PAGE_SIZE + 64, 5).unwrap();
        map.release_node(b * PAGE_SIZE + 24, 5).unwrap();
        assert!(
            map.release_node(b * PAGE_SIZE + 24, 5).is_err(),
            "double release"
        );
        assert_eq!(map.pending_pages(), 4);
        map.begin_checkpoint(Some(5));
        assert_eq!(map.free_pages(), 0, "a snapshot of epoch 5 pins them");
        map.begin_checkpoint(Some(6));
        assert_eq!(map.free_pages(), 4);
        assert_eq!(
            map.allocate(1, b + 1),
            b + 1,
            "lowest free page at or above the minimum"
        );
        map.unallocate([b + 1]);
        assert_eq!(
            map.allocate(3, 0),
            a,
            "the freed page and extent are reused as one run"
        );
        assert_eq!(
            map.allocate(1, c + 5),
            c + 5,
            "past the end, leaving a free gap"
        );
        assert_eq!(map.allocate(1, 0), b + 2, "lowest first");
        assert_eq!(map.allocate(1, 0), c + 1, "then the gap");
        let decoded = SpaceMap::decode(&map.encode(), 0, map.page_count()).unwrap();
        assert_eq!(decoded.entries(), map.entries());
    }

    /// A decoded map builds its free set only on first use, and before any change: pages
    /// freed after the open are pending, not free, though their entries read `FREE` too.
    #[test]
    fn a_decoded_map_builds_its_free_set_before_any_change() {
        let mut map = SpaceMap::new();
        map.begin_checkpoint(None);
        let pages: Vec<u64> = (0..6).map(|_| map.allocate(1, 0)).collect();
        for &page in &pages[..4] {
            map.add_node(page);
        }
        map.add_meta(pages[4], 1);
        // pages[5] stays free.
        let mut decoded = SpaceMap::decode(&map.encode(), 0, map.page_count()).unwrap();
        assert!(decoded.free.is_none(), "an open builds no free set");
        assert_eq!(decoded.free_pages(), 1);
        decoded.release_meta(pages[4], 1);
        decoded.release_node(pages[0] * PAGE_SIZE, 3).unwrap();
        assert_eq!(decoded.entry(pages[0]), FREE);
        assert_eq!(decoded.free_pages(), 1, "released pages are pending");
        assert_eq!(
            decoded.allocate(1, 0),
            pages[5],
            "only the page free at open"
        );
        assert_eq!(decoded.allocate(1, 0), pages[5] + 1, "then past the end");
        decoded.begin_checkpoint(None);
        assert_eq!(decoded.allocate(1, 0), pages[0]);
        assert_eq!(decoded.allocate(1, 0), pages[4]);
    }
}
