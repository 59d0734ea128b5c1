//! The one error type of `artdb-art`.
//!
//! Every fallible public operation returns `Result<_, Error>`. Callers control key and value
//! sizes and the order of `bulk_build` input; files control persisted node images, which the tree
//! checks when it first reads them (`Error::Persisted`). `Display` is a sentence a user can act on.

use std::fmt;

/// What went wrong in a tree operation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A key longer than [`crate::KEY_LEN_MAX`].
    KeyTooLarge {
        /// Length of the rejected key in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// A value longer than [`crate::VALUE_LEN_MAX`].
    ValueTooLarge {
        /// Length of the rejected value in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// `bulk_build` input whose key at `index` is smaller than the key before it.
    Unsorted {
        /// Zero-based position of the offending pair in the input.
        index: u64,
    },
    /// `bulk_build` input whose key at `index` equals the key before it.
    Duplicate {
        /// Zero-based position of the offending pair in the input.
        index: u64,
    },
    /// A persisted node image could not be used (corrupt, out of bounds, badly ordered, or no
    /// node source was given).
    Persisted {
        /// File offset of the node image at fault.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A child word handed to [`crate::Tree::open`] that cannot be a persisted root.
    BadRoot {
        /// The raw bits of the word.
        bits: u64,
    },
    /// A node sink or node source reported an error of its own.
    Storage(String),
    /// `rollback_to` was given a snapshot that is not the newest version of this tree.
    StaleSnapshot {
        /// Version of the snapshot given.
        version: u64,
        /// Version the tree is writing (the snapshot must be the one just before it).
        writing: u64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::KeyTooLarge { len, max } => write!(
                f,
                "the key is {len} bytes long but keys may be at most {max} bytes; \
                 shorten the key or store a hash of it"
            ),
            Error::ValueTooLarge { len, max } => write!(
                f,
                "the value is {len} bytes long but values may be at most {max} bytes; \
                 split the value across several keys"
            ),
            Error::Unsorted { index } => write!(
                f,
                "bulk build input is not sorted: the key at position {index} is smaller than \
                 the key before it; sort the input by key bytes first"
            ),
            Error::Duplicate { index } => write!(
                f,
                "bulk build input repeats a key at position {index}; remove duplicates first"
            ),
            Error::Persisted { offset, reason } => write!(
                f,
                "the persisted tree node at file offset {offset} is unusable ({reason}); \
                 the database file is corrupt, run verify and restore from a backup"
            ),
            Error::BadRoot { bits } => write!(
                f,
                "the root word {bits:#018x} is neither empty, an inline value nor a persisted \
                 node; the stored root is corrupt"
            ),
            Error::Storage(message) => write!(f, "the node store failed: {message}"),
            Error::StaleSnapshot { version, writing } => write!(
                f,
                "cannot roll back to snapshot version {version}: the tree is writing version \
                 {writing} and can only return to the newest snapshot of this same tree"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// A persisted-image error at `offset`.
    pub(crate) fn persisted(offset: u64, reason: impl Into<String>) -> Error {
        Error::Persisted {
            offset,
            reason: reason.into(),
        }
    }
}
