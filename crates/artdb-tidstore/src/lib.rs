//! artdb-tidstore: compact sets of (block, offset) ids on artdb's adaptive radix tree, after
//! PostgreSQL 17's TidStore (the dead-tuple store of vacuum).
//!
//! # What it is
//! A set of ids `(block: u32, offset: u16)`: dead tuples of a heap table, postings of a group,
//! visited members. Offsets run from 1 to `max_offset` (default 2047; 0 is invalid, as in
//! PostgreSQL); out-of-range ids are typed errors.
//!
//! # Representation
//! The block number, big-endian (so key order is block order), is a 4-byte key of the radix tree
//! (`artdb-art`). The block's value is at most 7 bytes, so the tree keeps it inline in the child
//! word and allocates no leaf for it (`value.rs` has the byte format):
//! - up to three offsets (or five, none above 2047, packed in 11 bits each) are **embedded** in
//!   the value itself: a block with few ids costs no allocation beyond its slot in a tree node;
//! - more offsets live in a **bitmap** sized to the block's highest offset (291 tuples of an 8 KiB
//!   page take 5 words); the value holds a 32-bit handle to it in the bitmap storage.
//!
//! The bitmaps live beside the tree, not in tree leaves (`storage.rs`): in the default mode in a
//! slab of boxed word slices that frees and reuses them individually, in **insert-only** mode in
//! a bump arena that frees nothing (PostgreSQL's bump memory context; vacuum never removes a dead
//! tuple id, so it never needs to free). Either way an insert into a bitmap block sets one bit in
//! place and does not touch the tree, and the tree needs no knowledge of which mode is in use.
//! The road not taken, bitmaps as the tree's leaf values, would make every such insert replace
//! the leaf through the tree's copying insert.
//!
//! # Operations
//! [`TidStore::set_block_offsets`] (replace a block's offsets: vacuum's pattern; ascending blocks
//! take the append path, built into the tree at once by [`TidStore::flush_appends`]: see
//! `append.rs` and `docs/tidstore.md`),
//! [`TidStore::insert_many`] (ids at once, as `insert` of each in turn; ids ascending in
//! table order take the append path with no call per block: `sorted.rs`),
//! [`TidStore::insert`], [`TidStore::remove`], [`TidStore::remove_block`],
//! [`TidStore::contains`], [`TidStore::len`], [`TidStore::iter`] (blocks in order),
//! [`TidStore::ids`] (ids in order), [`TidStore::memory_usage`], [`TidStore::verify`], and
//! [`TidStore::lookup_cursor`]: membership tests for ids arriving in order, where a lookup in the
//! same block as the previous one costs no tree descent and a block the store lacks costs a
//! compare.
//!
//! # Techniques not used
//! PostgreSQL also runs its TidStore in shared memory for parallel vacuum; this store is
//! single-writer, in-process memory. Run containers (as in roaring) would shrink long runs of
//! offsets further; a block's bitmap is at most 256 bytes at the default `max_offset`, so the
//! gain is bounded and the lookup would no longer be one bit test.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
mod append;
mod bitmap;
mod cursor;
mod error;
mod iter;
mod sorted;
mod storage;
mod store;
mod tree;
mod value;
mod verify;

pub use cursor::LookupCursor;
pub use error::Error;
pub use iter::{BlockOffsets, Blocks, Ids, OffsetIter};
pub use store::{TidStore, TidStoreOptions, MAX_OFFSET_DEFAULT};
pub use verify::Violation;
