//! iter: the lazy iterator behind `iter(t)`, `t.items()`, `t.range(...)`, `t.prefix(...)` and
//! bitable scans.
//!
//! It holds one snapshot (an engine `ReadTxn` through a [`SnapHandle`], or a bitable `Table`) and
//! reads it in batches: each batch seeks past the last key it returned and walks up to `batch`
//! pairs with the GIL released, then makes the Python `bytes` straight from the slices the map
//! lends (a value is copied once, into its `bytes`). Batches start small (a `next(iter(t))` on a
//! big table reads little) and grow to [`BATCH_MAX`]. Re-seeking instead of keeping a borrowed
//! engine iterator alive across calls is what keeps this module free of `unsafe`: an ART seek is
//! O(key length).
//!
//! In a write transaction the batches come from the engine's transaction (its snapshot merged
//! with its own changes) with the GIL held: the transaction is in a mutex that no thread may wait
//! for while holding the GIL (`txn.rs`).
//!
//! Semantics: every iterator shows its table as it was when the iterator was made, whatever is
//! written while it runs. A snapshot's and `db.table(...)`'s iterators get that from the engine
//! snapshot they hold. A write transaction's iterator reads the transaction's current view, which
//! its own later writes change, so it keeps what it must undo ([`Frozen`]): before the
//! transaction writes a key the iterator has yet to reach, the write records what the key held
//! (`txn.rs`, `Writes`), and each batch shows the recorded keys as recorded. Only keys ahead of
//! the iterator are recorded, once each, so rewriting every key as it is returned (the common
//! loop) records nothing, and a loop that inserts ahead of itself records each inserted key
//! until the iterator passes it. Rejected: `RuntimeError` on change, as `dict` does, which
//! would make the same loop fail inside a transaction and work outside one; and copying the
//! range at creation, which would make `next(iter(t))` on a big table read all of it.
//!
//! Invariant: keys come out strictly increasing (strictly decreasing when `reverse`), each once,
//! each with the value the table held under it when the iterator was made.

use crate::core::SnapHandle;
use crate::errors::EngineResult;
use crate::txn::TxnState;
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

/// A batch of pairs read with the GIL released: keys copied into one buffer (a cursor's key is
/// rebuilt as it moves, so it cannot be borrowed), values borrowed from the snapshot or map.
struct Batch<'t> {
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    values: Vec<&'t [u8]>,
}

impl<'t> Batch<'t> {
    fn new(capacity: usize) -> Batch<'t> {
        Batch {
            keys: Vec::with_capacity(capacity * 16),
            key_ends: Vec::with_capacity(capacity),
            values: Vec::with_capacity(capacity),
        }
    }

    fn push(&mut self, key: &[u8], value: &'t [u8]) {
        self.keys.extend_from_slice(key);
        self.key_ends.push(self.keys.len());
        self.values.push(value);
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    fn pairs(&self) -> impl Iterator<Item = (&[u8], &'t [u8])> + '_ {
        let starts = std::iter::once(0).chain(self.key_ends.iter().copied());
        starts
            .zip(self.key_ends.iter().copied())
            .zip(self.values.iter().copied())
            .map(|((start, end), value)| (&self.keys[start..end], value))
    }

    fn last_key(&self) -> Option<&[u8]> {
        let end = *self.key_ends.last()?;
        let start = match self.key_ends.len() {
            0 | 1 => 0,
            len => self.key_ends[len - 2],
        };
        Some(&self.keys[start..end])
    }
}

/// The largest batch.
const BATCH_MAX: usize = 1024;
/// The first batch.
const BATCH_FIRST: usize = 16;
/// Batches at least this long are read with the GIL released; shorter ones take a few
/// microseconds, less than handing the GIL to another thread and back can cost.
const BATCH_RELEASING_GIL: usize = 256;

/// What each step yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The key.
    Keys,
    /// The value.
    Values,
    /// `(key, value)`.
    Items,
}

/// Where the pairs come from.
pub(crate) enum Origin {
    /// A table of an engine snapshot.
    Db {
        handle: Arc<SnapHandle>,
        table: String,
    },
    /// A table of a write transaction; what its later writes changed is in `frozen`.
    Txn {
        state: Arc<TxnState>,
        frozen: Arc<Frozen>,
    },
    /// A bitable.
    Bitable(Arc<artdb_bitable::Table>),
}

/// A key range: where iteration starts and ends.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    pub(crate) start: Bound<Vec<u8>>,
    pub(crate) end: Bound<Vec<u8>>,
}

impl Bounds {
    /// Every key.
    pub(crate) fn all() -> Bounds {
        Bounds {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }
    }

    /// Keys starting with `prefix`: `[prefix, successor(prefix))`.
    pub(crate) fn prefix(prefix: &[u8]) -> Bounds {
        let mut end = prefix.to_vec();
        while end.last() == Some(&0xFF) {
            end.pop();
        }
        let end = match end.last_mut() {
            Some(last) => {
                *last += 1;
                Bound::Excluded(end)
            }
            None => Bound::Unbounded,
        };
        Bounds {
            start: Bound::Included(prefix.to_vec()),
            end,
        }
    }

    /// Whether `key` is inside.
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        above_start(key, as_ref(&self.start)) && below_end(key, as_ref(&self.end))
    }

    /// Whether no key can be inside (start after end).
    pub(crate) fn is_empty(&self) -> bool {
        match (&self.start, &self.end) {
            (Bound::Included(start), Bound::Included(end)) => start > end,
            (Bound::Included(start), Bound::Excluded(end))
            | (Bound::Excluded(start), Bound::Included(end))
            | (Bound::Excluded(start), Bound::Excluded(end)) => start >= end,
            _ => false,
        }
    }
}

fn as_ref(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// What a write transaction's iterator must show unlike the transaction's current view: each
/// key the transaction wrote after the iterator was made, ahead of the iterator, with what it
/// held then (see the module docs). Shared by the iterator and the transaction's list of live
/// iterators (`TxnState::register_iterator`); both use it only under the transaction's mutex.
pub(crate) struct Frozen {
    table: String,
    bounds: Bounds,
    reverse: bool,
    state: Mutex<FrozenState>,
}

#[derive(Default)]
struct FrozenState {
    /// The iterator's position (its last batch's last key): keys at or behind it are passed.
    position: Option<Vec<u8>>,
    /// Every pair has been read: nothing needs keeping.
    done: bool,
    /// Keys ahead of the position that the transaction wrote since the iterator was made, and
    /// what each held then (`None`: absent).
    kept: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Frozen {
    /// The state of an iterator over `bounds` of `table` that has read nothing yet.
    pub(crate) fn new(table: &str, bounds: Bounds, reverse: bool) -> Frozen {
        Frozen {
            table: table.to_string(),
            bounds,
            reverse,
            state: Mutex::new(FrozenState::default()),
        }
    }

    /// The table iterated.
    pub(crate) fn table(&self) -> &str {
        &self.table
    }

    /// Whether a write of `key` must first [`Frozen::keep`] what it holds: the key is inside the
    /// bounds, ahead of the position, and not kept already (the first write since the
    /// iterator's creation is the one that sees what the key held then).
    pub(crate) fn needs(&self, key: &[u8]) -> bool {
        let state = self.state.lock();
        if state.done || !self.bounds.contains(key) || state.kept.contains_key(key) {
            return false;
        }
        match (&state.position, self.reverse) {
            (None, _) => true,
            (Some(at), false) => key > at.as_slice(),
            (Some(at), true) => key < at.as_slice(),
        }
    }

    /// Records what `key` held before the transaction's write of it (`None`: absent).
    pub(crate) fn keep(&self, key: &[u8], before: Option<&[u8]>) {
        let mut state = self.state.lock();
        state
            .kept
            .entry(key.to_vec())
            .or_insert_with(|| before.map(<[u8]>::to_vec));
    }

    /// Takes the kept keys a batch of the current view covers, in iteration order: those up to
    /// and including `last` (at and beyond it when `reverse`), or all of them when the batch
    /// was the last (`last` is `None`).
    fn take_covered(&self, last: Option<&[u8]>) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let mut state = self.state.lock();
        let covered: Vec<(Vec<u8>, Option<Vec<u8>>)> = match last {
            None => std::mem::take(&mut state.kept).into_iter().collect(),
            Some(last) => {
                // `kept` keeps the keys below `last`.
                let at_and_above = state.kept.split_off(last);
                let covered = if self.reverse {
                    at_and_above
                } else {
                    let mut below = std::mem::replace(&mut state.kept, at_and_above);
                    if let Some(at_last) = state.kept.remove(last) {
                        below.insert(last.to_vec(), at_last);
                    }
                    below
                };
                covered.into_iter().collect()
            }
        };
        if self.reverse {
            covered.into_iter().rev().collect()
        } else {
            covered
        }
    }

    /// Moves the position to `last` (`None`: every pair has been read).
    fn advance(&self, last: Option<&[u8]>) {
        let mut state = self.state.lock();
        match last {
            Some(last) => state.position = Some(last.to_vec()),
            None => {
                state.done = true;
                state.kept.clear();
            }
        }
    }
}

/// A lazy iterator over one snapshot (see the module docs). One thread at a time: a second
/// thread calling `next` while a batch is read gets a `RuntimeError` (already borrowed).
#[pyclass(name = "Iterator", module = "artdb")]
pub struct PairIter {
    origin: Origin,
    bounds: Bounds,
    reverse: bool,
    mode: Mode,
    /// The last key the snapshot gave (the next batch starts past it).
    position: Option<Vec<u8>>,
    done: bool,
    batch: usize,
    ready: VecDeque<Py<PyAny>>,
}

impl PairIter {
    /// An iterator over `bounds` of `origin`.
    pub(crate) fn new(origin: Origin, bounds: Bounds, reverse: bool, mode: Mode) -> PairIter {
        let done = bounds.is_empty();
        PairIter {
            origin,
            bounds,
            reverse,
            mode,
            position: None,
            done,
            batch: BATCH_FIRST,
            ready: VecDeque::new(),
        }
    }

    /// An iterator over `bounds` of `table` in the write transaction `state` that shows the
    /// transaction's view as of now: registered with the transaction, so that its later writes
    /// keep what the iterator must still show (see the module docs).
    pub(crate) fn in_txn(
        state: &Arc<TxnState>,
        table: &str,
        bounds: Bounds,
        reverse: bool,
        mode: Mode,
    ) -> PairIter {
        let frozen = Arc::new(Frozen::new(table, bounds.clone(), reverse));
        state.register_iterator(&frozen);
        let origin = Origin::Txn {
            state: Arc::clone(state),
            frozen,
        };
        PairIter::new(origin, bounds, reverse, mode)
    }

    /// The next object already read, if any.
    pub(crate) fn ready_pop(&mut self) -> Option<Py<PyAny>> {
        self.ready.pop_front()
    }

    /// Whether every pair has been read (what was read may still be queued).
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Reads the next batch (see [`PairIter::ready_pop`]).
    pub(crate) fn fill_pub(&mut self, py: Python<'_>) -> PyResult<()> {
        self.fill(py)
    }

    /// The bounds of the next batch: the iterator's, narrowed past `position`.
    fn window(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        let start = as_ref(&self.bounds.start);
        let end = as_ref(&self.bounds.end);
        match (&self.position, self.reverse) {
            (None, _) => (start, end),
            (Some(at), false) => (Bound::Excluded(at.as_slice()), end),
            (Some(at), true) => (start, Bound::Excluded(at.as_slice())),
        }
    }

    /// Reads the next batch into `ready`.
    fn fill(&mut self, py: Python<'_>) -> PyResult<()> {
        let wanted = self.batch;
        self.batch = (self.batch * 4).min(BATCH_MAX);
        match &self.origin {
            Origin::Db { handle, table, .. } => {
                let txn = handle.get(py)?;
                let table = table.clone();
                let (start, end) = self.window();
                let reverse = self.reverse;
                let read = || -> Result<Batch<'_>, artdb::Error> {
                    let table = txn.table(&table)?;
                    db_batch(&table, start, end, reverse, wanted)
                };
                let batch = if wanted >= BATCH_RELEASING_GIL {
                    py.detach(read)
                } else {
                    read()
                }
                .py(py)?;
                self.take_batch(py, &batch, wanted)?;
            }
            Origin::Txn { state, frozen } => {
                let state = Arc::clone(state);
                let frozen = Arc::clone(frozen);
                let (start, end) = self.window();
                let (start, end) = (owned(start), owned(end));
                let reverse = self.reverse;
                state.with_txn(py, |txn| {
                    let bounds = (as_ref(&start), as_ref(&end));
                    let iter = match txn.range::<[u8], _>(frozen.table(), bounds) {
                        Ok(iter) => Some(iter),
                        // The table existed when the iterator was made, so this transaction
                        // dropped it since: what the iterator has yet to show was recorded at
                        // the drop (`Writes::drop_table`), and the current view is empty.
                        Err(artdb::Error::TableNotFound { .. }) => None,
                        Err(error) => return Err(error).py(py),
                    };
                    let mut batch = Batch::new(wanted);
                    if let Some(iter) = iter {
                        let items: Box<dyn Iterator<Item = _>> = if reverse {
                            Box::new(iter.rev().take(wanted))
                        } else {
                            Box::new(iter.take(wanted))
                        };
                        for item in items {
                            let (key, value) = item.py(py)?;
                            batch.push(&key, value);
                        }
                    }
                    self.take_txn_batch(py, &batch, wanted, &frozen)
                })?;
            }
            Origin::Bitable(table) => {
                let table = Arc::clone(table);
                let (start, end) = self.window();
                let reverse = self.reverse;
                let read = || bitable_batch(&table, start, end, reverse, wanted);
                let batch = if wanted >= BATCH_RELEASING_GIL {
                    py.detach(read)
                } else {
                    read()
                }
                .py(py)?;
                self.take_batch(py, &batch, wanted)?;
            }
        }
        Ok(())
    }

    /// Queues the Python objects of a batch; a short batch was the last.
    fn take_batch(&mut self, py: Python<'_>, batch: &Batch<'_>, wanted: usize) -> PyResult<()> {
        for (key, value) in batch.pairs() {
            self.queue(py, key, value)?;
        }
        self.advance(batch, wanted);
        Ok(())
    }

    /// Queues a batch of a write transaction's current view as the view was when the iterator
    /// was made: the keys `frozen` kept in the range the batch covers replace what the batch
    /// read for them (a kept `None` is a key written since, shown not at all). The position
    /// moves as the batch read, so a batch may queue nothing and not be the last.
    fn take_txn_batch(
        &mut self,
        py: Python<'_>,
        batch: &Batch<'_>,
        wanted: usize,
        frozen: &Frozen,
    ) -> PyResult<()> {
        let last = batch.last_key().filter(|_| batch.len() == wanted);
        let covered = frozen.take_covered(last);
        let mut kept = covered.iter().peekable();
        // Whether `a` comes before `b` in iteration order.
        let reverse = self.reverse;
        let ahead = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
        for (key, value) in batch.pairs() {
            while let Some((kept_key, before)) = kept.next_if(|(k, _)| ahead(k, key)) {
                if let Some(before) = before {
                    self.queue(py, kept_key, before)?;
                }
            }
            match kept.next_if(|(k, _)| k.as_slice() == key) {
                Some((_, Some(before))) => self.queue(py, key, before)?,
                Some((_, None)) => {}
                None => self.queue(py, key, value)?,
            }
        }
        for (kept_key, before) in kept {
            if let Some(before) = before {
                self.queue(py, kept_key, before)?;
            }
        }
        frozen.advance(last);
        self.advance(batch, wanted);
        Ok(())
    }

    /// Queues the object of one pair.
    fn queue(&mut self, py: Python<'_>, key: &[u8], value: &[u8]) -> PyResult<()> {
        let object = match self.mode {
            Mode::Keys => PyBytes::new(py, key).into_any().unbind(),
            Mode::Values => PyBytes::new(py, value).into_any().unbind(),
            Mode::Items => {
                let pair = [PyBytes::new(py, key), PyBytes::new(py, value)];
                PyTuple::new(py, pair)?.into_any().unbind()
            }
        };
        self.ready.push_back(object);
        Ok(())
    }

    /// Moves past a batch read from the source: to its last key, or done when it was short.
    fn advance(&mut self, batch: &Batch<'_>, wanted: usize) {
        match batch.last_key() {
            Some(last) if batch.len() == wanted => self.position = Some(last.to_vec()),
            _ => self.done = true,
        }
    }
}

fn owned(bound: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(key) => Bound::Included(key.to_vec()),
        Bound::Excluded(key) => Bound::Excluded(key.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Whether `key` is at or after the start bound (a reverse walk stops at the first that is not).
fn above_start(key: &[u8], start: Bound<&[u8]>) -> bool {
    match start {
        Bound::Included(bound) => key >= bound,
        Bound::Excluded(bound) => key > bound,
        Bound::Unbounded => true,
    }
}

/// Whether `key` is at or before the end bound (a forward walk stops at the first that is not).
fn below_end(key: &[u8], end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Included(bound) => key <= bound,
        Bound::Excluded(bound) => key < bound,
        Bound::Unbounded => true,
    }
}

/// Up to `wanted` pairs of an engine table inside the bounds, from the start (or, `reverse`, the
/// end), walked with a cursor (no allocation per pair).
fn db_batch<'t>(
    table: &artdb::Table<'t>,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
    wanted: usize,
) -> Result<Batch<'t>, artdb::Error> {
    let mut cursor = table.cursor();
    let mut batch = Batch::new(wanted);
    if reverse {
        // Seek to the first key >= the bound, then step back past it when it is outside.
        let positioned = match end {
            Bound::Unbounded => cursor.seek_last()?,
            Bound::Included(key) => match cursor.seek(key)? {
                true if cursor.key() > key => cursor.prev()?,
                true => true,
                false => cursor.seek_last()?,
            },
            Bound::Excluded(key) => match cursor.seek(key)? {
                true => cursor.prev()?,
                false => cursor.seek_last()?,
            },
        };
        if !positioned {
            return Ok(batch);
        }
        while cursor.is_valid() && batch.len() < wanted {
            let key = cursor.key();
            let inside = above_start(key, start);
            if !inside {
                break;
            }
            batch.push(key, cursor.value());
            if !cursor.prev()? {
                break;
            }
        }
    } else {
        let positioned = match start {
            Bound::Unbounded => cursor.seek_first()?,
            Bound::Included(key) => cursor.seek(key)?,
            Bound::Excluded(key) => match cursor.seek(key)? {
                true if cursor.key() == key => cursor.next()?,
                found => found,
            },
        };
        if !positioned {
            return Ok(batch);
        }
        while cursor.is_valid() && batch.len() < wanted {
            let key = cursor.key();
            let inside = below_end(key, end);
            if !inside {
                break;
            }
            batch.push(key, cursor.value());
            if !cursor.next()? {
                break;
            }
        }
    }
    Ok(batch)
}

/// Up to `wanted` pairs of a bitable inside the bounds, from the start (or, `reverse`, the end).
fn bitable_batch<'t>(
    table: &'t artdb_bitable::Table,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    reverse: bool,
    wanted: usize,
) -> Result<Batch<'t>, artdb_bitable::Error> {
    let mut cursor = table.cursor();
    let mut pairs = Batch::new(wanted);
    if reverse {
        // seek past the bound, then step back; a failed seek means every key is below it.
        let positioned = match end {
            Bound::Unbounded => cursor.last()?,
            Bound::Included(key) => {
                if cursor.seek_upper_bound(key)? {
                    cursor.prev()?
                } else {
                    cursor.last()?
                }
            }
            Bound::Excluded(key) => {
                if cursor.seek_lower_bound(key)? {
                    cursor.prev()?
                } else {
                    cursor.last()?
                }
            }
        };
        if !positioned {
            return Ok(pairs);
        }
        while let Some((key, value)) = cursor.entry() {
            let inside = above_start(key, start);
            if !inside || pairs.len() == wanted {
                break;
            }
            pairs.push(key, value);
            if !cursor.prev()? {
                break;
            }
        }
    } else {
        let positioned = match start {
            Bound::Unbounded => cursor.first()?,
            Bound::Included(key) => cursor.seek_lower_bound(key)?,
            Bound::Excluded(key) => cursor.seek_upper_bound(key)?,
        };
        if !positioned {
            return Ok(pairs);
        }
        while let Some((key, value)) = cursor.entry() {
            let inside = below_end(key, end);
            if !inside || pairs.len() == wanted {
                break;
            }
            pairs.push(key, value);
            if !cursor.next()? {
                break;
            }
        }
    }
    Ok(pairs)
}

#[pymethods]
impl PairIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(mut slf: PyRefMut<'_, Self>, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        // Pairs already read are not handed out once the snapshot ended (database closed,
        // snapshot or transaction finished): every step after that raises.
        if let Origin::Db { handle, .. } = &slf.origin {
            if !handle.is_live() {
                handle.get(py)?;
            }
        }
        loop {
            if let Some(object) = slf.ready.pop_front() {
                return Ok(Some(object));
            }
            if slf.done {
                return Ok(None);
            }
            slf.fill(py)?;
        }
    }

    fn __repr__(&self) -> String {
        let what = match self.mode {
            Mode::Keys => "keys",
            Mode::Values => "values",
            Mode::Items => "items",
        };
        let direction = if self.reverse { ", reversed" } else { "" };
        format!("<artdb.Iterator over {what}{direction}>")
    }
}
