//! transaction: [`Transaction`], a write transaction that runs beside any number of others.
//!
//! It reads one snapshot of every table (taken at `Db::begin_write`, never waiting for anyone)
//! and keeps its changes private in a write set per table (`write_set.rs`); every read merges the
//! write set with the snapshot (`merge.rs`). When serializable it also records what it read.
//! `commit` runs the commit pipeline (validate, apply, publish; `commit.rs`); dropping it, or
//! `abort`, frees the write set and changes nothing.
//!
//! States: Open -> Committed (`commit`, success) | Aborted (`abort`, drop, or a failed commit).

use super::merge::{IterLog, SpanLog, TxnCursor, TxnIter};
use super::write_set::{ReadSet, WriteSet};
use super::{Isolation, WriteOptions};
use crate::engine::keys::KeyRange;
use crate::engine::{check_table_name, LiveGuard, Pin, Published, Shared};
use crate::error::{from_tree, Error, Result};
use crate::wal::Op;
use artdb_art::{Snapshot, Tree};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// A write transaction (module docs). `Send`; not `Sync` (its read set is recorded through
/// shared references).
///
/// ```
/// use artdb::{Error, WriteOptions};
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// let mut first = db.begin_write(WriteOptions::default())?;
/// let mut second = db.begin_write(WriteOptions::default())?;
/// first.insert("t", b"k", b"first")?;
/// second.insert("t", b"k", b"second")?;
/// first.commit()?;
/// // First committer wins: the other is told to run again (`Db::transact` does).
/// assert!(matches!(second.commit(), Err(Error::Conflict { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Transaction {
    pub(crate) shared: Arc<Shared>,
    published: Arc<Published>,
    _pin: Pin,
    /// Registered as live until it ends (`None` once unregistered).
    pub(crate) live: Option<LiveGuard>,
    pub(crate) start: u64,
    pub(crate) options: WriteOptions,
    pub(crate) writes: BTreeMap<String, WriteSet>,
    pub(crate) reads: RefCell<BTreeMap<String, ReadSet>>,
    /// Tables it created (an empty snapshot) or dropped (`None`), over its snapshot's.
    overlay: BTreeMap<String, Option<Snapshot>>,
    /// Its creates and drops in order (`true`: create), applied and logged in this order
    /// before its writes.
    pub(crate) catalog: Vec<(String, bool)>,
    /// `Shared::abort_generation` when it began: `force_checkpoint` bumps it, and every later
    /// call (and the commit) is then [`Error::Aborted`].
    pub(crate) abort_generation: u64,
    /// Log bytes its changes would take, counted as it writes (an over-estimate when it writes
    /// a key more than once): above `Options::wal_bypass_threshold_bytes` its commit bypasses
    /// the log.
    pub(crate) log_bytes_estimate: u64,
}

impl Transaction {
    pub(crate) fn new(
        shared: Arc<Shared>,
        published: Arc<Published>,
        pin: Pin,
        live: LiveGuard,
        options: WriteOptions,
    ) -> Transaction {
        Transaction {
            abort_generation: shared.abort_generation(),
            start: published.seq,
            shared,
            published,
            _pin: pin,
            live: Some(live),
            options,
            writes: BTreeMap::new(),
            reads: RefCell::new(BTreeMap::new()),
            overlay: BTreeMap::new(),
            catalog: Vec::new(),
            log_bytes_estimate: 0,
        }
    }

    /// The isolation level it validates at.
    pub fn isolation(&self) -> Isolation {
        self.options.isolation
    }

    /// The commit sequence number of the state its snapshot shows: it sees exactly the commits
    /// numbered up to this one (see [`Transaction::commit`]).
    pub fn snapshot_seq(&self) -> u64 {
        self.start
    }

    /// Whether it has written nothing (so far).
    pub fn is_read_only(&self) -> bool {
        self.catalog.is_empty() && self.writes.values().all(WriteSet::is_empty)
    }

    fn serializable(&self) -> bool {
        self.options.isolation == Isolation::Serializable
    }

    /// [`Error::Aborted`] once a forced checkpoint began after it (`Db::force_checkpoint`).
    pub(crate) fn check_not_aborted(&self) -> Result<()> {
        if self.shared.abort_generation() != self.abort_generation {
            return Err(Error::Aborted);
        }
        Ok(())
    }

    fn base(&self, table: &str) -> Result<&Snapshot> {
        self.check_not_aborted()?;
        if let Some(entry) = self.overlay.get(table) {
            return entry.as_ref().ok_or_else(|| Error::TableNotFound {
                name: table.to_string(),
            });
        }
        match self.published.tables.get(table) {
            Some(snapshot) => Ok(snapshot),
            None => {
                // It saw that the table does not exist: a serializable transaction read that
                // (a whole-table read, so a concurrent create of it conflicts).
                self.note_range(table, (Bound::Unbounded, Bound::Unbounded));
                Err(Error::TableNotFound {
                    name: table.to_string(),
                })
            }
        }
    }

    fn note_point(&self, table: &str, key: &[u8]) -> Result<()> {
        if self.serializable() {
            let mut reads = self.reads.borrow_mut();
            match reads.get_mut(table) {
                Some(set) => set.add_point(key)?,
                None => reads.entry(table.to_string()).or_default().add_point(key)?,
            }
        }
        Ok(())
    }

    fn note_range(&self, table: &str, range: KeyRange) {
        if self.serializable() {
            self.reads
                .borrow_mut()
                .entry(table.to_string())
                .or_default()
                .add_range(range);
        }
    }

    fn write_set(&mut self, table: &str) -> Result<&mut WriteSet> {
        let base = self.base(table)?;
        // Looked up first, so a transaction of many writes allocates no name per write.
        if !self.writes.contains_key(table) {
            // A fork pays off only if no other commit changes the table first: likely when no
            // other write transaction is live now (this one counts itself).
            let alone = self.shared.live.writers() <= 1;
            let set = WriteSet::new(base, alone);
            self.writes.insert(table.to_string(), set);
        }
        self.writes
            .get_mut(table)
            .ok_or_else(|| Error::TableNotFound {
                name: table.to_string(),
            })
    }

    /// The value of `key` as this transaction sees it, without recording the read.
    fn lookup(&self, table: &str, key: &[u8]) -> Result<Option<&[u8]>> {
        let base = self.base(table)?;
        if let Some(set) = self.writes.get(table) {
            if let Some(fork) = &set.fork {
                // The snapshot with this transaction's changes: one lookup.
                return fork.get(key).map_err(from_tree);
            }
            if let Some(value) = set.puts.get(key).map_err(from_tree)? {
                return Ok(Some(value));
            }
            if !set.dels.is_empty() && set.dels.get(key).map_err(from_tree)?.is_some() {
                return Ok(None);
            }
        }
        base.get(key).map_err(from_tree)
    }

    /// The value of `key` in `table`: its own write if it wrote one, else its snapshot's.
    pub fn get(&self, table: &str, key: &[u8]) -> Result<Option<&[u8]>> {
        let value = self.lookup(table, key)?;
        self.note_point(table, key)?;
        Ok(value)
    }

    /// Sets `key` to `value` in `table` (private until commit).
    pub fn insert(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<()> {
        let set = self.write_set(table)?;
        // The put first: it checks the key and value before anything changes.
        set.puts.set(key, value).map_err(from_tree)?;
        if !set.dels.is_empty() {
            set.dels.remove(key).map_err(from_tree)?;
        }
        set.fork_put(key, value);
        self.log_bytes_estimate += Op::put_len(key, value);
        Ok(())
    }

    /// Inserts `key` only if this transaction sees no value for it (a unique insert); true if
    /// it was inserted. Of two transactions that insert the same new key concurrently, the
    /// second to commit fails with [`Error::Conflict`] (both wrote the key).
    pub fn insert_if_absent(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<bool> {
        let present = self.lookup(table, key)?.is_some();
        self.note_point(table, key)?;
        if present {
            return Ok(false);
        }
        self.insert(table, key, value)?;
        Ok(true)
    }

    /// Removes `key` from `table`; true if this transaction saw a value for it.
    pub fn remove(&mut self, table: &str, key: &[u8]) -> Result<bool> {
        self.note_point(table, key)?;
        let in_base = self.base(table)?.get(key).map_err(from_tree)?.is_some();
        let set = self.write_set(table)?;
        let was_put = set.puts.remove(key).map_err(from_tree)?.is_some();
        let was_removed = !set.dels.is_empty() && set.dels.get(key).map_err(from_tree)?.is_some();
        // A tombstone also for a key only this transaction put: it wrote the key, so a
        // concurrent writer of it must conflict (else that writer's value would survive a
        // commit that removed the key).
        if (in_base || was_put) && !was_removed {
            set.dels.set(key, &[]).map_err(from_tree)?;
        }
        if was_put || (in_base && !was_removed) {
            set.fork_remove(key);
            self.log_bytes_estimate += Op::remove_len(key);
        }
        Ok(was_put || (in_base && !was_removed))
    }

    /// Number of keys in `table` as this transaction sees it (O(1) with a fork, else O(keys it
    /// put); a serializable transaction records a read of the whole table).
    pub fn len(&self, table: &str) -> Result<u64> {
        let base = self.base(table)?;
        self.note_range(table, (Bound::Unbounded, Bound::Unbounded));
        let Some(set) = self.writes.get(table) else {
            return Ok(base.len());
        };
        if let Some(fork) = &set.fork {
            // The snapshot with this transaction's changes keeps its length: O(1).
            return Ok(fork.len());
        }
        let mut added = 0u64;
        for item in set.puts.iter() {
            let (key, _) = item.map_err(from_tree)?;
            if base.get(&key).map_err(from_tree)?.is_none() {
                added += 1;
            }
        }
        let mut removed = 0u64;
        for item in set.dels.iter() {
            let (key, _) = item.map_err(from_tree)?;
            if base.get(&key).map_err(from_tree)?.is_some() {
                removed += 1;
            }
        }
        Ok(base.len() + added - removed)
    }

    /// The pairs of `table` whose keys fall in `range`, in key order (double-ended). A
    /// serializable transaction records as read what it consumed: from the range's start to
    /// the last pair taken from the front, from the last pair taken from the back to its end,
    /// and the whole range once the iterator ran out.
    pub fn range<K, R>(&self, table: &str, range: R) -> Result<TxnIter<'_>>
    where
        K: AsRef<[u8]> + ?Sized,
        R: RangeBounds<K>,
    {
        let own = |bound: Bound<&K>| match bound {
            Bound::Included(key) => Bound::Included(key.as_ref().to_vec()),
            Bound::Excluded(key) => Bound::Excluded(key.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        self.range_owned(table, (own(range.start_bound()), own(range.end_bound())))
    }

    fn range_owned(&self, table: &str, range: KeyRange) -> Result<TxnIter<'_>> {
        let base = self.base(table)?;
        let bounds = crate::engine::keys::borrowed(&range);
        let base_iter = base.range::<[u8], _>(bounds);
        let iter = match self.writes.get(table) {
            Some(set) => TxnIter::new(
                base_iter,
                set.puts.range::<[u8], _>(bounds),
                Some(&set.dels),
            ),
            None => TxnIter::new(base_iter, empty_tree().range::<[u8], _>(bounds), None),
        };
        let log = self.serializable().then(|| {
            let span = SpanLog {
                reads: &self.reads,
                table: self.base_name(table),
            };
            IterLog::new(span, range)
        });
        Ok(iter.logged(log))
    }

    /// All pairs of `table` in key order (double-ended).
    pub fn iter(&self, table: &str) -> Result<TxnIter<'_>> {
        self.range_owned(table, (Bound::Unbounded, Bound::Unbounded))
    }

    /// The pairs of `table` whose keys start with `prefix`.
    pub fn prefix(&self, table: &str, prefix: &[u8]) -> Result<TxnIter<'_>> {
        let upper = match prefix_successor(prefix) {
            Some(successor) => Bound::Excluded(successor),
            None => Bound::Unbounded,
        };
        self.range_owned(table, (Bound::Included(prefix.to_vec()), upper))
    }

    /// The smallest key of `table` and its value.
    pub fn first(&self, table: &str) -> Result<Option<(Vec<u8>, &[u8])>> {
        let mut cursor = self.cursor(table)?;
        Ok(cursor
            .seek_first()?
            .then(|| (cursor.key().to_vec(), cursor.value())))
    }

    /// The largest key of `table` and its value.
    pub fn last(&self, table: &str) -> Result<Option<(Vec<u8>, &[u8])>> {
        let mut cursor = self.cursor(table)?;
        Ok(cursor
            .seek_last()?
            .then(|| (cursor.key().to_vec(), cursor.value())))
    }

    /// A cursor over `table` as this transaction sees it, not positioned until a seek. A
    /// serializable transaction records the span each seek and its steps visit.
    pub fn cursor(&self, table: &str) -> Result<TxnCursor<'_>> {
        let base = self.base(table)?.cursor();
        let log = self.serializable().then(|| SpanLog {
            reads: &self.reads,
            table: self.base_name(table),
        });
        Ok(match self.writes.get(table) {
            Some(set) => TxnCursor::new(base, set.puts.cursor(), Some(&set.dels), log),
            None => TxnCursor::new(base, empty_tree().cursor(), None, log),
        })
    }

    /// The table's name as stored in the snapshot (borrowed for as long as `self`).
    fn base_name<'s>(&'s self, table: &str) -> &'s str {
        if let Some((name, _)) = self.overlay.get_key_value(table) {
            return name.as_str();
        }
        self.published
            .tables
            .get_key_value(table)
            .map_or("", |(name, _)| name.as_str())
    }

    /// Whether `table` exists as this transaction sees it.
    pub fn has_table(&self, table: &str) -> bool {
        self.base(table).is_ok()
    }

    /// Names of the tables as this transaction sees it (its snapshot's, with its own creates
    /// and drops), in order.
    pub fn table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .published
            .tables
            .keys()
            .filter(|name| !self.overlay.contains_key(*name))
            .cloned()
            .collect();
        names.extend(
            self.overlay
                .iter()
                .filter(|(_, snapshot)| snapshot.is_some())
                .map(|(name, _)| name.clone()),
        );
        names.sort();
        names
    }

    /// Creates an empty table, visible to this transaction at once and to others when it
    /// commits ([`Error::TableExists`] if it sees one of that name). At commit, another
    /// transaction that created, dropped or wrote a table of that name since this one began
    /// makes it fail with [`Error::Conflict`] (so of two concurrent creates of one name,
    /// exactly one commits). Logged: recovery recreates it.
    pub fn create_table(&mut self, name: &str) -> Result<()> {
        self.check_not_aborted()?;
        check_table_name(name)?;
        if self.has_table(name) {
            return Err(Error::TableExists {
                name: name.to_string(),
            });
        }
        self.overlay
            .insert(name.to_string(), Some(empty_tree_snapshot()));
        self.catalog.push((name.to_string(), true));
        Ok(())
    }

    /// Drops a table and its keys (its own writes to it are discarded). At commit, a
    /// transaction that wrote, created or dropped the table since this one began makes it fail
    /// with [`Error::Conflict`]; a transaction that wrote or read the table and commits after
    /// this one fails likewise (the drop writes the whole table). Logged: recovery drops it.
    pub fn drop_table(&mut self, name: &str) -> Result<()> {
        self.base(name)?;
        self.writes.remove(name);
        self.overlay.insert(name.to_string(), None);
        self.catalog.push((name.to_string(), false));
        Ok(())
    }

    /// Validates and applies the transaction and makes it visible; returns its commit sequence
    /// number (the order of commits; a transaction that wrote nothing returns its snapshot's).
    /// On [`Error::Conflict`] nothing of it is applied: run it again on a new snapshot
    /// ([`crate::Db::transact`] does so).
    pub fn commit(self) -> Result<u64> {
        super::commit::commit(self)
    }

    /// Discards the transaction (the same as dropping it).
    pub fn abort(self) {}
}

impl Drop for Transaction {
    fn drop(&mut self) {
        // No longer live: the history it held back can go now, unless a commit holds the lock
        // (never wait here; that commit or the next one prunes).
        if self.live.take().is_some() {
            if let Some(mut state) = self.shared.writer.try_lock() {
                crate::engine::prune_history(&self.shared, &mut state);
            }
        }
    }
}

/// The empty tree the reads of an untouched table merge with (shared: it is never written).
fn empty_tree() -> &'static Tree {
    static EMPTY: std::sync::OnceLock<Tree> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Tree::new)
}

/// A snapshot of an empty tree: what a table this transaction created starts as.
fn empty_tree_snapshot() -> Snapshot {
    Tree::new().snapshot()
}

/// The smallest byte string above every string that starts with `prefix` (`None`: none).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&byte| byte != 0xFF)?;
    let mut successor = prefix[..=keep].to_vec();
    successor[keep] += 1;
    Some(successor)
}
