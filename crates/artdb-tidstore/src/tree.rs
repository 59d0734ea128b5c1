//! The block tree: artdb-art's radix tree keyed by block numbers, holding each block's encoded
//! value (at most 7 bytes, so always inline in the child word; `value.rs`).
//!
//! Keys are the block number's 4 big-endian bytes, so the tree's byte order is block order. This
//! module is the only one that names `artdb_art`; everything above works with blocks and decoded
//! [`Value`]s. A key that is not 4 bytes can only come from a bug or a damaged tree and is
//! `Error::CorruptKey`.
//!
//! The tree is heap-only (no `NodeSource`), so reads fail only if the tree itself is broken;
//! its errors still travel up as `Error::Tree` rather than being unwrapped.

use std::fmt;

use crate::value::{Encoded, Value, ENCODED_LEN};
use crate::Error;

/// Bytes of a block key.
const KEY_LEN: usize = 4;

#[inline]
fn key(block: u32) -> [u8; KEY_LEN] {
    block.to_be_bytes()
}

/// A block and its encoded value as the append path keeps them and as `Tree::bulk_build_fixed`
/// takes them: the block's key (4 big-endian bytes: byte order is block order) and the value in
/// its fixed-width form (`Encoded::to_fixed`). 12 bytes, alignment 1.
pub(crate) type BlockPair = ([u8; KEY_LEN], [u8; ENCODED_LEN]);

/// The pair of `block` and `value`.
#[inline]
pub(crate) fn block_pair(block: u32, value: Encoded) -> BlockPair {
    (key(block), value.to_fixed())
}

/// The block of a pair.
#[inline]
pub(crate) fn pair_block(pair: &BlockPair) -> u32 {
    u32::from_be_bytes(pair.0)
}

/// The encoded value of a pair.
#[inline]
pub(crate) fn pair_value(pair: &BlockPair) -> Encoded {
    Encoded::from_fixed(pair.1)
}

fn block_of(key: &[u8]) -> Result<u32, Error> {
    let bytes: [u8; KEY_LEN] = key
        .try_into()
        .map_err(|_| Error::CorruptKey { len: key.len() })?;
    Ok(u32::from_be_bytes(bytes))
}

pub(crate) struct BlockTree {
    tree: artdb_art::Tree,
}

impl fmt::Debug for BlockTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockTree")
            .field("blocks", &self.tree.len())
            .finish()
    }
}

impl BlockTree {
    pub(crate) fn new() -> Self {
        BlockTree {
            tree: artdb_art::Tree::new(),
        }
    }

    /// A tree of `pairs` (strictly ascending blocks), each node built once at its final size.
    pub(crate) fn build(pairs: &[BlockPair]) -> Result<Self, Error> {
        Ok(BlockTree {
            tree: artdb_art::Tree::bulk_build_fixed(pairs)?,
        })
    }

    /// Every block of the tree with its encoded value, ascending (to rebuild it with more).
    pub(crate) fn pairs(&self) -> Result<Vec<BlockPair>, Error> {
        let mut pairs = Vec::with_capacity(self.tree.len() as usize);
        let mut cursor = self.tree.cursor();
        let mut found = cursor.seek_first()?;
        while found {
            let block = block_of(cursor.key())?;
            pairs.push(block_pair(
                block,
                Encoded::from_bytes(block, cursor.value())?,
            ));
            found = cursor.next()?;
        }
        Ok(pairs)
    }

    /// The stored bytes of `block`'s value, if it has one (not decoded: a membership test reads
    /// them with [`crate::value::lookup`]).
    #[inline]
    pub(crate) fn get_bytes(&self, block: u32) -> Result<Option<&[u8]>, Error> {
        Ok(self.tree.get(&key(block))?)
    }

    /// The decoded value of `block`, if it has one.
    #[inline]
    pub(crate) fn get(&self, block: u32) -> Result<Option<Value>, Error> {
        match self.tree.get(&key(block))? {
            Some(bytes) => Value::decode(block, bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Sets the value of `block`.
    pub(crate) fn set(&mut self, block: u32, value: &Encoded) -> Result<(), Error> {
        // The old value comes back as a (at most 7-byte) Vec; see TID_NEEDS in the report.
        self.tree.insert(&key(block), value.as_bytes())?;
        Ok(())
    }

    /// Sets the value of `block` and returns the raw bytes it replaced (no allocation when the
    /// block was absent).
    pub(crate) fn replace(
        &mut self,
        block: u32,
        value: &Encoded,
    ) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.tree.insert(&key(block), value.as_bytes())?)
    }

    /// Puts back raw bytes that [`BlockTree::replace`] returned.
    pub(crate) fn set_bytes(&mut self, block: u32, bytes: &[u8]) -> Result<(), Error> {
        self.tree.insert(&key(block), bytes)?;
        Ok(())
    }

    pub(crate) fn remove(&mut self, block: u32) -> Result<(), Error> {
        self.tree.remove(&key(block))?;
        Ok(())
    }

    /// Number of blocks.
    pub(crate) fn len(&self) -> u64 {
        self.tree.len()
    }

    /// Heap bytes of the tree's nodes (a walk over the tree: O(nodes)).
    pub(crate) fn memory_bytes(&self) -> usize {
        std::mem::size_of::<artdb_art::Tree>() + self.tree.stats().heap_bytes as usize
    }

    /// A cursor over the tree's blocks followed by `appended` (blocks above the tree's, see
    /// `append.rs`).
    pub(crate) fn cursor<'a>(&'a self, appended: &'a [BlockPair]) -> BlockCursor<'a> {
        BlockCursor {
            cursor: self.tree.cursor(),
            appended,
            at: At::Tree,
        }
    }

    /// The tree's own invariants, as messages.
    pub(crate) fn verify(&self) -> Result<(), Vec<String>> {
        self.tree
            .verify()
            .map_err(|violations| violations.iter().map(|v| format!("{v:?}")).collect())
    }
}

/// Where a [`BlockCursor`] stands.
#[derive(Clone, Copy)]
enum At {
    /// On the tree's cursor (or before the first seek).
    Tree,
    /// On the appended block at this index (past the end when it equals the length).
    Appended(usize),
}

/// A forward cursor over the blocks of the tree and then the appended blocks; allocates nothing
/// per step.
pub(crate) struct BlockCursor<'a> {
    cursor: artdb_art::Cursor<'a>,
    appended: &'a [BlockPair],
    at: At,
}

impl BlockCursor<'_> {
    /// Moves to the first block `>= block`; returns it and its value, `None` past the end.
    pub(crate) fn seek(&mut self, block: u32) -> Result<Option<(u32, Value)>, Error> {
        let in_appended = self
            .appended
            .first()
            .is_some_and(|first| block >= pair_block(first));
        if in_appended {
            let index = self
                .appended
                .partition_point(|pair| pair_block(pair) < block);
            return self.appended_entry(index);
        }
        if self.cursor.seek(&key(block))? {
            self.at = At::Tree;
            return self.tree_entry();
        }
        self.appended_entry(0)
    }

    /// Moves to the next block.
    pub(crate) fn next(&mut self) -> Result<Option<(u32, Value)>, Error> {
        match self.at {
            At::Appended(index) => self.appended_entry(index.saturating_add(1)),
            At::Tree => {
                if self.cursor.next()? {
                    self.tree_entry()
                } else {
                    self.appended_entry(0)
                }
            }
        }
    }

    #[inline]
    fn tree_entry(&self) -> Result<Option<(u32, Value)>, Error> {
        let block = block_of(self.cursor.key())?;
        Ok(Some((block, Value::decode(block, self.cursor.value())?)))
    }

    fn appended_entry(&mut self, index: usize) -> Result<Option<(u32, Value)>, Error> {
        let index = index.min(self.appended.len());
        self.at = At::Appended(index);
        match self.appended.get(index) {
            Some(pair) => {
                let block = pair_block(pair);
                Ok(Some((
                    block,
                    Value::decode(block, pair_value(pair).as_bytes())?,
                )))
            }
            None => Ok(None),
        }
    }
}
