//! Errors: one typed enum for everything a caller or a file can cause.
//!
//! Invariant: corruption is reported at the first point of detection, naming the absolute page
//! number (page 0 is the table header) and what was wrong, so that tools and tests can act on it.

use std::fmt;
use std::io;

/// What was wrong with a damaged page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorruptionKind {
    /// The table header at page 0 failed its checksum.
    HeaderChecksum,
    /// A header field is out of its valid range (the field is named).
    HeaderField(&'static str),
    /// The page's stored CRC32C does not match its bytes.
    PageChecksum,
    /// The page's kind or level is not the one its position in the file implies.
    PageKind,
    /// A field of the page points outside the page or its level (the field is named).
    PageLayout(&'static str),
    /// Keys are not strictly increasing within a page or across pages.
    KeyOrder,
    /// A large value's reference is out of range or its checksum does not match.
    LargeValue,
    /// The pairs found do not add up to the count in the header.
    PairCount,
}

impl fmt::Display for CorruptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorruptionKind::HeaderChecksum => f.write_str("the table header fails its checksum"),
            CorruptionKind::HeaderField(field) => {
                write!(f, "the header field `{field}` is out of range")
            }
            CorruptionKind::PageChecksum => f.write_str("the page fails its checksum"),
            CorruptionKind::PageKind => f.write_str("the page's kind or level is wrong"),
            CorruptionKind::PageLayout(field) => {
                write!(f, "the page field `{field}` points out of range")
            }
            CorruptionKind::KeyOrder => f.write_str("keys are out of order"),
            CorruptionKind::LargeValue => {
                f.write_str("a large value is out of range or fails its checksum")
            }
            CorruptionKind::PairCount => f.write_str("the pair count does not match the header"),
        }
    }
}

/// Every error of the crate.
#[derive(Debug)]
pub enum Error {
    /// An operating-system I/O call failed; `operation` says which step.
    Io {
        /// The step that failed (for example "write leaf page").
        operation: &'static str,
        /// The error from the operating system.
        source: io::Error,
    },
    /// A key was appended that is not greater than the previous one.
    KeyOutOfOrder {
        /// Zero-based index of the rejected pair among the appended pairs.
        index: u64,
    },
    /// A key equal to the previous one was appended.
    DuplicateKey {
        /// Zero-based index of the rejected pair among the appended pairs.
        index: u64,
    },
    /// A key is longer than the page size allows.
    KeyTooLarge {
        /// Length of the rejected key in bytes.
        len: usize,
        /// Largest key length for this page size.
        max: usize,
    },
    /// A builder option is invalid.
    InvalidOption {
        /// Which option, and what it must be.
        what: &'static str,
    },
    /// The builder failed earlier (an I/O error) and accepts no more calls.
    BuilderFailed,
    /// The table grew more levels than the header can name.
    TooManyLevels {
        /// The level limit.
        max: usize,
    },
    /// The file does not start with the bitable magic number.
    NotABitable,
    /// The file's format version is not one this library reads.
    UnsupportedVersion {
        /// The version found in the header.
        found: u32,
    },
    /// The file is shorter than its header says (an interrupted copy, a truncated download).
    Truncated {
        /// Bytes present.
        len: u64,
        /// Bytes the header requires.
        expected: u64,
    },
    /// A page or the header is damaged.
    Corruption {
        /// Absolute page number (0 is the table header).
        page: u64,
        /// What was wrong.
        kind: CorruptionKind,
    },
    /// Two merge inputs hold the same key and the merge rule is [`crate::MergeRule::Error`].
    MergeDuplicateKey {
        /// Index of the earlier input holding the key.
        first_input: usize,
        /// Index of the later input holding the key.
        second_input: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { operation, source } => {
                write!(f, "I/O error while trying to {operation}: {source}")
            }
            Error::KeyOutOfOrder { index } => write!(
                f,
                "pair #{index} has a key smaller than the previous one; append keys in strictly \
                 increasing byte order (sort the input first)"
            ),
            Error::DuplicateKey { index } => write!(
                f,
                "pair #{index} repeats the previous key; a table holds each key once \
                 (deduplicate the input first)"
            ),
            Error::KeyTooLarge { len, max } => write!(
                f,
                "a key of {len} bytes exceeds the limit of {max} bytes for this page size; use a \
                 larger page size or shorter keys"
            ),
            Error::InvalidOption { what } => write!(f, "invalid builder option: {what}"),
            Error::BuilderFailed => f.write_str(
                "the builder failed earlier and accepts no more calls; start the build again",
            ),
            Error::TooManyLevels { max } => write!(
                f,
                "the table needs more than {max} levels; use a larger page size or shorter keys"
            ),
            Error::NotABitable => {
                f.write_str("the file is not a bitable (its magic number is wrong)")
            }
            Error::UnsupportedVersion { found } => write!(
                f,
                "the bitable format version {found} is not supported by this library (it reads \
                 version {})",
                crate::format::FORMAT_VERSION
            ),
            Error::Truncated { len, expected } => write!(
                f,
                "the file is truncated: it has {len} bytes but its header requires {expected}; \
                 copy or rebuild it"
            ),
            Error::Corruption { page, kind } => write!(
                f,
                "the table is damaged at page {page}: {kind}; rebuild it from its source or \
                 restore a copy"
            ),
            Error::MergeDuplicateKey {
                first_input,
                second_input,
            } => write!(
                f,
                "merge inputs #{first_input} and #{second_input} both hold the same key; pick the \
                 newest-wins rule or remove the duplicate"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Result alias of the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Wraps an I/O result with the step that was attempted.
pub(crate) fn io<T>(operation: &'static str, result: io::Result<T>) -> Result<T> {
    result.map_err(|source| Error::Io { operation, source })
}

/// Shorthand for a corruption error.
pub(crate) fn corrupt<T>(page: u64, kind: CorruptionKind) -> Result<T> {
    Err(Error::Corruption { page, kind })
}
