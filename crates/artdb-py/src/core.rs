//! core: the shared state behind the Python objects of one open database, and the rules that keep
//! a closed database or a finished transaction from being used.
//!
//! - [`Inner`]: the engine's `Db` (`None` once closed), the path, the default durability, and the
//!   snapshot handles handed out (so `close` can end them).
//! - [`SnapHandle`]: one engine `ReadTxn` shared by a `with db.read()` block, an iterator or a
//!   write transaction. `close` of the database ends every live handle, so no snapshot keeps the
//!   file (and its lock) open after `db.close()` returns.
//!
//! Locks and the GIL: every lock here is held only for a few instructions (to clone or take an
//! `Arc`) and never while calling into Python or waiting for the GIL, so no thread can hold one
//! while waiting for a thread that holds the GIL. Work that can wait (the engine's writer lock,
//! I/O, long scans) runs with the GIL released on cloned `Arc`s; `close` waits for those clones to
//! be dropped with the GIL released, then closes the engine's `Db`.

use crate::errors::{self, EngineResult};
use crate::txn::TxnState;
use artdb::{Db, ReadTxn, Transaction};
use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// When a commit is durable (the engine's `artdb::Durability`, spelled for Python).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// The commit returns after its log record is on stable storage (group commit).
    Sync,
    /// The commit returns after its log record is written: it survives the process being
    /// killed, not a power loss, until the next sync, checkpoint or close.
    NoSync,
}

impl Durability {
    /// Parses the Python spelling (`"sync"`, `"nosync"`).
    pub(crate) fn parse(text: &str) -> PyResult<Durability> {
        match text {
            "sync" => Ok(Durability::Sync),
            "nosync" | "no_sync" => Ok(Durability::NoSync),
            other => Err(PyValueError::new_err(format!(
                "durability must be \"sync\" or \"nosync\", not {other:?}"
            ))),
        }
    }

    /// The Python spelling.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Durability::Sync => "sync",
            Durability::NoSync => "nosync",
        }
    }

    /// The engine's durability.
    pub(crate) fn engine(self) -> artdb::Durability {
        match self {
            Durability::Sync => artdb::Durability::Sync,
            Durability::NoSync => artdb::Durability::NoSync,
        }
    }
}

/// One open database (see the module docs).
pub(crate) struct Inner {
    db: Mutex<Option<Arc<Db>>>,
    pub(crate) path: PathBuf,
    pub(crate) durability: Durability,
    handles: Mutex<Vec<Weak<SnapHandle>>>,
    txns: Mutex<Vec<Weak<TxnState>>>,
}

/// Why a snapshot handle or a transaction no longer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// Its `with` block (or transaction) ended.
    Finished,
    /// The database was closed.
    DbClosed,
}

/// A shared engine snapshot (see the module docs).
pub(crate) struct SnapHandle {
    state: Mutex<Result<Arc<ReadTxn>, Ended>>,
    /// Set when `state` leaves `Ok` (a lock-free check for iterators, at every step).
    ended: AtomicBool,
    /// Used in messages ("snapshot", "transaction", "iterator").
    what: &'static str,
}

impl SnapHandle {
    /// The snapshot, or the error saying why it ended.
    pub(crate) fn get(&self, py: Python<'_>) -> PyResult<Arc<ReadTxn>> {
        match &*self.state.lock() {
            Ok(txn) => Ok(Arc::clone(txn)),
            Err(Ended::DbClosed) => Err(errors::closed(py)),
            Err(Ended::Finished) => Err(errors::finished(py, self.what)),
        }
    }

    /// Ends the snapshot (idempotent); returns it so the caller decides where it is dropped.
    pub(crate) fn finish(&self) -> Option<Arc<ReadTxn>> {
        let mut state = self.state.lock();
        if state.is_err() {
            return None;
        }
        self.ended.store(true, Ordering::Release);
        std::mem::replace(&mut *state, Err(Ended::Finished)).ok()
    }

    fn end_for_close(&self) -> Option<Arc<ReadTxn>> {
        let mut state = self.state.lock();
        self.ended.store(true, Ordering::Release);
        match std::mem::replace(&mut *state, Err(Ended::DbClosed)) {
            Ok(txn) => Some(txn),
            Err(Ended::Finished) => {
                *state = Err(Ended::Finished);
                None
            }
            Err(Ended::DbClosed) => None,
        }
    }

    /// Whether it still reads.
    pub(crate) fn is_live(&self) -> bool {
        !self.ended.load(Ordering::Acquire)
    }
}

impl Inner {
    pub(crate) fn new(db: Db, path: PathBuf, durability: Durability) -> Inner {
        Inner {
            db: Mutex::new(Some(Arc::new(db))),
            path,
            durability,
            handles: Mutex::new(Vec::new()),
            txns: Mutex::new(Vec::new()),
        }
    }

    /// The engine's database, or `ClosedError`.
    pub(crate) fn db(&self, py: Python<'_>) -> PyResult<Arc<Db>> {
        self.db
            .lock()
            .as_ref()
            .map(Arc::clone)
            .ok_or_else(|| errors::closed(py))
    }

    /// Whether `close` ran.
    pub(crate) fn is_closed(&self) -> bool {
        self.db.lock().is_none()
    }

    /// A new registered snapshot of the last commit.
    pub(crate) fn snapshot(&self, py: Python<'_>, what: &'static str) -> PyResult<Arc<SnapHandle>> {
        let db = self.db(py)?;
        let handle = Arc::new(SnapHandle {
            state: Mutex::new(Ok(Arc::new(db.read()))),
            ended: AtomicBool::new(false),
            what,
        });
        let mut handles = self.handles.lock();
        // Keep the list proportional to the live handles: drop dead entries when it doubles.
        if handles.len() >= 64 && handles.len().is_power_of_two() {
            handles.retain(|weak| weak.strong_count() > 0);
        }
        handles.push(Arc::downgrade(&handle));
        Ok(handle)
    }

    /// Registers a write transaction so that `close` can end it.
    pub(crate) fn register_txn(&self, txn: &Arc<TxnState>) {
        let mut txns = self.txns.lock();
        if txns.len() >= 64 && txns.len().is_power_of_two() {
            txns.retain(|weak| weak.strong_count() > 0);
        }
        txns.push(Arc::downgrade(txn));
    }

    /// Closes the database: ends every snapshot and transaction handed out, waits (without the GIL) for calls in
    /// flight, then checkpoints and closes the engine's `Db`. Closing twice is a no-op.
    pub(crate) fn close(&self, py: Python<'_>) -> PyResult<()> {
        let Some(db) = self.db.lock().take() else {
            return Ok(());
        };
        let handles: Vec<Weak<SnapHandle>> = std::mem::take(&mut *self.handles.lock());
        let snapshots: Vec<Arc<ReadTxn>> = handles
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|handle| handle.end_for_close())
            .collect();
        let txns: Vec<Weak<TxnState>> = std::mem::take(&mut *self.txns.lock());
        let open_txns: Vec<Transaction> = txns
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|txn| txn.take(py, Ended::DbClosed))
            .collect();
        py.detach(move || {
            // Each aborts as it is dropped.
            drop(open_txns);
            for snapshot in snapshots {
                wait_until_unique(snapshot);
            }
            wait_until_unique(db).close()
        })
        .py(py)
    }
}

/// Takes `shared` out of its `Arc` once every other clone (held by a call in flight) is gone.
fn wait_until_unique<T>(mut shared: Arc<T>) -> T {
    loop {
        match Arc::try_unwrap(shared) {
            Ok(value) => return value,
            Err(again) => {
                shared = again;
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}
