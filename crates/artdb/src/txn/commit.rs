//! commit: a write transaction's commit, in the shape of the commit pipeline
//! (team OWNERSHIP.md): under the commit lock (the writer lock) validate, apply by copy-on-write,
//! take each touched table's new snapshot and record the commit in the history; then publish.
//!
//! Logging (with the write-ahead log): the record is encoded before applying (a record too large
//! is refused with nothing applied), written after applying (an I/O error then poisons the
//! database), and the commit's view goes to the pipeline (`wal/group.rs`); the lock is released
//! and the commit waits there until it is durable and published in LSN order.
//!
//! Apply, per touched table: if the table is empty (its removals then remove nothing), its
//! `puts` tree *becomes* the table's tree (no copy at all: a bulk insert into an empty table
//! costs nothing more at commit); else, if no commit changed the table since the transaction's
//! snapshot, the transaction's fork (its snapshot with its changes, built copy-on-write as it
//! wrote: write_set.rs) *becomes* the table's tree (`Tree::install`: again no copy); otherwise
//! each put and removal is applied to the table's tree, which copies only the paths it changes. A failure while applying (an unreadable persisted
//! node) rolls every touched table back to its committed snapshot (the newest commit's, which
//! may still wait in the pipeline), so nothing of the transaction stays.

use super::transaction::Transaction;
use super::write_set::WriteSet;
use super::Isolation;
use crate::engine::Written;
use crate::engine::{prune_history, Shared, TableState, WriterState};
use crate::error::{from_tree, Error, Result};
use crate::wal::group::WaitFor;
use crate::wal::Op;
use artdb_art::Tree;
use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) fn commit(mut txn: Transaction) -> Result<u64> {
    txn.check_not_aborted()?;
    if txn.is_read_only() {
        // Nothing to validate: it is serializable at its snapshot.
        return Ok(txn.start);
    }
    let shared = Arc::clone(&txn.shared);
    let durability = txn
        .options
        .durability
        .unwrap_or_else(|| shared.default_durability());
    // A transaction bigger than the threshold bypasses the log: its commit checkpoints, which
    // needs the checkpoint lock, taken before the writer lock (lock order, state.rs).
    let bypass = txn.log_bytes_estimate > shared.wal_bypass_threshold_bytes;
    shared.refuse_on_batch_thread("Transaction::commit")?;
    let _checkpointing = bypass.then(|| shared.checkpoint_lock.lock());
    let (seq, lsn) = {
        let mut guard = shared.writer.lock();
        let state = &mut *guard;
        shared.check_writable(state)?;
        // Under the lock: a forced checkpoint bumps the generation before it takes the lock.
        txn.check_not_aborted()?;
        {
            let reads = txn.reads.borrow();
            let reads = (txn.options.isolation == Isolation::Serializable).then_some(&*reads);
            state.history.validate(txn.start, &txn.writes, reads)?;
        }
        validate_catalog(state, txn.start, &txn.catalog)?;
        let writes = std::mem::take(&mut txn.writes);
        let catalog = std::mem::take(&mut txn.catalog);
        if bypass {
            let (record, _touched) = apply(state, &shared, catalog, writes)?;
            let tables: Vec<String> = record.keys().cloned().collect();
            let others_live = shared.live.writers() > 1;
            let seq = state.commit_bypass(&shared, &tables, |state| {
                state.history.push(record, others_live)
            })?;
            txn.live = None;
            prune_history(&shared, state);
            return Ok(seq);
        }
        let log_record = state
            .wal
            .encode(&log_ops(&catalog, &writes)?, shared.pipeline.durable_lsn())?;
        let (record, touched) = apply(state, &shared, catalog, writes)?;
        let lsn = state.write_log(&shared, &log_record)?;
        // This transaction is still registered: index only if another writer is live.
        let others_live = shared.live.writers() > 1;
        let seq = state.history.push(record, others_live);
        state.enqueue_commit(&shared, lsn, &touched, durability);
        txn.live = None;
        prune_history(&shared, state);
        (seq, lsn)
    };
    shared.wait_log(lsn, WaitFor::Published)?;
    shared.prune_after_publish();
    shared.maybe_checkpoint();
    Ok(seq)
}

const CATALOG_CHANGED: &str = "another transaction created, dropped or wrote this table after \
                               this one (which creates or drops it) started";

/// The tables a transaction creates or drops: none may have been touched by a commit since its
/// snapshot (so of two concurrent creates of a name exactly one commits, and a drop conflicts
/// with the table's writers), and each is still absent (create) or present (drop) as it saw.
fn validate_catalog(state: &WriterState, start: u64, catalog: &[(String, bool)]) -> Result<()> {
    let mut seen: Vec<&str> = Vec::new();
    for (name, create) in catalog {
        if seen.contains(&name.as_str()) {
            continue;
        }
        seen.push(name);
        // The first operation on a name says what the transaction's snapshot had.
        let expected_present = !create;
        if state.history.touched_since(start, name)
            || state.tables.contains_key(name) != expected_present
        {
            return Err(Error::Conflict {
                table: name.clone(),
                key: Vec::new(),
                reason: CATALOG_CHANGED,
            });
        }
    }
    Ok(())
}

/// The log operations: the creates and drops in order, then per table puts then removals (the
/// order `apply` uses, and recovery replays).
fn log_ops(catalog: &[(String, bool)], writes: &BTreeMap<String, WriteSet>) -> Result<Vec<Op>> {
    let mut ops = Vec::new();
    for (name, create) in catalog {
        let table = name.clone();
        ops.push(if *create {
            Op::CreateTable { table }
        } else {
            Op::DropTable { table }
        });
    }
    for (name, set) in writes {
        for item in set.puts.iter() {
            let (key, value) = item.map_err(from_tree)?;
            ops.push(Op::Put {
                table: name.clone(),
                key,
                value: value.to_vec(),
            });
        }
        for item in set.dels.iter() {
            let (key, _) = item.map_err(from_tree)?;
            ops.push(Op::Remove {
                table: name.clone(),
                key,
            });
        }
    }
    Ok(ops)
}

/// How to undo one table's apply.
enum Undo {
    /// Roll the tree back to its committed snapshot.
    Rollback(String),
    /// The write set's tree replaced this one: put it back.
    Replaced(String, Tree),
    /// The transaction created this table: remove it.
    Created(String),
    /// The transaction dropped this table: put it back.
    Dropped(String, TableState),
}

fn apply(
    state: &mut WriterState,
    shared: &Shared,
    catalog: Vec<(String, bool)>,
    writes: BTreeMap<String, WriteSet>,
) -> Result<(BTreeMap<String, Written>, Vec<String>)> {
    let mut record = BTreeMap::new();
    let mut undo: Vec<Undo> = Vec::new();
    let mut whole: Vec<String> = Vec::new();
    for (name, create) in catalog {
        if create {
            state.tables.insert(name.clone(), TableState::empty());
            undo.push(Undo::Created(name.clone()));
        } else if let Some(table) = state.tables.remove(&name) {
            undo.push(Undo::Dropped(name.clone(), table));
        }
        state.catalog_dirty = true;
        whole.push(name);
    }
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
            // Published anew below if it still exists (a create, then a drop, leaves nothing).
            Undo::Created(_) => {}
            // Its nodes are released at the next checkpoint, as for `Db::drop_table`.
            Undo::Dropped(_, table) => state.dropped_trees.push(table.tree),
        }
    }
    for name in whole {
        if state.tables.contains_key(&name) && !touched.contains(&name) {
            touched.push(name.clone());
        }
        // A table created or dropped changed as a whole for every other transaction.
        record.insert(name, Written::Whole);
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
        state.counters.installed += 1;
        undo.push(Undo::Replaced(name.to_string(), old));
        return Ok(Written::Keys {
            puts: history,
            dels: set.dels.snapshot(),
        });
    }
    undo.push(Undo::Rollback(name.to_string()));
    table.dirty = true;
    if let Some(fork) = set.fork.take() {
        // Nobody changed the table since the snapshot: its tree takes the fork's nodes as they
        // are (a later rollback undoes this like any write). Else the fork is dropped.
        if table.tree.install(fork).is_ok() {
            state.counters.installed += 1;
            return Ok(Written::Keys {
                puts: set.puts.snapshot(),
                dels: set.dels.snapshot(),
            });
        }
    }
    state.counters.applied += 1;
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

fn rollback(state: &mut WriterState, _shared: &Shared, undo: Vec<Undo>) {
    let published = Arc::clone(&state.committed);
    for step in undo.into_iter().rev() {
        match step {
            Undo::Replaced(name, old) => {
                if let Some(table) = state.tables.get_mut(&name) {
                    table.tree = old;
                }
            }
            Undo::Created(name) => {
                state.tables.remove(&name);
            }
            Undo::Dropped(name, table) => {
                state.tables.insert(name, table);
            }
            Undo::Rollback(name) => {
                let (Some(table), Some(snapshot)) =
                    (state.tables.get_mut(&name), published.tables.get(&name))
                else {
                    continue;
                };
                if let Err(error) = table.tree.rollback_to(snapshot) {
                    // The tree could not be put back: refuse writes rather than keep half a
                    // commit.
                    let error = crate::error::from_tree(error);
                    state.store.poison(
                        &error,
                        "roll back a failed commit",
                        crate::error::FileRole::Database,
                    );
                    return;
                }
            }
        }
    }
}
