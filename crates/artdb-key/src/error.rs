//! The one error type of artdb-key: why a byte string is not a valid encoding.
//!
//! Encoding never fails (every value has an encoding); only decoding does, because its input may
//! come from a file or a caller. Every variant names the byte offset (`at`, counted from the start
//! of the input handed to the decoder) where the problem was first seen, so a tool can point at it.

use std::fmt;

/// A byte string that is not a valid key encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The input ended inside a fixed-width field that starts at offset `at`.
    UnexpectedEnd {
        /// Offset of the field's first byte.
        at: usize,
        /// How many bytes past the end of the input the field would have needed.
        needed: usize,
    },
    /// A string or byte-string field ran to the end of the input without its `0x00 0x00`
    /// terminator; the field started at `at`.
    Unterminated {
        /// Offset of the field's first byte.
        at: usize,
    },
    /// Inside a string or byte-string field, a `0x00` was followed by `byte` (only `0xFF`, an
    /// escaped zero, or `0x00`, the terminator, are allowed); `at` is the offset of `byte`.
    InvalidEscape {
        /// Offset of the byte after the `0x00`.
        at: usize,
        /// The byte found there.
        byte: u8,
    },
    /// A string field whose unescaped bytes are not UTF-8; the field started at `at`.
    InvalidUtf8 {
        /// Offset of the field's first byte.
        at: usize,
    },
    /// A tagged value (see [`crate::Value`]) started with a byte that is not a known type tag.
    UnknownTag {
        /// Offset of the tag byte.
        at: usize,
        /// The byte found there.
        tag: u8,
    },
    /// A boolean field held a byte other than `0` or `1`.
    InvalidBool {
        /// Offset of the byte.
        at: usize,
        /// The byte found there.
        byte: u8,
    },
    /// Decoding finished but `len` bytes were left over, starting at `at`.
    TrailingBytes {
        /// Offset of the first unread byte.
        at: usize,
        /// Number of unread bytes.
        len: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::UnexpectedEnd { at, needed } => write!(
                f,
                "the key ends too early: the field at offset {at} lacks {needed} byte(s); \
                 check that it was encoded with the same field types it is decoded with"
            ),
            Error::Unterminated { at } => write!(
                f,
                "the string field starting at offset {at} has no 0x00 0x00 terminator; \
                 the key is truncated or was not written by artdb-key"
            ),
            Error::InvalidEscape { at, byte } => write!(
                f,
                "invalid escape in a string field: byte 0x{byte:02X} at offset {at} follows \
                 0x00 (only 0xFF or the 0x00 terminator may); the key was not written by artdb-key"
            ),
            Error::InvalidUtf8 { at } => write!(
                f,
                "the string field starting at offset {at} is not valid UTF-8; decode it as a \
                 byte string instead if it may hold arbitrary bytes"
            ),
            Error::UnknownTag { at, tag } => write!(
                f,
                "unknown type tag 0x{tag:02X} at offset {at}; the key is not a tagged tuple \
                 (decode it with KeyReader and the field types it was built with)"
            ),
            Error::InvalidBool { at, byte } => write!(
                f,
                "invalid boolean byte 0x{byte:02X} at offset {at} (expected 0x00 or 0x01)"
            ),
            Error::TrailingBytes { at, len } => write!(
                f,
                "{len} byte(s) left over at offset {at} after the last field; the key has more \
                 fields than were decoded"
            ),
        }
    }
}

impl std::error::Error for Error {}
