//! txn: `with db.write() as tx` and `with db.read() as snap` (the Python objects), over the
//! engine's concurrent transactions (`Db::begin_write`, `Transaction`; docs/isolation.md).
//!
//! A write transaction reads one snapshot, buffers its changes privately (its reads see them),
//! and is validated at commit: `ConflictError` means nothing of it was applied and it may be run
//! again (`db.transact` does). Isolation `"snapshot"` (first committer wins on written keys) or
//! `"serializable"` (also validates what it read). Durability `"sync"` or `"nosync"`: the
//! engine's, per transaction (its write-ahead log).
//!
//! The engine's `Transaction` is `Send` but not `Sync`: it lives in a mutex, and a call finding
//! the mutex taken (a second thread using the same transaction at the same moment) raises
//! instead of waiting, so no thread ever waits for it while holding the GIL. Calls on it keep
//! the GIL (they are in-memory); `commit` takes it out of the mutex first and runs with the GIL
//! released.
//!
//! Writes go through [`Writes`], which keeps for each live iterator of the transaction what a
//! key ahead of it held before the write, so that iterators show the view of their creation
//! (`iter.rs`).
//!
//! States: Open -> Committed (`commit`) | Aborted (`abort`, an exception in the `with` block, a
//! failed commit, or `db.close()`); every call on a finished transaction raises
//! `TransactionClosedError` (`ClosedError` after `db.close()`).

use crate::core::{Durability, Ended, Inner, SnapHandle};
use crate::errors::{self, EngineResult};
use crate::iter::Frozen;
use crate::table::{Source, Table};
use artdb::{Isolation, Transaction, WriteOptions};
use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::{Arc, Weak};

/// Parses the isolation keyword.
pub(crate) fn parse_isolation(isolation: &str) -> PyResult<Isolation> {
    match isolation {
        "snapshot" => Ok(Isolation::Snapshot),
        "serializable" => Ok(Isolation::Serializable),
        other => Err(PyValueError::new_err(format!(
            "isolation must be \"snapshot\" or \"serializable\", not {other:?}"
        ))),
    }
}

/// A write transaction's state (see the module docs).
pub(crate) struct TxnState {
    pub(crate) durability: Durability,
    pub(crate) isolation: Isolation,
    slot: Mutex<Result<Transaction, Ended>>,
    /// The iterators made in this transaction (dropped ones are pruned as others register).
    iterators: Mutex<Vec<Weak<Frozen>>>,
}

impl TxnState {
    /// Starts a transaction and registers it with the database (so `close` can end it).
    pub(crate) fn begin(
        py: Python<'_>,
        inner: &Arc<Inner>,
        durability: Durability,
        isolation: Isolation,
    ) -> PyResult<Arc<TxnState>> {
        let db = inner.db(py)?;
        let txn = db
            .begin_write(WriteOptions::with_isolation(isolation).durability(durability.engine()))
            .py(py)?;
        let state = Arc::new(TxnState {
            durability,
            isolation,
            slot: Mutex::new(Ok(txn)),
            iterators: Mutex::new(Vec::new()),
        });
        inner.register_txn(&state);
        Ok(state)
    }

    fn ended_error(py: Python<'_>, ended: Ended) -> PyErr {
        match ended {
            Ended::DbClosed => errors::closed(py),
            Ended::Finished => errors::finished(py, "transaction"),
        }
    }

    /// Runs `body` on the open transaction (with the GIL), or raises.
    pub(crate) fn with_txn<R>(
        &self,
        py: Python<'_>,
        body: impl FnOnce(&mut Transaction) -> PyResult<R>,
    ) -> PyResult<R> {
        let Some(mut slot) = self.slot.try_lock() else {
            return Err(PyRuntimeError::new_err(
                "this transaction is in use by another thread; a transaction is for one thread \
                 at a time",
            ));
        };
        match &mut *slot {
            Ok(txn) => body(txn),
            Err(ended) => Err(TxnState::ended_error(py, *ended)),
        }
    }

    /// Runs `body` on the open transaction as [`Writes`] to `table` (with the GIL), or raises.
    pub(crate) fn with_writes<R>(
        &self,
        py: Python<'_>,
        table: &str,
        body: impl FnOnce(&mut Writes<'_>) -> PyResult<R>,
    ) -> PyResult<R> {
        let iterators = self.iterators_of(table);
        self.with_txn(py, |txn| body(&mut Writes { txn, iterators }))
    }

    /// Adds an iterator made in this transaction (see [`Writes`]).
    pub(crate) fn register_iterator(&self, frozen: &Arc<Frozen>) {
        let mut iterators = self.iterators.lock();
        iterators.retain(|iterator| iterator.strong_count() > 0);
        iterators.push(Arc::downgrade(frozen));
    }

    /// The live iterators of `table`.
    fn iterators_of(&self, table: &str) -> Vec<Arc<Frozen>> {
        self.iterators
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|frozen| frozen.table() == table)
            .collect()
    }

    /// Whether it is still open.
    pub(crate) fn is_open(&self) -> bool {
        match self.slot.try_lock() {
            Some(slot) => slot.is_ok(),
            // In use by a call on another thread: still open.
            None => true,
        }
    }

    /// Takes the transaction out, leaving `ended`; `None` if it had already ended.
    pub(crate) fn take(&self, py: Python<'_>, ended: Ended) -> Option<Transaction> {
        loop {
            if let Some(mut slot) = self.slot.try_lock() {
                return match std::mem::replace(&mut *slot, Err(ended)) {
                    Ok(txn) => Some(txn),
                    Err(before) => {
                        *slot = Err(before);
                        None
                    }
                };
            }
            // Another thread is inside a call on it (with the GIL released only while it
            // waits for the GIL again): let it finish.
            py.detach(|| std::thread::sleep(std::time::Duration::from_micros(50)));
        }
    }

    /// Ends it without applying anything (idempotent).
    pub(crate) fn abort(&self, py: Python<'_>) {
        drop(self.take(py, Ended::Finished));
    }

    /// Validates and applies it; `ConflictError` if another transaction got there first.
    pub(crate) fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let ended = match self.slot.try_lock() {
            Some(slot) => slot.as_ref().err().copied(),
            None => None,
        };
        if let Some(ended) = ended {
            return Err(TxnState::ended_error(py, ended));
        }
        let Some(txn) = self.take(py, Ended::Finished) else {
            return Err(errors::finished(py, "transaction"));
        };
        py.detach(move || txn.commit().map(drop)).py(py)
    }
}

/// A transaction as the table methods change it: reads through `Deref`, writes through
/// [`Writes::insert`] and [`Writes::remove`] only (no `DerefMut`, so a write cannot bypass
/// them). Before each write of a key that a live iterator of the Python transaction has yet to
/// reach, it records what the key holds for that iterator ([`Frozen::keep`]). For the
/// statements of `db.table(...)` there are no such iterators (theirs read engine snapshots).
///
/// Recording reads the key through the transaction, which a serializable transaction notes as
/// a read of it: that changes no outcome, since the write of the same key conflicts with the
/// same concurrent writers in both isolation levels (docs/isolation.md).
pub(crate) struct Writes<'t> {
    txn: &'t mut Transaction,
    iterators: Vec<Arc<Frozen>>,
}

impl<'t> Writes<'t> {
    /// Writes to `txn` that no iterator watches.
    pub(crate) fn unwatched(txn: &'t mut Transaction) -> Writes<'t> {
        Writes {
            txn,
            iterators: Vec::new(),
        }
    }

    /// Sets `key` to `value` in `table`.
    pub(crate) fn insert(&mut self, table: &str, key: &[u8], value: &[u8]) -> artdb::Result<()> {
        self.keep(table, key)?;
        self.txn.insert(table, key, value)
    }

    /// Removes `key` from `table`; true if it was there.
    pub(crate) fn remove(&mut self, table: &str, key: &[u8]) -> artdb::Result<bool> {
        self.keep(table, key)?;
        self.txn.remove(table, key)
    }

    /// Drops `table` (see `WriteTransaction.drop_table`). Each key an iterator of it has yet to
    /// reach is recorded first, as `clear()` records each key it removes: the iterator then
    /// finds the table gone from the current view and shows what it recorded (`iter.rs`).
    pub(crate) fn drop_table(&mut self, table: &str) -> artdb::Result<()> {
        if !self.iterators.is_empty() {
            for item in self.txn.iter(table)? {
                let (key, value) = item?;
                for frozen in self.iterators.iter().filter(|frozen| frozen.needs(&key)) {
                    frozen.keep(&key, Some(value));
                }
            }
        }
        self.txn.drop_table(table)
    }

    /// Records what `key` holds for each iterator that has yet to reach it.
    fn keep(&self, table: &str, key: &[u8]) -> artdb::Result<()> {
        let mut iterators = self.iterators.iter().filter(|frozen| frozen.needs(key));
        let Some(first) = iterators.next() else {
            return Ok(());
        };
        let before = self.txn.get(table, key)?;
        first.keep(key, before);
        for frozen in iterators {
            frozen.keep(key, before);
        }
        Ok(())
    }
}

impl std::ops::Deref for Writes<'_> {
    type Target = Transaction;

    fn deref(&self) -> &Transaction {
        self.txn
    }
}

/// A write transaction: `with db.write() as tx:` commits on normal exit and aborts when the
/// block raises. `tx.table(name)` is the table as this transaction sees it.
#[pyclass(name = "WriteTransaction", module = "artdb", frozen)]
pub struct WriteTransaction {
    pub(crate) state: Arc<TxnState>,
}

#[pymethods]
impl WriteTransaction {
    /// The table `name` as this transaction sees it (a mutable mapping).
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<Table> {
        self.state
            .with_txn(py, |txn| txn.len(name).map(drop).py(py))?;
        Ok(Table::new(Source::Txn(Arc::clone(&self.state)), name))
    }

    /// Creates an empty table, as the engine's `Transaction::create_table`: visible in this
    /// transaction at once, to others when it commits (nothing if it aborts).
    /// `TableExistsError` if this transaction sees one of that name; at commit, a transaction
    /// that created, dropped or wrote a table of that name since this one began makes it fail
    /// with `ConflictError` (of two concurrent creates of one name, one commits).
    fn create_table(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.state.with_txn(py, |txn| txn.create_table(name).py(py))
    }

    /// Drops a table and its keys, as the engine's `Transaction::drop_table`: gone in this
    /// transaction at once (its own writes to it discarded), for others when it commits.
    /// `TableNotFoundError` if this transaction sees none; at commit, a transaction that wrote,
    /// created or dropped the table since this one began makes it fail with `ConflictError`.
    /// Iterators of the table made before the drop still show it as it was when they were made.
    fn drop_table(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.state
            .with_writes(py, name, |writes| writes.drop_table(name).py(py))
    }

    /// Names of the tables as this transaction sees them (its own creates and drops included),
    /// in order.
    fn table_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.state.with_txn(py, |txn| Ok(txn.table_names()))
    }

    /// Validates and applies the changes; raises `ConflictError` if another transaction changed
    /// what this one wrote (or, serializable, read) after it started; nothing is applied then.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        self.state.commit(py)
    }

    /// Discards the changes (a no-op on a finished transaction).
    fn abort(&self, py: Python<'_>) {
        self.state.abort(py);
    }

    /// Whether it can still be used.
    #[getter]
    fn active(&self) -> bool {
        self.state.is_open()
    }

    /// The durability its commit uses (`"sync"` or `"nosync"`).
    #[getter]
    fn durability(&self) -> &'static str {
        self.state.durability.name()
    }

    /// Its isolation level (`"snapshot"` or `"serializable"`).
    #[getter]
    fn isolation(&self) -> &'static str {
        match self.state.isolation {
            Isolation::Serializable => "serializable",
            _ => "snapshot",
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (kind, _value, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if kind.is_some() {
            self.state.abort(py);
        } else if self.state.is_open() {
            self.state.commit(py)?;
        }
        Ok(false)
    }

    fn __repr__(&self) -> &'static str {
        if self.state.is_open() {
            "<artdb.WriteTransaction (open)>"
        } else {
            "<artdb.WriteTransaction (finished)>"
        }
    }
}

/// A read snapshot: `with db.read() as snap:` sees the database as of its start, whatever
/// commits follow. Never blocks writers; ends (releasing what it pins) at the end of the block.
#[pyclass(name = "Snapshot", module = "artdb", frozen)]
pub struct ReadSnapshot {
    pub(crate) handle: Arc<SnapHandle>,
}

#[pymethods]
impl ReadSnapshot {
    /// The table `name` as of this snapshot (a read-only mapping).
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<Table> {
        self.handle.get(py)?.table(name).py(py)?;
        Ok(Table::new(Source::Snapshot(Arc::clone(&self.handle)), name))
    }

    /// Names of the tables in this snapshot.
    fn table_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.handle.get(py)?.table_names())
    }

    /// Ends the snapshot (idempotent); later use raises `TransactionClosedError`.
    fn close(&self) {
        drop(self.handle.finish());
    }

    /// Whether it can still be used.
    #[getter]
    fn active(&self) -> bool {
        self.handle.is_live()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (_kind, _value, _traceback))]
    fn __exit__(
        &self,
        _kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        drop(self.handle.finish());
        false
    }

    fn __repr__(&self) -> &'static str {
        if self.handle.is_live() {
            "<artdb.Snapshot (open)>"
        } else {
            "<artdb.Snapshot (ended)>"
        }
    }
}
