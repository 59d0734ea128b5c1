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
use crate::errors::EngineResult;
use crate::iter::{Bounds, Mode, Origin, PairIter};
use crate::messages;
use crate::txn::{TxnState, Writes};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
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
    spans: Vec<Span>,
    sorted: bool,
}

/// One pair in `Pairs::data`, with its key's first 8 bytes as a big-endian number so that most
/// comparisons of the sort stay inside the span array instead of reaching into `data`.
#[derive(Clone, Copy)]
struct Span {
    prefix: u64,
    start: usize,
    key_len: u32,
    value_len: u32,
}

fn key_prefix(key: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let len = key.len().min(8);
    word[..len].copy_from_slice(&key[..len]);
    u64::from_be_bytes(word)
}

impl Pairs {
    fn new() -> Pairs {
        Pairs {
            data: Vec::new(),
            spans: Vec::new(),
            sorted: true,
        }
    }

    fn key_of<'a>(data: &'a [u8], span: &Span) -> &'a [u8] {
        &data[span.start..span.start + span.key_len as usize]
    }

    fn pair(&self, span: &Span) -> (&[u8], &[u8]) {
        let middle = span.start + span.key_len as usize;
        (
            &self.data[span.start..middle],
            &self.data[middle..middle + span.value_len as usize],
        )
    }

    fn push(&mut self, key: &[u8], value: &[u8]) -> PyResult<()> {
        let too_long = |len: usize| u32::try_from(len).is_err();
        if too_long(key.len()) || too_long(value.len()) {
            return Err(PyValueError::new_err(
                "a key or value of 4 GiB or more cannot be loaded in one piece",
            ));
        }
        if let Some(last) = self.spans.last() {
            if self.sorted && Pairs::key_of(&self.data, last) >= key {
                self.sorted = false;
            }
        }
        self.spans.push(Span {
            prefix: key_prefix(key),
            start: self.data.len(),
            key_len: key.len() as u32,
            value_len: value.len() as u32,
        });
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
        Ok(())
    }

    /// Sorts by key and keeps the last pair of each key (input order breaks ties). Runs
    /// without the GIL.
    pub(crate) fn sort_dedup(&mut self) {
        if self.sorted {
            return;
        }
        let data = &self.data;
        // Of equal keys the one given last sorts first, so the in-place dedup (which keeps the
        // first of each run) keeps it. Pairs lie in `data` in input order, so a later pair starts
        // at or after an earlier one's start; at the same start the earlier one is empty (key and
        // value), so the later one's value is at least as long, and equal only for two empty
        // pairs, which are the same pair.
        self.spans.sort_unstable_by(|a, b| {
            a.prefix
                .cmp(&b.prefix)
                .then_with(|| Pairs::key_of(data, a).cmp(Pairs::key_of(data, b)))
                .then((b.start, b.value_len).cmp(&(a.start, a.value_len)))
        });
        self.spans
            .dedup_by(|later, kept| Pairs::key_of(data, later) == Pairs::key_of(data, kept));
        self.sorted = true;
    }

    /// The pairs in order (after `sort_dedup`).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.spans.iter().map(|span| self.pair(span))
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Reserves room for `expected` pairs in all, each the average size of those pushed so far
    /// (plus an eighth, so that a little variation does not make the buffer grow once more).
    fn reserve_like_first(&mut self, expected: usize) {
        let have = self.spans.len();
        if have == 0 || expected <= have {
            return;
        }
        let more = expected - have;
        let average = self.data.len() / have;
        // Only a hint: an estimate too large to allocate (a few huge pairs first) is skipped.
        let _ = self.spans.try_reserve_exact(more);
        let _ = self
            .data
            .try_reserve_exact(more.saturating_mul(average.saturating_add(average / 8)));
    }
}

/// Pairs taken from the iterable before their bytes are copied (see [`gather`]).
const GATHER_BLOCK: usize = 64;

/// A `(key, value)` item split into its two objects.
fn split_pair<'py>(item: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    match item.cast::<PyTuple>() {
        Ok(tuple) if tuple.len() == 2 => Ok((tuple.get_item(0)?, tuple.get_item(1)?)),
        _ => item.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "expected (key, value) pairs, got {}",
                type_name(item)
            ))
        }),
    }
}

/// Gathers `(key, value)` pairs from a mapping (its `items()`) or an iterable of pairs.
///
/// In blocks: the objects of a block's pairs are taken first, then their bytes copied. The first
/// touch of a key or value object is usually a cache miss (a list of pairs built from a shuffled
/// or hashed source points all over the heap); a short loop that only takes the objects lets the
/// processor overlap those misses, where copying each pair before taking the next one waited for
/// them one at a time. With a known length (a list, a tuple, a dict's items) the buffer is sized
/// from the first block, so it is not copied as it grows.
fn gather(source: &Bound<'_, PyAny>) -> PyResult<Pairs> {
    let items = if source.hasattr("items")? && !source.is_instance_of::<PyBytes>() {
        source.call_method0("items")?
    } else {
        source.clone()
    };
    // A generator has no length: then the buffer grows as it goes.
    let expected = items.len().ok();
    let mut pairs = Pairs::new();
    let mut iter = items.try_iter()?;
    let mut block: Vec<(Bound<'_, PyAny>, Bound<'_, PyAny>)> = Vec::with_capacity(GATHER_BLOCK);
    loop {
        block.clear();
        for item in iter.by_ref().take(GATHER_BLOCK) {
            block.push(split_pair(&item?)?);
        }
        if block.is_empty() {
            return Ok(pairs);
        }
        let first = pairs.is_empty();
        for (key, value) in &block {
            pairs.push(&bytes_of(key, "key")?, &bytes_of(value, "value")?)?;
        }
        if first {
            if let Some(expected) = expected {
                pairs.reserve_like_first(expected);
            }
        }
    }
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

    fn read_only(&self, py: Python<'_>) -> PyErr {
        PyTypeError::new_err(format!(
            "table {} of a read snapshot is read-only; write in `with db.write() as tx` or \
             through db.table(name)",
            messages::name(py, &self.name)
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
            Source::Txn(state) => state.with_txn(py, |txn| {
                let value = txn.get(&self.name, key).py(py)?;
                Ok(value.map(|value| PyBytes::new(py, value)))
            }),
        }
    }

    /// Runs `body` as one transaction: for `db.table(...)` its own (retried on conflict, GIL
    /// released, with the database's durability), in a write transaction on that transaction.
    fn in_txn<R: Send>(
        &self,
        py: Python<'_>,
        mut body: impl FnMut(&mut Writes<'_>) -> Result<R, artdb::Error> + Send,
    ) -> PyResult<R> {
        match &self.source {
            Source::Auto(inner) => {
                let db = inner.db(py)?;
                py.detach(|| db.transact(|txn| body(&mut Writes::unwatched(txn))))
                    .py(py)
            }
            Source::Snapshot(_) => Err(self.read_only(py)),
            Source::Txn(state) => state.with_writes(py, &self.name, |writes| body(writes).py(py)),
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
                }
            }
            Source::Snapshot(handle) => {
                handle.get(py)?.table(&self.name).py(py)?;
                Origin::Db {
                    handle: Arc::clone(handle),
                    table: self.name.clone(),
                }
            }
            Source::Txn(state) => {
                state.with_txn(py, |txn| txn.len(&self.name).py(py))?;
                return Ok(PairIter::in_txn(state, &self.name, bounds, reverse, mode));
            }
        };
        Ok(PairIter::new(origin, bounds, reverse, mode))
    }

    fn length(&self, py: Python<'_>) -> PyResult<u64> {
        match &self.source {
            Source::Auto(inner) => Ok(inner.db(py)?.read().table(&self.name).py(py)?.len()),
            Source::Snapshot(handle) => Ok(handle.get(py)?.table(&self.name).py(py)?.len()),
            Source::Txn(state) => state.with_txn(py, |txn| txn.len(&self.name).py(py)),
        }
    }

    /// Writes all `pairs`: into an empty table of `db.table(...)` a bulk load (and with `bulk`
    /// only that), else one transaction.
    fn write_pairs(&self, py: Python<'_>, mut pairs: Pairs, bulk: bool) -> PyResult<u64> {
        py.detach(|| pairs.sort_dedup());
        let count = pairs.len() as u64;
        if let Source::Auto(inner) = &self.source {
            let db = inner.db(py)?;
            let name = self.name.clone();
            let loaded = py.detach(|| -> Result<Option<u64>, artdb::Error> {
                let empty = db.read().table(&name)?.is_empty();
                if count == 0 || !(empty || bulk) {
                    return Ok(None);
                }
                match db.bulk_load(&name, pairs.iter()) {
                    Ok(count) => Ok(Some(count)),
                    // Someone wrote in between: one transaction instead (update only).
                    Err(artdb::Error::TableNotEmpty { .. }) if !bulk => Ok(None),
                    Err(error) => Err(error),
                }
            });
            if let Some(count) = loaded.py(py)? {
                return Ok(count);
            }
        }
        let name = &self.name;
        let pairs = &pairs;
        self.in_txn(py, |txn| {
            txn.len(name)?;
            for (key, value) in pairs.iter() {
                txn.insert(name, key, value)?;
            }
            Ok(count)
        })
    }
}

/// The bounds of `range(start, end, inclusive_end)` (tables and bitables alike).
pub(crate) fn range_bounds(
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
        let name = &self.name;
        self.in_txn(py, |txn| txn.insert(name, &key, &value))
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let bytes = bytes_of(key, "key")?;
        let name = &self.name;
        match self.in_txn(py, |txn| txn.remove(name, &bytes))? {
            true => Ok(()),
            false => Err(PyKeyError::new_err(key.clone().unbind())),
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
        let name = &self.name;
        let old = self.in_txn(py, |txn| {
            let old = txn.get(name, &bytes)?.map(<[u8]>::to_vec);
            if old.is_some() {
                txn.remove(name, &bytes)?;
            }
            Ok(old)
        })?;
        match old {
            Some(old) => Ok(PyBytes::new(py, &old).into_any()),
            None => match default.len() {
                0 => Err(PyKeyError::new_err(key.clone().unbind())),
                _ => default.get_item(0),
            },
        }
    }

    /// Removes and returns the first `(key, value)` pair; `KeyError` when empty.
    fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let name = &self.name;
        let first = self.in_txn(py, |txn| {
            let first = txn.first(name)?.map(|(key, value)| (key, value.to_vec()));
            if let Some((key, _)) = &first {
                txn.remove(name, key)?;
            }
            Ok(first)
        })?;
        match first {
            Some((key, value)) => {
                PyTuple::new(py, [PyBytes::new(py, &key), PyBytes::new(py, &value)])
            }
            None => Err(PyKeyError::new_err("popitem(): the table is empty")),
        }
    }

    /// `t[key]` if present, else sets it to `default` and returns that.
    fn setdefault<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let bytes = bytes_of(key, "key")?;
        let value = bytes_of(default, "value")?;
        let name = &self.name;
        let stored = self.in_txn(py, |txn| match txn.get(name, &bytes)? {
            Some(found) => Ok(Some(found.to_vec())),
            None => txn.insert(name, &bytes, &value).map(|()| None),
        })?;
        match stored {
            Some(found) => Ok(PyBytes::new(py, &found).into_any()),
            None => Ok(default.clone()),
        }
    }

    /// Removes every key (one transaction).
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        let name = &self.name;
        self.in_txn(py, |txn| {
            let keys = txn
                .iter(name)?
                .map(|item| item.map(|(key, _)| key))
                .collect::<Result<Vec<Vec<u8>>, artdb::Error>>()?;
            for key in keys {
                txn.remove(name, &key)?;
            }
            Ok(())
        })
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

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if !other.hasattr("items")? || !other.hasattr("__len__")? {
            return Ok(py.NotImplemented());
        }
        if other.len()? as u64 != self.length(py)? {
            return Ok(false.into_pyobject(py)?.to_owned().into_any().unbind());
        }
        let mine = PyDict::new(py);
        for pair in iter_objects(py, self.iter_over(py, Bounds::all(), false, Mode::Items)?)? {
            let pair = pair.bind(py).cast::<PyTuple>()?.clone();
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
fn iter_objects(py: Python<'_>, mut iter: PairIter) -> PyResult<Vec<Py<PyAny>>> {
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
                    if value.bind(py).cast::<PyBytes>()?.as_bytes() == wanted.as_ref() {
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
