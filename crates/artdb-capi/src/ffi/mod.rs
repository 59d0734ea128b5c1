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

mod db;
mod read;
mod write;

pub use db::*;
pub use read::*;
pub use write::*;

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
