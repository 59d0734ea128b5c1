//! commit: a write transaction's commit, in the shape of the commit pipeline
//! (team OWNERSHIP.md): under the commit lock (the writer lock) validate, apply by copy-on-write,
//! take each touched table's new snapshot and record the commit in the history; then publish.
//!
//! Until the write-ahead log's pipeline (`txn/pipeline.rs`) lands, publishing happens under the
//! same lock right after applying (what `Db::write` batches do today): a commit is visible at
//! once and durable at the next checkpoint.
//!
//! Apply, per touched table: if the table is empty (its removals then remove nothing), its
//! `puts` tree *becomes* the table's tree (no copy at all: a bulk insert into an empty table
//! costs nothing more at commit); otherwise each put and removal is applied to the table's tree,
//! which copies only the paths it changes. A failure while applying (an unreadable persisted
//! node) rolls every touched table back to its published snapshot, so nothing of the
//! transaction stays.

use super::history::Written;
use super::transaction::Transaction;
use super::write_set::WriteSet;
use super::Isolation;
use crate::db::{Shared, WriterState};
use crate::error::{from_tree, Error, Result};
use artdb_art::Tree;
use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) fn commit(mut txn: Transaction) -> Result<u64> {
    if txn.is_read_only() {
        // Nothing to validate: it is serializable at its snapshot.
        return Ok(txn.start);
    }
    let shared = Arc::clone(&txn.shared);
    let mut guard = shared.writer.lock();
    let state = &mut *guard;
    state.store.check_writable()?;
    let reads = txn.reads.borrow();
    let reads = (txn.options.isolation == Isolation::Serializable).then_some(&*reads);
    state.history.validate(txn.start, &txn.writes, reads)?;
    let writes = std::mem::take(&mut txn.writes);
    let (record, touched) = apply(state, &shared, writes)?;
    let seq = state.history.push(record);
    shared.publish(state, &touched);
    txn.live = None;
    prune(&shared, state);
    Ok(seq)
}

/// Drops the history no live or future transaction can need (history.rs, live.rs).
pub(crate) fn prune(shared: &Shared, state: &mut WriterState) {
    let published = shared.published.read();
    let keep_after = match shared.live.oldest_writer_start() {
        Some(oldest) => oldest.min(published.seq),
        None => published.seq,
    };
    state.history.prune(keep_after);
}

/// How to undo one table's apply.
enum Undo {
    /// Roll the tree back to its published snapshot.
    Rollback(String),
    /// The write set's tree replaced this one: put it back.
    Replaced(String, Tree),
}

fn apply(
    state: &mut WriterState,
    shared: &Shared,
    writes: BTreeMap<String, WriteSet>,
) -> Result<(BTreeMap<String, Written>, Vec<String>)> {
    let mut record = BTreeMap::new();
    let mut undo: Vec<Undo> = Vec::new();
    for (name, set) in writes {
        if set.is_empty() {
            continue;
        }
        match apply_table(state, &name, set, &mut undo) {
            Ok(written) => {
                record.insert(name, written);
            }
            Err(error) => {
                rollback(state, shared, undo);
                return Err(error);
            }
        }
    }
    let mut touched = Vec::with_capacity(undo.len());
    for step in undo {
        match step {
            Undo::Rollback(name) => touched.push(name),
            Undo::Replaced(name, mut old) => {
                state.released.extend(old.take_released_persisted());
                touched.push(name);
            }
        }
    }
    Ok((record, touched))
}

fn apply_table(
    state: &mut WriterState,
    name: &str,
    mut set: WriteSet,
    undo: &mut Vec<Undo>,
) -> Result<Written> {
    let Some(table) = state.tables.get_mut(name) else {
        // Dropped since the transaction started (validation normally says so first).
        return Err(Error::Conflict {
            table: name.to_string(),
            key: Vec::new(),
            reason: "the table was dropped after this transaction started",
        });
    };
    if table.tree.is_empty() {
        // Adopt the write set's tree; the history keeps a snapshot of it (the same nodes).
        let mut puts = std::mem::take(&mut set.puts);
        let history = puts.snapshot();
        let old = std::mem::replace(&mut table.tree, puts);
        table.dirty = true;
        undo.push(Undo::Replaced(name.to_string(), old));
        return Ok(Written::Keys {
            puts: history,
            dels: set.dels.snapshot(),
        });
    }
    undo.push(Undo::Rollback(name.to_string()));
    table.dirty = true;
    for item in set.puts.iter() {
        let (key, value) = item.map_err(from_tree)?;
        table.tree.set(&key, value).map_err(from_tree)?;
    }
    for item in set.dels.iter() {
        let (key, _) = item.map_err(from_tree)?;
        table.tree.remove(&key).map_err(from_tree)?;
    }
    Ok(Written::Keys {
        puts: set.puts.snapshot(),
        dels: set.dels.snapshot(),
    })
}

fn rollback(state: &mut WriterState, shared: &Shared, undo: Vec<Undo>) {
    let published = Arc::clone(&shared.published.read());
    for step in undo.into_iter().rev() {
        match step {
            Undo::Replaced(name, old) => {
                if let Some(table) = state.tables.get_mut(&name) {
                    table.tree = old;
                }
            }
            Undo::Rollback(name) => {
                let (Some(table), Some(snapshot)) =
                    (state.tables.get_mut(&name), published.tables.get(&name))
                else {
                    continue;
                };
                if table.tree.rollback_to(snapshot).is_err() {
                    // The tree could not be put back: refuse writes rather than keep half a
                    // commit.
                    state.store.poison();
                    return;
                }
            }
        }
    }
}
