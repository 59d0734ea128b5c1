//! messages: the text of each exception raised for an engine, bitable or key error, in Python
//! terms.
//!
//! The engine's `Display` speaks to Rust callers and to the command-line tool (`Db::transact`,
//! `artdb stats FILE`, "a write batch", `Options::...`, "made by create"), none of which a
//! Python user meets. So every variant that names an API is worded here from its fields, and
//! only text that names none (corruption kinds, I/O operations, the operating system's
//! message) is taken from the engine. Rules:
//! - a name or key the caller supplied is shown as a Python literal (`repr`), cut to its first
//!   [`SHOWN_CHARS_MAX`] characters (bytes, for a key) with its whole length beside it, so a
//!   1,000-character table name does not fill the terminal;
//! - the operating system's text is given without its "(os error N)" tail: the `IoError`
//!   carrying it has `errno` set, and Python's `OSError.__str__` shows `[Errno N]` already;
//! - a variant this file does not word (one added to the engine later, or one Python cannot
//!   reach) falls back to the engine's `Display`, so a message is never lost.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::path::Path;

/// Characters of a caller's name (bytes of a key) shown in a message before it is cut.
pub(crate) const SHOWN_CHARS_MAX: usize = 60;

/// `name` as a Python `str` literal, cut (see the module docs).
pub(crate) fn name(py: Python<'_>, name: &str) -> String {
    let count = name.chars().count();
    if count <= SHOWN_CHARS_MAX {
        return repr(PyString::new(py, name).as_any(), name);
    }
    let head: String = name.chars().take(SHOWN_CHARS_MAX).collect();
    let shown = repr(PyString::new(py, &head).as_any(), &head);
    format!("{shown}... (a name of {count} characters)")
}

/// `key` as a Python `bytes` literal, cut (see the module docs).
pub(crate) fn key(py: Python<'_>, key: &[u8]) -> String {
    if key.len() <= SHOWN_CHARS_MAX {
        return repr(PyBytes::new(py, key).as_any(), key);
    }
    let head = &key[..SHOWN_CHARS_MAX];
    let shown = repr(PyBytes::new(py, head).as_any(), head);
    format!("{shown}... (a key of {} bytes)", key.len())
}

/// `repr(object)`, or Rust's `Debug` of `fallback` if `repr` itself raised.
fn repr(object: &Bound<'_, PyAny>, fallback: &(impl std::fmt::Debug + ?Sized)) -> String {
    object
        .repr()
        .map_or_else(|_| format!("{fallback:?}"), |text| text.to_string())
}

/// The operating system's text of `source`, without the "(os error N)" that Rust appends (the
/// exception's `errno` carries the number).
pub(crate) fn os_text(source: &std::io::Error) -> String {
    let text = source.to_string();
    match source.raw_os_error() {
        Some(code) => match text.strip_suffix(&format!(" (os error {code})")) {
            Some(stripped) => stripped.to_string(),
            None => text,
        },
        None => text,
    }
}

/// The message of an engine error.
pub(crate) fn engine(py: Python<'_>, error: &artdb::Error) -> String {
    use artdb::Error as E;
    match error {
        E::Io { op, source } => format!(
            "I/O error during {op}: {}; check the disk and free space, then close the database \
             and open it again",
            os_text(source)
        ),
        E::Open {
            path,
            read_only,
            source,
        } => open(path, *read_only, source),
        E::Corruption { at, kind } => corruption(*at, kind),
        E::NotADatabase { path, found } => not_a_database(path.as_deref(), found),
        E::Locked {
            path,
            holder_pid,
            waited_ms,
        } => locked(path, *holder_pid, *waited_ms),
        E::AlreadyExists { path } => format!(
            "{} already exists; open it with artdb.open instead, or choose another path",
            path.display()
        ),
        E::TableNotFound { name } | E::TableExists { name } | E::TableNotEmpty { name } => {
            table(py, error, name)
        }
        E::InvalidTableName { name } => format!(
            "the table name {} is invalid: a name is 1 to {} bytes of UTF-8, and this one is {} \
             bytes",
            self::name(py, name),
            artdb::db::TABLE_NAME_LEN_MAX,
            name.len()
        ),
        E::Unsorted { index } => format!(
            "bulk load input is not sorted: pair {index} has a key smaller than the one before \
             it; sort the input first"
        ),
        E::ReadOnly => "the database was opened with read_only=True, which refuses writes, \
                        table changes and checkpoints; open it again without read_only to write"
            .to_string(),
        E::Poisoned { cause } => format!(
            "an earlier failure left the database in an unknown state: {cause}; writes are \
             refused until the database is closed and opened again (check the disk and free \
             space first)"
        ),
        E::Conflict { table, key, reason } => conflict(py, table, key, reason),
        E::TransactionTooLarge { bytes, max } => format!(
            "the transaction's log record would take {bytes} bytes, more than the limit of \
             {max}; split it into smaller transactions, or fill an empty table in one step with \
             Table.load"
        ),
        E::Aborted => "the transaction was aborted by a checkpoint that could not wait for it; \
                       nothing of it was committed: run it again (Database.transact does)"
            .to_string(),
        E::LogMissing { path, covered_lsn } => log_missing(path.as_deref(), *covered_lsn),
        // KeyTooLarge, ValueTooLarge, Duplicate, FileTooLarge, Tree: the engine's text names no
        // API. BatchHeldByThisThread cannot happen (the package never holds a write batch).
        other => other.to_string(),
    }
}

/// An open that failed (`Error::Open`).
fn open(path: &Path, read_only: bool, source: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let shown = path.display();
    match source.kind() {
        ErrorKind::NotFound if read_only => format!(
            "{shown} does not exist; check the path (an open with read_only=True never creates \
             a database)"
        ),
        ErrorKind::NotFound => format!(
            "{shown} does not exist; check the path, or open it with create=True to make a new \
             database"
        ),
        ErrorKind::PermissionDenied if read_only => format!(
            "permission denied reading {shown}; check the permissions of the file and its \
             directories"
        ),
        ErrorKind::PermissionDenied => format!(
            "permission denied opening {shown} for writing; check its permissions and owner, or \
             open it with read_only=True to only read it"
        ),
        _ => format!("cannot open {shown}: {}", os_text(source)),
    }
}

/// Damage in the database file or its log (`Error::Corruption`).
fn corruption(at: u64, kind: &artdb::CorruptionKind) -> String {
    use artdb::CorruptionKind as K;
    match kind {
        K::Log { lsn: 0, what } => format!(
            "the write-ahead log (the .wal file beside the database) has a header that is \
             refused: {what}"
        ),
        K::Log { lsn, what } => format!(
            "the write-ahead log (the .wal file beside the database) is damaged at byte {at} \
             (record LSN {lsn}): {what}; restore the database from a backup"
        ),
        K::NewestCheckpoint {
            generation,
            problem,
        } => format!(
            "the database file is damaged at byte {at}: its newest checkpoint (generation \
             {generation}) is missing or damaged ({problem}); restore the file from a backup \
             (the previous checkpoint may still be readable: the artdb command-line tool's \
             --salvage option copies it out read-only)"
        ),
        kind => {
            format!("the database file is corrupt at byte {at} ({kind}); restore it from a backup")
        }
    }
}

/// A file that is no artdb database (`Error::NotADatabase`). The variant says what it found
/// only as text (`found`), so the hint is chosen by that text: the engine's own words for the
/// two cases with a remedy of their own, an empty file and a bitable.
fn not_a_database(path: Option<&Path>, found: &str) -> String {
    let subject = match path {
        Some(path) => format!("{} is not an artdb database", path.display()),
        None => "the file is not an artdb database".to_string(),
    };
    if found.contains("bitable") {
        format!("{subject}: it is an artdb bitable file; open it with artdb.bitable.open")
    } else if found == "empty" {
        format!(
            "{subject}: it is empty; an empty file becomes a new database when opened with \
             create=True and without read_only"
        )
    } else {
        format!("{subject}: it is {found}; check the path")
    }
}

/// Another handle holds the lock (`Error::Locked`).
fn locked(path: &Path, holder_pid: Option<u32>, waited_ms: u64) -> String {
    let holder = match holder_pid {
        Some(pid) => format!("{} is open in another process (pid {pid})", path.display()),
        None => format!(
            "{} is open in another handle (of this process, or of a process whose pid is \
             unknown)",
            path.display()
        ),
    };
    let waited = if waited_ms > 0 {
        format!(", still after waiting {waited_ms} ms")
    } else {
        String::new()
    };
    format!(
        "{holder}{waited}; close that one first (a read-write open excludes every other open; \
         opens with read_only=True exclude only read-write ones)"
    )
}

/// The table errors that name a table.
fn table(py: Python<'_>, error: &artdb::Error, table: &str) -> String {
    let shown = name(py, table);
    match error {
        artdb::Error::TableNotFound { .. } => format!(
            "no table named {shown}; create it first (create_table(name) on the database or in \
             a transaction, or db.table(name, create=True)); table_names() lists the tables"
        ),
        artdb::Error::TableExists { .. } => format!("a table named {shown} already exists"),
        _ => format!(
            "Table.load needs an empty table but {shown} has keys; use Table.update to add \
             them instead"
        ),
    }
}

/// A transaction that lost to another (`Error::Conflict`).
fn conflict(py: Python<'_>, table: &str, key: &[u8], reason: &str) -> String {
    let table = name(py, table);
    let place = if key.is_empty() {
        format!("table {table}")
    } else {
        format!("table {table}, key {}", self::key(py, key))
    };
    format!(
        "the transaction conflicted on {place}: {reason}; nothing of it was applied: run it \
         again (Database.transact retries it)"
    )
}

/// A log that is gone while the database was not closed cleanly (`Error::LogMissing`).
fn log_missing(path: Option<&Path>, covered_lsn: u64) -> String {
    let log = path.map_or_else(
        || "the write-ahead log".to_string(),
        |path| format!("the write-ahead log {}.wal", path.display()),
    );
    format!(
        "{log} is missing (or empty, or its header is gone), but the database was not closed \
         cleanly: commits after its last checkpoint (log position {covered_lsn}) may exist only \
         in that log. Put the .wal file back beside the database and open it again (to give up \
         those commits and open the last checkpoint, the artdb command-line tool has \
         --open-without-log)"
    )
}

/// The message of a bitable error.
pub(crate) fn bitable(error: &artdb_bitable::Error) -> String {
    use artdb_bitable::Error as E;
    match error {
        E::Io { operation, source } => {
            format!("I/O error while trying to {operation}: {}", os_text(source))
        }
        // The engine's texts suggest a larger page size, which the package does not offer.
        E::KeyTooLarge { len, max } => {
            format!("a key of {len} bytes is longer than a bitable's limit of {max} bytes")
        }
        E::TooManyLevels { max } => {
            format!("the bitable would need more than {max} levels; use shorter keys")
        }
        other => other.to_string(),
    }
}

/// The message of bytes that `artdb.keys.unpack` cannot decode. The key crate's own text names
/// its Rust readers; here each case says what is wrong in the terms of `pack`.
pub(crate) fn key_decode(error: &artdb_key::Error) -> String {
    use artdb_key::Error as E;
    let what = match *error {
        E::UnexpectedEnd { at, needed } => format!(
            "it ends inside the value that starts at byte {at}, {needed} byte(s) short (it was \
             cut off)"
        ),
        E::Unterminated { at } => format!(
            "the str or bytes value that starts at byte {at} has no end marker (it was cut off)"
        ),
        E::InvalidEscape { at, byte } => format!(
            "byte {at} (0x{byte:02X}) follows a 0x00 inside a str or bytes value, which pack \
             never writes"
        ),
        E::InvalidUtf8 { at } => {
            format!("the str value that starts at byte {at} is not valid UTF-8")
        }
        E::UnknownTag { at, tag } => {
            format!("byte {at} (0x{tag:02X}) is not the type tag of a value pack writes")
        }
        E::InvalidBool { at, byte } => {
            format!("the bool at byte {at} is 0x{byte:02X}, not 0x00 or 0x01")
        }
        E::TrailingBytes { at, len } => {
            format!("{len} byte(s) follow the last value, from byte {at}")
        }
        _ => error.to_string(),
    };
    format!("not a key made by artdb.keys.pack: {what}")
}
