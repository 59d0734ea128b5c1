//! bitable: `artdb.bitable.build(path, sorted_pairs, durable=True)` and `artdb.bitable.open(path)`.
//!
//! `build` reads the Python pairs in chunks (with the GIL) and appends each chunk to the builder
//! with the GIL released; the keys must be strictly increasing (`UnsortedError` /
//! `DuplicateKeyError` name the pair, and no file appears under `path`). `open` maps the file;
//! lookups borrow from the map and copy each value once, into its `bytes`; scans are the lazy
//! iterators of `iter.rs`. `close` (or the end of a `with` block) unmaps; later use raises
//! `ClosedError`.

use crate::buffer::{bytes_of, path_of, type_name};
use crate::errors::{self, EngineResult};
use crate::iter::{Bounds, Mode, Origin, PairIter};
use crate::table::range_bounds;
use artdb_bitable::{Builder, Durability};
use parking_lot::Mutex;
use pyo3::exceptions::{PyFileExistsError, PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

/// `errno.EEXIST` (the same on every platform Python supports).
const EEXIST: i32 = 17;
use std::sync::Arc;

/// Pairs appended per release of the GIL.
const CHUNK_PAIRS: usize = 4096;

/// Builds the bitable file `path` from `pairs` (an iterable of `(key, value)` in strictly
/// increasing key order). `durable`: sync before the file appears under its name. Returns
/// `{"pairs": n, "file_bytes": n}`.
#[pyfunction(name = "build_bitable")]
#[pyo3(signature = (path, pairs, *, durable=true, overwrite=false))]
pub fn build<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyAny>,
    pairs: &Bound<'py, PyAny>,
    durable: bool,
    overwrite: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let path = path_of(path)?;
    // Checked before the build rather than at its rename: the builder links its temporary file
    // into place by a rename, which replaces. Another process can still make the file between
    // the check and the rename; the check is against mistakes (as the CLI's), not a lock.
    if !overwrite && path.exists() {
        return Err(PyFileExistsError::new_err((
            EEXIST,
            format!(
                "{} already exists; pass overwrite=True to replace it, or choose another path",
                path.display()
            ),
            path.clone().into_os_string(),
        )));
    }
    let mut builder = py.detach(|| Builder::create(&path)).py(py)?;
    let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(CHUNK_PAIRS);
    for item in pairs.try_iter()? {
        let item = item?;
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "expected (key, value) pairs, got {}",
                type_name(&item)
            ))
        })?;
        chunk.push((
            bytes_of(&key, "key")?.into_owned(),
            bytes_of(&value, "value")?.into_owned(),
        ));
        if chunk.len() == CHUNK_PAIRS {
            append_chunk(py, &mut builder, &mut chunk)?;
        }
    }
    append_chunk(py, &mut builder, &mut chunk)?;
    let durability = if durable {
        Durability::Durable
    } else {
        Durability::NonDurable
    };
    let summary = py.detach(|| builder.finish(durability)).py(py)?;
    let dict = PyDict::new(py);
    dict.set_item("pairs", summary.pairs)?;
    dict.set_item("file_bytes", summary.file_bytes)?;
    Ok(dict)
}

fn append_chunk(
    py: Python<'_>,
    builder: &mut Builder,
    chunk: &mut Vec<(Vec<u8>, Vec<u8>)>,
) -> PyResult<()> {
    py.detach(|| {
        for (key, value) in chunk.iter() {
            builder.append(key, value)?;
        }
        Ok::<(), artdb_bitable::Error>(())
    })
    .py(py)?;
    chunk.clear();
    Ok(())
}

/// Opens the bitable file at `path` (read-only, memory-mapped).
#[pyfunction(name = "open_bitable")]
pub fn open(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<BitableTable> {
    let path = path_of(path)?;
    let table = py
        .detach(|| artdb_bitable::Table::open(&path))
        .map_err(|error| open_error(py, error, &path))?;
    Ok(BitableTable {
        table: Mutex::new(Some(Arc::new(table))),
        path,
    })
}

/// The first bytes of an artdb database file (docs/file-format.md, the header's magic).
const DATABASE_MAGIC: &[u8; 8] = b"artdb\0db";

/// The exception of a failed `open`, naming the file; a file that is no bitable says what it
/// is instead, when it is an artdb database.
fn open_error(py: Python<'_>, error: artdb_bitable::Error, path: &Path) -> PyErr {
    if let artdb_bitable::Error::NotABitable = error {
        let mut head = [0u8; 8];
        let is_database = std::fs::File::open(path)
            .and_then(|mut file| file.read_exact(&mut head))
            .is_ok()
            && &head == DATABASE_MAGIC;
        let message = if is_database {
            format!(
                "{} is an artdb database, not a bitable; open it with artdb.open",
                path.display()
            )
        } else {
            format!(
                "{} is not an artdb bitable file (it does not start as one); check the path",
                path.display()
            )
        };
        return errors::new_error(py, "NotADatabaseError", message);
    }
    errors::from_bitable_with(py, error, |message| {
        format!("cannot open the bitable {}: {message}", path.display())
    })
}

/// An open bitable: a read-only sorted mapping of `bytes` to `bytes`.
#[pyclass(name = "Bitable", module = "artdb.bitable", frozen)]
pub struct BitableTable {
    table: Mutex<Option<Arc<artdb_bitable::Table>>>,
    path: PathBuf,
}

impl BitableTable {
    fn table(&self, py: Python<'_>) -> PyResult<Arc<artdb_bitable::Table>> {
        self.table.lock().as_ref().map(Arc::clone).ok_or_else(|| {
            errors::new_error(
                py,
                "ClosedError",
                format!(
                    "the bitable {} is closed; open it again",
                    self.path.display()
                ),
            )
        })
    }

    fn lookup<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = bytes_of(key, "key")?;
        let table = self.table(py)?;
        let value = table.get(&key).py(py)?;
        Ok(value.map(|value| PyBytes::new(py, value)))
    }

    fn scan(
        &self,
        py: Python<'_>,
        bounds: Bounds,
        reverse: bool,
        mode: Mode,
    ) -> PyResult<PairIter> {
        Ok(PairIter::new(
            Origin::Bitable(self.table(py)?),
            bounds,
            reverse,
            mode,
        ))
    }
}

#[pymethods]
impl BitableTable {
    /// The value of `key`, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        Ok(match self.lookup(py, key)? {
            Some(value) => Some(value.into_any()),
            None => default,
        })
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.lookup(py, key)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.lookup(py, key)?.is_some())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.table(py)?.len() as usize)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.scan(py, Bounds::all(), false, Mode::Keys)
    }

    fn __reversed__(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.scan(py, Bounds::all(), true, Mode::Keys)
    }

    /// Keys in order (an iterator).
    fn keys(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.scan(py, Bounds::all(), false, Mode::Keys)
    }

    /// Values in key order (an iterator).
    fn values(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.scan(py, Bounds::all(), false, Mode::Values)
    }

    /// `(key, value)` pairs in key order (an iterator).
    fn items(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.scan(py, Bounds::all(), false, Mode::Items)
    }

    /// `(key, value)` pairs with `start <= key < end` (`<= end` with `inclusive_end`).
    #[pyo3(signature = (start=None, end=None, *, inclusive_end=false, reverse=false))]
    fn range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        inclusive_end: bool,
        reverse: bool,
    ) -> PyResult<PairIter> {
        let bounds = range_bounds(start, end, inclusive_end)?;
        self.scan(py, bounds, reverse, Mode::Items)
    }

    /// `(key, value)` pairs whose keys start with `prefix`.
    #[pyo3(signature = (prefix, *, reverse=false))]
    fn prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
    ) -> PyResult<PairIter> {
        self.scan(
            py,
            Bounds::prefix(&bytes_of(prefix, "prefix")?),
            reverse,
            Mode::Items,
        )
    }

    /// Checks every page and cross-page invariant; raises `CorruptionError` on damage.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let table = self.table(py)?;
        py.detach(|| table.verify()).py(py)
    }

    /// Unmaps the file (idempotent); later use raises `ClosedError`.
    fn close(&self) {
        self.table.lock().take();
    }

    /// The file, as a `str` (PyO3 turns a `PathBuf` into a `pathlib.Path`).
    #[getter]
    fn path(&self) -> OsString {
        self.path.clone().into_os_string()
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
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        format!("<artdb.bitable.Bitable {:?}>", self.path)
    }
}
