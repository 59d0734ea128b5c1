//! The one error type of artdb-tidstore: why an id, an argument or the store's own state was
//! refused.
//!
//! Everything a caller controls (offsets out of range, unsorted offset lists, removals in an
//! insert-only store, a bad `max_offset`) is a typed error whose `Display` says what to change.
//! A value in the tree that does not decode, or a bitmap handle that names no bitmap, can only
//! come from a bug in this crate; it is still reported as an error (`CorruptValue`) rather than a
//! panic, because the tree below may one day be persisted and read back from a file.

use std::fmt;

/// An error of a [`TidStore`](crate::TidStore) operation.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An offset was 0 (invalid, as in PostgreSQL) or above the store's `max_offset`.
    OffsetOutOfRange {
        /// The block the offset was given for.
        block: u32,
        /// The refused offset.
        offset: u16,
        /// The store's largest valid offset.
        max_offset: u16,
    },
    /// The offsets given to `set_block_offsets` are not strictly ascending at `index` (the
    /// offset at `index` is not greater than the one before it).
    OffsetsUnsorted {
        /// The block the offsets were given for.
        block: u32,
        /// Position in the slice of the first offset out of order (or repeated).
        index: usize,
    },
    /// `max_offset` of the options was 0, which leaves no valid offset.
    InvalidMaxOffset {
        /// The refused value.
        max_offset: u16,
    },
    /// An operation that removes ids was called on an insert-only store.
    InsertOnly {
        /// The block the operation was called for.
        block: u32,
        /// What was attempted, e.g. `"remove_block"`.
        operation: &'static str,
    },
    /// The bitmap storage ran out of handle space (more than 2^32 bitmaps, or an insert-only
    /// arena past 2^32 words).
    StorageFull {
        /// Bytes held by the bitmap storage when the allocation was refused.
        bytes: usize,
    },
    /// A value stored for `block` does not decode (a bug in this crate or a damaged tree).
    CorruptValue {
        /// The block whose value is bad.
        block: u32,
        /// What is wrong with it.
        kind: &'static str,
    },
    /// A key in the tree is not a 4-byte block number (a bug in this crate or a damaged tree).
    CorruptKey {
        /// Length of the key found.
        len: usize,
    },
    /// The radix tree underneath refused an operation.
    Tree(artdb_art::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OffsetOutOfRange {
                block,
                offset,
                max_offset,
            } => write!(
                f,
                "offset {offset} of block {block} is out of range: valid offsets run from 1 to \
                 {max_offset} (0 is invalid; create the store with a larger max_offset for \
                 larger offsets)"
            ),
            Error::OffsetsUnsorted { block, index } => write!(
                f,
                "the offsets given for block {block} are not strictly ascending at position \
                 {index}; sort and deduplicate them before calling set_block_offsets"
            ),
            Error::InvalidMaxOffset { max_offset } => write!(
                f,
                "max_offset {max_offset} leaves no valid offset; choose a value from 1 to 65535 \
                 (the default is 2047)"
            ),
            Error::InsertOnly { block, operation } => write!(
                f,
                "cannot {operation} for block {block}: this store is insert-only (its bitmaps \
                 live in a bump arena that frees nothing); create the store without insert_only \
                 to remove or replace ids"
            ),
            Error::StorageFull { bytes } => write!(
                f,
                "the bitmap storage is full at {bytes} bytes (its handles are 32-bit); split the \
                 ids across several stores"
            ),
            Error::CorruptValue { block, kind } => write!(
                f,
                "the value stored for block {block} is corrupt ({kind}); this is a bug in \
                 artdb-tidstore or a damaged tree: run verify() and report it"
            ),
            Error::CorruptKey { len } => write!(
                f,
                "the tree holds a key of {len} bytes where a 4-byte block number belongs; this \
                 is a bug in artdb-tidstore or a damaged tree: run verify() and report it"
            ),
            Error::Tree(source) => write!(f, "the radix tree failed: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Tree(source) => Some(source),
            _ => None,
        }
    }
}

impl From<artdb_art::Error> for Error {
    fn from(source: artdb_art::Error) -> Self {
        Error::Tree(source)
    }
}
