//! history: what committed transactions wrote, kept exactly as long as a live write transaction
//! may have to be validated against it; the validation itself is `txn/validate.rs`'s.
//!
//! Every commit gets the next commit sequence number (`seq`). A transaction remembers the `seq`
//! of the state its snapshot shows (`start`); at its commit, under the commit lock, it is checked
//! against the records with `seq > start`, i.e. exactly the commits its snapshot does not show.
//! A record keeps, per table, snapshots of the committed write set's trees (keys put and keys
//! removed): O(1) to keep, no copy, and a probe costs O(key length). Writes that did not go
//! through a write set (the lock-holding write batch, bulk load, table creation and drop) are
//! recorded as `Whole`: they conflict with any access to the table.
//!
//! Checks (both isolation levels: written keys; serializable also: point reads and ranges):
//! - through the key index: a table's write set of at most `INDEX_KEYS_MAX` keys is also
//!   entered, at commit, in a per-table tree key -> newest seq that wrote it (cost: the
//!   committer's own small write set). A transaction's keys are then checked with one probe
//!   each, whatever the number of commits since it started: used when its own set is no larger
//!   than the indexed keys of those commits;
//! - otherwise, and for large committed sets, per overlapping record and table: `common` walks
//!   the smaller set and probes the larger (at most the transaction's own set times the key
//!   length);
//! - ranges: each range scanned against each overlapping record's trees (`first_in`: one seek
//!   per range and tree).
//!
//! So a check costs O(own set x key length), plus O(ranges x overlapping commits) for ranges,
//! plus a constant per overlapping commit to look its tables up.
//!
//! Pruning (also removes the record's keys from the index where they still name it): a record
//! is needed while a live write transaction started before it, or a
//! transaction could still start before it (its seq is above the published one). The commit
//! path drops records at or below `min(oldest live start, published seq)` (see `live.rs`).

use super::keys::Keys;
use crate::error::{from_tree, Result};
use artdb_art::Snapshot;
use artdb_art::Tree;
use std::collections::{BTreeMap, VecDeque};

/// What one committed transaction wrote to one table.
pub(crate) enum Written {
    /// Keys put and keys removed (snapshots of the committed write set's trees).
    Keys { puts: Snapshot, dels: Snapshot },
    /// The whole table may have changed (write batch, bulk load, create or drop).
    Whole,
}

/// One committed transaction.
pub(crate) struct Record {
    seq: u64,
    pub(crate) tables: BTreeMap<String, Written>,
    /// Tables whose write set is entered in the key index (small, and entered completely).
    indexed: Vec<String>,
}

impl Record {
    pub(crate) fn indexed(&self, table: &str) -> bool {
        self.indexed.iter().any(|name| name == table)
    }
}

/// A table's write set of at most this many keys is also entered in the key index.
const INDEX_KEYS_MAX: u64 = 4096;

/// The commit records validation may need, in `seq` order (see the module docs).
pub(crate) struct History {
    /// The last commit sequence number handed out.
    seq: u64,
    records: VecDeque<Record>,
    /// Per table: key -> seq (8 bytes, big-endian) of the newest kept record that wrote it,
    /// over the records whose write set of the table is small (`indexed`).
    index: BTreeMap<String, Tree>,
}

impl Default for History {
    fn default() -> History {
        History::new()
    }
}

impl History {
    /// An empty history at seq 0.
    pub fn new() -> History {
        History {
            seq: 0,
            records: VecDeque::new(),
            index: BTreeMap::new(),
        }
    }

    /// The last commit sequence number handed out.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Records a commit of `tables`; returns its seq. `index`: enter its small write sets in
    /// the key index. Without it validation checks the record directly (as it does a large
    /// one), which is cheaper when few transactions can need it: the committer passes `false`
    /// when no other write transaction is live (only those beginning before its publication
    /// can see it at all), saving the entering and the later removal of every key.
    pub fn push(&mut self, tables: BTreeMap<String, Written>, index: bool) -> u64 {
        self.seq += 1;
        let seq = self.seq;
        let mut indexed = Vec::new();
        for (table, written) in &tables {
            if index && small(written) {
                let index = self.index.entry(table.clone()).or_default();
                let complete =
                    for_each_key(written, |key| index.set(key, &seq.to_be_bytes()).map(drop));
                if complete {
                    indexed.push(table.clone());
                }
            }
        }
        self.records.push_back(Record {
            seq,
            tables,
            indexed,
        });
        seq
    }

    /// Records a commit that may have changed all of `tables`; returns its seq.
    pub fn push_whole<'a>(&mut self, tables: impl IntoIterator<Item = &'a str>) -> u64 {
        let tables = tables
            .into_iter()
            .map(|name| (name.to_string(), Written::Whole))
            .collect();
        self.push(tables, false)
    }

    /// Drops the records with `seq <= keep_after` (and their keys from the index).
    pub fn prune(&mut self, keep_after: u64) {
        while self
            .records
            .front()
            .is_some_and(|record| record.seq <= keep_after)
        {
            let Some(record) = self.records.pop_front() else {
                break;
            };
            for (table, written) in &record.tables {
                if !record.indexed(table) {
                    continue;
                }
                let Some(index) = self.index.get_mut(table) else {
                    continue;
                };
                let mine = record.seq.to_be_bytes();
                // A failure leaves a key behind: it names a real write of this record, so at
                // worst a later check conflicts where it need not.
                for_each_key(written, |key| {
                    if index.get(key)? == Some(mine.as_slice()) {
                        index.remove(key)?;
                    }
                    Ok(())
                });
                if index.is_empty() {
                    self.index.remove(table);
                }
            }
        }
    }

    /// The seq of the newest indexed record that wrote `key` to `table` (0: none).
    fn indexed_seq(&self, table: &str, key: &[u8]) -> Result<u64> {
        let Some(index) = self.index.get(table) else {
            return Ok(0);
        };
        let found = index.get(key).map_err(from_tree)?;
        Ok(found
            .and_then(|bytes| bytes.try_into().ok())
            .map_or(0, u64::from_be_bytes))
    }

    /// A key of `keys` that an indexed record after `start` wrote to `table`.
    pub(crate) fn indexed_common(
        &self,
        start: u64,
        table: &str,
        keys: Keys<'_>,
    ) -> Result<Option<Vec<u8>>> {
        let iter = match keys {
            Keys::Tree(tree) => tree.iter(),
            Keys::Snapshot(snapshot) => snapshot.iter(),
        };
        for item in iter {
            let (key, _) = item.map_err(from_tree)?;
            if self.indexed_seq(table, &key)? > start {
                return Ok(Some(key));
            }
        }
        Ok(None)
    }

    /// Records kept (for stats and tests).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether a commit after `start` changed `table` at all (keys of it, or the whole table:
    /// created, dropped, written by a batch or bulk load).
    pub fn touched_since(&self, start: u64, table: &str) -> bool {
        self.since(start)
            .any(|record| record.tables.contains_key(table))
    }

    pub(crate) fn since(&self, start: u64) -> impl Iterator<Item = &Record> {
        let first = self.records.partition_point(|record| record.seq <= start);
        self.records.range(first..)
    }
}

/// Whether a table's write set is small enough for the key index.
fn small(written: &Written) -> bool {
    match written {
        Written::Keys { puts, dels } => puts.len() + dels.len() <= INDEX_KEYS_MAX,
        Written::Whole => false,
    }
}

/// Keys in the indexed write sets of `table` among `records` (what walking the index replaces).
pub(crate) fn indexed_total(records: &[&Record], table: &str) -> u64 {
    records
        .iter()
        .filter(|record| record.indexed(table))
        .filter_map(|record| record.tables.get(table))
        .map(|written| match written {
            Written::Keys { puts, dels } => puts.len() + dels.len(),
            Written::Whole => 0,
        })
        .sum()
}

/// Calls `visit` with every key of a record's write set; stops at the first error and returns
/// whether it visited them all. (Errors cannot happen on the heap-only trees of a write set;
/// should one, the record is not marked indexed and is checked by walking it.)
fn for_each_key(
    written: &Written,
    mut visit: impl FnMut(&[u8]) -> std::result::Result<(), artdb_art::Error>,
) -> bool {
    if let Written::Keys { puts, dels } = written {
        for snapshot in [puts, dels] {
            for item in snapshot.iter() {
                let Ok((key, _)) = item else {
                    return false;
                };
                if visit(&key).is_err() {
                    return false;
                }
            }
        }
    }
    true
}
