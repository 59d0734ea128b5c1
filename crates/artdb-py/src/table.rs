//! table: `artdb.Table`, a `MutableMapping` of `bytes` to `bytes` in key order, and its
//! `keys()`/`values()`/`items()` views.
//!
//! One class for three sources ([`Source`]):
//! - `db.table(name)`: each statement is its own transaction (a read takes a fresh snapshot; a
//!   write is one engine write batch, durable as the database's durability says);
//! - `snap.table(name)` in `with db.read() as snap`: read-only, one snapshot;
//! - `tx.table(name)` in `with db.write() as tx`: the transaction's snapshot with its own changes
//!   merged in; writes are buffered until commit.
//!
//! Point reads keep the GIL (they take well under a microsecond; releasing it would cost more);
//! writes, bulk loads and scans release it (`iter.rs`). `update`/`load` gather the pairs into one
//! buffer, sort it in Rust if it is not sorted (the last value of a repeated key wins, as in
//! `dict`), then load it with the GIL released.

use crate::buffer::{bytes_of, type_name};
use crate::core::{Inner, SnapHandle};
use crate::errors::{self, EngineResult};
use crate::iter::{Bounds, Mode, Origin, PairIter};
use crate::txn::{TableWrites, TxnState};
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use std::ops::Bound as KeyBound;
use std::sync::Arc;

/// Where a table's reads and writes go.
#[derive(Clone)]
pub(crate) enum Source {
    /// Each statement its own transaction.
    Auto(Arc<Inner>),
    /// A read snapshot.
    Snapshot(Arc<SnapHandle>),
    /// A write transaction.
    Txn(Arc<TxnState>),
}

/// Pairs gathered from Python: key and value bytes in one buffer.
pub(crate) struct Pairs {
    data: Vec<u8>,
    /// (start, key length, value length) into `data`.
    spans: Vec<(usize, usize, usize)>,
    sorted: bool,
}

impl Pairs {
    fn new() -> Pairs {
        Pairs {
            data: Vec::new(),
            spans: Vec::new(),
            sorted: true,
        }
    }

    fn key(&self, index: usize) -> &[u8] {
        let (start, key_len, _) = self.spans[index];
        &self.data[start..start + key_len]
    }

    fn pair(&self, span: &(usize, usize, usize)) -> (&[u8], &[u8]) {
        let (start, key_len, value_len) = *span;
        let middle = start + key_len;
        (
            &self.data[start..middle],
            &self.data[middle..middle + value_len],
        )
    }

    fn push(&mut self, key: &[u8], value: &[u8]) {
        if let Some(last) = self.spans.len().checked_sub(1) {
            if self.sorted && self.key(last) >= key {
                self.sorted = false;
            }
        }
        self.spans.push((self.data.len(), key.len(), value.len()));
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
    }

    /// Sorts by key (stable) and keeps the last pair of each key. Runs without the GIL.
    pub(crate) fn sort_dedup(&mut self) {
        if self.sorted {
            return;
        }
        let data = &self.data;
        let key = |span: &(usize, usize, usize)| &data[span.0..span.0 + span.1];
        self.spans.sort_by(|a, b| key(a).cmp(key(b)));
        let mut kept: Vec<(usize, usize, usize)> = Vec::with_capacity(self.spans.len());
        for span in self.spans.drain(..) {
            match kept.last_mut() {
                Some(last) if key(last) == key(&span) => *last = span,
                _ => kept.push(span),
            }
        }
        self.spans = kept;
        self.sorted = true;
    }

    /// The pairs in order (after `sort_dedup`).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.spans.iter().map(|span| self.pair(span))
    }

    fn len(&self) -> usize {
        self.spans.len()
    }
}

/// Gathers `(key, value)` pairs from a mapping (its `items()`) or an iterable of pairs.
fn gather(source: &Bound<'_, PyAny>) -> PyResult<Pairs> {
    let items = if source.hasattr("items")? && !source.is_instance_of::<PyBytes>() {
        source.call_method0("items")?
    } else {
        source.clone()
    };
    let mut pairs = Pairs::new();
    for item in items.try_iter()? {
        let item = item?;
        let (key, value) = match item.downcast::<PyTuple>() {
            Ok(tuple) if tuple.len() == 2 => (tuple.get_item(0)?, tuple.get_item(1)?),
            _ => {
                let both: (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "expected (key, value) pairs, got {}",
                        type_name(&item)
                    ))
                })?;
                both
            }
        };
        pairs.push(&bytes_of(&key, "key")?, &bytes_of(&value, "value")?);
    }
    Ok(pairs)
}

/// A table (see the module docs).
#[pyclass(name = "Table", module = "artdb", frozen)]
pub struct Table {
    source: Source,
    name: String,
}

impl Table {
    pub(crate) fn new(source: Source, name: &str) -> Table {
        Table {
            source,
            name: name.to_string(),
        }
    }

    fn read_only(&self) -> PyErr {
        PyTypeError::new_err(format!(
            "table {:?} of a read snapshot is read-only; write in `with db.write() as tx` or \
             through db.table(name)",
            self.name
        ))
    }

    /// The value of `key`, as `bytes`.
    fn lookup<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let found = |txn: &artdb::ReadTxn| -> PyResult<Option<Bound<'py, PyBytes>>> {
            let value = txn.table(&self.name).py(py)?.get(key).py(py)?;
            Ok(value.map(|value| PyBytes::new(py, value)))
        };
        match &self.source {
            Source::Auto(inner) => found(&inner.db(py)?.read()),
            Source::Snapshot(handle) => found(&*handle.get(py)?),
            Source::Txn(state) => {
                let own = state.with_writes(py, |writes| {
                    writes
                        .get(&self.name)
                        .and_then(|table| table.get(key))
                        .map(|value| value.as_ref().map(|value| PyBytes::new(py, value)))
                })?;
                match own {
                    Some(value) => Ok(value),
                    None => found(&*state.snapshot.get(py)?),
                }
            }
        }
    }

    /// Sets or removes `key` (`None`); returns the previous value (in a transaction only when
    /// `want_old`: it costs a lookup there).
    fn write(
        &self,
        py: Python<'_>,
        key: &[u8],
        value: Option<&[u8]>,
        want_old: bool,
    ) -> PyResult<Option<Vec<u8>>> {
        match &self.source {
            Source::Auto(inner) => {
                let db = inner.db(py)?;
                let durability = inner.durability;
                let name = &self.name;
                py.allow_threads(|| -> Result<Option<Vec<u8>>, artdb::Error> {
                    let mut batch = db.write()?;
                    let old = match value {
                        Some(value) => batch.insert(name, key, value)?,
                        None => batch.remove(name, key)?,
                    };
                    if value.is_none() && old.is_none() {
                        return Ok(None);
                    }
                    batch.commit()?;
                    durability.after_commit(&db)?;
                    Ok(old)
                })
                .py(py)
            }
            Source::Snapshot(_) => Err(self.read_only()),
            Source::Txn(state) => {
                check_sizes(py, key, value)?;
                let old = match want_old {
                    true => self.lookup(py, key)?.map(|old| old.as_bytes().to_vec()),
                    false => None,
                };
                if value.is_none() && want_old && old.is_none() {
                    // Removing an absent key changes nothing (and must not conflict later).
                    return Ok(None);
                }
                state.with_writes(py, |writes| {
                    table_writes(writes, &self.name)
                        .insert(key.to_vec(), value.map(<[u8]>::to_vec));
                })?;
                Ok(old)
            }
        }
    }

    fn iter_over(
        &self,
        py: Python<'_>,
        bounds: Bounds,
        reverse: bool,
        mode: Mode,
    ) -> PyResult<PairIter> {
        let origin = match &self.source {
            Source::Auto(inner) => {
                let handle = inner.snapshot(py, "iterator")?;
                handle.get(py)?.table(&self.name).py(py)?;
                Origin::Db {
                    handle,
                    table: self.name.clone(),
                    overlay: Vec::new(),
                }
            }
            Source::Snapshot(handle) => {
                handle.get(py)?.table(&self.name).py(py)?;
                Origin::Db {
                    handle: Arc::clone(handle),
                    table: self.name.clone(),
                    overlay: Vec::new(),
                }
            }
            Source::Txn(state) => {
                state.snapshot.get(py)?.table(&self.name).py(py)?;
                let mut overlay: Vec<(Vec<u8>, Option<Vec<u8>>)> =
                    state.with_writes(py, |writes| {
                        writes
                            .get(&self.name)
                            .map(|table| {
                                table
                                    .range::<[u8], _>((as_ref(&bounds.start), as_ref(&bounds.end)))
                                    .map(|(key, value)| (key.clone(), value.clone()))
                                    .collect()
                            })
                            .unwrap_or_default()
                    })?;
                if reverse {
                    overlay.reverse();
                }
                Origin::Db {
                    handle: Arc::clone(&state.snapshot),
                    table: self.name.clone(),
                    overlay,
                }
            }
        };
        Ok(PairIter::new(origin, bounds, reverse, mode))
    }

    fn length(&self, py: Python<'_>) -> PyResult<u64> {
        match &self.source {
            Source::Auto(inner) => Ok(inner.db(py)?.read().table(&self.name).py(py)?.len()),
            Source::Snapshot(handle) => Ok(handle.get(py)?.table(&self.name).py(py)?.len()),
            Source::Txn(state) => {
                let snapshot = state.snapshot.get(py)?;
                let table = snapshot.table(&self.name).py(py)?;
                let own: Vec<(Vec<u8>, bool)> = state.with_writes(py, |writes| {
                    writes
                        .get(&self.name)
                        .map(|table| {
                            table
                                .iter()
                                .map(|(key, value)| (key.clone(), value.is_some()))
                                .collect()
                        })
                        .unwrap_or_default()
                })?;
                let mut len = table.len() as i128;
                for (key, present) in own {
                    let before = table.get(&key).py(py)?.is_some();
                    len += i128::from(present) - i128::from(before);
                }
                Ok(len.max(0) as u64)
            }
        }
    }

    /// Writes all `pairs`: a bulk load when `bulk` and the table is empty, else one write batch.
    fn write_pairs(&self, py: Python<'_>, mut pairs: Pairs, bulk: bool) -> PyResult<u64> {
        match &self.source {
            Source::Auto(inner) => {
                let db = inner.db(py)?;
                let durability = inner.durability;
                let name = self.name.clone();
                py.allow_threads(move || -> Result<u64, artdb::Error> {
                    pairs.sort_dedup();
                    let count = pairs.len() as u64;
                    if count == 0 {
                        // Still report a missing table.
                        db.read().table(&name)?;
                        return Ok(0);
                    }
                    let empty = db.read().table(&name)?.is_empty();
                    if empty || bulk {
                        match db.bulk_load(&name, pairs.iter()) {
                            Ok(count) => return Ok(count),
                            // Someone wrote in between: fall back to a batch (update only).
                            Err(artdb::Error::TableNotEmpty { .. }) if !bulk => {}
                            Err(error) => return Err(error),
                        }
                    }
                    let mut batch = db.write()?;
                    for (key, value) in pairs.iter() {
                        batch.insert(&name, key, value)?;
                    }
                    batch.commit()?;
                    durability.after_commit(&db)?;
                    Ok(count)
                })
                .py(py)
            }
            Source::Snapshot(_) => Err(self.read_only()),
            Source::Txn(state) => {
                state.snapshot.get(py)?.table(&self.name).py(py)?;
                pairs.sort_dedup();
                for (key, value) in pairs.iter() {
                    check_sizes(py, key, Some(value))?;
                }
                let count = pairs.len() as u64;
                state.with_writes(py, |writes| {
                    let table = table_writes(writes, &self.name);
                    for (key, value) in pairs.iter() {
                        table.insert(key.to_vec(), Some(value.to_vec()));
                    }
                })?;
                Ok(count)
            }
        }
    }
}

fn as_ref(bound: &KeyBound<Vec<u8>>) -> KeyBound<&[u8]> {
    match bound {
        KeyBound::Included(key) => KeyBound::Included(key.as_slice()),
        KeyBound::Excluded(key) => KeyBound::Excluded(key.as_slice()),
        KeyBound::Unbounded => KeyBound::Unbounded,
    }
}

/// The write set of `table`, made on first use.
fn table_writes<'a>(
    writes: &'a mut std::collections::BTreeMap<String, TableWrites>,
    table: &str,
) -> &'a mut TableWrites {
    writes.entry(table.to_string()).or_default()
}

/// Rejects a key or value the engine would refuse at commit, so the error names the statement.
fn check_sizes(py: Python<'_>, key: &[u8], value: Option<&[u8]>) -> PyResult<()> {
    if key.len() > KEY_LEN_MAX {
        return Err(errors::from_engine(
            py,
            artdb::Error::KeyTooLarge {
                len: key.len(),
                max: KEY_LEN_MAX,
            },
        ));
    }
    if let Some(value) = value {
        if value.len() > VALUE_LEN_MAX {
            return Err(errors::from_engine(
                py,
                artdb::Error::ValueTooLarge {
                    len: value.len(),
                    max: VALUE_LEN_MAX,
                },
            ));
        }
    }
    Ok(())
}

/// The engine's key limit (`artdb_art::KEY_LEN_MAX`).
const KEY_LEN_MAX: usize = 4096;
/// The engine's value limit (`artdb_art::VALUE_LEN_MAX`).
const VALUE_LEN_MAX: usize = 1 << 30;

/// The bounds of `range(start, end, inclusive_end)`.
fn range_bounds(
    start: Option<&Bound<'_, PyAny>>,
    end: Option<&Bound<'_, PyAny>>,
    inclusive_end: bool,
) -> PyResult<Bounds> {
    let start = match start {
        Some(start) if !start.is_none() => {
            KeyBound::Included(bytes_of(start, "start key")?.into_owned())
        }
        _ => KeyBound::Unbounded,
    };
    let end = match end {
        Some(end) if !end.is_none() => {
            let end = bytes_of(end, "end key")?.into_owned();
            if inclusive_end {
                KeyBound::Included(end)
            } else {
                KeyBound::Excluded(end)
            }
        }
        _ => KeyBound::Unbounded,
    };
    Ok(Bounds { start, end })
}

#[pymethods]
impl Table {
    /// The table's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = bytes_of(key, "key")?;
        match self.lookup(py, &bytes)? {
            Some(value) => Ok(value),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let key = bytes_of(key, "key")?;
        let value = bytes_of(value, "value")?;
        self.write(py, &key, Some(&value), false).map(drop)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let bytes = bytes_of(key, "key")?;
        match self.write(py, &bytes, None, true)? {
            Some(_) => Ok(()),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.lookup(py, &bytes_of(key, "key")?)?.is_some())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.length(py)? as usize)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.iter_over(py, Bounds::all(), false, Mode::Keys)
    }

    fn __reversed__(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.iter_over(py, Bounds::all(), true, Mode::Keys)
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.length(py)? > 0)
    }

    /// The value of `key`, or `default` when absent.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.lookup(py, &bytes_of(key, "key")?)? {
            Some(value) => Ok(Some(value.into_any())),
            None => Ok(default),
        }
    }

    /// Removes `key` and returns its value; `default` (or `KeyError`) when absent.
    #[pyo3(signature = (key, *default))]
    fn pop<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = bytes_of(key, "key")?;
        match self.write(py, &bytes, None, true)? {
            Some(old) => Ok(PyBytes::new(py, &old).into_any()),
            None => match default.len() {
                0 => Err(PyKeyError::new_err(key.clone().unbind())),
                _ => default.get_item(0),
            },
        }
    }

    /// Removes and returns the first `(key, value)` pair; `KeyError` when empty.
    fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let mut items = self.iter_over(py, Bounds::all(), false, Mode::Items)?;
        let first = loop {
            if let Some(first) = items.ready_pop() {
                break Some(first);
            }
            if items.is_done() {
                break None;
            }
            items.fill_pub(py)?;
        };
        let Some(first) = first else {
            return Err(PyKeyError::new_err("popitem(): the table is empty"));
        };
        let pair = first.into_bound(py).downcast_into::<PyTuple>()?;
        let key = pair.get_item(0)?;
        let key_bytes = bytes_of(&key, "key")?;
        self.write(py, &key_bytes, None, false)?;
        Ok(pair)
    }

    /// `t[key]` if present, else sets it to `default` and returns that.
    fn setdefault<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = bytes_of(key, "key")?;
        if let Some(value) = self.lookup(py, &bytes)? {
            return Ok(value.into_any());
        }
        let value = bytes_of(default, "value")?;
        self.write(py, &bytes, Some(&value), false)?;
        Ok(default.clone())
    }

    /// Removes every key (one transaction).
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        let keys: Vec<Vec<u8>> = {
            let iter = self.iter_over(py, Bounds::all(), false, Mode::Keys)?;
            let mut keys = Vec::new();
            for key in iter_objects(py, iter)? {
                keys.push(key.bind(py).downcast::<PyBytes>()?.as_bytes().to_vec());
            }
            keys
        };
        match &self.source {
            Source::Auto(inner) => {
                let db = inner.db(py)?;
                let durability = inner.durability;
                let name = self.name.clone();
                py.allow_threads(move || -> Result<(), artdb::Error> {
                    let mut batch = db.write()?;
                    for key in &keys {
                        batch.remove(&name, key)?;
                    }
                    batch.commit()?;
                    durability.after_commit(&db)
                })
                .py(py)
            }
            Source::Snapshot(_) => Err(self.read_only()),
            Source::Txn(state) => state.with_writes(py, |writes| {
                let table = table_writes(writes, &self.name);
                for key in keys {
                    table.insert(key, None);
                }
            }),
        }
    }

    /// Writes every pair of `pairs` (a mapping or an iterable of `(key, value)`) in one
    /// transaction, sorted in Rust with the GIL released; the last value of a repeated key wins.
    /// Into an empty table of `db.table(...)` this is a bulk load. Returns the number of pairs.
    #[pyo3(signature = (pairs=None, **kwargs))]
    fn update(
        &self,
        py: Python<'_>,
        pairs: Option<&Bound<'_, PyAny>>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<u64> {
        if let Some(kwargs) = kwargs {
            if !kwargs.is_empty() {
                return Err(PyTypeError::new_err(
                    "keyword arguments would be str keys; artdb keys are bytes: pass a dict of \
                     bytes, e.g. t.update({b\"k\": b\"v\"}) (or k.encode())",
                ));
            }
        }
        let Some(pairs) = pairs else {
            return Ok(0);
        };
        let gathered = gather(pairs)?;
        self.write_pairs(py, gathered, false)
    }

    /// Bulk load into an empty table: the pairs (sorted or not; the last value of a repeated key
    /// wins) are sorted in Rust and streamed into the file with the GIL released, then
    /// checkpointed. `TableNotEmptyError` if the table has keys (use `update`). In a write
    /// transaction it is the same as `update`. Returns the number of pairs.
    fn load(&self, py: Python<'_>, pairs: &Bound<'_, PyAny>) -> PyResult<u64> {
        let gathered = gather(pairs)?;
        self.write_pairs(py, gathered, true)
    }

    /// Keys in order (a view: iterable again, with `len` and `in`).
    fn keys(&self) -> TableView {
        TableView::new(self, Mode::Keys)
    }

    /// Values in key order (a view).
    fn values(&self) -> TableView {
        TableView::new(self, Mode::Values)
    }

    /// `(key, value)` pairs in key order (a view).
    fn items(&self) -> TableView {
        TableView::new(self, Mode::Items)
    }

    /// A lazy iterator of `(key, value)` pairs with `start <= key < end` (`<= end` with
    /// `inclusive_end`), in key order or `reverse`, over one snapshot.
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
        self.iter_over(py, bounds, reverse, Mode::Items)
    }

    /// A lazy iterator of the `(key, value)` pairs whose keys start with `prefix`, over one
    /// snapshot.
    #[pyo3(signature = (prefix, *, reverse=false))]
    fn prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
    ) -> PyResult<PairIter> {
        let bounds = Bounds::prefix(&bytes_of(prefix, "prefix")?);
        self.iter_over(py, bounds, reverse, Mode::Items)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        if !other.hasattr("items")? || !other.hasattr("__len__")? {
            return Ok(py.NotImplemented());
        }
        if other.len()? as u64 != self.length(py)? {
            return Ok(false.into_pyobject(py)?.to_owned().into_any().unbind());
        }
        let mine = PyDict::new(py);
        for pair in iter_objects(py, self.iter_over(py, Bounds::all(), false, Mode::Items)?)? {
            let pair = pair.bind(py).downcast::<PyTuple>()?.clone();
            mine.set_item(pair.get_item(0)?, pair.get_item(1)?)?;
        }
        let theirs = PyDict::new(py);
        for pair in other.call_method0("items")?.try_iter()? {
            let pair = pair?;
            let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
            theirs.set_item(key, value)?;
        }
        Ok(mine
            .eq(theirs)?
            .into_pyobject(py)?
            .to_owned()
            .into_any()
            .unbind())
    }

    fn __repr__(&self) -> String {
        let kind = match &self.source {
            Source::Auto(_) => "",
            Source::Snapshot(_) => " (snapshot)",
            Source::Txn(_) => " (transaction)",
        };
        format!("<artdb.Table {:?}{kind}>", self.name)
    }
}

/// Every object an iterator yields.
fn iter_objects(py: Python<'_>, mut iter: PairIter) -> PyResult<Vec<PyObject>> {
    let mut out = Vec::new();
    loop {
        while let Some(object) = iter.ready_pop() {
            out.push(object);
        }
        if iter.is_done() {
            return Ok(out);
        }
        iter.fill_pub(py)?;
    }
}

/// `t.keys()`, `t.values()`, `t.items()`: iterable again (each pass a fresh snapshot), with `len`
/// and `in` (by key for keys and items, by scanning for values).
#[pyclass(name = "TableView", module = "artdb", frozen)]
pub struct TableView {
    table: Table,
    mode: Mode,
}

impl TableView {
    fn new(table: &Table, mode: Mode) -> TableView {
        TableView {
            table: Table {
                source: table.source.clone(),
                name: table.name.clone(),
            },
            mode,
        }
    }
}

#[pymethods]
impl TableView {
    fn __iter__(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.table.iter_over(py, Bounds::all(), false, self.mode)
    }

    fn __reversed__(&self, py: Python<'_>) -> PyResult<PairIter> {
        self.table.iter_over(py, Bounds::all(), true, self.mode)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.table.length(py)? as usize)
    }

    fn __contains__(&self, py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<bool> {
        match self.mode {
            Mode::Keys => Ok(self.table.lookup(py, &bytes_of(item, "key")?)?.is_some()),
            Mode::Items => {
                let Ok((key, value)) = item.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>()
                else {
                    return Ok(false);
                };
                let found = self.table.lookup(py, &bytes_of(&key, "key")?)?;
                Ok(match found {
                    Some(found) => found.as_bytes() == bytes_of(&value, "value")?.as_ref(),
                    None => false,
                })
            }
            Mode::Values => {
                let wanted = bytes_of(item, "value")?;
                let iter = self
                    .table
                    .iter_over(py, Bounds::all(), false, Mode::Values)?;
                for value in iter_objects(py, iter)? {
                    if value.bind(py).downcast::<PyBytes>()?.as_bytes() == wanted.as_ref() {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }

    fn __repr__(&self) -> String {
        let what = match self.mode {
            Mode::Keys => "keys",
            Mode::Values => "values",
            Mode::Items => "items",
        };
        format!("<artdb.TableView {what} of {:?}>", self.table.name)
    }
}
