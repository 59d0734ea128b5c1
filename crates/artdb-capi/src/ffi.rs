//! The C entry points: every `extern "C"` function of `include/artdb.h`, and all of the
//! crate's unsafe code.
//!
//! Each entry point runs its body inside [`guard`], which catches a panic (none may unwind
//! into C) and turns an `Err` into its code and this thread's message. Arguments from C are
//! checked before use: a null handle, out-pointer or string is [`ARTDB_INVALID`], as is a null
//! byte pointer with a non-zero length or a length past `isize::MAX`. What cannot be checked
//! (a dangling or freed handle, a buffer shorter than its length) is the caller's contract,
//! stated in each function's `# Safety`.
//!
//! Two borrows are made `'static` here, each owning what it borrows (see `handles.rs`): a
//! cursor borrows the read snapshot whose `Arc` it holds, a write batch the database whose
//! `Arc` it holds. Both point into the `Arc`'s heap allocation, which does not move while the
//! handle holds a count, and both are dropped before that count (field order).

use crate::error::*;
use crate::handles::{BatchHandle, Bounds, CursorHandle, DbHandle, ReadHandle, Source, TxnHandle};
use artdb::{Db, Durability, Isolation, Options, RecoveryMode, WriteOptions};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ops::Bound;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A byte string passed to or returned by artdb: `len` bytes at `data`. Returned values borrow
/// artdb's memory for as long as the function that returned them states.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ArtdbVal {
    /// The first byte (may be null when `len` is 0; null in a `get_many` result: no such key).
    pub data: *const u8,
    /// The number of bytes.
    pub len: usize,
}

/// Options of [`artdb_open`] and [`artdb_create`]; fill with [`artdb_options_init`] first so
/// fields added later get their defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ArtdbOptions {
    /// [`ARTDB_DURABILITY_SYNC`] (default: a commit returns once it is on stable storage) or
    /// [`ARTDB_DURABILITY_NOSYNC`] (once it is written: survives a killed process, not power
    /// loss, until the next sync, checkpoint or close).
    pub durability: c_int,
    /// Open for reading only: writes are [`ARTDB_READONLY`]; any number of read-only opens
    /// coexist, none beside a read-write one.
    pub read_only: bool,
    /// A checkpoint runs after a commit that leaves more than this many bytes in the log
    /// (0: the default, 16 MiB).
    pub checkpoint_threshold_bytes: u64,
    /// A transaction with more changes than this bypasses the log (0: the default, 4 MiB;
    /// `UINT64_MAX`: never).
    pub wal_bypass_threshold_bytes: u64,
    /// Refuse to open a log whose last record is torn instead of cutting it.
    pub strict_recovery: bool,
    /// Open at the last checkpoint when the log is missing or damaged, losing the commits
    /// only it held.
    pub open_without_log: bool,
    /// How long an open waits for another handle to close the database before it is
    /// [`ARTDB_BUSY`], in milliseconds; 0 fails at once (default: 5000).
    pub lock_wait_ms: u64,
}

/// Figures about a database, filled by [`artdb_get_stats`].
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ArtdbStats {
    /// Tables.
    pub tables: u64,
    /// Keys in all tables (committed).
    pub keys: u64,
    /// Length of the database file in bytes.
    pub file_bytes: u64,
    /// Pages up to the file's high-water mark.
    pub page_count: u64,
    /// Pages free for reuse.
    pub free_pages: u64,
    /// Generation of the newest durable checkpoint.
    pub checkpoint_generation: u64,
    /// Bytes of log records not yet covered by a checkpoint.
    pub log_bytes: u64,
    /// Commits through the log since open.
    pub log_commits: u64,
    /// Log syncs since open (fewer than commits when group commit shares them).
    pub log_syncs: u64,
    /// The last commit sequence number.
    pub commit_seq: u64,
    /// Write transactions open now.
    pub live_writers: u64,
}

/// The next pair of a bulk load: write it to `*key` and `*value` (borrowed by artdb until the
/// next call) and return 1; return 0 at the end of the input; any other value abandons the
/// load ([`ARTDB_CALLBACK`]).
pub type ArtdbPairSource = Option<
    unsafe extern "C" fn(context: *mut c_void, key: *mut ArtdbVal, value: *mut ArtdbVal) -> c_int,
>;

/// Durability of a transaction: the database's ([`ArtdbOptions::durability`]).
pub const ARTDB_DURABILITY_DEFAULT: c_int = 0;
/// Durability: commit returns once its log record is on stable storage.
pub const ARTDB_DURABILITY_SYNC: c_int = 1;
/// Durability: commit returns once its log record is written (not yet synced).
pub const ARTDB_DURABILITY_NOSYNC: c_int = 2;
/// Isolation: snapshot isolation (first committer wins on written keys).
pub const ARTDB_ISOLATION_SNAPSHOT: c_int = 0;
/// Isolation: serializable (reads and scanned ranges are validated too).
pub const ARTDB_ISOLATION_SERIALIZABLE: c_int = 1;
/// Range bound flag of [`artdb_cursor_open_range`]: the lower bound is excluded.
pub const ARTDB_RANGE_EXCLUDE_LOWER: c_int = 1;
/// Range bound flag of [`artdb_cursor_open_range`]: the upper bound is included.
pub const ARTDB_RANGE_INCLUDE_UPPER: c_int = 2;

/// Runs an entry point's body: a panic becomes [`ARTDB_INTERNAL`], an `Err` its code; both
/// set this thread's message.
fn guard(body: impl FnOnce() -> Result<c_int, Failure>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(code)) => code,
        Ok(Err(failure)) => record(failure),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_string());
            record(Failure::new(
                ARTDB_INTERNAL,
                format!(
                    "artdb panicked ({what}); this is a bug in artdb, please report it; close \
                     the database and open it again"
                ),
            ))
        }
    }
}

/// `len` bytes at `data` as a slice.
///
/// # Safety
/// - When `len > 0` and `data` is not null, `data` points to `len` readable bytes that stay
///   unchanged for `'a`.
unsafe fn bytes<'a>(data: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if data.is_null() {
        return Err(Failure::invalid(format!(
            "{what} is a null pointer with a length of {len}; pass a pointer to the bytes"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!(
            "{what} has a length of {len} bytes, more than the address space holds"
        )));
    }
    // SAFETY: `data` is not null and `len` fits isize (checked above); the caller promises
    // `len` readable bytes there for 'a (this function's `# Safety`).
    Ok(unsafe { std::slice::from_raw_parts(data, len) })
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
/// - `text` is null or points to a NUL-terminated string that stays unchanged for `'a`.
unsafe fn text<'a>(text: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if text.is_null() {
        return Err(Failure::invalid(format!("{what} is a null pointer")));
    }
    // SAFETY: not null (checked); the caller promises a NUL-terminated string (`# Safety`).
    let text = unsafe { CStr::from_ptr(text) };
    text.to_str()
        .map_err(|_| Failure::invalid(format!("{what} is not UTF-8")))
}

/// The object behind a handle.
///
/// # Safety
/// - `handle` is null or a pointer this crate returned for a `T` and has not freed, not used
///   by another thread during `'a` unless `T` says it may be shared.
unsafe fn object<'a, T>(handle: *mut T, what: &str) -> Result<&'a mut T, Failure> {
    if handle.is_null() {
        return Err(Failure::invalid(format!(
            "the {what} handle is a null pointer"
        )));
    }
    // SAFETY: not null (checked); the caller promises a live handle of this type, used by
    // this thread alone for 'a (`# Safety`).
    Ok(unsafe { &mut *handle })
}

/// The object behind a handle that threads share (only `&` access).
///
/// # Safety
/// - `handle` is null or a pointer this crate returned for a `T` and has not freed.
unsafe fn shared<'a, T>(handle: *const T, what: &str) -> Result<&'a T, Failure> {
    if handle.is_null() {
        return Err(Failure::invalid(format!(
            "the {what} handle is a null pointer"
        )));
    }
    // SAFETY: not null (checked); the caller promises a live handle (`# Safety`), and shared
    // handles are only read through `&`.
    Ok(unsafe { &*handle })
}

/// Stores `value` through an out-pointer.
///
/// # Safety
/// - `out` is null or valid for a write of a `T` (it need not be initialized).
unsafe fn put<T>(out: *mut T, value: T, what: &str) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::invalid(format!("{what} is a null pointer")));
    }
    // SAFETY: not null (checked); the caller promises room for a `T` (`# Safety`); `write`
    // does not read or drop what was there.
    unsafe { out.write(value) };
    Ok(())
}

/// Checks an out-pointer before any work is done, so a null one changes nothing.
fn require<T>(out: *mut T, what: &str) -> Result<(), Failure> {
    if out.is_null() {
        Err(Failure::invalid(format!("{what} is a null pointer")))
    } else {
        Ok(())
    }
}

/// A borrowed slice as an [`ArtdbVal`].
fn val(bytes: &[u8]) -> ArtdbVal {
    ArtdbVal {
        data: bytes.as_ptr(),
        len: bytes.len(),
    }
}

fn durability_of(code: c_int) -> Result<Option<Durability>, Failure> {
    match code {
        ARTDB_DURABILITY_DEFAULT => Ok(None),
        ARTDB_DURABILITY_SYNC => Ok(Some(Durability::Sync)),
        ARTDB_DURABILITY_NOSYNC => Ok(Some(Durability::NoSync)),
        other => Err(Failure::invalid(format!(
            "durability {other} is unknown; use ARTDB_DURABILITY_DEFAULT, _SYNC or _NOSYNC"
        ))),
    }
}

fn options_of(options: &ArtdbOptions) -> Result<Options, Failure> {
    let defaults = Options::default();
    Ok(Options {
        durability: durability_of(options.durability)?.unwrap_or(defaults.durability),
        read_only: options.read_only,
        checkpoint_threshold_bytes: match options.checkpoint_threshold_bytes {
            0 => defaults.checkpoint_threshold_bytes,
            bytes => bytes,
        },
        wal_bypass_threshold_bytes: match options.wal_bypass_threshold_bytes {
            0 => defaults.wal_bypass_threshold_bytes,
            bytes => bytes,
        },
        recovery: if options.strict_recovery {
            RecoveryMode::Strict
        } else {
            RecoveryMode::TolerateTornTail
        },
        open_without_log: options.open_without_log,
        lock_wait_max: std::time::Duration::from_millis(options.lock_wait_ms),
        ..defaults
    })
}

fn default_options() -> ArtdbOptions {
    ArtdbOptions {
        durability: ARTDB_DURABILITY_SYNC,
        read_only: false,
        checkpoint_threshold_bytes: 0,
        wal_bypass_threshold_bytes: 0,
        strict_recovery: false,
        open_without_log: false,
        lock_wait_ms: artdb::db::LOCK_WAIT_MAX_DEFAULT.as_millis() as u64,
    }
}

// ---------------------------------------------------------------------------------------------
// Errors, memory, version.

/// The message of this thread's last failed call: what happened and what to do. Never null;
/// valid until this thread's next failing call. Calls that return [`ARTDB_OK`] or
/// [`ARTDB_NOTFOUND`] leave it as it was.
#[no_mangle]
pub extern "C" fn artdb_errmsg() -> *const c_char {
    last_message_ptr()
}

/// The name of an error code (`"ARTDB_CONFLICT"`); a static string, never null.
#[no_mangle]
pub extern "C" fn artdb_strerror(code: c_int) -> *const c_char {
    name_of(code).as_ptr().cast()
}

/// The version of the library (`"0.1.0"`); a static string.
#[no_mangle]
pub extern "C" fn artdb_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Frees memory artdb allocated for the caller ([`artdb_table_names`]); null is ignored.
///
/// # Safety
/// - `memory` is null or a pointer an artdb function documented as freed by `artdb_free`
///   returned, not freed yet.
#[no_mangle]
pub unsafe extern "C" fn artdb_free(memory: *mut c_void) {
    // SAFETY: such memory comes from `libc::malloc` (`malloc_copy`), and the caller passes
    // it once (`# Safety`); free(NULL) does nothing.
    unsafe { libc::free(memory) }
}

// ---------------------------------------------------------------------------------------------
// Databases.

/// Fills `options` with the defaults: durable commits, read-write, default thresholds.
///
/// # Safety
/// - `options` is null or points to writable memory for an `artdb_options`.
#[no_mangle]
pub unsafe extern "C" fn artdb_options_init(options: *mut ArtdbOptions) -> c_int {
    // SAFETY: forwarded from this function's contract.
    guard(|| unsafe { put(options, default_options(), "options") }.map(|()| ARTDB_OK))
}

/// Shared body of [`artdb_open`] and [`artdb_create`].
///
/// # Safety
/// - As [`artdb_open`].
unsafe fn open_with(
    path: *const c_char,
    options: *const ArtdbOptions,
    out: *mut *mut DbHandle,
    create: bool,
) -> c_int {
    guard(|| {
        require(out, "out")?;
        // SAFETY: `path` is null or a C string (the caller's contract).
        let path = unsafe { text(path, "path") }?;
        let options = if options.is_null() {
            default_options()
        } else {
            // SAFETY: not null; the caller passes a valid `artdb_options`.
            unsafe { *options }
        };
        let options = options_of(&options)?;
        let db = if create {
            Db::create(path, options)?
        } else {
            Db::open(path, options)?
        };
        let handle = Box::into_raw(Box::new(DbHandle {
            db: Arc::new(db),
            closed: Arc::new(AtomicBool::new(false)),
        }));
        // SAFETY: `out` is not null (checked first) and writable (the caller's contract).
        unsafe { put(out, handle, "out") }?;
        Ok(ARTDB_OK)
    })
}

/// Opens the database file at `path` (UTF-8), replaying its log. `options` may be null (the
/// defaults). On success `*db` is the handle, to be closed with [`artdb_close`]; a database
/// handle may be used by any number of threads at once.
///
/// # Safety
/// - `path` is null or a NUL-terminated string; `options` is null or points to an
///   `artdb_options`; `db` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_open(
    path: *const c_char,
    options: *const ArtdbOptions,
    db: *mut *mut DbHandle,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { open_with(path, options, db, false) }
}

/// Creates a new database file at `path` ([`ARTDB_EXISTS`] if it exists); otherwise as
/// [`artdb_open`].
///
/// # Safety
/// - As [`artdb_open`].
#[no_mangle]
pub unsafe extern "C" fn artdb_create(
    path: *const c_char,
    options: *const ArtdbOptions,
    db: *mut *mut DbHandle,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { open_with(path, options, db, true) }
}

/// Checkpoints what changed and closes the database; the handle is freed, whatever the result,
/// except on [`ARTDB_BUSY`]: a write batch of this database is still open (commit or free it,
/// then close again). Read snapshots and cursors still open stay readable; a transaction still
/// open can be read and freed, and its commit is [`ARTDB_INVALID`]. While any of them is alive
/// the file stays open and locked: the close then returns [`ARTDB_SNAPSHOTS_ALIVE`] (the data
/// is checkpointed, the handle freed), and the path opens again once they are freed. Null is
/// [`ARTDB_INVALID`].
///
/// # Safety
/// - `db` is null or a handle from [`artdb_open`]/[`artdb_create`] not closed yet, which no
///   other thread uses during or after the call.
#[no_mangle]
pub unsafe extern "C" fn artdb_close(db: *mut DbHandle) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { object(db, "database") }?;
        if Arc::strong_count(&handle.db) > 1 {
            return Err(Failure::new(
                ARTDB_BUSY,
                "a write batch of this database is still open; commit or free it, then close",
            ));
        }
        // SAFETY: `db` came from `Box::into_raw` in `open_with` and is freed only here, once
        // (the caller does not use it again).
        let handle = unsafe { Box::from_raw(db) };
        handle.closed.store(true, Ordering::Release);
        match Arc::try_unwrap(handle.db) {
            Ok(db) => db.close()?,
            // Unreachable with one count (checked above); dropping closes it all the same.
            Err(db) => drop(db),
        }
        Ok(ARTDB_OK)
    })
}

/// Creates an empty table named `name` (1 to 255 bytes of UTF-8) in its own commit.
///
/// # Safety
/// - `db` is null or an open database handle; `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn artdb_table_create(db: *const DbHandle, name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { text(name, "name") }?;
        handle.db.create_table(name)?;
        Ok(ARTDB_OK)
    })
}

/// Drops the table named `name` and its keys in its own commit.
///
/// # Safety
/// - As [`artdb_table_create`].
#[no_mangle]
pub unsafe extern "C" fn artdb_table_drop(db: *const DbHandle, name: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { text(name, "name") }?;
        handle.db.drop_table(name)?;
        Ok(ARTDB_OK)
    })
}

/// Copies `parts` into one `malloc` block: `parts.len()` [`ArtdbVal`]s, then each part's bytes
/// followed by a NUL (so each `data` is also a C string).
fn malloc_copy(parts: &[String]) -> Result<*mut ArtdbVal, Failure> {
    let head = std::mem::size_of::<ArtdbVal>() * parts.len();
    let total = head + parts.iter().map(|part| part.len() + 1).sum::<usize>();
    // SAFETY: malloc with a non-zero size (at least 1) has no precondition.
    let block = unsafe { libc::malloc(total.max(1)) }.cast::<u8>();
    if block.is_null() {
        return Err(Failure::new(
            ARTDB_IO,
            format!("out of memory ({total} bytes)"),
        ));
    }
    let mut at = head;
    for (index, part) in parts.iter().enumerate() {
        // SAFETY: `at + part.len() + 1 <= total` (the sum above), inside the block.
        let data = unsafe { block.add(at) };
        // SAFETY: `data` has `part.len() + 1` writable bytes (above); the regions are apart.
        unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), data, part.len()) };
        // SAFETY: the byte after the part, still inside the block (above).
        unsafe { data.add(part.len()).write(0) };
        let entry = ArtdbVal {
            data,
            len: part.len(),
        };
        // SAFETY: entry `index` lies in the head (index < parts.len()); malloc's block is
        // aligned for any type, and the head starts at its start.
        unsafe { block.cast::<ArtdbVal>().add(index).write(entry) };
        at += part.len() + 1;
    }
    Ok(block.cast())
}

/// The names of the committed tables in order: `*names` is an array of `*count` values, each
/// also NUL-terminated, in one block the caller frees with [`artdb_free`].
///
/// # Safety
/// - `db` is null or an open database handle; `names` and `count` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_table_names(
    db: *const DbHandle,
    names: *mut *mut ArtdbVal,
    count: *mut usize,
) -> c_int {
    guard(|| {
        require(names, "names")?;
        require(count, "count")?;
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        let list = handle.db.table_names();
        let block = malloc_copy(&list)?;
        // SAFETY: both checked non-null first, writable by the caller's contract.
        unsafe { put(names, block, "names") }?;
        // SAFETY: as above.
        unsafe { put(count, list.len(), "count") }?;
        Ok(ARTDB_OK)
    })
}

/// Writes every commit's changes into the database file and recycles the log.
///
/// # Safety
/// - `db` is null or an open database handle.
#[no_mangle]
pub unsafe extern "C" fn artdb_checkpoint(db: *const DbHandle) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        handle.db.checkpoint()?;
        Ok(ARTDB_OK)
    })
}

/// Rewrites every table densely and shrinks the file (a snapshot held meanwhile delays the
/// shrink to a later checkpoint).
///
/// # Safety
/// - `db` is null or an open database handle.
#[no_mangle]
pub unsafe extern "C" fn artdb_compact(db: *const DbHandle) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        handle.db.compact()?;
        Ok(ARTDB_OK)
    })
}

/// Makes every commit so far durable (one log sync), `NOSYNC` ones included.
///
/// # Safety
/// - `db` is null or an open database handle.
#[no_mangle]
pub unsafe extern "C" fn artdb_sync(db: *const DbHandle) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        handle.db.sync()?;
        Ok(ARTDB_OK)
    })
}

/// Copies one committed state of every table into a new database file at `path` (writers go
/// on meanwhile), verifies it and closes it. A failure removes the new file.
///
/// # Safety
/// - `db` is null or an open database handle; `path` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn artdb_backup(db: *const DbHandle, path: *const c_char) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        // SAFETY: the caller's contract.
        let path = unsafe { text(path, "path") }?;
        let target = Db::create(path, Options::default())?;
        let copied = handle
            .db
            .copy_into(&target, &mut |_| {})
            .and_then(|_| target.verify())
            .and_then(|report| match report.problems.into_iter().next() {
                Some(problem) => Err(problem),
                None => Ok(()),
            });
        match copied.and_then(|()| target.close()) {
            Ok(()) => Ok(ARTDB_OK),
            Err(error) => {
                // The copy is not one whole committed state: leave nothing behind.
                let path = std::path::Path::new(path);
                let _ = std::fs::remove_file(path);
                let _ = std::fs::remove_file(artdb::db::log_path(path));
                Err(error.into())
            }
        }
    })
}

/// Fills `*stats` with figures about the database (cheap: reads no node).
///
/// # Safety
/// - `db` is null or an open database handle; `stats` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_get_stats(db: *const DbHandle, stats: *mut ArtdbStats) -> c_int {
    guard(|| {
        require(stats, "stats")?;
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        let figures = handle.db.stats()?;
        let out = ArtdbStats {
            tables: figures.tables.len() as u64,
            keys: figures.tables.iter().map(|table| table.keys).sum(),
            file_bytes: figures.store.file_bytes,
            page_count: figures.store.page_count,
            free_pages: figures.store.free_pages.unwrap_or(0),
            checkpoint_generation: figures.store.generation,
            log_bytes: figures.log.bytes,
            log_commits: figures.log.commits,
            log_syncs: figures.log.syncs,
            commit_seq: figures.txn.commit_seq,
            live_writers: figures.txn.live_writers,
        };
        // SAFETY: checked non-null first; writable by the caller's contract.
        unsafe { put(stats, out, "stats") }?;
        Ok(ARTDB_OK)
    })
}

/// Checks every checksum and invariant. [`ARTDB_OK`] when nothing is wrong; otherwise
/// [`ARTDB_CORRUPT`], the message naming the first problem. `problems` (may be null) gets the
/// number found.
///
/// # Safety
/// - `db` is null or an open database handle; `problems` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_verify(db: *const DbHandle, problems: *mut u64) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        let report = handle.db.verify()?;
        let found = report.problems.len() as u64;
        if !problems.is_null() {
            // SAFETY: not null; writable by the caller's contract.
            unsafe { put(problems, found, "problems") }?;
        }
        match report.problems.into_iter().next() {
            None => Ok(ARTDB_OK),
            Some(first) => Err(Failure::new(
                ARTDB_CORRUPT,
                format!("verify found {found} problem(s); the first: {first}"),
            )),
        }
    })
}

/// Loads sorted pairs from `next` (called with `context` until it returns 0) into the empty
/// table `table`, or, with `create` true, into a new table that the load creates (it appears
/// with all its pairs, or not at all). Unsorted or repeated keys are [`ARTDB_UNSORTED`]; a
/// callback error is [`ARTDB_CALLBACK`]; either leaves the table as it was. `loaded` (may be
/// null) gets the number of pairs loaded.
///
/// # Safety
/// - `db` is null or an open database handle; `table` is null or a NUL-terminated string;
///   `next` is null or a function that follows [`ArtdbPairSource`]'s contract for `context`;
///   `loaded` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_bulk_load(
    db: *const DbHandle,
    table: *const c_char,
    create: bool,
    next: ArtdbPairSource,
    context: *mut c_void,
    loaded: *mut u64,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        // SAFETY: the caller's contract.
        let table = unsafe { text(table, "table") }?;
        let next = next.ok_or_else(|| Failure::invalid("next (the pair source) is null"))?;
        let mut index = 0u64;
        let pairs = std::iter::from_fn(|| {
            let mut key = ArtdbVal {
                data: std::ptr::null(),
                len: 0,
            };
            let mut value = key;
            // SAFETY: `next` follows the pair source contract (the caller's); both out
            // pointers are valid locals.
            let more = unsafe { next(context, &mut key, &mut value) };
            index += 1;
            match more {
                0 => None,
                1 => Some(copy_pair(key, value, index - 1)),
                other => Some(Err(Failure::new(
                    ARTDB_CALLBACK,
                    format!("the pair source returned {other} at pair {}", index - 1),
                ))),
            }
        });
        let count = if create {
            handle.db.bulk_load_new_table_try(table, pairs)?
        } else {
            handle.db.bulk_load_try(table, pairs)?
        };
        if !loaded.is_null() {
            // SAFETY: not null; writable by the caller's contract.
            unsafe { put(loaded, count, "loaded") }?;
        }
        Ok(ARTDB_OK)
    })
}

/// Copies a pair a bulk load's callback lent.
fn copy_pair(key: ArtdbVal, value: ArtdbVal, index: u64) -> Result<(Vec<u8>, Vec<u8>), Failure> {
    // SAFETY: the pair source contract: `len` readable bytes at `data` until its next call.
    let key = unsafe { bytes(key.data, key.len, &format!("the key of pair {index}")) }?;
    // SAFETY: as above.
    let value = unsafe { bytes(value.data, value.len, &format!("the value of pair {index}")) }?;
    Ok((key.to_vec(), value.to_vec()))
}

// ---------------------------------------------------------------------------------------------
// Read snapshots and cursors.

/// Takes a read snapshot of every table as of the last commit (never waits, never blocks a
/// writer). Free it with [`artdb_read_end`]. A snapshot may be read by any number of threads at
/// once, and lives on after its database is closed.
///
/// # Safety
/// - `db` is null or an open database handle; `read` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_read_begin(
    db: *const DbHandle,
    read: *mut *mut ReadHandle,
) -> c_int {
    guard(|| {
        require(read, "read")?;
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        let snapshot = Box::into_raw(Box::new(ReadHandle {
            read: Arc::new(handle.db.read()),
        }));
        // SAFETY: checked non-null first; writable by the caller's contract.
        unsafe { put(read, snapshot, "read") }?;
        Ok(ARTDB_OK)
    })
}

/// Ends a read snapshot and frees its handle; values it returned are no longer valid (cursors
/// opened on it keep their own reference and stay valid until freed). Null is ignored.
///
/// # Safety
/// - `read` is null or a handle from [`artdb_read_begin`] not ended yet, which no other thread
///   uses during or after the call.
#[no_mangle]
pub unsafe extern "C" fn artdb_read_end(read: *mut ReadHandle) {
    if !read.is_null() {
        // SAFETY: from `Box::into_raw` in `artdb_read_begin`, freed once (the caller's
        // contract). Dropping a snapshot does not panic, but a panic must not reach C.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(read) })));
    }
}

/// The value of `key` in `table`: [`ARTDB_OK`] and `*value` borrowed from the snapshot (valid
/// until [`artdb_read_end`], zero-copy from the file's map), or [`ARTDB_NOTFOUND`].
///
/// # Safety
/// - `read` is null or a live read handle; `table` is null or a NUL-terminated string; `key`
///   points to `key_len` bytes (or `key_len` is 0); `value` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_read_get(
    read: *const ReadHandle,
    table: *const c_char,
    key: *const u8,
    key_len: usize,
    value: *mut ArtdbVal,
) -> c_int {
    guard(|| {
        require(value, "value")?;
        // SAFETY: the caller's contract, for each of the three.
        let handle = unsafe { shared(read, "read") }?;
        // SAFETY: as above.
        let table = unsafe { text(table, "table") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        match handle.read.get(table, key)? {
            Some(found) => {
                // SAFETY: checked non-null first; writable by the caller's contract.
                unsafe { put(value, val(found), "value") }?;
                Ok(ARTDB_OK)
            }
            None => Ok(ARTDB_NOTFOUND),
        }
    })
}

/// Looks up `count` keys at once (overlapping their cache misses): `values[i]` is `keys[i]`'s
/// value, borrowed as by [`artdb_read_get`], or `{NULL, 0}` when absent. `found` (may be null)
/// gets the number present.
///
/// # Safety
/// - `read` is null or a live read handle; `table` is null or a NUL-terminated string; `keys`
///   points to `count` values whose bytes are readable; `values` points to `count` writable
///   values; `found` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_read_get_many(
    read: *const ReadHandle,
    table: *const c_char,
    keys: *const ArtdbVal,
    count: usize,
    values: *mut ArtdbVal,
    found: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(read, "read") }?;
        // SAFETY: the caller's contract.
        let table = unsafe { text(table, "table") }?;
        if count > 0 && values.is_null() {
            return Err(Failure::invalid("values is a null pointer"));
        }
        if count > 0 && keys.is_null() {
            return Err(Failure::invalid("keys is a null pointer"));
        }
        if count > isize::MAX as usize / std::mem::size_of::<ArtdbVal>() {
            return Err(Failure::invalid(format!(
                "count {count} is past the address space"
            )));
        }
        let keys: &[ArtdbVal] = if count == 0 {
            &[]
        } else {
            // SAFETY: not null, `count` values fit the address space (both checked); the
            // caller's contract: `count` initialized, aligned values at `keys`.
            unsafe { std::slice::from_raw_parts(keys, count) }
        };
        let keys: Vec<&[u8]> = keys
            .iter()
            .enumerate()
            .map(|(index, key)| {
                // SAFETY: the key's bytes are readable (the caller's contract).
                unsafe { bytes(key.data, key.len, &format!("keys[{index}]")) }
            })
            .collect::<Result<_, _>>()?;
        let table = handle.read.table(table)?;
        let mut results = Vec::with_capacity(keys.len());
        table.get_many(&keys, &mut results)?;
        let mut present = 0usize;
        for (index, result) in results.iter().enumerate() {
            let entry = match result {
                Some(bytes) => {
                    present += 1;
                    val(bytes)
                }
                None => ArtdbVal {
                    data: std::ptr::null(),
                    len: 0,
                },
            };
            // SAFETY: index < count, and `values` has `count` writable entries (the
            // caller's contract; not null when count > 0, checked above).
            unsafe { values.add(index).write(entry) };
        }
        if !found.is_null() {
            // SAFETY: not null; writable by the caller's contract.
            unsafe { put(found, present, "found") }?;
        }
        Ok(ARTDB_OK)
    })
}

/// The number of keys of `table` in the snapshot.
///
/// # Safety
/// - `read` is null or a live read handle; `table` is null or a NUL-terminated string; `len`
///   is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_read_len(
    read: *const ReadHandle,
    table: *const c_char,
    len: *mut u64,
) -> c_int {
    guard(|| {
        require(len, "len")?;
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(read, "read") }?;
        // SAFETY: the caller's contract.
        let table = unsafe { text(table, "table") }?;
        let keys = handle.read.table(table)?.len();
        // SAFETY: checked non-null first; writable by the caller's contract.
        unsafe { put(len, keys, "len") }?;
        Ok(ARTDB_OK)
    })
}

/// Opens a cursor on `table` of the snapshot, confined to `bounds`.
///
/// # Safety
/// - As [`artdb_cursor_open`].
unsafe fn cursor_open_with(
    read: *const ReadHandle,
    table: *const c_char,
    bounds: impl FnOnce() -> Result<Bounds, Failure>,
    cursor: *mut *mut CursorHandle,
) -> c_int {
    guard(|| {
        require(cursor, "cursor")?;
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(read, "read") }?;
        // SAFETY: the caller's contract.
        let table = unsafe { text(table, "table") }?;
        let bounds = bounds()?;
        let snapshot = Arc::clone(&handle.read);
        let engine_cursor = snapshot.table(table)?.cursor();
        // SAFETY: the cursor borrows the `ReadTxn` in `snapshot`'s heap allocation, which the
        // handle built below owns (one count) and which neither moves nor changes while that
        // count lives; the handle drops the cursor before the count (field order), and hands
        // out what the cursor returns only for the length of a `&self` borrow.
        let engine_cursor = unsafe {
            std::mem::transmute::<artdb::Cursor<'_>, artdb::Cursor<'static>>(engine_cursor)
        };
        let opened = Box::into_raw(Box::new(CursorHandle {
            source: Source::Snapshot {
                cursor: engine_cursor,
                read: snapshot,
            },
            bounds,
            positioned: false,
        }));
        // SAFETY: checked non-null first; writable by the caller's contract.
        unsafe { put(cursor, opened, "cursor") }?;
        Ok(ARTDB_OK)
    })
}

/// Opens a cursor over every key of `table`, not positioned until a first, last or seek. It
/// holds its snapshot: it stays valid after [`artdb_read_end`] until [`artdb_cursor_free`].
/// A cursor is used by one thread at a time.
///
/// # Safety
/// - `read` is null or a live read handle; `table` is null or a NUL-terminated string;
///   `cursor` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_open(
    read: *const ReadHandle,
    table: *const c_char,
    cursor: *mut *mut CursorHandle,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { cursor_open_with(read, table, || Ok(Bounds::all()), cursor) }
}

/// Opens a cursor over the keys of `table` that start with `prefix`.
///
/// # Safety
/// - As [`artdb_cursor_open`]; `prefix` points to `prefix_len` bytes (or `prefix_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_open_prefix(
    read: *const ReadHandle,
    table: *const c_char,
    prefix: *const u8,
    prefix_len: usize,
    cursor: *mut *mut CursorHandle,
) -> c_int {
    // SAFETY: the caller's contract on `prefix`, read inside the guard.
    let bounds = || unsafe { bytes(prefix, prefix_len, "prefix") }.map(Bounds::prefix);
    // SAFETY: the same contract.
    unsafe { cursor_open_with(read, table, bounds, cursor) }
}

/// Opens a cursor over the keys of `table` from `lower` up to `upper`: a null `lower` (or
/// `upper`) with length 0 leaves that end open; by default the lower bound is included and the
/// upper excluded, `flags` ([`ARTDB_RANGE_EXCLUDE_LOWER`], [`ARTDB_RANGE_INCLUDE_UPPER`])
/// change that.
///
/// # Safety
/// - As [`artdb_cursor_open`]; `lower` and `upper` each point to their length in bytes (or
///   are null with length 0).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn artdb_cursor_open_range(
    read: *const ReadHandle,
    table: *const c_char,
    lower: *const u8,
    lower_len: usize,
    upper: *const u8,
    upper_len: usize,
    flags: c_int,
    cursor: *mut *mut CursorHandle,
) -> c_int {
    // SAFETY: the caller's contract on `lower` and `upper`, read inside the guard.
    let bounds = || unsafe { range_bounds(lower, lower_len, upper, upper_len, flags) };
    // SAFETY: the same contract.
    unsafe { cursor_open_with(read, table, bounds, cursor) }
}

/// The bounds of a range cursor (see [`artdb_cursor_open_range`]).
///
/// # Safety
/// - `lower` and `upper` each point to their length in bytes (or are null with length 0).
unsafe fn range_bounds(
    lower: *const u8,
    lower_len: usize,
    upper: *const u8,
    upper_len: usize,
    flags: c_int,
) -> Result<Bounds, Failure> {
    if flags & !(ARTDB_RANGE_EXCLUDE_LOWER | ARTDB_RANGE_INCLUDE_UPPER) != 0 {
        return Err(Failure::invalid(format!(
            "range flags {flags:#x} are unknown"
        )));
    }
    // SAFETY: the caller's contract on `lower` and `upper`.
    let lower_key = unsafe { bytes(lower, lower_len, "lower") }?;
    // SAFETY: as above.
    let upper_key = unsafe { bytes(upper, upper_len, "upper") }?;
    let lower = match (lower.is_null(), flags & ARTDB_RANGE_EXCLUDE_LOWER != 0) {
        (true, _) => Bound::Unbounded,
        (false, true) => Bound::Excluded(lower_key.to_vec()),
        (false, false) => Bound::Included(lower_key.to_vec()),
    };
    let upper = match (upper.is_null(), flags & ARTDB_RANGE_INCLUDE_UPPER != 0) {
        (true, _) => Bound::Unbounded,
        (false, true) => Bound::Included(upper_key.to_vec()),
        (false, false) => Bound::Excluded(upper_key.to_vec()),
    };
    Ok(Bounds { lower, upper })
}

/// Frees a cursor (and its count of the snapshot). Null is ignored.
///
/// # Safety
/// - `cursor` is null or a cursor handle not freed yet, which no other thread uses during or
///   after the call.
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_free(cursor: *mut CursorHandle) {
    if !cursor.is_null() {
        // SAFETY: from `Box::into_raw` in `cursor_open_with`, freed once (the caller's
        // contract); a panic while dropping must not reach C.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(cursor) })));
    }
}

/// Runs a cursor move.
///
/// # Safety
/// - `cursor` is null or a live cursor handle this thread alone uses during the call.
unsafe fn cursor_move(
    cursor: *mut CursorHandle,
    step: impl FnOnce(&mut CursorHandle) -> Result<c_int, Failure>,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { object(cursor, "cursor") }?;
        step(handle)
    })
}

/// Moves to the smallest key in the cursor's bounds: [`ARTDB_OK`], or [`ARTDB_NOTFOUND`] if
/// there is none.
///
/// # Safety
/// - `cursor` is null or a live cursor handle, used by one thread at a time.
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_first(cursor: *mut CursorHandle) -> c_int {
    // SAFETY: the same contract.
    unsafe { cursor_move(cursor, CursorHandle::first) }
}

/// Moves to the largest key in the cursor's bounds: [`ARTDB_OK`] or [`ARTDB_NOTFOUND`].
///
/// # Safety
/// - As [`artdb_cursor_first`].
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_last(cursor: *mut CursorHandle) -> c_int {
    // SAFETY: the same contract.
    unsafe { cursor_move(cursor, CursorHandle::last) }
}

/// Moves to the first key `>= key` in the cursor's bounds: [`ARTDB_OK`] or
/// [`ARTDB_NOTFOUND`].
///
/// # Safety
/// - As [`artdb_cursor_first`]; `key` points to `key_len` bytes (or `key_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_seek(
    cursor: *mut CursorHandle,
    key: *const u8,
    key_len: usize,
) -> c_int {
    let step = |handle: &mut CursorHandle| {
        // SAFETY: the caller's contract on `key`.
        let key = unsafe { bytes(key, key_len, "key") }?;
        handle.seek(key)
    };
    // SAFETY: the same contract.
    unsafe { cursor_move(cursor, step) }
}

/// Steps to the next key: [`ARTDB_OK`], or [`ARTDB_NOTFOUND`] past the end of the bounds (or
/// when the cursor is not on a pair).
///
/// # Safety
/// - As [`artdb_cursor_first`].
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_next(cursor: *mut CursorHandle) -> c_int {
    // SAFETY: the same contract.
    unsafe { cursor_move(cursor, CursorHandle::next) }
}

/// Steps to the previous key: [`ARTDB_OK`] or [`ARTDB_NOTFOUND`].
///
/// # Safety
/// - As [`artdb_cursor_first`].
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_prev(cursor: *mut CursorHandle) -> c_int {
    // SAFETY: the same contract.
    unsafe { cursor_move(cursor, CursorHandle::prev) }
}

/// The pair the cursor stands on: [`ARTDB_OK`] with `*key` and `*value` borrowed until the
/// cursor's next move or free (either may be null to skip it), or [`ARTDB_NOTFOUND`] when it
/// stands on none.
///
/// # Safety
/// - As [`artdb_cursor_first`]; `key` and `value` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_cursor_get(
    cursor: *mut CursorHandle,
    key: *mut ArtdbVal,
    value: *mut ArtdbVal,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { object(cursor, "cursor") }?;
        let Some((found_key, found_value)) = handle.pair() else {
            return Ok(ARTDB_NOTFOUND);
        };
        if !key.is_null() {
            // SAFETY: not null; writable by the caller's contract.
            unsafe { put(key, val(found_key), "key") }?;
        }
        if !value.is_null() {
            // SAFETY: not null; writable by the caller's contract.
            unsafe { put(value, val(found_value), "value") }?;
        }
        Ok(ARTDB_OK)
    })
}

// ---------------------------------------------------------------------------------------------
// Write transactions.

/// Begins a write transaction on a snapshot of the last commit. Any number run at once; only
/// their commits are serialized, and a commit that overlaps one committed since the snapshot
/// is [`ARTDB_CONFLICT`]. `isolation` is [`ARTDB_ISOLATION_SNAPSHOT`] or
/// [`ARTDB_ISOLATION_SERIALIZABLE`]; `durability` one of `ARTDB_DURABILITY_*`. A transaction is
/// used by one thread at a time (it may move between threads) and freed with
/// [`artdb_txn_free`], after its commit or abort or instead of them.
///
/// # Safety
/// - `db` is null or an open database handle; `txn` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_txn_begin(
    db: *const DbHandle,
    isolation: c_int,
    durability: c_int,
    txn: *mut *mut TxnHandle,
) -> c_int {
    guard(|| {
        require(txn, "txn")?;
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        let isolation = match isolation {
            ARTDB_ISOLATION_SNAPSHOT => Isolation::Snapshot,
            ARTDB_ISOLATION_SERIALIZABLE => Isolation::Serializable,
            other => {
                return Err(Failure::invalid(format!(
                    "isolation {other} is unknown; use ARTDB_ISOLATION_SNAPSHOT or _SERIALIZABLE"
                )))
            }
        };
        let mut options = WriteOptions::with_isolation(isolation);
        if let Some(durability) = durability_of(durability)? {
            options = options.durability(durability);
        }
        let transaction = handle.db.begin_write(options)?;
        let begun = Box::into_raw(Box::new(TxnHandle {
            txn: Arc::new(parking_lot::Mutex::new(Some(transaction))),
            ended: "ended",
            db_closed: Arc::clone(&handle.closed),
        }));
        // SAFETY: checked non-null first; writable by the caller's contract.
        unsafe { put(txn, begun, "txn") }?;
        Ok(ARTDB_OK)
    })
}

/// The value of `key` in `table` as this transaction sees it (its own writes included):
/// [`ARTDB_OK`] with `*value` borrowed until the transaction's next put, delete, table change,
/// commit, abort or free; or [`ARTDB_NOTFOUND`].
///
/// # Safety
/// - `txn` is null or a live transaction handle; `table` is null or a NUL-terminated string;
///   `key` points to `key_len` bytes (or `key_len` is 0); `value` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_txn_get(
    txn: *mut TxnHandle,
    table: *const c_char,
    key: *const u8,
    key_len: usize,
    value: *mut ArtdbVal,
) -> c_int {
    guard(|| {
        require(value, "value")?;
        // SAFETY: the caller's contract, for each of the three.
        let handle = unsafe { object(txn, "transaction") }?;
        // SAFETY: as above.
        let table = unsafe { text(table, "table") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        match handle.live()?.get(table, key)? {
            Some(found) => {
                // SAFETY: checked non-null first; writable by the caller's contract.
                unsafe { put(value, val(found), "value") }?;
                Ok(ARTDB_OK)
            }
            None => Ok(ARTDB_NOTFOUND),
        }
    })
}

/// Opens a cursor over the keys of `table` from `lower` up to `upper` as this transaction sees
/// them (its own puts and deletes included, also those made while the cursor is open), with
/// the bounds and `flags` of [`artdb_cursor_open_range`] (both ends null with length 0: every
/// key). It moves and reads with the `artdb_cursor_*` functions and is freed with
/// [`artdb_cursor_free`]; its pair is a copy, valid until its next move or free. Under
/// serializable isolation the keys it visits are reads of the transaction. Once the
/// transaction is committed, aborted or freed, its moves are [`ARTDB_INVALID`]. Each move
/// finds its place afresh, so a step costs about a seek.
///
/// # Safety
/// - `txn` is null or a live transaction handle; `table` is null or a NUL-terminated string;
///   `lower` and `upper` each point to their length in bytes (or are null with length 0);
///   `cursor` is null or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn artdb_txn_cursor_open(
    txn: *mut TxnHandle,
    table: *const c_char,
    lower: *const u8,
    lower_len: usize,
    upper: *const u8,
    upper_len: usize,
    flags: c_int,
    cursor: *mut *mut CursorHandle,
) -> c_int {
    guard(|| {
        require(cursor, "cursor")?;
        // SAFETY: the caller's contract, for each of the three.
        let handle = unsafe { object(txn, "transaction") }?;
        // SAFETY: as above.
        let table = unsafe { text(table, "table") }?;
        // SAFETY: as above.
        let bounds = unsafe { range_bounds(lower, lower_len, upper, upper_len, flags) }?;
        // The table must exist now, as for a snapshot's cursor.
        handle.live()?.cursor(table)?;
        let opened = Box::into_raw(Box::new(CursorHandle {
            source: Source::Txn {
                txn: Arc::clone(&handle.txn),
                table: table.to_string(),
                key: Vec::new(),
                value: Vec::new(),
            },
            bounds,
            positioned: false,
        }));
        // SAFETY: checked non-null first; writable by the caller's contract.
        unsafe { put(cursor, opened, "cursor") }?;
        Ok(ARTDB_OK)
    })
}

/// Sets `key` to `value` in `table` (visible to others at commit).
///
/// # Safety
/// - `txn` is null or a live transaction handle; `table` is null or a NUL-terminated string;
///   `key` and `value` point to their lengths in bytes (or the length is 0).
#[no_mangle]
pub unsafe extern "C" fn artdb_txn_put(
    txn: *mut TxnHandle,
    table: *const c_char,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract, for each of the four.
        let handle = unsafe { object(txn, "transaction") }?;
        // SAFETY: as above.
        let table = unsafe { text(table, "table") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        // SAFETY: as above.
        let value = unsafe { bytes(value, value_len, "value") }?;
        handle.live()?.insert(table, key, value)?;
        Ok(ARTDB_OK)
    })
}

/// Removes `key` from `table`: [`ARTDB_OK`], or [`ARTDB_NOTFOUND`] when it was absent.
///
/// # Safety
/// - As [`artdb_txn_get`], without `value`.
#[no_mangle]
pub unsafe extern "C" fn artdb_txn_delete(
    txn: *mut TxnHandle,
    table: *const c_char,
    key: *const u8,
    key_len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract, for each of the three.
        let handle = unsafe { object(txn, "transaction") }?;
        // SAFETY: as above.
        let table = unsafe { text(table, "table") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        if handle.live()?.remove(table, key)? {
            Ok(ARTDB_OK)
        } else {
            Ok(ARTDB_NOTFOUND)
        }
    })
}

/// Creates (`create` true) or drops a table inside the transaction, applied at its commit.
///
/// # Safety
/// - `txn` is null or a live transaction handle; `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn artdb_txn_table(
    txn: *mut TxnHandle,
    name: *const c_char,
    create: bool,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { object(txn, "transaction") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { text(name, "name") }?;
        let mut transaction = handle.live()?;
        if create {
            transaction.create_table(name)?;
        } else {
            transaction.drop_table(name)?;
        }
        Ok(ARTDB_OK)
    })
}

/// Commits the transaction. [`ARTDB_OK`]: durable as its durability says and visible. Any
/// error ends it too, with nothing applied: on [`ARTDB_CONFLICT`] (or [`ARTDB_ABORTED`]) free
/// it, begin a new one and run it again. The handle stays until [`artdb_txn_free`]; any call
/// but that one is then [`ARTDB_INVALID`].
///
/// # Safety
/// - `txn` is null or a live transaction handle.
#[no_mangle]
pub unsafe extern "C" fn artdb_txn_commit(txn: *mut TxnHandle) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { object(txn, "transaction") }?;
        drop(handle.live()?);
        let open = handle.database_open();
        let transaction = handle.end();
        handle.ended = "ended by a failed commit";
        open?;
        if let Some(transaction) = transaction {
            transaction.commit()?;
        }
        handle.ended = "committed";
        Ok(ARTDB_OK)
    })
}

/// Discards the transaction's changes; the handle stays until [`artdb_txn_free`].
///
/// # Safety
/// - `txn` is null or a live transaction handle.
#[no_mangle]
pub unsafe extern "C" fn artdb_txn_abort(txn: *mut TxnHandle) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { object(txn, "transaction") }?;
        drop(handle.live()?);
        handle.end();
        handle.ended = "aborted";
        Ok(ARTDB_OK)
    })
}

/// Frees a transaction handle, aborting the transaction if it is still open. Null is ignored.
///
/// # Safety
/// - `txn` is null or a transaction handle not freed yet, which no other thread uses during
///   or after the call.
#[no_mangle]
pub unsafe extern "C" fn artdb_txn_free(txn: *mut TxnHandle) {
    if !txn.is_null() {
        // SAFETY: from `Box::into_raw` in `artdb_txn_begin`, freed once (the caller's
        // contract); a panic while dropping must not reach C.
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(txn) })));
    }
}

// ---------------------------------------------------------------------------------------------
// Write batches.

/// Begins a write batch: the one writer that holds the database's writer lock until it ends
/// (other batches, checkpoints and commits wait), changing the tables in place, for loading
/// many changes fast. Used and freed only on the thread that began it (else
/// [`ARTDB_MISUSE`]); the database cannot be closed while it is open ([`ARTDB_BUSY`]).
///
/// # Safety
/// - `db` is null or an open database handle; `batch` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_batch_begin(
    db: *const DbHandle,
    batch: *mut *mut BatchHandle,
) -> c_int {
    guard(|| {
        require(batch, "batch")?;
        // SAFETY: the caller's contract.
        let handle = unsafe { shared(db, "database") }?;
        let database = Arc::clone(&handle.db);
        let engine_batch = database.write()?;
        // SAFETY: the batch borrows the `Db` in `database`'s heap allocation, which the handle
        // built below owns (one count) and which does not move while that count lives
        // (`artdb_close` refuses while it does); the handle drops the batch before the count
        // (field order).
        let engine_batch = unsafe {
            std::mem::transmute::<artdb::WriteTxn<'_>, artdb::WriteTxn<'static>>(engine_batch)
        };
        let begun = Box::into_raw(Box::new(BatchHandle {
            batch: Some(engine_batch),
            db: database,
            thread: std::thread::current().id(),
            value: Vec::new(),
        }));
        // SAFETY: checked non-null first; writable by the caller's contract.
        unsafe { put(batch, begun, "batch") }?;
        Ok(ARTDB_OK)
    })
}

/// Sets `key` to `value` in `table` in the batch.
///
/// # Safety
/// - `batch` is null or a live batch handle; `table` is null or a NUL-terminated string; `key`
///   and `value` point to their lengths in bytes (or the length is 0).
#[no_mangle]
pub unsafe extern "C" fn artdb_batch_put(
    batch: *mut BatchHandle,
    table: *const c_char,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract, for each of the four.
        let handle = unsafe { object(batch, "batch") }?;
        // SAFETY: as above.
        let table = unsafe { text(table, "table") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        // SAFETY: as above.
        let value = unsafe { bytes(value, value_len, "value") }?;
        handle.live()?.insert(table, key, value)?;
        Ok(ARTDB_OK)
    })
}

/// Removes `key` from `table` in the batch: [`ARTDB_OK`] or [`ARTDB_NOTFOUND`].
///
/// # Safety
/// - As [`artdb_batch_put`], without `value`.
#[no_mangle]
pub unsafe extern "C" fn artdb_batch_delete(
    batch: *mut BatchHandle,
    table: *const c_char,
    key: *const u8,
    key_len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract, for each of the three.
        let handle = unsafe { object(batch, "batch") }?;
        // SAFETY: as above.
        let table = unsafe { text(table, "table") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        match handle.live()?.remove(table, key)? {
            Some(_) => Ok(ARTDB_OK),
            None => Ok(ARTDB_NOTFOUND),
        }
    })
}

/// The value of `key` in `table` as the batch sees it: [`ARTDB_OK`] with `*value` borrowed
/// until the batch's next call, or [`ARTDB_NOTFOUND`].
///
/// # Safety
/// - As [`artdb_batch_delete`]; `value` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn artdb_batch_get(
    batch: *mut BatchHandle,
    table: *const c_char,
    key: *const u8,
    key_len: usize,
    value: *mut ArtdbVal,
) -> c_int {
    guard(|| {
        require(value, "value")?;
        // SAFETY: the caller's contract, for each of the three.
        let handle = unsafe { object(batch, "batch") }?;
        // SAFETY: as above.
        let table = unsafe { text(table, "table") }?;
        // SAFETY: as above.
        let key = unsafe { bytes(key, key_len, "key") }?;
        match handle.live()?.get(table, key)? {
            Some(found) => {
                handle.value = found;
                // SAFETY: checked non-null first; writable by the caller's contract.
                unsafe { put(value, val(&handle.value), "value") }?;
                Ok(ARTDB_OK)
            }
            None => Ok(ARTDB_NOTFOUND),
        }
    })
}

/// Creates (`create` true) or drops a table in the batch.
///
/// # Safety
/// - `batch` is null or a live batch handle; `name` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn artdb_batch_table(
    batch: *mut BatchHandle,
    name: *const c_char,
    create: bool,
) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { object(batch, "batch") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { text(name, "name") }?;
        let engine_batch = handle.live()?;
        if create {
            engine_batch.create_table(name)?;
        } else {
            engine_batch.drop_table(name)?;
        }
        Ok(ARTDB_OK)
    })
}

/// Commits the batch and releases the writer lock; any error ends it too, with nothing
/// applied. The handle stays until [`artdb_batch_free`].
///
/// # Safety
/// - `batch` is null or a live batch handle.
#[no_mangle]
pub unsafe extern "C" fn artdb_batch_commit(batch: *mut BatchHandle) -> c_int {
    guard(|| {
        // SAFETY: the caller's contract.
        let handle = unsafe { object(batch, "batch") }?;
        handle.live()?;
        if let Some(engine_batch) = handle.batch.take() {
            engine_batch.commit()?;
        }
        Ok(ARTDB_OK)
    })
}

/// Frees a batch handle, rolling the batch back if it was not committed; must be called on the
/// batch's thread (else [`ARTDB_MISUSE`], and nothing is freed). Null is [`ARTDB_OK`].
///
/// # Safety
/// - `batch` is null or a batch handle not freed yet, which no other thread uses during or
///   after the call.
#[no_mangle]
pub unsafe extern "C" fn artdb_batch_free(batch: *mut BatchHandle) -> c_int {
    guard(|| {
        if batch.is_null() {
            return Ok(ARTDB_OK);
        }
        // SAFETY: the caller's contract.
        unsafe { object(batch, "batch") }?.on_its_thread()?;
        // SAFETY: from `Box::into_raw` in `artdb_batch_begin`, freed once (the caller's
        // contract).
        drop(unsafe { Box::from_raw(batch) });
        Ok(ARTDB_OK)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_error_with_its_message() {
        let code = guard(|| panic!("boom in the engine"));
        assert_eq!(code, ARTDB_INTERNAL);
        // SAFETY: artdb_errmsg returns this thread's NUL-terminated message, which stays
        // valid until the thread's next failing call (none runs before this read).
        let message = unsafe { CStr::from_ptr(artdb_errmsg()) };
        let message = message.to_str().expect("UTF-8");
        assert!(message.contains("boom in the engine"), "{message}");
        assert!(message.contains("bug in artdb"), "{message}");
    }

    #[test]
    fn a_failure_sets_the_message_and_a_success_keeps_it() {
        assert_eq!(guard(|| Err(Failure::invalid("first"))), ARTDB_INVALID);
        assert_eq!(guard(|| Ok(ARTDB_NOTFOUND)), ARTDB_NOTFOUND);
        // SAFETY: as above.
        let message = unsafe { CStr::from_ptr(artdb_errmsg()) };
        assert_eq!(message.to_bytes(), b"first");
    }
}
