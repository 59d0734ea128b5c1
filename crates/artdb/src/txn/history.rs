//! history: what committed transactions wrote, kept exactly as long as a live write transaction
//! may have to be validated against it, and the validation itself.
//!
//! Every commit gets the next commit sequence number (`seq`). A transaction remembers the `seq`
//! of the state its snapshot shows (`start`); at its commit, under the commit lock, it is checked
//! against the records with `seq > start`, i.e. exactly the commits its snapshot does not show.
//! A record keeps, per table, snapshots of the committed write set's trees (keys put and keys
//! removed): O(1) to keep, no copy, and a probe costs O(key length). Writes that did not go
//! through a write set (the lock-holding write batch, bulk load, table creation and drop) are
//! recorded as `Whole`: they conflict with any access to the table.
//!
//! Checks, per overlapping record and table (`common` walks the smaller set and probes the
//! larger, so a check costs at most the transaction's own set times the key length):
//! - write-write (both isolation levels): the transaction's written keys against the record's;
//! - read-write (serializable only): its point reads against the record's keys, and each range
//!   it scanned against the record's trees (`first_in`: one seek per range and tree).
//!
//! Pruning: a record is needed while a live write transaction started before it, or a
//! transaction could still start before it (its seq is above the published one). The commit
//! path drops records at or below `min(oldest live start, published seq)` (see `live.rs`).

use super::keys::Keys;
use super::write_set::{ReadSet, WriteSet};
use crate::error::{Error, Result};
use artdb_art::Snapshot;
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
    tables: BTreeMap<String, Written>,
}

/// The commit records validation may need, in `seq` order (see the module docs).
pub(crate) struct History {
    /// The last commit sequence number handed out.
    seq: u64,
    records: VecDeque<Record>,
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
        }
    }

    /// The last commit sequence number handed out.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Records a commit of `tables`; returns its seq.
    pub fn push(&mut self, tables: BTreeMap<String, Written>) -> u64 {
        self.seq += 1;
        self.records.push_back(Record {
            seq: self.seq,
            tables,
        });
        self.seq
    }

    /// Records a commit that may have changed all of `tables`; returns its seq.
    pub fn push_whole<'a>(&mut self, tables: impl IntoIterator<Item = &'a str>) -> u64 {
        let tables = tables
            .into_iter()
            .map(|name| (name.to_string(), Written::Whole))
            .collect();
        self.push(tables)
    }

    /// Drops the records with `seq <= keep_after`.
    pub fn prune(&mut self, keep_after: u64) {
        while self
            .records
            .front()
            .is_some_and(|record| record.seq <= keep_after)
        {
            self.records.pop_front();
        }
    }

    /// Records kept (for stats and tests).
    pub fn len(&self) -> usize {
        self.records.len()
    }

    fn since(&self, start: u64) -> impl Iterator<Item = &Record> {
        let first = self.records.partition_point(|record| record.seq <= start);
        self.records.range(first..)
    }

    /// Checks a transaction that started at `start` with `writes` (and `reads` when
    /// serializable) against every commit after `start`; the first overlap is the error.
    pub fn validate(
        &self,
        start: u64,
        writes: &BTreeMap<String, WriteSet>,
        reads: Option<&BTreeMap<String, ReadSet>>,
    ) -> Result<()> {
        for record in self.since(start) {
            for (table, written) in &record.tables {
                if let Some(mine) = writes.get(table) {
                    check_writes(table, mine, written)?;
                }
                if let Some(read) = reads.and_then(|reads| reads.get(table)) {
                    check_reads(table, read, written)?;
                }
            }
        }
        Ok(())
    }
}

fn conflict(table: &str, key: Vec<u8>, reason: &'static str) -> Error {
    Error::Conflict {
        table: table.to_string(),
        key,
        reason,
    }
}

const WRITTEN_BOTH: &str = "both this transaction and one that committed after it started wrote it";
const READ_THEN_WRITTEN: &str =
    "this serializable transaction read it and one that committed after it started wrote it";
const WHOLE: &str = "a write batch, bulk load or table drop changed the table after this \
                     transaction started";

fn theirs(written: &Written) -> Option<[Keys<'_>; 2]> {
    match written {
        Written::Keys { puts, dels } => Some([Keys::Snapshot(puts), Keys::Snapshot(dels)]),
        Written::Whole => None,
    }
}

fn check_writes(table: &str, mine: &WriteSet, written: &Written) -> Result<()> {
    let Some(theirs) = theirs(written) else {
        if let Some(key) = mine.any_key()? {
            return Err(conflict(table, key, WHOLE));
        }
        return Ok(());
    };
    for own in mine.keys() {
        for other in theirs {
            if let Some(key) = Keys::common(own, other)? {
                return Err(conflict(table, key, WRITTEN_BOTH));
            }
        }
    }
    Ok(())
}

fn check_reads(table: &str, read: &ReadSet, written: &Written) -> Result<()> {
    let Some(theirs) = theirs(written) else {
        if let Some(key) = read.any_key() {
            return Err(conflict(table, key, WHOLE));
        }
        return Ok(());
    };
    for other in theirs {
        if let Some(key) = Keys::common(read.points(), other)? {
            return Err(conflict(table, key, READ_THEN_WRITTEN));
        }
        for range in read.ranges() {
            if let Some(key) = other.first_in(range)? {
                return Err(conflict(table, key, READ_THEN_WRITTEN));
            }
        }
    }
    Ok(())
}
