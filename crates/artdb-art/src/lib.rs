//! artdb-art: the adaptive radix tree at the heart of artdb.
//!
//! An ordered map from byte strings (0 to [`KEY_LEN_MAX`] bytes, including the empty key and keys
//! that are prefixes of others) to byte values, as an Adaptive Radix Tree (Leis et al., 2013)
//! with copy-on-write versions.
//!
//! What it uses, and why:
//! - four inner node kinds (Node4, Node16, Node48, Node256; `node/`), chosen by fan-out, growing
//!   when full and shrinking with hysteresis ([`NODE16_SHRINK_COUNT`] and friends);
//! - path compression with the full prefix stored in the node (no optimistic skipping: inline
//!   values carry no key to verify against) and lazy expansion (a leaf holds the rest of its key);
//! - a 64-bit tagged child word (`word.rs`): heap node, persisted node (file offset), inline
//!   value of up to [`INLINE_VALUE_LEN_MAX`] bytes, or leaf. Inline values make dense keys cost a
//!   Node256 slot each (8 bytes) and no allocation;
//! - a value slot in every inner node for the key that ends there;
//! - node images that are fixed little-endian byte layouts made only of byte arrays, so a
//!   persisted image is read in place from a memory map (`NodeSource`), with every image checked
//!   before use (`Error::Persisted`);
//! - copy-on-write versions (`write/cow.rs`): [`Tree::snapshot`] is O(1), a write copies only its
//!   path, nodes created since the last snapshot are changed in place, and replaced nodes are
//!   freed when no snapshot can reach them.
//!
//! Forks ([`Snapshot::fork`], `write/fork.rs`): a private writer on a snapshot (a transaction's tree),
//! installed into its tree by [`Tree::install`] when that tree has not moved since (no copy), or
//! dropped (freeing what it built).
//!
//! What it does not do: concurrent writers (one `Tree` writes; `Snapshot`s read on any thread),
//! optimistic lock coupling (readers never share a node with the writer, so need no locks).
//!
//! Persistence hooks: [`NodeSource`] (serve an image by offset), [`NodeSink`] (write an image,
//! get its offset), [`Tree::open`] (a tree over a persisted root), [`Tree::persist`] (write every
//! heap node post-order and swizzle the tree onto the persisted images). See `docs/art.md`.
//!
//! Unsafe code lives in `raw/` (allocation, the arena, byte views, SIMD search); the rest, mostly
//! views of heap images by address whose soundness is the tree's own invariant, is listed file by
//! file with why in docs/art.md's unsafe map (and, as ceilings that may only fall, in the tidy
//! test). Run the tests under valgrind after changing any of it (docs/art.md).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
mod build;
mod cursor;
mod error;
#[cfg(feature = "probe-ladder")]
pub mod ladder;
mod lookup;
mod node;
mod persist;
mod raw;
mod tree;
mod verify;
mod word;
mod write;

pub use cursor::{Cursor, Iter, Pair};
pub use error::Error;
pub use lookup::{PointReader, GET_MANY_GROUP_LEN};
pub use node::{
    pack_capacity_max, pack_capacity_max_for, NODE16_CAPACITY, NODE16_SHRINK_COUNT,
    NODE256_CAPACITY, NODE256_SHRINK_COUNT, NODE48_CAPACITY, NODE48_SHRINK_COUNT, NODE4_CAPACITY,
    PACK_AREA_LEN_MAX, PACK_ENTRIES_MAX, PACK_IMAGE_LEN_MAX, PACK_KEY_WIDTH_MAX,
    PACK_VALUE_WIDTH_MAX, PACK_WIDE_AREA_LEN_MAX, PACK_WIDE_VALUE_WIDTH_MAX,
};
pub use persist::{MemoryNodeStore, NodeSink, NodeSource, QuickRegion};
pub use raw::arena::{arena_stats, ArenaStats};
pub use tree::Tree;
pub use verify::{Stats, Violation};
pub use word::{ChildWord, INLINE_VALUE_LEN_MAX};
pub use write::cow::Snapshot;
pub use write::fork::Fork;

/// Longest key in bytes; longer keys are `Error::KeyTooLarge`.
pub const KEY_LEN_MAX: usize = 4096;
/// Longest value in bytes; longer values are `Error::ValueTooLarge`.
pub const VALUE_LEN_MAX: usize = 1 << 30;
/// Most inner nodes on any root-to-entry path: each consumes at least one key byte, except that
/// the last may end exactly at the key (its value slot).
pub const DEPTH_MAX: usize = KEY_LEN_MAX + 1;

/// Helpers shared by the crate's unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    /// A xorshift64 sequence from `seed` (not zero): cheap, repeatable pseudo-random steps.
    pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }
}
