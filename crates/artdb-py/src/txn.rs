//! txn: `with db.write() as tx` and `with db.read() as snap` (the Python objects), and the state
//! of a write transaction.
//!
//! The Python surface follows the engine's concurrent transactions (issue 10): a write
//! transaction reads one snapshot, buffers its changes privately (its reads see them), and is
//! validated at commit; `ConflictError` means nothing of it was applied and it may be run again
//! (`db.transact` does). Until the engine's MVCC transactions (`Db::begin_write`) land on main,
//! the engine only has the lock-holding write batch, so this module implements the buffering
//! itself, over an engine snapshot, and commits in one write batch:
//! - validation (first committer wins on written keys) compares, under the batch's writer lock,
//!   each written key's committed value with the value in the transaction's snapshot; a
//!   difference is a conflict. A key changed and changed back in between (A-B-A) is not seen as
//!   a conflict, which strict snapshot isolation would report.
//! - `isolation="serializable"` needs read-set validation, which only the engine can do:
//!   `NotSupportedError` until it lands.
//! - durability `"sync"` checkpoints after the commit (there is no write-ahead log yet).
//!
//! States: Open -> Committed (`commit`) | Aborted (`abort`, an exception in the `with` block, or a
//! failed commit); every call on a finished transaction raises `TransactionClosedError`.

use crate::core::{Durability, Inner, SnapHandle};
use crate::errors::{self, EngineResult};
use crate::table::{Source, Table};
use parking_lot::Mutex;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The changes of one table: key -> new value (`None` = removed).
pub(crate) type TableWrites = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// A write transaction's state (see the module docs).
pub(crate) struct TxnState {
    pub(crate) inner: Arc<Inner>,
    pub(crate) snapshot: Arc<SnapHandle>,
    pub(crate) durability: Durability,
    /// `None` once finished.
    writes: Mutex<Option<BTreeMap<String, TableWrites>>>,
}

/// Why a commit failed.
enum CommitError {
    Engine(artdb::Error),
    Conflict { table: String, key: Vec<u8> },
}

impl From<artdb::Error> for CommitError {
    fn from(error: artdb::Error) -> CommitError {
        CommitError::Engine(error)
    }
}

impl TxnState {
    pub(crate) fn begin(
        py: Python<'_>,
        inner: &Arc<Inner>,
        durability: Durability,
    ) -> PyResult<TxnState> {
        Ok(TxnState {
            inner: Arc::clone(inner),
            snapshot: inner.snapshot(py, "transaction")?,
            durability,
            writes: Mutex::new(Some(BTreeMap::new())),
        })
    }

    /// Runs `body` on the open write set, or raises `TransactionClosedError`.
    pub(crate) fn with_writes<R>(
        &self,
        py: Python<'_>,
        body: impl FnOnce(&mut BTreeMap<String, TableWrites>) -> R,
    ) -> PyResult<R> {
        // The snapshot ends with the database too: report that first.
        if !self.snapshot.is_live() {
            self.snapshot.get(py)?;
        }
        match self.writes.lock().as_mut() {
            Some(writes) => Ok(body(writes)),
            None => Err(errors::finished(py, "transaction")),
        }
    }

    /// Whether it is still open.
    pub(crate) fn is_open(&self) -> bool {
        self.writes.lock().is_some() && self.snapshot.is_live()
    }

    /// Ends it without applying anything (idempotent).
    pub(crate) fn abort(&self) {
        self.writes.lock().take();
        drop(self.snapshot.finish());
    }

    /// Validates and applies the write set in one engine write batch (module docs).
    pub(crate) fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let snapshot = self.snapshot.get(py)?;
        let writes = self
            .writes
            .lock()
            .take()
            .ok_or_else(|| errors::finished(py, "transaction"))?;
        drop(self.snapshot.finish());
        let db = self.inner.db(py)?;
        let durability = self.durability;
        let result = py.allow_threads(move || -> Result<(), CommitError> {
            if writes.values().all(BTreeMap::is_empty) {
                return Ok(());
            }
            let mut batch = db.write()?;
            for (table, changes) in &writes {
                let base = snapshot.table(table)?;
                for key in changes.keys() {
                    let committed = batch.get(table, key)?;
                    if committed.as_deref() != base.get(key)? {
                        return Err(CommitError::Conflict {
                            table: table.clone(),
                            key: key.clone(),
                        });
                    }
                }
            }
            for (table, changes) in &writes {
                for (key, value) in changes {
                    match value {
                        Some(value) => drop(batch.insert(table, key, value)?),
                        None => drop(batch.remove(table, key)?),
                    }
                }
            }
            batch.commit()?;
            drop(snapshot);
            durability.after_commit(&db)?;
            Ok(())
        });
        match result {
            Ok(()) => Ok(()),
            Err(CommitError::Engine(error)) => Err(error).py(py),
            Err(CommitError::Conflict { table, key }) => Err(errors::new_error(
                py,
                "ConflictError",
                format!(
                    "the transaction conflicted on table {table:?}, key b\"{}\": another \
                     transaction changed it after this one started; nothing of it was applied, \
                     run it again (db.transact retries)",
                    key.escape_ascii()
                ),
            )),
        }
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
        let snapshot = self.state.snapshot.get(py)?;
        if !self.state.is_open() {
            return Err(errors::finished(py, "transaction"));
        }
        snapshot.table(name).py(py)?;
        Ok(Table::new(Source::Txn(Arc::clone(&self.state)), name))
    }

    /// Names of the tables in this transaction's snapshot.
    fn table_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.state.snapshot.get(py)?.table_names())
    }

    /// Validates and applies the changes; raises `ConflictError` if another transaction changed
    /// a key this one wrote after it started (nothing is applied then).
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        self.state.commit(py)
    }

    /// Discards the changes (a no-op on a finished transaction).
    fn abort(&self) {
        self.state.abort();
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
            self.state.abort();
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
