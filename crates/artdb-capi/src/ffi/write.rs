//! Write transactions and write batches.

use super::read::range_bounds;
use super::*;

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
