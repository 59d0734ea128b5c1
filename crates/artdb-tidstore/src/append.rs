//! The append path: blocks that arrive above every block the store has held are kept in a sorted
//! vector and built into the tree at once, instead of one tree insert each.
//!
//! PostgreSQL's vacuum adds dead tuples block by block in ascending block order, then only reads.
//! A tree insert per block (a descent, and node growth through Node4/16/48/256 or a pack's
//! copies) costs tens to hundreds of ns; an append here is a vector push, and
//! [`TidStore::flush_appends`] builds the whole vector with `Tree::bulk_build_fixed` (artdb-art's
//! top-down build from a sorted slice of fixed-width pairs: each node allocated once at its
//! final size). The vector holds each pair in exactly the form that build takes (`BlockPair`:
//! the 4-byte key, the value's 7 bytes and its length), so the flush hands it over as it is.
//!
//! Invariants (`verify` checks them):
//! 1. the appended blocks are strictly ascending and all above every block in the tree, so the
//!    store's block order is the tree's blocks followed by the appended ones;
//! 2. `high_water` is at least every block ever stored (tree or appended); a block above it is
//!    new, so appending it needs no lookup. It never goes down (a removal leaves it: it is an
//!    upper bound, and over-estimating only sends a later block down the ordinary path).
//!
//! Every call order stays correct:
//! - a block above `high_water` with at least one offset is appended (`insert`,
//!   `set_block_offsets`);
//! - a block at or below it goes the ordinary way, into the tree; if it falls inside the
//!   appended range and is not an appended block, or it is to be removed, the appended blocks are
//!   flushed first (invariant 1 holds because a tree block is then never above an appended one);
//! - an appended block that gains an offset or is replaced is changed in place in the vector;
//! - reads (`contains`, `block_offsets`, iteration, the lookup cursor) see the appended blocks
//!   through a binary search (point reads) or after the tree's last block (ordered walks), so a
//!   lookup between appends is answered exactly; after a flush they are tree reads again.
//!
//! Flushing builds the tree from the vector if the tree is empty; if the tree is not empty and
//! holds at most [`REBUILD_RATIO`] times as many blocks as are appended, it rebuilds the tree from
//! its own pairs followed by the appended ones (one pass each: linear); otherwise it inserts the
//! appended blocks one by one. A store that alternates appends and flushes therefore pays at most
//! a constant factor over a single build (each rebuild at least adds a `1/REBUILD_RATIO` share).

use crate::bitmap;
use crate::tree::{block_pair, pair_block, pair_value, BlockPair, BlockTree};
use crate::value::{fits_embedded, Encoded, Value};
use crate::{Error, TidStore};

/// A non-empty tree is rebuilt (rather than inserted into) when it holds at most this many times
/// as many blocks as are appended.
pub(crate) const REBUILD_RATIO: u64 = 8;

/// Blocks appended above the tree, ascending, with their encoded values.
#[derive(Debug, Default)]
pub(crate) struct Appended {
    pub(crate) blocks: Vec<BlockPair>,
}

impl Appended {
    pub(crate) fn len(&self) -> usize {
        self.blocks.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Whether `block` lies in the appended range (at or above the first appended block).
    #[inline]
    pub(crate) fn covers(&self, block: u32) -> bool {
        self.blocks
            .first()
            .is_some_and(|first| block >= pair_block(first))
    }

    /// Position of `block` in the vector, if appended.
    #[inline]
    pub(crate) fn find(&self, block: u32) -> Option<usize> {
        self.blocks
            .binary_search_by(|pair| pair_block(pair).cmp(&block))
            .ok()
    }

    /// The value of an appended `block`.
    #[inline]
    pub(crate) fn get(&self, block: u32) -> Result<Option<Value>, Error> {
        match self.find(block) {
            Some(index) => {
                Value::decode(block, pair_value(&self.blocks[index]).as_bytes()).map(Some)
            }
            None => Ok(None),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, block: u32, value: Encoded) {
        debug_assert!(
            self.blocks
                .last()
                .map_or(true, |last| pair_block(last) < block),
            "appended blocks ascend"
        );
        self.blocks.push(block_pair(block, value));
    }

    /// Appends `pairs` (blocks ascending, all above the last appended one).
    #[inline]
    pub(crate) fn extend(&mut self, pairs: &[BlockPair]) {
        debug_assert!(
            pairs
                .windows(2)
                .all(|two| pair_block(&two[0]) < pair_block(&two[1]))
                && pairs
                    .first()
                    .zip(self.blocks.last())
                    .map_or(true, |(first, last)| {
                        pair_block(last) < pair_block(first)
                    }),
            "appended blocks ascend"
        );
        self.blocks.extend_from_slice(pairs);
    }

    /// Heap bytes of the vector.
    pub(crate) fn bytes(&self) -> usize {
        self.blocks.capacity() * std::mem::size_of::<BlockPair>()
    }
}

impl TidStore {
    /// Builds the blocks appended since the last flush into the tree (see the module notes of
    /// `append.rs`: the append path).
    ///
    /// Reads are exact without it, but they find an appended block by a binary search over the
    /// appended vector; after the flush they are tree lookups, which are faster on large stores.
    /// Call it when a phase of ascending `set_block_offsets`/`insert` calls ends (as vacuum
    /// moves from collecting dead tuples to reading them). Every operation that needs the tree
    /// (a removal, a block below or between the appended ones) flushes first by itself; calling
    /// it again, or with nothing appended, does nothing.
    pub fn flush_appends(&mut self) -> Result<(), Error> {
        if self.appended.is_empty() {
            return Ok(());
        }
        let tree_blocks = self.tree.len();
        let appended = self.appended.len() as u64;
        if tree_blocks == 0 {
            self.tree = BlockTree::build(&self.appended.blocks)?;
        } else if tree_blocks <= appended.saturating_mul(REBUILD_RATIO) {
            let mut pairs = self.tree.pairs()?;
            pairs.extend_from_slice(&self.appended.blocks);
            self.tree = BlockTree::build(&pairs)?;
        } else {
            return self.flush_by_insert();
        }
        self.appended = Appended::default();
        Ok(())
    }

    /// Moves the appended blocks into the tree one insert at a time; on an error the blocks not
    /// yet moved stay appended (invariant 1 still holds: those moved were the lowest).
    fn flush_by_insert(&mut self) -> Result<(), Error> {
        let mut moved = 0;
        let mut result = Ok(());
        for pair in &self.appended.blocks {
            if let Err(error) = self.tree.set(pair_block(pair), &pair_value(pair)) {
                result = Err(error);
                break;
            }
            moved += 1;
        }
        self.appended.blocks.drain(..moved);
        if self.appended.blocks.is_empty() {
            self.appended = Appended::default();
        }
        result
    }

    /// Whether `block` is above every block the store has held: a new block that may be
    /// appended.
    #[inline]
    pub(crate) fn above_high_water(&self, block: u32) -> bool {
        self.high_water.map_or(true, |high| block > high)
    }

    /// Raises the high-water mark to `block` (for any block stored on the ordinary path).
    #[inline]
    pub(crate) fn note_block(&mut self, block: u32) {
        self.high_water = Some(self.high_water.map_or(block, |high| high.max(block)));
    }

    /// Appends a new block (above the high-water mark) with `value`.
    #[inline]
    pub(crate) fn append(&mut self, block: u32, value: Encoded) {
        debug_assert!(self.above_high_water(block), "block {block} is not new");
        self.appended.push(block, value);
        self.high_water = Some(block);
    }

    /// Appends a new block with `offsets` (1 or more, checked): `set_block_offsets`'s append
    /// path.
    #[inline]
    pub(crate) fn append_offsets(&mut self, block: u32, offsets: &[u16]) -> Result<(), Error> {
        let value = if fits_embedded(offsets) {
            Encoded::embedded(offsets)
        } else {
            self.new_value(block, offsets)?.encode()
        };
        self.append(block, value);
        self.len += offsets.len() as u64;
        Ok(())
    }

    /// Appends a new block (above the high-water mark) whose offsets need a bitmap, if they are
    /// valid (strictly ascending, each in `1..=max_offset`); returns `false`, having done
    /// nothing, if they are not (the caller's checks then report why) or if there are none.
    ///
    /// `set_block_offsets`'s append path for blocks with many offsets (W4's dense pattern: 291
    /// per block; 8% of the random pattern's blocks): one pass checks the offsets, the next sets
    /// their bits in freshly allocated words, which the storage hands out zeroed. The ordinary
    /// path checked each offset through `check_offset`, then zeroed the words again and set
    /// each bit through `bitmap::set`.
    pub(crate) fn append_bitmap_checked(
        &mut self,
        block: u32,
        offsets: &[u16],
    ) -> Result<bool, Error> {
        let max_offset = self.options.max_offset;
        let (mut highest, mut valid) = (0u16, !offsets.is_empty());
        for &offset in offsets {
            valid &= (offset > highest) & (offset <= max_offset);
            highest = offset;
        }
        if !valid {
            return Ok(false);
        }
        // Called after `Encoded::embedded_checked` declined valid offsets: they need a bitmap.
        debug_assert!(!fits_embedded(offsets), "{offsets:?} fit the child word");
        let handle = self.storage.alloc(bitmap::words_for(highest))?;
        let words = self.bitmap_mut(block, handle)?;
        for &offset in offsets {
            if let Some(word) = words.get_mut(usize::from(offset) / 64) {
                *word |= 1 << (offset % 64);
            }
        }
        self.append(block, Value::Bitmap(handle).encode());
        self.len += offsets.len() as u64;
        Ok(true)
    }

    /// Flushes the appended blocks if `block` falls in their range and is not one of them (the
    /// tree may only take blocks below the appended ones).
    pub(crate) fn flush_if_inside(&mut self, block: u32) -> Result<(), Error> {
        if self.appended.covers(block) && self.appended.find(block).is_none() {
            self.flush_appends()?;
        }
        Ok(())
    }

    /// The value of `block`, wherever it lives.
    #[inline]
    pub(crate) fn value_of(&self, block: u32) -> Result<Option<Value>, Error> {
        if self.appended.covers(block) {
            return self.appended.get(block);
        }
        self.tree.get(block)
    }

    /// Writes the value of `block` where it lives: in place if appended, else in the tree. The
    /// caller flushed first if `block` is inside the appended range but not appended.
    pub(crate) fn write_value(&mut self, block: u32, value: &Value) -> Result<(), Error> {
        if let Some(index) = self.appended.find(block) {
            self.appended.blocks[index].1 = value.encode().to_fixed();
            return Ok(());
        }
        debug_assert!(
            !self.appended.covers(block),
            "block {block} would go above the tree"
        );
        self.note_block(block);
        self.tree.set(block, &value.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TidStoreOptions;

    #[test]
    fn appends_stay_in_the_vector_until_flushed() {
        let mut store = TidStore::new();
        store.set_block_offsets(3, &[1, 2]).unwrap();
        store.set_block_offsets(9, &[1, 2, 3, 4, 5]).unwrap();
        store.insert(12, 7).unwrap();
        assert_eq!(store.appended.len(), 3);
        assert_eq!(store.tree.len(), 0);
        assert!(store.contains(9, 5).unwrap() && !store.contains(9, 6).unwrap());
        store.insert(9, 6).unwrap(); // an appended block grows in place
        assert_eq!(store.appended.len(), 3);
        store.flush_appends().unwrap();
        assert_eq!((store.appended.len(), store.tree.len()), (0, 3));
        assert!(store.contains(9, 6).unwrap());
        store.verify().unwrap();
    }

    #[test]
    fn bitmap_blocks_are_appended_after_one_check() {
        for insert_only in [false, true] {
            let options = TidStoreOptions {
                insert_only,
                max_offset: 3000,
            };
            let mut store = TidStore::with_options(options).unwrap();
            store.set_block_offsets(1, &[1, 2, 3, 4, 5, 6]).unwrap();
            store.set_block_offsets(2, &[1, 2, 3, 2048]).unwrap(); // 4, one above 2047
            store.set_block_offsets(3, &[7, 3000]).unwrap();
            let invalid: [&[u16]; 4] = [
                &[1, 2, 3, 4, 6, 5],
                &[0, 1, 2, 3, 4, 5],
                &[1, 2, 3, 4, 5, 3001],
                &[4, 4, 5, 6, 7, 8],
            ];
            for offsets in invalid {
                let error = store.set_block_offsets(9, offsets).unwrap_err();
                assert!(matches!(
                    error,
                    Error::OffsetsUnsorted { block: 9, .. }
                        | Error::OffsetOutOfRange { block: 9, .. }
                ));
            }
            assert_eq!((store.appended.len(), store.len()), (3, 12));
            assert!(store.contains(2, 2048).unwrap() && !store.contains(2, 2047).unwrap());
            assert!(!store.block_offsets(1).unwrap().is_embedded());
            store.verify().unwrap();
            store.flush_appends().unwrap();
            let ids: Vec<(u32, u16)> = store.ids().collect::<Result<_, _>>().unwrap();
            assert_eq!(ids.len(), 12);
            assert_eq!(ids[6..10], [(2, 1), (2, 2), (2, 3), (2, 2048)]);
            store.verify().unwrap();
        }
    }

    #[test]
    fn flush_rebuilds_a_small_tree_and_inserts_into_a_large_one() {
        let mut store = TidStore::new();
        for block in 0..100 {
            store.set_block_offsets(block, &[1]).unwrap();
        }
        store.flush_appends().unwrap();
        // 5 appended against 100 in the tree: inserted one by one.
        for block in 100..105 {
            store.set_block_offsets(block, &[2]).unwrap();
        }
        store.flush_appends().unwrap();
        assert_eq!(store.tree.len(), 105);
        // 50 against 105: rebuilt.
        for block in 200..250 {
            store.set_block_offsets(block, &[3, 4, 5, 6]).unwrap();
        }
        store.flush_appends().unwrap();
        assert_eq!((store.appended.len(), store.tree.len()), (0, 155));
        assert_eq!(store.len(), 105 + 200);
        store.verify().unwrap();
    }

    #[test]
    fn blocks_inside_the_appended_range_flush_first() {
        for insert_only in [false, true] {
            let options = TidStoreOptions {
                insert_only,
                ..Default::default()
            };
            let mut store = TidStore::with_options(options).unwrap();
            store.set_block_offsets(10, &[1]).unwrap();
            store.set_block_offsets(20, &[1]).unwrap();
            store.set_block_offsets(15, &[2]).unwrap(); // between: flushed, then the tree
            assert!(store.appended.is_empty());
            assert_eq!(store.tree.len(), 3);
            store.set_block_offsets(30, &[3]).unwrap(); // above again: appended
            store.set_block_offsets(5, &[3]).unwrap(); // below: the tree, no flush needed
            assert_eq!(store.appended.len(), 1);
            let ids: Vec<(u32, u16)> = store.ids().collect::<Result<_, _>>().unwrap();
            assert_eq!(ids, [(5, 3), (10, 1), (15, 2), (20, 1), (30, 3)]);
            store.verify().unwrap();
        }
    }
}
