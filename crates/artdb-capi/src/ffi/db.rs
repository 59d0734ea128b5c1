//! Databases: options, open and create, close, tables, checkpoint, compact, sync, backup,
//! stats, verify and bulk load.

use super::*;

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
