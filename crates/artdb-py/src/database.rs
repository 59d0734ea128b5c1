//! database: `artdb.open(...)` and `artdb.Database`.
//!
//! Durability: the engine's, through its write-ahead log: `"sync"` (the default; a commit returns
//! once its log record is on stable storage, concurrent commits sharing one fsync) or `"nosync"`
//! (a commit returns once its record is written: it survives the process being killed, not a
//! power loss). Isolation: the engine's `"snapshot"` (default) and `"serializable"`.

use crate::buffer::path_of;
use crate::core::{Durability, Inner};
use crate::errors::{self, EngineResult};
use crate::messages;
use crate::table::{Source, Table};
use crate::txn::{parse_isolation, ReadSnapshot, TxnState, WriteTransaction};
use artdb::{Db, Options};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

/// Opens (or, with `create`, creates) the database file at `path`; with `create`, an empty
/// file is made a new database. `read_only`: a shared lock
/// beside other read-only handles, writes refused, the file never created or written.
#[pyfunction]
#[pyo3(signature = (path, *, create=true, durability="sync", read_only=false))]
pub fn open(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    create: bool,
    durability: &str,
    read_only: bool,
) -> PyResult<Database> {
    let path = path_of(path)?;
    let durability = Durability::parse(durability)?;
    let options = Options {
        durability: durability.engine(),
        read_only,
        ..Options::default()
    };
    let opened = py
        .detach(|| {
            // The engine's open-or-create also takes an empty file (as `tempfile` makes one)
            // as a new database, as sqlite3 and lmdb do, and settles a concurrent create.
            if create && !read_only {
                Db::open_or_create(&path, options)
            } else {
                Db::open(&path, options)
            }
        })
        .py(py)?;
    Ok(Database {
        inner: Arc::new(Inner::new(opened, path, durability)),
    })
}

/// An open artdb database (see `artdb.open`).
#[pyclass(name = "Database", module = "artdb", frozen)]
pub struct Database {
    inner: Arc<Inner>,
}

impl Database {
    fn durability_or_default(&self, durability: Option<&str>) -> PyResult<Durability> {
        match durability {
            Some(text) => Durability::parse(text),
            None => Ok(self.inner.durability),
        }
    }

    fn begin(
        &self,
        py: Python<'_>,
        durability: Option<&str>,
        isolation: &str,
    ) -> PyResult<WriteTransaction> {
        let isolation = parse_isolation(isolation)?;
        let durability = self.durability_or_default(durability)?;
        let state = TxnState::begin(py, &self.inner, durability, isolation)?;
        Ok(WriteTransaction { state })
    }
}

/// Whether `error` is an `artdb.ConflictError`.
fn is_conflict(py: Python<'_>, error: &PyErr) -> bool {
    match errors::class(py, "ConflictError") {
        Ok(class) => error.is_instance(py, &class),
        Err(_) => false,
    }
}

/// Sleeps a pause that doubles with each attempt (up to the cap below), jittered, with the GIL
/// released.
fn backoff(py: Python<'_>, attempt: u32) {
    let base_us = 50u64 << attempt.min(8);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::from(elapsed.subsec_nanos()));
    let pause_us = base_us / 2 + nanos % (base_us / 2 + 1);
    py.detach(|| std::thread::sleep(Duration::from_micros(pause_us.min(10_000))));
}

#[pymethods]
impl Database {
    /// The table `name` (a mutable mapping; each statement its own transaction). With `create`,
    /// an absent table is created first; otherwise it raises `TableNotFoundError`.
    #[pyo3(signature = (name, *, create=false))]
    fn table(&self, py: Python<'_>, name: &str, create: bool) -> PyResult<Table> {
        let db = self.inner.db(py)?;
        let exists = db.read().table(name).is_ok();
        if !exists {
            if !create {
                db.read().table(name).py(py)?;
            }
            match py.detach(|| db.create_table(name)) {
                Ok(()) | Err(artdb::Error::TableExists { .. }) => {}
                Err(error) => return Err(error).py(py),
            }
        }
        Ok(Table::new(Source::Auto(Arc::clone(&self.inner)), name))
    }

    /// Names of the tables, in order.
    fn table_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.inner.db(py)?.table_names())
    }

    /// Creates an empty table (`TableExistsError` if there is one).
    fn create_table(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.inner.db(py)?;
        py.detach(|| db.create_table(name)).py(py)
    }

    /// Drops a table and all its keys (`TableNotFoundError` if there is none).
    fn drop_table(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.inner.db(py)?;
        py.detach(|| db.drop_table(name)).py(py)
    }

    /// A read snapshot (`with db.read() as snap:`): one consistent view of every table.
    fn read(&self, py: Python<'_>) -> PyResult<ReadSnapshot> {
        Ok(ReadSnapshot {
            handle: self.inner.snapshot(py, "snapshot")?,
        })
    }

    /// A write transaction (`with db.write() as tx:`). `durability`: "sync" or "nosync"
    /// (default: the database's). `isolation`: "snapshot" or "serializable".
    #[pyo3(signature = (*, durability=None, isolation="snapshot"))]
    fn write(
        &self,
        py: Python<'_>,
        durability: Option<&str>,
        isolation: &str,
    ) -> PyResult<WriteTransaction> {
        self.begin(py, durability, isolation)
    }

    /// Runs `function(tx)` in a write transaction and commits it; on `ConflictError` runs it
    /// again on a fresh snapshot, up to `retries` more times with growing randomized pauses.
    /// Any other exception aborts and propagates. Returns what `function` returned.
    #[pyo3(signature = (function, *, retries=16, durability=None, isolation="snapshot"))]
    fn transact(
        &self,
        py: Python<'_>,
        function: &Bound<'_, PyAny>,
        retries: u32,
        durability: Option<&str>,
        isolation: &str,
    ) -> PyResult<Py<PyAny>> {
        let mut attempt = 0u32;
        loop {
            let tx = Py::new(py, self.begin(py, durability, isolation)?)?;
            let state = Arc::clone(&tx.get().state);
            let result = function
                .call1((tx,))
                .and_then(|value| state.commit(py).map(|()| value.unbind()));
            state.abort(py);
            match result {
                Err(error) if attempt < retries && is_conflict(py, &error) => {
                    attempt += 1;
                    backoff(py, attempt);
                }
                other => return other,
            }
        }
    }

    /// Makes every commit so far durable; returns what the checkpoint wrote.
    fn checkpoint<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.inner.db(py)?;
        let stats = py.detach(|| db.checkpoint()).py(py)?;
        let dict = PyDict::new(py);
        dict.set_item("generation", stats.generation)?;
        dict.set_item("images_written", stats.images_written)?;
        dict.set_item("pages_written", stats.pages_written)?;
        dict.set_item("bytes_written", stats.bytes_written)?;
        dict.set_item("tables_written", stats.tables_written)?;
        Ok(dict)
    }

    /// Figures about the tables and the file, as a dict.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.inner.db(py)?;
        let stats = py.detach(|| db.stats()).py(py)?;
        let dict = PyDict::new(py);
        let tables = PyDict::new(py);
        for table in &stats.tables {
            let entry = PyDict::new(py);
            entry.set_item("keys", table.keys)?;
            entry.set_item("dirty", table.dirty)?;
            tables.set_item(&table.name, entry)?;
        }
        dict.set_item("path", self.inner.path.as_os_str())?;
        dict.set_item("durability", self.inner.durability.name())?;
        dict.set_item("tables", tables)?;
        dict.set_item("file_bytes", stats.store.file_bytes)?;
        dict.set_item("page_count", stats.store.page_count)?;
        dict.set_item("free_pages", stats.store.free_pages)?;
        dict.set_item("pending_pages", stats.store.pending_pages)?;
        dict.set_item("generation", stats.store.generation)?;
        let log = PyDict::new(py);
        log.set_item("bytes", stats.log.bytes)?;
        log.set_item("records", stats.log.records)?;
        log.set_item("last_lsn", stats.log.last_lsn)?;
        log.set_item("covered_lsn", stats.log.covered_lsn)?;
        log.set_item("file_bytes", stats.log.file_bytes)?;
        log.set_item("commits", stats.log.commits)?;
        log.set_item("syncs", stats.log.syncs)?;
        dict.set_item("log", log)?;
        Ok(dict)
    }

    /// Checks every checksum and invariant; raises `CorruptionError` naming what is wrong, else
    /// returns `{"tables_checked": n, "keys_checked": n}`.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.inner.db(py)?;
        let report = py.detach(|| db.verify()).py(py)?;
        if !report.is_ok() {
            let shown: Vec<String> = report
                .problems
                .iter()
                .take(10)
                .map(|problem| messages::engine(py, problem))
                .collect();
            let more = report.problems.len().saturating_sub(shown.len());
            let tail = if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            };
            return Err(errors::new_error(
                py,
                "CorruptionError",
                format!(
                    "verify found {} problem(s): {}{tail}",
                    report.problems.len(),
                    shown.join("; ")
                ),
            ));
        }
        let dict = PyDict::new(py);
        dict.set_item("tables_checked", report.tables_checked)?;
        dict.set_item("keys_checked", report.keys_checked)?;
        Ok(dict)
    }

    /// Checkpoints and closes the database (idempotent). Snapshots, iterators and transactions
    /// of it raise `ClosedError` afterwards.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.close(py)
    }

    /// Whether `close` ran.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The database file, as a `str` (PyO3 turns a `PathBuf` into a `pathlib.Path`).
    #[getter]
    fn path(&self) -> OsString {
        self.inner.path.clone().into_os_string()
    }

    /// The default durability of commits ("sync" or "nosync").
    #[getter]
    fn durability(&self) -> &'static str {
        self.inner.durability.name()
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (_kind, _value, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: Option<&Bound<'_, PyAny>>,
        _value: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.inner.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.inner.is_closed() {
            "closed"
        } else {
            "open"
        };
        format!("<artdb.Database {:?} ({state})>", self.inner.path)
    }
}
