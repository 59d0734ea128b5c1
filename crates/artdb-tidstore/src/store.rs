//! `TidStore`: the set of (block, offset) ids, its options and its mutations.
//!
//! Each block is one key of the block tree; its value is either up to five embedded offsets or a
//! handle to a bitmap in the bitmap storage (`value.rs`, `storage.rs`). Transitions between the
//! forms, all made here:
//!
//! | from                | operation                      | to                              |
//! | ------------------- | ------------------------------ | ------------------------------- |
//! | absent              | `insert`, `set_block_offsets`  | embedded (if it fits) or bitmap |
//! | embedded            | `insert` that no longer fits   | bitmap (`embedded_to_bitmap`)   |
//! | bitmap              | `remove` down to a fitting set | embedded (`shrink_bitmap`)      |
//! | bitmap              | `set_block_offsets`, fitting   | embedded (bitmap freed)         |
//! | any                 | `remove_block`, last `remove`, | absent                          |
//! |                     | `set_block_offsets(&[])`       |                                 |
//!
//! "Fits" is `value::fits_embedded`: 1 to 3 offsets, or 4 to 5 offsets none above 2047.
//!
//! Invariants: the representation is canonical (a fitting set embedded, any other as a bitmap
//! sized to the highest offset); every offset lies in `1..=max_offset`; `len` is the number of
//! ids. `verify` checks them all. In insert-only mode nothing is removed or replaced, so the
//! arena never has to free.

use crate::append::Appended;
use crate::bitmap;
use crate::storage::Storage;
use crate::tree::BlockTree;
use crate::value::{
    embedded_contains, embedded_len, fits_embedded, lookup, Encoded, Handle, Lookup, Value,
    EMBEDDED_OFFSETS_MAX,
};
use crate::Error;

/// The default largest offset: 2047, enough for any heap page of PostgreSQL's page sizes.
pub const MAX_OFFSET_DEFAULT: u16 = 2047;

/// How a [`TidStore`] is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TidStoreOptions {
    /// The largest valid offset (offsets run from 1); larger offsets are
    /// [`Error::OffsetOutOfRange`]. Default [`MAX_OFFSET_DEFAULT`].
    pub max_offset: u16,
    /// Allocate bitmaps from a bump arena that frees nothing (as PostgreSQL's vacuum does);
    /// `remove`, `remove_block` and replacing an existing block are then
    /// [`Error::InsertOnly`]. Default `false`.
    pub insert_only: bool,
}

impl Default for TidStoreOptions {
    fn default() -> Self {
        TidStoreOptions {
            max_offset: MAX_OFFSET_DEFAULT,
            insert_only: false,
        }
    }
}

/// A compact set of (block, offset) ids on the adaptive radix tree.
///
/// ```
/// use artdb_tidstore::TidStore;
/// let mut dead = TidStore::new();
/// dead.set_block_offsets(7, &[1, 4, 9, 12])?;
/// dead.insert(8, 3)?;
/// assert!(dead.contains(7, 9)? && !dead.contains(7, 10)?);
/// assert_eq!(dead.len(), 5);
/// let ids: Vec<(u32, u16)> = dead.ids().collect::<Result<_, _>>()?;
/// assert_eq!(ids, [(7, 1), (7, 4), (7, 9), (7, 12), (8, 3)]);
/// # Ok::<(), artdb_tidstore::Error>(())
/// ```
#[derive(Debug)]
pub struct TidStore {
    pub(crate) tree: BlockTree,
    pub(crate) storage: Storage,
    pub(crate) options: TidStoreOptions,
    pub(crate) len: u64,
    /// Blocks appended above the tree, not yet built into it (`append.rs`).
    pub(crate) appended: Appended,
    /// At least every block ever stored; blocks above it are appended (`append.rs`).
    pub(crate) high_water: Option<u32>,
}

impl Default for TidStore {
    fn default() -> Self {
        Self::new()
    }
}

impl TidStore {
    /// An empty store with the default options (offsets up to 2047, removals allowed).
    pub fn new() -> TidStore {
        TidStore {
            tree: BlockTree::new(),
            storage: Storage::heap(),
            options: TidStoreOptions::default(),
            len: 0,
            appended: Appended::default(),
            high_water: None,
        }
    }

    /// An empty store with `options`; `max_offset` 0 is [`Error::InvalidMaxOffset`].
    pub fn with_options(options: TidStoreOptions) -> Result<TidStore, Error> {
        if options.max_offset == 0 {
            return Err(Error::InvalidMaxOffset {
                max_offset: options.max_offset,
            });
        }
        let storage = if options.insert_only {
            Storage::arena()
        } else {
            Storage::heap()
        };
        Ok(TidStore {
            tree: BlockTree::new(),
            storage,
            options,
            len: 0,
            appended: Appended::default(),
            high_water: None,
        })
    }

    /// The options the store was created with.
    pub fn options(&self) -> TidStoreOptions {
        self.options
    }

    /// Number of ids in the store.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the store holds no id.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of blocks taken by the append path and not yet built into the tree (see
    /// [`TidStore::flush_appends`]); 0 after a flush.
    pub fn unflushed_blocks(&self) -> usize {
        self.appended.len()
    }

    /// Number of blocks with at least one id.
    pub fn block_count(&self) -> u64 {
        self.tree.len() + self.appended.len() as u64
    }

    /// Heap bytes the store holds: the tree's nodes plus the bitmap storage (including arena
    /// words abandoned by growth, which insert-only mode never frees).
    pub fn memory_usage(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.tree.memory_bytes()
            + self.storage.bytes()
            + self.appended.bytes()
    }

    /// Whether `(block, offset)` is in the store.
    #[inline]
    pub fn contains(&self, block: u32, offset: u16) -> Result<bool, Error> {
        self.check_offset(block, offset)?;
        if !self.appended.covers(block) {
            // A tree block: its stored bytes are tested for `offset` as they are, without the
            // decode's checks of their canonical form (`value::lookup`; `verify` checks that).
            let Some(bytes) = self.tree.get_bytes(block)? else {
                return Ok(false);
            };
            return match lookup(block, bytes, offset)? {
                Lookup::Answer(found) => Ok(found),
                Lookup::Bitmap(handle) => Ok(bitmap::contains(self.bitmap(block, handle)?, offset)),
            };
        }
        match self.value_of(block)? {
            None => Ok(false),
            Some(Value::Embedded(offsets)) => Ok(embedded_contains(&offsets, offset)),
            Some(Value::Bitmap(handle)) => {
                Ok(bitmap::contains(self.bitmap(block, handle)?, offset))
            }
        }
    }

    /// Adds `(block, offset)`; returns whether it was absent. A block above every block the
    /// store has held is appended (see [`TidStore::flush_appends`]).
    pub fn insert(&mut self, block: u32, offset: u16) -> Result<bool, Error> {
        self.check_offset(block, offset)?;
        if self.above_high_water(block) {
            self.append(block, Encoded::embedded(&[offset]));
            self.len += 1;
            return Ok(true);
        }
        self.flush_if_inside(block)?;
        let inserted = match self.value_of(block)? {
            None => {
                self.write_value(block, &Value::embedded(&[offset]))?;
                true
            }
            Some(Value::Embedded(offsets)) => self.insert_embedded(block, offsets, offset)?,
            Some(Value::Bitmap(handle)) => self.insert_bitmap(block, handle, offset)?,
        };
        self.len += u64::from(inserted);
        Ok(inserted)
    }

    /// Replaces the offsets of `block` with `offsets` (strictly ascending, each in
    /// `1..=max_offset`); an empty slice removes the block. This is vacuum's pattern: collect a
    /// block's dead offsets, then set them at once.
    ///
    /// In insert-only mode a block that already has offsets cannot be replaced
    /// ([`Error::InsertOnly`]).
    ///
    /// Blocks given in ascending order (each above every block the store has held) take the
    /// append path: they are kept in a sorted vector and built into the tree at once by
    /// [`TidStore::flush_appends`] (or by the first operation that needs the tree).
    #[inline]
    pub fn set_block_offsets(&mut self, block: u32, offsets: &[u16]) -> Result<(), Error> {
        // The append path's common case, checked and encoded in one pass and inlined into the
        // caller; anything else (a bitmap's worth of offsets, invalid offsets, an old block)
        // takes the ordinary path, which checks again and reports what is wrong.
        if self.above_high_water(block) {
            if let Some(value) = Encoded::embedded_checked(offsets, self.options.max_offset) {
                self.append(block, value);
                self.len += offsets.len() as u64;
                return Ok(());
            }
        }
        self.set_block_offsets_ordinary(block, offsets)
    }

    /// `set_block_offsets` for everything but an appended block whose offsets fit the child
    /// word.
    #[inline(never)]
    fn set_block_offsets_ordinary(&mut self, block: u32, offsets: &[u16]) -> Result<(), Error> {
        if self.above_high_water(block) && self.append_bitmap_checked(block, offsets)? {
            return Ok(());
        }
        self.check_offsets(block, offsets)?;
        if !offsets.is_empty() && self.above_high_water(block) {
            return self.append_offsets(block, offsets);
        }
        if offsets.is_empty() {
            if self.appended.covers(block) {
                self.flush_appends()?;
            }
        } else {
            self.flush_if_inside(block)?;
        }
        if self.options.insert_only && !offsets.is_empty() {
            return self.set_new_block(block, offsets);
        }
        let old = self.value_of(block)?;
        if old.is_some() && self.options.insert_only {
            return Err(Error::InsertOnly {
                block,
                operation: "replace the offsets",
            });
        }
        let old_count = match old {
            Some(value) => self.value_len(block, value)?,
            None => 0,
        };
        match (old, offsets.len()) {
            (None, 0) => {}
            (Some(old), 0) => self.remove_value(block, old)?,
            (old, _) if fits_embedded(offsets) => {
                self.write_value(block, &Value::embedded(offsets))?;
                if let Some(Value::Bitmap(handle)) = old {
                    self.storage.free(handle);
                }
            }
            (old, _) => self.set_bitmap(block, old, offsets)?,
        }
        self.len = self.len - old_count as u64 + offsets.len() as u64;
        Ok(())
    }

    /// Removes `(block, offset)`; returns whether it was present. Not in insert-only mode.
    pub fn remove(&mut self, block: u32, offset: u16) -> Result<bool, Error> {
        self.check_offset(block, offset)?;
        if self.options.insert_only {
            return Err(Error::InsertOnly {
                block,
                operation: "remove an offset",
            });
        }
        if self.appended.covers(block) {
            self.flush_appends()?;
        }
        let removed = match self.tree.get(block)? {
            None => false,
            Some(Value::Embedded(offsets)) => self.remove_embedded(block, offsets, offset)?,
            Some(Value::Bitmap(handle)) => self.remove_from_bitmap(block, handle, offset)?,
        };
        self.len -= u64::from(removed);
        Ok(removed)
    }

    /// Removes every offset of `block`; returns how many there were. Not in insert-only mode.
    pub fn remove_block(&mut self, block: u32) -> Result<usize, Error> {
        if self.options.insert_only {
            return Err(Error::InsertOnly {
                block,
                operation: "remove the block",
            });
        }
        if self.appended.covers(block) {
            self.flush_appends()?;
        }
        let Some(old) = self.tree.get(block)? else {
            return Ok(0);
        };
        let count = self.value_len(block, old)?;
        self.remove_value(block, old)?;
        self.len -= count as u64;
        Ok(count)
    }

    /// Insert-only `set_block_offsets`: one tree descent instead of a lookup and then a write.
    /// The value is written first; if the block turns out to have had offsets, its old value is
    /// put back and the fresh bitmap (the arena's top allocation) is given back.
    fn set_new_block(&mut self, block: u32, offsets: &[u16]) -> Result<(), Error> {
        if self.appended.find(block).is_some() {
            return Err(Error::InsertOnly {
                block,
                operation: "replace the offsets",
            });
        }
        let value = self.new_value(block, offsets)?;
        self.note_block(block);
        if let Some(old) = self.tree.replace(block, &value.encode())? {
            self.tree.set_bytes(block, &old)?;
            if let Value::Bitmap(handle) = value {
                self.storage.free(handle);
            }
            return Err(Error::InsertOnly {
                block,
                operation: "replace the offsets",
            });
        }
        self.len += offsets.len() as u64;
        Ok(())
    }

    /// The value of a block that gets `offsets` (1 or more, checked): embedded, or a fresh
    /// bitmap.
    pub(crate) fn new_value(&mut self, block: u32, offsets: &[u16]) -> Result<Value, Error> {
        if fits_embedded(offsets) {
            return Ok(Value::embedded(offsets));
        }
        let highest = offsets.last().copied().unwrap_or(0);
        let handle = self.storage.alloc(bitmap::words_for(highest))?;
        bitmap::fill(self.bitmap_mut(block, handle)?, offsets);
        Ok(Value::Bitmap(handle))
    }

    fn check_offset(&self, block: u32, offset: u16) -> Result<(), Error> {
        if offset == 0 || offset > self.options.max_offset {
            let max_offset = self.options.max_offset;
            return Err(Error::OffsetOutOfRange {
                block,
                offset,
                max_offset,
            });
        }
        Ok(())
    }

    fn check_offsets(&self, block: u32, offsets: &[u16]) -> Result<(), Error> {
        for (index, &offset) in offsets.iter().enumerate() {
            self.check_offset(block, offset)?;
            if index > 0 && offsets[index - 1] >= offset {
                return Err(Error::OffsetsUnsorted { block, index });
            }
        }
        Ok(())
    }

    /// The words of a block's bitmap.
    #[inline]
    pub(crate) fn bitmap(&self, block: u32, handle: Handle) -> Result<&[u64], Error> {
        let kind = "its bitmap handle names no bitmap";
        self.storage
            .get(handle)
            .ok_or(Error::CorruptValue { block, kind })
    }

    pub(crate) fn bitmap_mut(&mut self, block: u32, handle: Handle) -> Result<&mut [u64], Error> {
        let kind = "its bitmap handle names no bitmap";
        self.storage
            .get_mut(handle)
            .ok_or(Error::CorruptValue { block, kind })
    }

    /// Number of offsets in a block's value.
    pub(crate) fn value_len(&self, block: u32, value: Value) -> Result<usize, Error> {
        match value {
            Value::Embedded(offsets) => Ok(embedded_len(&offsets)),
            Value::Bitmap(handle) => Ok(bitmap::count(self.bitmap(block, handle)?)),
        }
    }

    /// Drops a block's value from the tree and frees its bitmap.
    fn remove_value(&mut self, block: u32, old: Value) -> Result<(), Error> {
        self.tree.remove(block)?;
        if let Value::Bitmap(handle) = old {
            self.storage.free(handle);
        }
        Ok(())
    }

    fn insert_embedded(
        &mut self,
        block: u32,
        offsets: [u16; EMBEDDED_OFFSETS_MAX],
        offset: u16,
    ) -> Result<bool, Error> {
        if offsets.contains(&offset) {
            return Ok(false);
        }
        let count = embedded_len(&offsets);
        let mut merged = [0u16; EMBEDDED_OFFSETS_MAX + 1];
        merged[..count].copy_from_slice(&offsets[..count]);
        merged[count] = offset;
        let merged = &mut merged[..=count];
        merged.sort_unstable();
        if fits_embedded(merged) {
            self.write_value(block, &Value::embedded(merged))?;
        } else {
            self.embedded_to_bitmap(block, merged)?;
        }
        Ok(true)
    }

    /// A block outgrows the child word: its offsets move to a fresh bitmap.
    fn embedded_to_bitmap(&mut self, block: u32, offsets: &[u16]) -> Result<(), Error> {
        let highest = offsets.last().copied().unwrap_or(0);
        let handle = self.storage.alloc(bitmap::words_for(highest))?;
        bitmap::fill(self.bitmap_mut(block, handle)?, offsets);
        self.write_value(block, &Value::Bitmap(handle))
    }

    fn insert_bitmap(&mut self, block: u32, handle: Handle, offset: u16) -> Result<bool, Error> {
        let words = bitmap::words_for(offset);
        let handle = if words > usize::from(handle.words) {
            let kind = "its bitmap handle names no bitmap";
            let grown = self.storage.resize(handle, words)?;
            let grown = grown.ok_or(Error::CorruptValue { block, kind })?;
            if grown != handle {
                self.write_value(block, &Value::Bitmap(grown))?;
            }
            grown
        } else {
            handle
        };
        Ok(bitmap::set(self.bitmap_mut(block, handle)?, offset))
    }

    /// Writes `offsets` (too many for the child word) as the block's bitmap, reusing the old one in place
    /// when it already has the right size.
    fn set_bitmap(&mut self, block: u32, old: Option<Value>, offsets: &[u16]) -> Result<(), Error> {
        let words = bitmap::words_for(offsets.last().copied().unwrap_or(0));
        let handle = match old {
            Some(Value::Bitmap(handle)) => {
                let kind = "its bitmap handle names no bitmap";
                self.storage
                    .resize(handle, words)?
                    .ok_or(Error::CorruptValue { block, kind })?
            }
            _ => self.storage.alloc(words)?,
        };
        bitmap::fill(self.bitmap_mut(block, handle)?, offsets);
        if old != Some(Value::Bitmap(handle)) {
            self.write_value(block, &Value::Bitmap(handle))?;
        }
        Ok(())
    }

    fn remove_embedded(
        &mut self,
        block: u32,
        offsets: [u16; EMBEDDED_OFFSETS_MAX],
        offset: u16,
    ) -> Result<bool, Error> {
        let Some(position) = offsets.iter().position(|&o| o == offset) else {
            return Ok(false);
        };
        let count = embedded_len(&offsets);
        let mut rest = [0u16; EMBEDDED_OFFSETS_MAX];
        let mut kept = 0;
        for (i, &o) in offsets[..count].iter().enumerate() {
            if i != position {
                rest[kept] = o;
                kept += 1;
            }
        }
        if kept == 0 {
            self.tree.remove(block)?;
        } else {
            self.tree
                .set(block, &Value::embedded(&rest[..kept]).encode())?;
        }
        Ok(true)
    }

    fn remove_from_bitmap(
        &mut self,
        block: u32,
        handle: Handle,
        offset: u16,
    ) -> Result<bool, Error> {
        let words = self.bitmap_mut(block, handle)?;
        if !bitmap::clear(words, offset) {
            return Ok(false);
        }
        self.shrink_bitmap(block, handle)?;
        Ok(true)
    }

    /// Restores the canonical form after a bitmap lost an offset: back into the child word at
    /// a fitting set, otherwise sized down to its (possibly lower) highest offset.
    fn shrink_bitmap(&mut self, block: u32, handle: Handle) -> Result<(), Error> {
        let words = self.bitmap(block, handle)?;
        let lowest = bitmap::lowest::<EMBEDDED_OFFSETS_MAX>(words);
        let count = embedded_len(&lowest);
        if bitmap::count(words) == count && fits_embedded(&lowest[..count]) {
            self.tree.set(block, &Value::Embedded(lowest).encode())?;
            self.storage.free(handle);
            return Ok(());
        }
        let needed = bitmap::words_for(bitmap::highest(words).unwrap_or(0));
        if needed < usize::from(handle.words) {
            let kind = "its bitmap handle names no bitmap";
            let shrunk = self.storage.resize(handle, needed)?;
            let shrunk = shrunk.ok_or(Error::CorruptValue { block, kind })?;
            if shrunk != handle {
                self.tree.set(block, &Value::Bitmap(shrunk).encode())?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert_only() -> TidStore {
        TidStore::with_options(TidStoreOptions {
            insert_only: true,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn out_of_range_ids_are_typed_errors() {
        let mut store = TidStore::new();
        for offset in [0, MAX_OFFSET_DEFAULT + 1] {
            let error = store.insert(4, offset).unwrap_err();
            assert!(
                matches!(error, Error::OffsetOutOfRange { block: 4, .. }),
                "{error:?}"
            );
            assert!(error
                .to_string()
                .contains("valid offsets run from 1 to 2047"));
            assert!(store.contains(4, offset).is_err());
            assert!(store.lookup_cursor().contains(4, offset).is_err());
        }
        let error = store.set_block_offsets(4, &[3, 9, 9]).unwrap_err();
        assert!(
            matches!(error, Error::OffsetsUnsorted { block: 4, index: 2 }),
            "{error:?}"
        );
        assert!(store.set_block_offsets(4, &[9, 3]).is_err());
        assert!(store.is_empty(), "a refused call changes nothing");
        let error = TidStore::with_options(TidStoreOptions {
            max_offset: 0,
            insert_only: false,
        });
        assert!(matches!(
            error,
            Err(Error::InvalidMaxOffset { max_offset: 0 })
        ));
        let small = TidStoreOptions {
            max_offset: 10,
            insert_only: false,
        };
        let mut store = TidStore::with_options(small).unwrap();
        assert!(store.insert(1, 10).unwrap());
        assert!(store.insert(1, 11).is_err());
    }

    #[test]
    fn insert_only_refuses_removal_and_replacement() {
        let mut store = insert_only();
        store.set_block_offsets(1, &[1, 2, 3, 4, 5]).unwrap();
        store.set_block_offsets(2, &[7]).unwrap();
        assert!(
            store.insert(1, 200).unwrap(),
            "growing a block is an insert"
        );
        for result in [
            store.set_block_offsets(1, &[1]),
            store.set_block_offsets(2, &[1, 2, 3, 4]),
            store.set_block_offsets(2, &[]),
            store.remove_block(1).map(|_| ()),
            store.remove(2, 7).map(|_| ()),
        ] {
            let error = result.unwrap_err();
            assert!(matches!(error, Error::InsertOnly { .. }), "{error:?}");
            assert!(error.to_string().contains("insert-only"));
        }
        assert_eq!(store.len(), 7);
        assert_eq!(
            store.block_offsets(1).unwrap().to_vec(),
            [1, 2, 3, 4, 5, 200]
        );
        assert_eq!(store.block_offsets(2).unwrap().to_vec(), [7]);
        store.verify().unwrap();
    }

    #[test]
    fn dense_blocks_cost_less_than_a_byte_per_id() {
        for mut store in [TidStore::new(), insert_only()] {
            let offsets: Vec<u16> = (1..=291).collect();
            for block in 0..1000 {
                store.set_block_offsets(block * 10, &offsets).unwrap();
            }
            assert_eq!(store.len(), 291_000);
            // 5 words of bitmap per block plus the tree: well under the 6 bytes per id of an array.
            let per_id = store.memory_usage() as f64 / store.len() as f64;
            assert!(per_id < 1.0, "{per_id} bytes per id");
            store.verify().unwrap();
        }
    }

    #[test]
    fn extreme_blocks_and_offsets() {
        let options = TidStoreOptions {
            max_offset: u16::MAX,
            insert_only: false,
        };
        let mut store = TidStore::with_options(options).unwrap();
        for offset in [1, 2, 3, u16::MAX] {
            store.insert(u32::MAX, offset).unwrap();
            store.insert(0, offset).unwrap();
        }
        let ids: Vec<(u32, u16)> = store.ids().collect::<Result<_, _>>().unwrap();
        assert_eq!(ids.first(), Some(&(0, 1)));
        assert_eq!(ids.last(), Some(&(u32::MAX, u16::MAX)));
        assert_eq!(ids.len(), 8);
        assert!(store.remove(u32::MAX, u16::MAX).unwrap());
        assert!(
            store.block_offsets(u32::MAX).unwrap().is_embedded(),
            "back to a fitting set"
        );
        store.verify().unwrap();
    }
}
