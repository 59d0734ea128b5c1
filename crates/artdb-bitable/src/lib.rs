//! artdb-bitable: the immutable, memory-mapped sorted table.
//!
//! A bitable is a file of sorted key-value pairs, written once by appending pairs in strictly
//! increasing key order and then read by any number of threads without locks. It is what artdb
//! exports to and imports from, and it stands alone as a static index with range and prefix
//! search. This crate depends on no other artdb crate.
//!
//! # Structure
//! Pages of one size (default 4 KiB). Level 0 holds the pairs in leaf pages, contiguous and in key
//! order. Each full leaf's first key goes up into level 1, whose branch pages hold the first keys
//! of their children except the first (implicit) and point only to their first child: the pages of
//! a level are contiguous, so child `j` is `first_child + j`. Levels are added as the top level
//! outgrows a page; the top level is a single page, the root. Values longer than a quarter page go
//! to a large-value area at the end of the file, in key order, each with its own CRC32C. Byte
//! tables: `docs/bitable-format.md` and [`format`].
//!
//! Two page layouts keep the per-pair overhead small: *fixed* pages (every pair of the page has
//! the same key length and inline value length) store records back to back with no slots and no
//! lengths, optionally aligned so fixed-size values can be read in place; *slotted* pages store a
//! 2-byte slot and two varints per pair. For 24-byte keys and 8-byte values a 4 KiB leaf holds 127
//! pairs: 4064 of 4096 bytes, 1.008x the raw pair bytes.
//!
//! # Techniques used, and not
//! - Integrity: each page carries a CRC32C (seeded with its level-relative index); a reader
//!   validates a page (checksum and every offset) the first time it uses it in the process and
//!   marks it in a bitset, so damage becomes `Error::Corruption { page, .. }`, never a panic or an
//!   out-of-bounds read. Not used: checking every page at open (that would make open O(file)).
//! - The header is written last and has its own checksum, so an interrupted build cannot be
//!   opened; durable builds sync before the table appears under its name ([`Durability`]).
//! - Lookups borrow from the map: `get` allocates nothing, locks nothing, makes no system call
//!   (but a table's first lookup, which builds the flattened cached levels once).
//! - A descent enters each page below the root with a guess interpolated between the two
//!   separators that chose it, prefetched with the page's header (one round of misses per page
//!   where keys are spread evenly); levels small enough to stay cached get no prefetches, and
//!   are passed in one search of their separators, flattened into an array at first use; keys
//!   are compared by their first eight bytes as one integer first (`docs/bitable-format.md`,
//!   Reading).
//! - Not used: prefix compression or restart points inside pages (they cost a decode per probe;
//!   binary search over fixed records is what makes lookups fast), sibling pointers (contiguity
//!   makes them unnecessary), bloom filters (the descent is already a handful of cache misses).
//!
//! # Example
//! ```
//! # fn main() -> Result<(), artdb_bitable::Error> {
//! # let dir = std::env::temp_dir().join(format!("bitable-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).ok();
//! let path = dir.join("cities.bt");
//! let mut builder = artdb_bitable::Builder::create(&path)?;
//! builder.append(b"lisbon", b"PT")?;
//! builder.append(b"oslo", b"NO")?;
//! builder.finish(artdb_bitable::Durability::Durable)?;
//! let table = artdb_bitable::Table::open(&path)?;
//! assert_eq!(table.get(b"oslo")?, Some(&b"NO"[..]));
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(())
//! # }
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
mod builder;
mod cursor;
mod error;
pub mod format;
pub mod fuzz;
mod merge;
mod page;
mod pending;
mod raw;
mod stale;
mod stats;
mod table;
mod top;
mod verify;

pub use builder::{Builder, Durability, Options, Summary};
pub use cursor::{Cursor, Range};
pub use error::{CorruptionKind, Error, Result};
pub use format::{key_len_max, value_inline_max, LevelInfo};
pub use merge::{merge, MergeRule};
pub use stale::remove_stale_temp_files;
pub use stats::{LevelStats, Stats};
pub use table::Table;

#[cfg(test)]
mod tests;
