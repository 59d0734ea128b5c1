//! merge: a write transaction's ordered reads, its write set merged with its snapshot.
//!
//! Two sources in key order, the snapshot (`base`) and the transaction's puts; a base key is
//! hidden when the transaction put it (the put wins) or removed it (a tombstone in `dels`,
//! probed only when the transaction removed anything). [`TxnIter`] merges two double-ended
//! iterators; [`TxnCursor`] two cursors, repositioned by a seek when it changes direction.
//! A serializable transaction's cursor records the span it visited in the read set.

use super::write_set::ReadSet;
use crate::engine::keys::KeyRange;
use crate::error::{from_tree, Result};
use artdb_art::{Pair, Tree};
use std::cell::RefCell;
use std::cmp::Ordering;
use std::ops::Bound;

/// One source of an iterator, with the pair each end has looked at but not yielded.
struct Side<'a> {
    iter: artdb_art::Iter<'a>,
    front: Option<Pair<'a>>,
    back: Option<Pair<'a>>,
}

impl<'a> Side<'a> {
    fn new(iter: artdb_art::Iter<'a>) -> Side<'a> {
        Side {
            iter,
            front: None,
            back: None,
        }
    }

    fn peek_front(&mut self) -> Result<Option<&[u8]>> {
        if self.front.is_none() {
            self.front = match self.iter.next() {
                Some(item) => Some(item.map_err(from_tree)?),
                // The inner iterator met the back end: what the back holds is next.
                None => self.back.take(),
            };
        }
        Ok(self.front.as_ref().map(|(key, _)| key.as_slice()))
    }

    fn peek_back(&mut self) -> Result<Option<&[u8]>> {
        if self.back.is_none() {
            self.back = match self.iter.next_back() {
                Some(item) => Some(item.map_err(from_tree)?),
                None => self.front.take(),
            };
        }
        Ok(self.back.as_ref().map(|(key, _)| key.as_slice()))
    }
}

/// The pairs of a table as a write transaction sees them: `Result<(key, value)>` in key
/// order, from either end.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let mut txn = db.begin_write(artdb::WriteOptions::default())?;
/// txn.remove("t", b"a")?;
/// txn.insert("t", b"d", b"4")?;
/// // A transaction's iterators see its own writes merged with its snapshot.
/// let keys: Vec<Vec<u8>> = txn
///     .iter("t")?
///     .map(|pair| pair.map(|(key, _value)| key))
///     .collect::<Result<_, artdb::Error>>()?;
/// assert_eq!(keys, [b"b".to_vec(), b"c".to_vec(), b"d".to_vec()]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TxnIter<'a> {
    base: Side<'a>,
    puts: Side<'a>,
    dels: Option<&'a Tree>,
    done: bool,
    log: Option<IterLog<'a>>,
}

/// Where a serializable transaction's iterator records what it has read: from the requested
/// lower bound to the last key yielded from the front, and from the last key yielded from the
/// back to the requested upper bound; the whole range once it ran out.
pub(crate) struct IterLog<'a> {
    pub span: SpanLog<'a>,
    pub range: KeyRange,
    front: Option<usize>,
    back: Option<usize>,
}

impl<'a> IterLog<'a> {
    pub fn new(span: SpanLog<'a>, range: KeyRange) -> IterLog<'a> {
        IterLog {
            span,
            range,
            front: None,
            back: None,
        }
    }

    fn record(&mut self, forward: bool, range: KeyRange) {
        let mut reads = self.span.reads.borrow_mut();
        let set = reads.entry(self.span.table.to_string()).or_default();
        let slot = if forward {
            &mut self.front
        } else {
            &mut self.back
        };
        match *slot {
            Some(index) => set.set_range(index, range),
            None => *slot = Some(set.add_range(range)),
        }
    }

    /// `key` was yielded from the front (`forward`) or the back.
    fn yielded(&mut self, forward: bool, key: &[u8]) {
        let range = if forward {
            (self.range.0.clone(), Bound::Included(key.to_vec()))
        } else {
            (Bound::Included(key.to_vec()), self.range.1.clone())
        };
        self.record(forward, range);
    }

    /// The iterator ran out: it has seen the whole range.
    fn exhausted(&mut self) {
        let range = self.range.clone();
        self.record(true, range);
    }
}

enum Pick {
    Base,
    Puts,
    /// Same key in both: the put wins, the base pair is dropped.
    Both,
    None,
}

fn pick(base: Option<&[u8]>, puts: Option<&[u8]>, forward: bool) -> Pick {
    match (base, puts) {
        (None, None) => Pick::None,
        (Some(_), None) => Pick::Base,
        (None, Some(_)) => Pick::Puts,
        (Some(b), Some(p)) => match (b.cmp(p), forward) {
            (Ordering::Equal, _) => Pick::Both,
            (Ordering::Less, true) | (Ordering::Greater, false) => Pick::Base,
            _ => Pick::Puts,
        },
    }
}

impl<'a> TxnIter<'a> {
    pub(crate) fn new(
        base: artdb_art::Iter<'a>,
        puts: artdb_art::Iter<'a>,
        dels: Option<&'a Tree>,
    ) -> TxnIter<'a> {
        TxnIter {
            base: Side::new(base),
            puts: Side::new(puts),
            dels: dels.filter(|dels| !dels.is_empty()),
            done: false,
            log: None,
        }
    }

    /// Records what it reads in a serializable transaction's read set.
    pub(crate) fn logged(mut self, log: Option<IterLog<'a>>) -> TxnIter<'a> {
        self.log = log;
        self
    }

    fn deleted(&self, key: &[u8]) -> Result<bool> {
        match self.dels {
            Some(dels) => Ok(dels.get(key).map_err(from_tree)?.is_some()),
            None => Ok(false),
        }
    }

    fn step(&mut self, forward: bool) -> Result<Option<Pair<'a>>> {
        loop {
            let choice = if forward {
                let base = self.base.peek_front()?;
                pick(base, self.puts.peek_front()?, true)
            } else {
                let base = self.base.peek_back()?;
                pick(base, self.puts.peek_back()?, false)
            };
            let (base, puts) = (&mut self.base, &mut self.puts);
            let (base_slot, puts_slot) = if forward {
                (&mut base.front, &mut puts.front)
            } else {
                (&mut base.back, &mut puts.back)
            };
            match choice {
                Pick::None => return Ok(None),
                Pick::Puts => return Ok(puts_slot.take()),
                Pick::Both => {
                    *base_slot = None;
                    return Ok(puts_slot.take());
                }
                Pick::Base => {
                    let pair = base_slot.take();
                    if let Some(pair) = pair {
                        if !self.deleted(&pair.0)? {
                            return Ok(Some(pair));
                        }
                    }
                }
            }
        }
    }

    fn advance(&mut self, forward: bool) -> Option<Result<Pair<'a>>> {
        if self.done {
            return None;
        }
        match self.step(forward) {
            Ok(Some(pair)) => {
                if let Some(log) = &mut self.log {
                    log.yielded(forward, &pair.0);
                }
                Some(Ok(pair))
            }
            Ok(None) => {
                self.done = true;
                if let Some(log) = &mut self.log {
                    log.exhausted();
                }
                None
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

impl<'a> Iterator for TxnIter<'a> {
    type Item = Result<Pair<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.advance(true)
    }
}

impl DoubleEndedIterator for TxnIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.advance(false)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// Where a serializable cursor writes the span it has visited.
pub(crate) struct SpanLog<'a> {
    pub reads: &'a RefCell<std::collections::BTreeMap<String, ReadSet>>,
    pub table: &'a str,
}

/// A position in a table as a write transaction sees it: seek, then step either way.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let mut txn = db.begin_write(artdb::WriteOptions::default())?;
/// txn.insert("t", b"bb", b"new")?;
/// let mut cursor = txn.cursor("t")?;
/// assert!(cursor.seek(b"b")?);
/// assert!(cursor.next()?);
/// assert_eq!((cursor.key(), cursor.value()), (&b"bb"[..], &b"new"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TxnCursor<'a> {
    base: artdb_art::Cursor<'a>,
    puts: artdb_art::Cursor<'a>,
    dels: Option<&'a Tree>,
    direction: Direction,
    valid: bool,
    key: Vec<u8>,
    value: &'a [u8],
    log: Option<SpanLog<'a>>,
    /// The span visited since the last seek and its index in the read set.
    span: Option<(usize, KeyRange)>,
}

impl<'a> TxnCursor<'a> {
    pub(crate) fn new(
        base: artdb_art::Cursor<'a>,
        puts: artdb_art::Cursor<'a>,
        dels: Option<&'a Tree>,
        log: Option<SpanLog<'a>>,
    ) -> TxnCursor<'a> {
        TxnCursor {
            base,
            puts,
            dels: dels.filter(|dels| !dels.is_empty()),
            direction: Direction::Forward,
            valid: false,
            key: Vec::new(),
            value: &[],
            log,
            span: None,
        }
    }

    /// Whether the cursor is at a pair.
    pub fn is_valid(&self) -> bool {
        self.valid
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        if self.valid {
            &self.key
        } else {
            &[]
        }
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &'a [u8] {
        if self.valid {
            self.value
        } else {
            &[]
        }
    }

    /// Moves to the first key `>= key`; false if there is none.
    pub fn seek(&mut self, key: &[u8]) -> Result<bool> {
        self.base.seek(key).map_err(from_tree)?;
        self.puts.seek(key).map_err(from_tree)?;
        self.direction = Direction::Forward;
        self.settle()?;
        self.start_span(Bound::Included(key.to_vec()), true);
        Ok(self.valid)
    }

    /// Moves to the smallest key; false if the table is empty.
    pub fn seek_first(&mut self) -> Result<bool> {
        self.base.seek_first().map_err(from_tree)?;
        self.puts.seek_first().map_err(from_tree)?;
        self.direction = Direction::Forward;
        self.settle()?;
        self.start_span(Bound::Unbounded, true);
        Ok(self.valid)
    }

    /// Moves to the largest key; false if the table is empty.
    pub fn seek_last(&mut self) -> Result<bool> {
        self.base.seek_last().map_err(from_tree)?;
        self.puts.seek_last().map_err(from_tree)?;
        self.direction = Direction::Backward;
        self.settle()?;
        self.start_span(Bound::Unbounded, false);
        Ok(self.valid)
    }

    /// Steps to the next key; false (and not valid) when it runs off the end.
    // A cursor step that can fail and returns whether it moved: not an Iterator (see TxnIter).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<bool> {
        self.step(Direction::Forward)
    }

    /// Steps to the previous key; false (and not valid) when it runs off the start.
    pub fn prev(&mut self) -> Result<bool> {
        self.step(Direction::Backward)
    }

    fn step(&mut self, direction: Direction) -> Result<bool> {
        if !self.valid {
            return Ok(false);
        }
        let current = std::mem::take(&mut self.key);
        if self.direction == direction {
            for side in [&mut self.base, &mut self.puts] {
                if side.is_valid() && side.key() == current.as_slice() {
                    match direction {
                        Direction::Forward => side.next().map_err(from_tree)?,
                        Direction::Backward => side.prev().map_err(from_tree)?,
                    };
                }
            }
        } else {
            // Reposition both sources strictly past the current key, the new way.
            for side in [&mut self.base, &mut self.puts] {
                match direction {
                    Direction::Forward => {
                        if side.seek(&current).map_err(from_tree)? && side.key() == current {
                            side.next().map_err(from_tree)?;
                        }
                    }
                    Direction::Backward => {
                        if side.seek_at_or_before(&current).map_err(from_tree)?
                            && side.key() == current
                        {
                            side.prev().map_err(from_tree)?;
                        }
                    }
                }
            }
            self.direction = direction;
        }
        self.settle()?;
        self.widen_span(direction);
        Ok(self.valid)
    }

    fn deleted(&self, key: &[u8]) -> Result<bool> {
        match self.dels {
            Some(dels) => Ok(dels.get(key).map_err(from_tree)?.is_some()),
            None => Ok(false),
        }
    }

    /// Skips removed base keys in the current direction and takes the nearer source's pair.
    fn settle(&mut self) -> Result<()> {
        let forward = self.direction == Direction::Forward;
        while self.base.is_valid() && self.deleted(self.base.key())? {
            if forward {
                self.base.next().map_err(from_tree)?;
            } else {
                self.base.prev().map_err(from_tree)?;
            }
        }
        let base = self.base.is_valid().then(|| self.base.key());
        let puts = self.puts.is_valid().then(|| self.puts.key());
        let (key, value) = match pick(base, puts, forward) {
            Pick::None => {
                self.valid = false;
                self.key.clear();
                self.value = &[];
                return Ok(());
            }
            Pick::Base => (self.base.key(), self.base.value()),
            Pick::Puts | Pick::Both => (self.puts.key(), self.puts.value()),
        };
        self.key.clear();
        self.key.extend_from_slice(key);
        self.value = value;
        self.valid = true;
        Ok(())
    }

    /// The bound at the current position: the key if valid, else the open end.
    fn here(&self) -> Bound<Vec<u8>> {
        if self.valid {
            Bound::Included(self.key.clone())
        } else {
            Bound::Unbounded
        }
    }

    fn start_span(&mut self, from: Bound<Vec<u8>>, forward: bool) {
        let Some(log) = &self.log else {
            return;
        };
        let range = if forward {
            (from, self.here())
        } else {
            (self.here(), from)
        };
        let mut reads = log.reads.borrow_mut();
        let index = reads
            .entry(log.table.to_string())
            .or_default()
            .add_range(range.clone());
        self.span = Some((index, range));
    }

    fn widen_span(&mut self, direction: Direction) {
        let here = self.here();
        let (Some(log), Some((index, range))) = (&self.log, &mut self.span) else {
            return;
        };
        match direction {
            Direction::Forward => range.1 = wider_upper(&range.1, here),
            Direction::Backward => range.0 = wider_lower(&range.0, here),
        }
        if let Some(set) = log.reads.borrow_mut().get_mut(log.table) {
            set.set_range(*index, range.clone());
        }
    }
}

fn wider_upper(old: &Bound<Vec<u8>>, new: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (old, &new) {
        (Bound::Unbounded, _) => Bound::Unbounded,
        (_, Bound::Unbounded) => Bound::Unbounded,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            if b > a {
                new
            } else {
                old.clone()
            }
        }
    }
}

fn wider_lower(old: &Bound<Vec<u8>>, new: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (old, &new) {
        (Bound::Unbounded, _) => Bound::Unbounded,
        (_, Bound::Unbounded) => Bound::Unbounded,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            if b < a {
                new
            } else {
                old.clone()
            }
        }
    }
}
