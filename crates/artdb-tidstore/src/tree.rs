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

use crate::value::{Encoded, Value};
use crate::Error;

/// Bytes of a block key.
const KEY_LEN: usize = 4;

#[inline]
fn key(block: u32) -> [u8; KEY_LEN] {
    block.to_be_bytes()
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

    pub(crate) fn cursor(&self) -> BlockCursor<'_> {
        BlockCursor {
            cursor: self.tree.cursor(),
        }
    }

    /// The tree's own invariants, as messages.
    pub(crate) fn verify(&self) -> Result<(), Vec<String>> {
        self.tree
            .verify()
            .map_err(|violations| violations.iter().map(|v| format!("{v:?}")).collect())
    }
}

/// A forward cursor over the blocks of the tree; allocates nothing per step.
pub(crate) struct BlockCursor<'a> {
    cursor: artdb_art::Cursor<'a>,
}

impl BlockCursor<'_> {
    /// Moves to the first block `>= block`; returns it and its value, `None` past the end.
    pub(crate) fn seek(&mut self, block: u32) -> Result<Option<(u32, Value)>, Error> {
        let found = self.cursor.seek(&key(block))?;
        self.entry(found)
    }

    /// Moves to the next block.
    pub(crate) fn next(&mut self) -> Result<Option<(u32, Value)>, Error> {
        let found = self.cursor.next()?;
        self.entry(found)
    }

    #[inline]
    fn entry(&self, found: bool) -> Result<Option<(u32, Value)>, Error> {
        if !found {
            return Ok(None);
        }
        let block = block_of(self.cursor.key())?;
        Ok(Some((block, Value::decode(block, self.cursor.value())?)))
    }
}
