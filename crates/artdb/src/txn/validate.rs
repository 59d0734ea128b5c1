//! validate: a write transaction checked at commit against the commit history
//! (`engine/history.rs`, whose module docs give the checks and their costs).

use super::write_set::{ReadSet, WriteSet};
use crate::engine::keys::Keys;
use crate::engine::{indexed_total, History, Record, Written};
use crate::error::{Error, Result};
use std::collections::BTreeMap;

impl History {
    /// Checks a transaction that started at `start` with `writes` (and `reads` when
    /// serializable) against every commit after `start`; the first overlap is the error.
    pub fn validate(
        &self,
        start: u64,
        writes: &BTreeMap<String, WriteSet>,
        reads: Option<&BTreeMap<String, ReadSet>>,
    ) -> Result<()> {
        let since: Vec<&Record> = self.since(start).collect();
        if since.is_empty() {
            return Ok(());
        }
        for (table, mine) in writes {
            let own = mine.puts.len() + mine.dels.len();
            let use_index = own <= indexed_total(&since, table);
            for record in &since {
                match record.tables.get(table) {
                    Some(written) if !(use_index && record.indexed(table)) => {
                        check_writes(table, mine, written)?;
                    }
                    _ => {}
                }
            }
            if use_index {
                for keys in mine.keys() {
                    if let Some(key) = self.indexed_common(start, table, keys)? {
                        return Err(conflict(table, key, WRITTEN_BOTH));
                    }
                }
            }
        }
        for (table, read) in reads.into_iter().flatten() {
            let use_index = read.points().len() <= indexed_total(&since, table);
            for record in &since {
                if let Some(written) = record.tables.get(table) {
                    check_reads(table, read, written, !(use_index && record.indexed(table)))?;
                }
            }
            if use_index {
                if let Some(key) = self.indexed_common(start, table, read.points())? {
                    return Err(conflict(table, key, READ_THEN_WRITTEN));
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

/// `points`: also check the point reads (false when the key index checks them).
fn check_reads(table: &str, read: &ReadSet, written: &Written, points: bool) -> Result<()> {
    let Some(theirs) = theirs(written) else {
        if let Some(key) = read.any_key() {
            return Err(conflict(table, key, WHOLE));
        }
        return Ok(());
    };
    for other in theirs {
        if points {
            if let Some(key) = Keys::common(read.points(), other)? {
                return Err(conflict(table, key, READ_THEN_WRITTEN));
            }
        }
        for range in read.ranges() {
            if let Some(key) = other.first_in(range)? {
                return Err(conflict(table, key, READ_THEN_WRITTEN));
            }
        }
    }
    Ok(())
}
