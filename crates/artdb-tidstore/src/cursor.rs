//! The lookup cursor: membership tests for ids that arrive in (block, offset) order, as an index
//! vacuum asks them, without a tree descent per id.
//!
//! The cursor keeps a forward position in the block tree: the first stored block at or after the
//! last block asked for, with its offsets loaded (embedded offsets copied, a bitmap borrowed). A
//! lookup in that block is a compare and a bit test; a lookup in an earlier block that the store
//! lacks is a compare alone; a lookup past it steps the tree cursor once and seeks (one descent)
//! only if the next stored block is still behind. Ids that arrive out of order are answered
//! correctly too: a lookup before the previous one re-seeks.
//!
//! Invariant: after a lookup of block `b`, `current` is the first stored block `>= b` (or `None`
//! past the last), so `contains` answers exactly what [`TidStore::contains`] does.

use crate::iter::BlockOffsets;
use crate::tree::BlockCursor;
use crate::{Error, TidStore};

/// In-order membership tests; see [`TidStore::lookup_cursor`].
pub struct LookupCursor<'a> {
    store: &'a TidStore,
    cursor: BlockCursor<'a>,
    /// The block of the previous lookup; `None` before the first.
    last_block: Option<u32>,
    /// The first stored block `>= last_block` and its offsets; `None` past the end.
    current: Option<(u32, BlockOffsets<'a>)>,
}

impl<'a> LookupCursor<'a> {
    /// Whether `(block, offset)` is in the store; fastest when ids arrive in ascending order.
    /// An offset of 0 or above `max_offset` is [`Error::OffsetOutOfRange`], as for
    /// [`TidStore::contains`].
    #[inline]
    pub fn contains(&mut self, block: u32, offset: u16) -> Result<bool, Error> {
        if offset == 0 || offset > self.store.options.max_offset {
            let max_offset = self.store.options.max_offset;
            return Err(Error::OffsetOutOfRange {
                block,
                offset,
                max_offset,
            });
        }
        if self.last_block != Some(block) {
            self.reposition(block)?;
        }
        Ok(match &self.current {
            Some((current, offsets)) if *current == block => offsets.contains(offset),
            _ => false,
        })
    }

    /// Moves `current` to the first stored block `>= block`.
    fn reposition(&mut self, block: u32) -> Result<(), Error> {
        let backwards = self.last_block.map_or(true, |last| block < last);
        self.last_block = Some(block);
        if backwards {
            return self.load(|cursor| cursor.seek(block));
        }
        match self.current {
            Some((current, _)) if current >= block => Ok(()),
            None => Ok(()),
            Some(_) => {
                self.load(|cursor| cursor.next())?;
                match self.current {
                    Some((current, _)) if current < block => self.load(|cursor| cursor.seek(block)),
                    _ => Ok(()),
                }
            }
        }
    }

    fn load(
        &mut self,
        step: impl FnOnce(&mut BlockCursor<'a>) -> Result<Option<(u32, crate::value::Value)>, Error>,
    ) -> Result<(), Error> {
        self.current = match step(&mut self.cursor)? {
            Some((block, value)) => Some((block, BlockOffsets::load(self.store, block, value)?)),
            None => None,
        };
        Ok(())
    }
}

impl TidStore {
    /// A cursor for membership tests of ids arriving in ascending order (any order is answered
    /// correctly; ascending order is what makes it fast).
    pub fn lookup_cursor(&self) -> LookupCursor<'_> {
        LookupCursor {
            store: self,
            cursor: self.tree.cursor(&self.appended.blocks),
            last_block: None,
            current: None,
        }
    }
}
