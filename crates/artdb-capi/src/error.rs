//! Error codes of the C API, the mapping of every [`artdb::Error`] onto one, and the thread's
//! last error message (`artdb_errmsg`).
//!
//! Every entry point returns an `int`: [`ARTDB_OK`] or one of the codes below. A code names what
//! a C caller can act on (retry on [`ARTDB_CONFLICT`], restore on [`ARTDB_CORRUPT`], close the
//! other handle on [`ARTDB_BUSY`]); the message, the engine error's `Display`, says what happened
//! and what to do. Codes are positive and stable: a new engine variant gets a new code or falls
//! into [`ARTDB_ERROR`], never renumbers an old one.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};

/// Success.
pub const ARTDB_OK: c_int = 0;
/// No such key, or a cursor ran off its end. Also returned by a delete of an absent key.
pub const ARTDB_NOTFOUND: c_int = 1;
/// A write transaction conflicted with one that committed after it began; nothing of it was
/// applied. Free it, begin a new one and run it again.
pub const ARTDB_CONFLICT: c_int = 2;
/// The database file or its log is damaged (`artdb_errmsg` names where).
pub const ARTDB_CORRUPT: c_int = 3;
/// The database file is locked by another handle, in this or another process.
pub const ARTDB_BUSY: c_int = 4;
/// An I/O call failed (disk full, device error); after a failed sync writes are refused until
/// the database is reopened ([`ARTDB_POISONED`]).
pub const ARTDB_IO: c_int = 5;
/// A bad argument: a null pointer, a length past what the address space holds, a string that
/// is not UTF-8, an unknown option value, a table name out of bounds, or a handle in the wrong
/// state (a transaction used after its commit or abort).
pub const ARTDB_INVALID: c_int = 6;
/// The database was opened read-only; the write was refused.
pub const ARTDB_READONLY: c_int = 7;
/// The database file could not be opened or created (missing, a directory, no permission).
pub const ARTDB_CANTOPEN: c_int = 8;
/// The file is not an artdb database.
pub const ARTDB_NOTADB: c_int = 9;
/// The file to create, or the table to create, already exists.
pub const ARTDB_EXISTS: c_int = 10;
/// No table of that name.
pub const ARTDB_NOTABLE: c_int = 11;
/// A key, a value, a transaction or the file is larger than its limit.
pub const ARTDB_TOOBIG: c_int = 12;
/// Bulk load input is not in strictly increasing key order, or repeats a key.
pub const ARTDB_UNSORTED: c_int = 13;
/// Bulk load needs an empty table.
pub const ARTDB_NOTEMPTY: c_int = 14;
/// An earlier I/O failure left the file in an unknown state: writes are refused until the
/// database is reopened.
pub const ARTDB_POISONED: c_int = 15;
/// The transaction or write batch was aborted by a forced checkpoint; nothing of it was
/// committed. Run it again.
pub const ARTDB_ABORTED: c_int = 16;
/// The call would wait forever for a write batch the calling thread holds; end the batch
/// first, or call from another thread.
pub const ARTDB_MISUSE: c_int = 17;
/// The write-ahead log is missing but the database was not closed cleanly; put the `.wal` file
/// back, or open with `open_without_log` to lose the commits only it held.
pub const ARTDB_LOGMISSING: c_int = 18;
/// A bulk load's callback returned an error; the load was abandoned and left nothing behind.
pub const ARTDB_CALLBACK: c_int = 19;
/// A bug in artdb (an internal error or a caught panic); the message says what. The handle
/// may be left in any state; close it.
pub const ARTDB_INTERNAL: c_int = 20;
/// An engine error this version of the C API has no code of its own for.
pub const ARTDB_ERROR: c_int = 21;
/// `artdb_close` checkpointed and closed the database, but read snapshots or transactions
/// taken from it are still alive: they keep the file open and locked until they are freed.
pub const ARTDB_SNAPSHOTS_ALIVE: c_int = 22;
/// The largest code (for tests that walk them all).
pub const ARTDB_CODE_MAX: c_int = ARTDB_SNAPSHOTS_ALIVE;

/// A failure on its way to C: the code and the message `artdb_errmsg` returns.
#[derive(Debug)]
pub struct Failure {
    /// One of the `ARTDB_*` codes, never [`ARTDB_OK`].
    pub code: c_int,
    /// What happened and what to do.
    pub message: String,
}

impl Failure {
    /// A failure with this code and message.
    pub fn new(code: c_int, message: impl Into<String>) -> Failure {
        debug_assert_ne!(code, ARTDB_OK, "a failure needs an error code");
        Failure {
            code,
            message: message.into(),
        }
    }

    /// An [`ARTDB_INVALID`] argument.
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(ARTDB_INVALID, message)
    }
}

impl From<artdb::Error> for Failure {
    fn from(error: artdb::Error) -> Failure {
        Failure::new(code_of(&error), error.to_string())
    }
}

/// The code of an engine error.
pub fn code_of(error: &artdb::Error) -> c_int {
    use artdb::Error as E;
    match error {
        E::Io { .. } => ARTDB_IO,
        E::Corruption { .. } => ARTDB_CORRUPT,
        E::Open { .. } => ARTDB_CANTOPEN,
        E::NotADatabase { .. } => ARTDB_NOTADB,
        E::Locked { .. } => ARTDB_BUSY,
        E::AlreadyExists { .. } | E::TableExists { .. } => ARTDB_EXISTS,
        E::KeyTooLarge { .. }
        | E::ValueTooLarge { .. }
        | E::TransactionTooLarge { .. }
        | E::FileTooLarge { .. } => ARTDB_TOOBIG,
        E::TableNotFound { .. } => ARTDB_NOTABLE,
        E::InvalidTableName { .. } => ARTDB_INVALID,
        E::Unsorted { .. } | E::Duplicate { .. } => ARTDB_UNSORTED,
        E::TableNotEmpty { .. } => ARTDB_NOTEMPTY,
        E::ReadOnly => ARTDB_READONLY,
        E::Poisoned { .. } => ARTDB_POISONED,
        E::Conflict { .. } => ARTDB_CONFLICT,
        E::Tree(_) => ARTDB_INTERNAL,
        E::Aborted => ARTDB_ABORTED,
        E::Closed => ARTDB_INVALID,
        E::BatchHeldByThisThread { .. } => ARTDB_MISUSE,
        E::LogMissing { .. } => ARTDB_LOGMISSING,
        E::SnapshotsAlive { .. } => ARTDB_SNAPSHOTS_ALIVE,
        // `artdb::Error` is non-exhaustive: a variant added later still reaches C, with its
        // message, until it gets a code of its own.
        _ => ARTDB_ERROR,
    }
}

/// The name of a code (`"ARTDB_CONFLICT"`), for `artdb_strerror`; NUL-terminated.
pub fn name_of(code: c_int) -> &'static [u8] {
    match code {
        ARTDB_OK => b"ARTDB_OK\0",
        ARTDB_NOTFOUND => b"ARTDB_NOTFOUND\0",
        ARTDB_CONFLICT => b"ARTDB_CONFLICT\0",
        ARTDB_CORRUPT => b"ARTDB_CORRUPT\0",
        ARTDB_BUSY => b"ARTDB_BUSY\0",
        ARTDB_IO => b"ARTDB_IO\0",
        ARTDB_INVALID => b"ARTDB_INVALID\0",
        ARTDB_READONLY => b"ARTDB_READONLY\0",
        ARTDB_CANTOPEN => b"ARTDB_CANTOPEN\0",
        ARTDB_NOTADB => b"ARTDB_NOTADB\0",
        ARTDB_EXISTS => b"ARTDB_EXISTS\0",
        ARTDB_NOTABLE => b"ARTDB_NOTABLE\0",
        ARTDB_TOOBIG => b"ARTDB_TOOBIG\0",
        ARTDB_UNSORTED => b"ARTDB_UNSORTED\0",
        ARTDB_NOTEMPTY => b"ARTDB_NOTEMPTY\0",
        ARTDB_POISONED => b"ARTDB_POISONED\0",
        ARTDB_ABORTED => b"ARTDB_ABORTED\0",
        ARTDB_MISUSE => b"ARTDB_MISUSE\0",
        ARTDB_LOGMISSING => b"ARTDB_LOGMISSING\0",
        ARTDB_CALLBACK => b"ARTDB_CALLBACK\0",
        ARTDB_INTERNAL => b"ARTDB_INTERNAL\0",
        ARTDB_ERROR => b"ARTDB_ERROR\0",
        ARTDB_SNAPSHOTS_ALIVE => b"ARTDB_SNAPSHOTS_ALIVE\0",
        _ => b"ARTDB_UNKNOWN_CODE\0",
    }
}

thread_local! {
    /// The message of the last failed call on this thread (empty before any).
    static LAST_MESSAGE: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `failure` as this thread's last message and returns its code.
pub fn record(failure: Failure) -> c_int {
    // A message cannot hold NUL in a C string: cut there rather than lose the whole message.
    let bytes: Vec<u8> = failure
        .message
        .into_bytes()
        .into_iter()
        .take_while(|byte| *byte != 0)
        .collect();
    let message = CString::new(bytes).unwrap_or_default();
    LAST_MESSAGE.with(|last| *last.borrow_mut() = message);
    failure.code
}

/// This thread's last message, NUL-terminated; valid until this thread's next failing call.
pub fn last_message_ptr() -> *const c_char {
    // The CString's heap buffer stays where it is until `record` replaces the CString.
    LAST_MESSAGE.with(|last| last.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_name() {
        for code in ARTDB_OK..=ARTDB_CODE_MAX {
            assert_ne!(name_of(code), b"ARTDB_UNKNOWN_CODE\0", "code {code}");
            assert_eq!(name_of(code).last(), Some(&0));
        }
    }

    #[test]
    fn engine_errors_map_onto_their_codes() {
        let conflict = artdb::Error::Conflict {
            table: "t".into(),
            key: b"k".to_vec(),
            reason: "written",
        };
        assert_eq!(code_of(&conflict), ARTDB_CONFLICT);
        assert_eq!(code_of(&artdb::Error::ReadOnly), ARTDB_READONLY);
        assert_eq!(
            code_of(&artdb::Error::KeyTooLarge { len: 9, max: 8 }),
            ARTDB_TOOBIG
        );
        let failure = Failure::from(artdb::Error::Aborted);
        assert_eq!(failure.code, ARTDB_ABORTED);
        assert!(failure.message.contains("retry"), "{}", failure.message);
    }

    #[test]
    fn a_message_with_nul_is_cut_there() {
        let code = record(Failure::invalid("before\0after"));
        assert_eq!(code, ARTDB_INVALID);
        LAST_MESSAGE.with(|last| assert_eq!(last.borrow().to_bytes(), b"before"));
    }
}
