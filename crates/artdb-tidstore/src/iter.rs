//! Iteration: blocks with their offsets in block order ([`Blocks`]), single ids in id order
//! ([`Ids`]), and the offsets of one block ([`BlockOffsets`]).
//!
//! Invariant relied on: the block tree is keyed by big-endian block numbers, so its key order is
//! block order, and every value is canonical (embedded offsets ascending, bitmaps read low bit
//! first), so ids come out strictly ascending. Iteration allocates nothing per block: embedded
//! offsets are copied out of the child word, bitmaps are borrowed from the bitmap storage.

use crate::bitmap;
use crate::tree::BlockCursor;
use crate::value::{embedded_contains, embedded_len, Value, EMBEDDED_OFFSETS_MAX};
use crate::{Error, TidStore};

/// The offsets of one block, ascending; borrowed from the store.
#[derive(Clone, Copy, Debug)]
pub struct BlockOffsets<'a> {
    repr: Repr<'a>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Repr<'a> {
    /// Zero-padded, as in the child word.
    Embedded([u16; EMBEDDED_OFFSETS_MAX]),
    Bitmap(&'a [u64]),
}

impl<'a> BlockOffsets<'a> {
    pub(crate) fn load(store: &'a TidStore, block: u32, value: Value) -> Result<Self, Error> {
        let repr = match value {
            Value::Embedded(offsets) => Repr::Embedded(offsets),
            Value::Bitmap(handle) => Repr::Bitmap(store.bitmap(block, handle)?),
        };
        Ok(BlockOffsets { repr })
    }

    /// Whether `offset` is among them (0 never is).
    #[inline]
    pub fn contains(&self, offset: u16) -> bool {
        match self.repr {
            Repr::Embedded(offsets) => embedded_contains(&offsets, offset),
            Repr::Bitmap(words) => bitmap::contains(words, offset),
        }
    }

    /// Number of offsets (counts the bitmap's bits).
    pub fn len(&self) -> usize {
        match self.repr {
            Repr::Embedded(offsets) => embedded_len(&offsets),
            Repr::Bitmap(words) => bitmap::count(words),
        }
    }

    /// Whether there are none (never true for a block the store yields).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the offsets live in the tree's child word (see `value::fits_embedded`) rather than a bitmap.
    pub fn is_embedded(&self) -> bool {
        matches!(self.repr, Repr::Embedded(_))
    }

    /// The offsets, ascending.
    pub fn iter(&self) -> OffsetIter<'a> {
        match self.repr {
            Repr::Embedded(offsets) => OffsetIter {
                inner: OffsetIterInner::Embedded(offsets, 0),
            },
            Repr::Bitmap(words) => OffsetIter {
                inner: OffsetIterInner::Bitmap(bitmap::Offsets::new(words)),
            },
        }
    }

    /// The offsets as a vector.
    pub fn to_vec(&self) -> Vec<u16> {
        self.iter().collect()
    }
}

impl<'a> IntoIterator for BlockOffsets<'a> {
    type Item = u16;
    type IntoIter = OffsetIter<'a>;

    fn into_iter(self) -> OffsetIter<'a> {
        self.iter()
    }
}

/// Iterator over the offsets of one block, ascending.
#[derive(Clone, Debug)]
pub struct OffsetIter<'a> {
    inner: OffsetIterInner<'a>,
}

#[derive(Clone, Debug)]
enum OffsetIterInner<'a> {
    /// Zero-padded offsets from the child word and the next slot to yield.
    Embedded([u16; EMBEDDED_OFFSETS_MAX], usize),
    Bitmap(bitmap::Offsets<'a>),
}

impl Iterator for OffsetIter<'_> {
    type Item = u16;

    #[inline]
    fn next(&mut self) -> Option<u16> {
        match &mut self.inner {
            OffsetIterInner::Embedded(offsets, position) => {
                let offset = *offsets.get(*position)?;
                *position += 1;
                (offset != 0).then_some(offset)
            }
            OffsetIterInner::Bitmap(bits) => bits.next(),
        }
    }
}

/// Blocks and their offsets in block order; see [`TidStore::iter`].
pub struct Blocks<'a> {
    store: &'a TidStore,
    cursor: BlockCursor<'a>,
    started: bool,
    done: bool,
}

impl<'a> Iterator for Blocks<'a> {
    type Item = Result<(u32, BlockOffsets<'a>), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = if self.started {
            self.cursor.next()
        } else {
            self.cursor.seek(0)
        };
        self.started = true;
        let loaded = match step {
            Ok(Some((block, value))) => {
                BlockOffsets::load(self.store, block, value).map(|offsets| (block, offsets))
            }
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(error) => Err(error),
        };
        if loaded.is_err() {
            self.done = true;
        }
        Some(loaded)
    }
}

/// Single ids in id order; see [`TidStore::ids`].
pub struct Ids<'a> {
    blocks: Blocks<'a>,
    current: Option<(u32, OffsetIter<'a>)>,
}

impl Iterator for Ids<'_> {
    type Item = Result<(u32, u16), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((block, offsets)) = self.current.as_mut() {
                if let Some(offset) = offsets.next() {
                    return Some(Ok((*block, offset)));
                }
            }
            match self.blocks.next()? {
                Ok((block, offsets)) => self.current = Some((block, offsets.iter())),
                Err(error) => return Some(Err(error)),
            }
        }
    }
}

impl TidStore {
    /// The blocks with their offsets, in block order. An item is an error only if the tree
    /// fails or a value is corrupt; iteration stops after it.
    pub fn iter(&self) -> Blocks<'_> {
        Blocks {
            store: self,
            cursor: self.tree.cursor(&self.appended.blocks),
            started: false,
            done: false,
        }
    }

    /// Every id, in (block, offset) order.
    pub fn ids(&self) -> Ids<'_> {
        Ids {
            blocks: self.iter(),
            current: None,
        }
    }

    /// The offsets of `block` (empty if it has none).
    pub fn block_offsets(&self, block: u32) -> Result<BlockOffsets<'_>, Error> {
        match self.value_of(block)? {
            Some(value) => BlockOffsets::load(self, block, value),
            None => Ok(BlockOffsets {
                repr: Repr::Embedded([0; EMBEDDED_OFFSETS_MAX]),
            }),
        }
    }
}
