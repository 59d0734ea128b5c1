//! The one error type of the engine crate.
//!
//! Every fallible public function returns [`Result<T>`]. A variant holds the data tests and tools
//! need; its `Display` is a sentence a user can act on. Corruption is reported where it is first
//! seen, with the byte offset in the database file (`at`) and what was wrong (`kind`).

use std::fmt;

/// Result alias of the engine crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Longest table name in bytes. Defined here, below every layer, because
/// [`Error::InvalidTableName`]'s sentence states it; `db` re-exports it as the public name.
pub const TABLE_NAME_LEN_MAX: usize = 255;

/// What was wrong with bytes read from the database file.
///
/// ```
/// use artdb::{CorruptionKind, Error};
/// let error = Error::Corruption { at: 8192, kind: CorruptionKind::PageChecksum };
/// assert!(error.to_string().contains("8192"));
/// assert_eq!(CorruptionKind::PageChecksum.to_string(), "page checksum mismatch");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CorruptionKind {
    /// The file is shorter than its fixed header and superblocks.
    FileTooShort,
    /// The header's magic number is not artdb's: this is not an artdb database file.
    BadMagic,
    /// The header names a format version this build cannot read.
    UnsupportedVersion(u32),
    /// The header's checksum does not match its bytes.
    HeaderChecksum,
    /// A header field is out of range.
    HeaderField(&'static str),
    /// Neither superblock is valid (both checksums failed or both are malformed).
    NoValidSuperblock,
    /// A superblock field is out of range.
    SuperblockField(&'static str),
    /// A page's checksum does not match its bytes.
    PageChecksum,
    /// A page header is malformed (kind, length or generation out of range).
    PageHeader(&'static str),
    /// A node offset points outside the written part of the file or at a page header.
    NodeOffset,
    /// The catalog or space map blob is malformed or fails its checksum.
    Metadata(&'static str),
    /// The tree found a malformed persisted node image.
    Node(String),
    /// `verify` found a violated invariant.
    Invariant(String),
    /// The file ends before the end of the pages its checkpoint names (`needed` bytes): it was
    /// truncated (a checkpoint syncs its pages before its superblock, so no crash does this).
    Truncated {
        /// Bytes the checkpoint needs.
        needed: u64,
    },
    /// Salvage was asked for but no valid checkpoint older than the newest exists.
    NoPreviousCheckpoint,
    /// The newest checkpoint's superblock was written whole, but what it names is missing or
    /// damaged (`problem`): truncation or damage, not a crash. Open does not fall back to the
    /// previous checkpoint by itself (that would lose the newest silently); the salvage option
    /// opens it read-only.
    NewestCheckpoint {
        /// The newest checkpoint's generation.
        generation: u64,
        /// What is wrong with it.
        problem: Box<CorruptionKind>,
    },
    /// The newest checkpoint is missing or damaged (`problem`, as in `NewestCheckpoint`) and the
    /// previous one cannot be opened either (`previous`: what the salvage open met), so the
    /// salvage option would fail too; only a backup holds the data.
    NoCheckpointReadable {
        /// The newest checkpoint's generation.
        generation: u64,
        /// What is wrong with it.
        problem: Box<CorruptionKind>,
        /// Why the previous checkpoint cannot be opened.
        previous: String,
    },
    /// The write-ahead log (`<file>.wal`) is damaged or does not belong to this database; `at`
    /// is then a byte offset in the log file.
    Log {
        /// The LSN of the record concerned (0: the log's header).
        lsn: u64,
        /// What was wrong.
        what: String,
    },
}

/// Which of a database's two files an operation was on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRole {
    /// The database file.
    Database,
    /// The write-ahead log (`<file>.wal`).
    Log,
}

impl fmt::Display for FileRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileRole::Database => write!(f, "the database file"),
            FileRole::Log => write!(f, "the write-ahead log"),
        }
    }
}

/// The first failure that poisoned a database ([`Error::Poisoned`]): kept when it happens, so
/// that every later refusal says what failed, even when the failure itself reached no caller
/// (an automatic checkpoint runs beside commits and has nobody to return its error to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoisonCause {
    /// The file the failed operation was on.
    pub file: FileRole,
    /// That file's path, when the database was opened by path.
    pub path: Option<std::path::PathBuf>,
    /// What the engine was doing (e.g. "sync the checkpoint's pages").
    pub op: String,
    /// The operating system's error kind, when the failure was an I/O error.
    pub io_kind: Option<std::io::ErrorKind>,
    /// The operating system's error number, when it gave one (`ENOSPC` is 28, `EIO` 5).
    pub os_code: Option<i32>,
    /// The failure's own message (for an I/O error, the operating system's).
    pub message: String,
}

impl PoisonCause {
    /// The cause that `error`, met while doing `during` on `file`, leaves. An error that is a
    /// refusal already (`Poisoned`) keeps the cause it carries: only the first failure counts.
    pub(crate) fn of(
        error: &Error,
        during: &str,
        file: FileRole,
        path: Option<&std::path::Path>,
    ) -> PoisonCause {
        if let Error::Poisoned { cause } = error {
            return (**cause).clone();
        }
        let (op, io_kind, os_code, message) = match error {
            Error::Io { op, source } => (
                (*op).to_string(),
                Some(source.kind()),
                source.raw_os_error(),
                source.to_string(),
            ),
            other => (during.to_string(), None, None, other.to_string()),
        };
        PoisonCause {
            file,
            path: path.map(std::path::Path::to_path_buf),
            op,
            io_kind,
            os_code,
            message,
        }
    }

    /// The refusal that carries this cause.
    pub(crate) fn refusal(&self) -> Error {
        Error::Poisoned {
            cause: Box::new(self.clone()),
        }
    }
}

impl fmt::Display for PoisonCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.op, self.file)?;
        if let Some(path) = &self.path {
            write!(f, " {}", path.display())?;
        }
        write!(f, ") failed: {}", self.message)?;
        if let Some(name) = self.os_code.and_then(errno_name) {
            write!(f, " [{name}]")?;
        }
        Ok(())
    }
}

/// The symbolic name of the error numbers a full or failing disk gives, for messages.
fn errno_name(code: i32) -> Option<&'static str> {
    match code {
        libc::ENOSPC => Some("ENOSPC"),
        libc::EIO => Some("EIO"),
        libc::EDQUOT => Some("EDQUOT"),
        libc::EROFS => Some("EROFS"),
        libc::EFBIG => Some("EFBIG"),
        _ => None,
    }
}

/// The errors of artdb.
///
/// ```
/// use artdb::Error;
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// match db.read().table("missing") {
///     Err(Error::TableNotFound { name }) => assert_eq!(name, "missing"),
///     other => panic!("{:?}", other.map(|_| ())), // ok: a doc example's failure
/// }
/// // Every error's message is a sentence that says what to do.
/// let error = db.create_table("").unwrap_err();
/// assert!(!error.to_string().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An I/O call on the database file failed.
    Io {
        /// What the engine was doing (e.g. "sync", "write page").
        op: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The database file is corrupt at byte offset `at`.
    Corruption {
        /// Byte offset in the database file where the problem was first seen.
        at: u64,
        /// What was wrong.
        kind: CorruptionKind,
    },
    /// The database file could not be opened (or created) at `path`.
    Open {
        /// The file.
        path: std::path::PathBuf,
        /// Whether it was opened for reading only.
        read_only: bool,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not an artdb database: empty, another format, or text.
    NotADatabase {
        /// The file, when opened by path.
        path: Option<std::path::PathBuf>,
        /// What it looks like instead ("empty", "an artdb bitable file", ...).
        found: &'static str,
    },
    /// Another handle (in this or another process) holds the database file's lock, and kept
    /// it for as long as the open was allowed to wait (`Options::lock_wait_max`).
    Locked {
        /// The file.
        path: std::path::PathBuf,
        /// The pid of the process holding it, when known (not for a handle of this process).
        holder_pid: Option<u32>,
        /// How long the open waited, in milliseconds.
        waited_ms: u64,
    },
    /// The readers file beside the database (`<db>.readers`, shared by the processes that
    /// have it open) cannot be used.
    ReadersFile {
        /// The readers file.
        path: std::path::PathBuf,
        /// What is wrong and what to do.
        problem: String,
    },
    /// Every reader slot of the readers file is taken by live readers in other processes.
    ReadersFull {
        /// The readers file.
        path: std::path::PathBuf,
        /// How many slots it has.
        slots: usize,
    },
    /// The file to create already exists.
    AlreadyExists {
        /// The file.
        path: std::path::PathBuf,
    },
    /// A key is longer than the limit.
    KeyTooLarge {
        /// Length of the key in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// A value is longer than the limit.
    ValueTooLarge {
        /// Length of the value in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// No table of this name exists.
    TableNotFound {
        /// The table's name.
        name: String,
    },
    /// A table of this name already exists.
    TableExists {
        /// The table's name.
        name: String,
    },
    /// A table name is empty or too long.
    InvalidTableName {
        /// The rejected name.
        name: String,
    },
    /// Bulk load input is not in strictly increasing key order.
    Unsorted {
        /// Zero-based index of the offending pair in the input.
        index: u64,
    },
    /// Bulk load input repeats a key.
    Duplicate {
        /// Zero-based index of the offending pair in the input.
        index: u64,
    },
    /// Bulk load needs an empty table.
    TableNotEmpty {
        /// The table's name.
        name: String,
    },
    /// The database was opened read-only (`Options::read_only`, or for salvage): writes,
    /// checkpoints and bulk loads are refused.
    ReadOnly,
    /// An earlier I/O failure left the file in an unknown state; writes are refused until the
    /// database is reopened. `cause` is that first failure, whoever met it.
    Poisoned {
        /// The first failure (its operation, file and error).
        cause: Box<PoisonCause>,
    },
    /// A write transaction conflicted with one that committed after it started; nothing of it
    /// was applied. Run it again on a new snapshot (`Db::transact` does so).
    Conflict {
        /// The table where the conflict was found.
        table: String,
        /// The key (empty when the whole table conflicted and no key applies).
        key: Vec<u8>,
        /// Why (which of its writes or reads the other transaction overlapped).
        reason: &'static str,
    },
    /// The database file is larger than this build can address.
    FileTooLarge {
        /// Size in bytes that was needed.
        len: u64,
    },
    /// An error from the tree that is not corruption (a programmer error surfaced as a value).
    Tree(String),
    /// A transaction's log record would exceed the largest record the log takes.
    TransactionTooLarge {
        /// Bytes the record would need.
        bytes: u64,
        /// The limit in bytes.
        max: u64,
    },
    /// The transaction was aborted by `Db::force_checkpoint`; nothing of it was committed.
    Aborted,
    /// The database was closed (`Db::close`) while this transaction or batch was alive: it
    /// can no longer commit, and nothing of it was written.
    Closed,
    /// `call` needs the writer, and the calling thread holds a write batch (`Db::write`): it
    /// would wait for that batch forever (the writer is not reentrant). Nothing was done.
    BatchHeldByThisThread {
        /// The call refused (e.g. "Db::checkpoint").
        call: &'static str,
    },
    /// `Db::close` checkpointed and closed the database, but read snapshots ([`crate::ReadTxn`])
    /// or write transactions taken from it are still alive: they hold the file, and its lock,
    /// until they are dropped, so the path cannot be opened again before that.
    SnapshotsAlive {
        /// How many snapshots were alive.
        count: u64,
    },
    /// The write-ahead log is missing (or empty, or cut before its header) but the database
    /// was not closed cleanly:
    /// commits after its last checkpoint may exist only in that log. Nothing was changed.
    LogMissing {
        /// The database file, when opened by path.
        path: Option<std::path::PathBuf>,
        /// The LSN the last checkpoint covers.
        covered_lsn: u64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { op, source } => write!(
                f,
                "I/O error during {op}: {source}; check the disk and free space, then reopen the database"
            ),
            Error::Corruption {
                kind: CorruptionKind::Log { lsn: 0, what },
                ..
            } => write!(f, "the write-ahead log's header is refused: {what}"),
            Error::Corruption {
                at,
                kind: CorruptionKind::Log { lsn, what },
            } => write!(
                f,
                "the write-ahead log is damaged at byte {at} of the .wal file (record LSN {lsn}): \
                 {what}; restore the database from a backup"
            ),
            Error::Corruption {
                at,
                kind: kind @ CorruptionKind::NewestCheckpoint { .. },
            } => write!(
                f,
                "the database file is damaged at byte {at}: {kind}; the previous checkpoint may \
                 be readable: open read-only with the salvage option \
                 (`Options::salvage_previous_checkpoint`) to copy out what it holds, or restore \
                 the file from a backup"
            ),
            // Not damage in itself: a file checkpointed once has no older checkpoint, so the
            // advice of a corruption (restore from a backup) would send a user with a healthy
            // file to their backups.
            Error::Corruption {
                kind: CorruptionKind::NoPreviousCheckpoint,
                ..
            } => write!(
                f,
                "a salvage open found no checkpoint older than the newest to read (a file keeps \
                 the newest and at most one before it); open it without salvage, which reads the \
                 newest, and restore it from a backup only if that fails"
            ),
            Error::Corruption { at, kind } => write!(
                f,
                "the database file is corrupt at byte {at} ({kind}); restore it from a backup \
                 (`artdb verify FILE` lists what is wrong)"
            ),
            Error::Open {
                path,
                read_only,
                source,
            } => {
                let path = path.display();
                match (source.kind(), source.raw_os_error()) {
                    (std::io::ErrorKind::NotFound, _) => write!(
                        f,
                        "{path} does not exist; check the path (a new database is made by create)"
                    ),
                    (_, Some(libc::EISDIR)) => write!(
                        f,
                        "{path} is a directory, not a database file; give the path of the file"
                    ),
                    (std::io::ErrorKind::PermissionDenied, _) if *read_only => write!(
                        f,
                        "permission denied reading {path}; check the permissions of the file \
                         and its directories"
                    ),
                    (std::io::ErrorKind::PermissionDenied, _) => write!(
                        f,
                        "permission denied opening {path} for writing; check its permissions \
                         and owner, or open it read-only to only read it"
                    ),
                    _ => write!(f, "cannot open {path}: {source}"),
                }
            }
            Error::NotADatabase { path, found } => {
                match path {
                    Some(path) => write!(f, "{} is not an artdb database: ", path.display())?,
                    None => write!(f, "the file is not an artdb database: ")?,
                }
                write!(f, "it is {found}")?;
                if *found == BITABLE {
                    write!(f, "; use the bitable commands (`artdb bitable ...`) on it")
                } else {
                    write!(f, "; check the path")
                }
            }
            Error::Locked {
                path,
                holder_pid,
                waited_ms,
            } => {
                match holder_pid {
                    Some(pid) => write!(f, "{} is open in another process (pid {pid})", path.display())?,
                    None => write!(
                        f,
                        "{} is open in another process or handle (of this process, or one whose \
                         pid is unknown)",
                        path.display()
                    )?,
                }
                if *waited_ms > 0 {
                    write!(f, ", still after waiting {waited_ms} ms")?;
                }
                write!(
                    f,
                    "; close that one first, or wait longer (`Options::lock_wait_max`; only \
                     one read-write open at a time; read-only opens run beside it)"
                )
            }
            Error::ReadersFile { path, problem } => {
                write!(f, "the readers file {}: {problem}", path.display())
            }
            Error::ReadersFull { path, slots } => write!(
                f,
                "all {slots} reader slots of {} are held by live snapshots of other processes; \
                 end some (`artdb readers FILE` lists them with their pids) and open again",
                path.display()
            ),
            Error::AlreadyExists { path } => write!(
                f,
                "{} already exists; open it instead or choose another path",
                path.display()
            ),
            Error::KeyTooLarge { len, max } => {
                write!(f, "key of {len} bytes is longer than the limit of {max} bytes")
            }
            Error::ValueTooLarge { len, max } => {
                write!(f, "value of {len} bytes is longer than the limit of {max} bytes")
            }
            Error::TableNotFound { name } => {
                write!(
                    f,
                    "no table named {name:?}; create it first (`Db::create_table_if_missing`, \
                     or `create_table` in a transaction); `Db::stats` lists the tables"
                )
            }
            Error::TableExists { name } => write!(f, "a table named {name:?} already exists"),
            Error::InvalidTableName { name } => write!(
                f,
                "table name {name:?} is invalid: it must be 1 to {} bytes long",
                TABLE_NAME_LEN_MAX
            ),
            Error::Unsorted { index } => write!(
                f,
                "bulk load input is not sorted: pair {index} has a key smaller than the one \
                 before it; sort the input or insert it in a write batch"
            ),
            Error::Duplicate { index } => write!(
                f,
                "bulk load input repeats a key at pair {index}; remove duplicates first"
            ),
            Error::TableNotEmpty { name } => write!(
                f,
                "bulk load needs an empty table but {name:?} has keys; use a write batch instead"
            ),
            Error::ReadOnly => write!(
                f,
                "the database was opened read-only; open it without the read-only (or salvage) \
                 option to write"
            ),
            Error::Poisoned { cause } => write!(
                f,
                "an earlier failure left the database in an unknown state: {cause}; writes are \
                 refused until the database is reopened (check the disk and free space first)"
            ),
            Error::Conflict { table, key, reason } => write!(
                f,
                "the transaction conflicted on table {table:?}, key \"{}\": {reason}; nothing \
                 of it was applied, run it again (Db::transact retries)",
                key.escape_ascii()
            ),
            Error::FileTooLarge { len } => {
                write!(f, "the database file would need {len} bytes, more than artdb can address")
            }
            Error::Tree(message) => write!(f, "tree error: {message}"),
            Error::TransactionTooLarge { bytes, max } => write!(
                f,
                "the transaction's log record would take {bytes} bytes, more than the limit of \
                 {max}; split it into smaller transactions or use bulk_load"
            ),
            Error::Aborted => write!(
                f,
                "the transaction was aborted by a forced checkpoint; nothing of it was \
                 committed, retry it"
            ),
            Error::Closed => write!(
                f,
                "the database was closed while this transaction was open; nothing of it was \
                 committed: reopen the database and run it again"
            ),
            Error::BatchHeldByThisThread { call } => write!(
                f,
                "{call} was called on a thread that holds a write batch (Db::write) and would \
                 wait for that batch forever; commit or drop the batch first, or make the call \
                 from another thread"
            ),
            Error::SnapshotsAlive { count } => write!(
                f,
                "the database was checkpointed and closed, but {count} read snapshot(s) or \
                 write transaction(s) taken from it are still alive and keep the file open and \
                 locked; drop them, then the file can be opened again"
            ),
            Error::LogMissing { path, covered_lsn } => {
                let log = path.as_ref().map_or_else(
                    || "the write-ahead log".to_string(),
                    |path| format!("the write-ahead log {}.wal", path.display()),
                );
                write!(
                    f,
                    "{log} is missing (or empty, or its header is gone), but the database \
                     was not closed cleanly: \
                     commits after its last checkpoint (log position {covered_lsn}) may exist \
                     only in that log. Put the .wal file back beside the database and open \
                     again; or, to open the last checkpoint and lose those commits, open with \
                     Options::open_without_log (`artdb --open-without-log`)"
                )
            }
        }
    }
}

impl fmt::Display for CorruptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorruptionKind::FileTooShort => write!(f, "file shorter than its header"),
            CorruptionKind::BadMagic => write!(f, "not an artdb database file"),
            CorruptionKind::UnsupportedVersion(v) => write!(f, "unsupported format version {v}"),
            CorruptionKind::HeaderChecksum => write!(f, "header checksum mismatch"),
            CorruptionKind::HeaderField(name) => write!(f, "header field {name} out of range"),
            CorruptionKind::NoValidSuperblock => write!(f, "no valid superblock"),
            CorruptionKind::SuperblockField(name) => {
                write!(f, "superblock field {name} out of range")
            }
            CorruptionKind::PageChecksum => write!(f, "page checksum mismatch"),
            CorruptionKind::PageHeader(what) => write!(f, "bad page header: {what}"),
            CorruptionKind::NodeOffset => write!(f, "node offset outside the written file"),
            CorruptionKind::Metadata(what) => write!(f, "bad metadata: {what}"),
            CorruptionKind::Node(what) => write!(f, "bad node image: {what}"),
            CorruptionKind::Invariant(what) => write!(f, "invariant violated: {what}"),
            CorruptionKind::Truncated { needed } => write!(
                f,
                "the file ends before byte {needed}, which its checkpoint needs: it was truncated"
            ),
            CorruptionKind::NoPreviousCheckpoint => {
                write!(f, "no valid checkpoint older than the newest to salvage")
            }
            CorruptionKind::NewestCheckpoint {
                generation,
                problem,
            } => write!(
                f,
                "the newest checkpoint (generation {generation}) is missing or damaged ({problem}); \
                 restore from a backup, or open with the salvage option (`artdb --salvage`) to \
                 copy out the previous checkpoint read-only"
            ),
            CorruptionKind::Log { lsn: 0, what } => write!(f, "log header: {what}"),
            CorruptionKind::NoCheckpointReadable {
                generation,
                problem,
                previous,
            } => write!(
                f,
                "the newest checkpoint (generation {generation}) is missing or damaged \
                 ({problem}), and the previous checkpoint cannot be opened either ({previous}), \
                 so salvage cannot help"
            ),
            CorruptionKind::Log { lsn, what } => write!(f, "log record LSN {lsn}: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } | Error::Open { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What [`Error::NotADatabase`] says of a bitable file.
pub(crate) const BITABLE: &str = "an artdb bitable file, not a database";

impl Error {
    /// Names `path` in an error that could not know it.
    pub(crate) fn at_path(self, path: &std::path::Path) -> Error {
        match self {
            Error::NotADatabase { path: None, found } => Error::NotADatabase {
                path: Some(path.to_path_buf()),
                found,
            },
            Error::LogMissing {
                path: None,
                covered_lsn,
            } => Error::LogMissing {
                path: Some(path.to_path_buf()),
                covered_lsn,
            },
            other => other,
        }
    }

    /// Shorthand for a corruption error.
    pub(crate) fn corruption(at: u64, kind: CorruptionKind) -> Error {
        Error::Corruption { at, kind }
    }

    /// Wraps an I/O error with what the engine was doing.
    pub(crate) fn io(op: &'static str) -> impl FnOnce(std::io::Error) -> Error {
        move |source| Error::Io { op, source }
    }
}

/// Maps a tree error to the engine's error.
pub(crate) fn from_tree(error: artdb_art::Error) -> Error {
    match error {
        artdb_art::Error::KeyTooLarge { len, max } => Error::KeyTooLarge { len, max },
        artdb_art::Error::ValueTooLarge { len, max } => Error::ValueTooLarge { len, max },
        artdb_art::Error::Unsorted { index } => Error::Unsorted { index },
        artdb_art::Error::Duplicate { index } => Error::Duplicate { index },
        artdb_art::Error::Persisted { offset, reason } => Error::Corruption {
            at: offset,
            kind: CorruptionKind::Node(reason),
        },
        artdb_art::Error::BadRoot { bits } => Error::Corruption {
            at: 0,
            kind: CorruptionKind::Node(format!("bad table root word {bits:#018x}")),
        },
        other => Error::Tree(other.to_string()),
    }
}

impl From<artdb_art::Error> for Error {
    fn from(error: artdb_art::Error) -> Error {
        from_tree(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_refusal_names_the_operation_the_file_and_the_error() {
        let error = Error::io("sync the superblock")(std::io::Error::from_raw_os_error(28));
        let path = std::path::Path::new("/data/x.artdb");
        let cause = PoisonCause::of(&error, "checkpoint", FileRole::Database, Some(path));
        let message = cause.refusal().to_string();
        for part in [
            "sync the superblock",
            "the database file /data/x.artdb",
            "ENOSPC",
        ] {
            assert!(message.contains(part), "{message}");
        }
        // A refusal met later keeps the first cause.
        let later = PoisonCause::of(&cause.refusal(), "recycle the log", FileRole::Log, None);
        assert_eq!(later, cause);
    }

    #[test]
    fn no_older_checkpoint_to_salvage_is_not_called_a_corrupt_file() {
        let message = Error::corruption(32768, CorruptionKind::NoPreviousCheckpoint).to_string();
        assert!(
            message.contains("no checkpoint older than the newest"),
            "{message}"
        );
        assert!(message.contains("without salvage"), "{message}");
        assert!(!message.contains("is corrupt"), "{message}");
    }
}
