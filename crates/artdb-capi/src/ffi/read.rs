//! Read snapshots and cursors.

use super::*;

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
pub(super) unsafe fn range_bounds(
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
