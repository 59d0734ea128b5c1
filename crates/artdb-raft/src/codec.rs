//! codec: how raft's own records (entries, votes, log ids, memberships) become bytes in the node's
//! tables, and the crate's error type.
//!
//! Records are postcard (serde, compact, no schema in the bytes): they are read back only by the
//! same build of this crate and of openraft, which `=0.9.25` pins. Keys are artdb-key scalars
//! (big-endian) so that the log table's order is the log's order.

use openraft::{ErrorSubject, ErrorVerb, StorageError, StorageIOError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;

/// An error of the raft store: the engine's, or a record that does not decode.
#[derive(Debug)]
pub enum RaftStoreError {
    /// The database failed (see the engine's message for what to do).
    Db(artdb::Error),
    /// A stored record does not decode: the database was written by another version or damaged.
    Decode {
        /// Table of the record.
        table: &'static str,
        /// What the decoder said.
        reason: String,
    },
    /// A record could not be encoded (postcard cannot express its type): a programming error
    /// in the record's type, reported instead of written.
    Encode {
        /// Table of the record.
        table: &'static str,
        /// What the encoder said.
        reason: String,
    },
    /// A snapshot's bytes are malformed (`reason`): it was damaged in transfer or built by
    /// another version; the leader sends it again.
    Snapshot {
        /// What was wrong.
        reason: String,
    },
    /// A file of the node's snapshot directory could not be read or written.
    Io {
        /// What was being done, and to which file.
        what: String,
        /// What the system said.
        error: std::io::Error,
    },
}

impl fmt::Display for RaftStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RaftStoreError::Db(error) => write!(f, "{error}"),
            RaftStoreError::Decode { table, reason } => write!(
                f,
                "a record in table {table:?} does not decode ({reason}); the database was \
                 written by another version of artdb-raft or is damaged: restore the node \
                 from a peer"
            ),
            RaftStoreError::Encode { table, reason } => write!(
                f,
                "a record for table {table:?} could not be encoded ({reason}); report this as \
                 a bug of artdb-raft"
            ),
            RaftStoreError::Snapshot { reason } => write!(
                f,
                "the snapshot is malformed ({reason}); it was damaged in transfer or built by \
                 another version"
            ),
            RaftStoreError::Io { what, error } => write!(
                f,
                "{what} failed: {error}; check the disk under the node's snapshot directory \
                 (space, permissions)"
            ),
        }
    }
}

impl std::error::Error for RaftStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RaftStoreError::Db(error) => Some(error),
            RaftStoreError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<artdb::Error> for RaftStoreError {
    fn from(error: artdb::Error) -> RaftStoreError {
        RaftStoreError::Db(error)
    }
}

/// `error` of doing `what` as a [`RaftStoreError::Io`].
pub fn io_error(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RaftStoreError {
    let what = what.into();
    move |error| RaftStoreError::Io { what, error }
}

/// The postcard bytes of `value`, a record of `table`.
pub fn encode<T: Serialize>(table: &'static str, value: &T) -> Result<Vec<u8>, RaftStoreError> {
    postcard::to_allocvec(value).map_err(|error| RaftStoreError::Encode {
        table,
        reason: error.to_string(),
    })
}

/// Decodes a record of `table`.
pub fn decode<T: DeserializeOwned>(table: &'static str, bytes: &[u8]) -> Result<T, RaftStoreError> {
    postcard::from_bytes(bytes).map_err(|error| RaftStoreError::Decode {
        table,
        reason: error.to_string(),
    })
}

/// The key of log index `index` in the log table.
pub fn log_key(index: u64) -> [u8; 8] {
    artdb_key::scalar::encode_u64(index)
}

/// The log index of a key of the log table.
pub fn log_index(key: &[u8]) -> Result<u64, RaftStoreError> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| RaftStoreError::Decode {
        table: crate::TABLE_LOG,
        reason: format!("a log key of {} bytes, not 8", key.len()),
    })?;
    Ok(artdb_key::scalar::decode_u64(bytes))
}

/// `error` as openraft's storage error about `subject` while doing `verb`.
pub fn storage_error(
    subject: ErrorSubject<crate::NodeId>,
    verb: ErrorVerb,
    error: impl Into<RaftStoreError>,
) -> StorageError<crate::NodeId> {
    let error: RaftStoreError = error.into();
    StorageError::IO {
        source: StorageIOError::new(subject, verb, openraft::AnyError::new(&error)),
    }
}
