//! write: a write transaction (a batch). One at a time: it holds the writer lock from
//! `Db::write` until commit or drop.
//!
//! Changes go straight into each table's tree (copy-on-write, so readers are unaffected) and are
//! noted as log operations. `commit` appends them as one record to the write-ahead log, builds
//! the new view, releases the writer lock and waits in the pipeline until the record is durable
//! (`Durability::Sync`) and the view published in LSN order. Dropping the batch without
//! committing aborts it:
//! - a table is rolled back to its committed snapshot (`Tree::rollback_to`, O(1) plus freeing
//!   what the batch built), which is the newest snapshot of its tree: every commit, checkpoint
//!   and open takes one (the view of the newest commit, published or still in the pipeline),
//!   and nothing else takes any;
//! - should a table have no published snapshot, it is restored from an undo log of inverse
//!   operations (a fallback that no current path needs);
//! - tables created in the batch are removed, tables dropped in it come back.
//!
//! `Db::force_checkpoint` aborts a batch in progress: its next call or its commit returns
//! `Error::Aborted`, and dropping it rolls it back.
//!
//! States: Open -> Committed (commit) | Aborted (drop); transitions in `commit` and `Drop`.

use super::{check_table_name, Shared, TableState, WriterState};
use crate::error::{from_tree, Error, Result};
use crate::txn::Durability;
use crate::wal::group::WaitFor;
use crate::wal::Op;
use artdb_art::{ChildWord, Snapshot, Tree};
use parking_lot::MutexGuard;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

enum Touch {
    /// Restore by rolling the tree back to this (its newest) snapshot.
    Rollback(Snapshot),
    /// Restore by undoing the logged operations.
    Undo,
    /// Created in this batch: removed on abort, nothing to restore.
    Created,
}

struct Undo {
    table: String,
    key: Vec<u8>,
    /// The value before the operation; `None` = the key was absent.
    old: Option<Vec<u8>>,
}

/// A write transaction (see the module docs).
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// // A write batch holds the writer lock from here to commit: it never conflicts.
/// let mut batch = db.write()?;
/// batch.create_table("t")?;
/// for i in 0u32..100 {
///     batch.insert("t", &i.to_be_bytes(), b"loaded")?;
/// }
/// batch.commit()?;
/// assert_eq!(db.read().table("t")?.len(), 100);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WriteTxn<'db> {
    shared: &'db Shared,
    state: MutexGuard<'db, WriterState>,
    touched: BTreeMap<String, Touch>,
    undo: Vec<Undo>,
    created: Vec<String>,
    dropped: Vec<(String, TableState)>,
    committed: bool,
    /// The operations to log, in order (none once the batch is set to bypass the log).
    ops: Vec<Op>,
    /// Log bytes of the operations so far.
    log_bytes: u64,
    /// Held once the batch grew past `Options::wal_bypass_threshold_bytes` and the checkpoint
    /// lock was free: the batch will bypass the log, so it stops recording operations (a bulk
    /// write would otherwise copy every key and value once more), and no checkpoint can start
    /// before its commit, which checkpoints under this guard.
    bypass: Option<MutexGuard<'db, ()>>,
    durability: Durability,
    abort_generation: u64,
}

impl<'db> WriteTxn<'db> {
    pub(crate) fn new(shared: &'db Shared, state: MutexGuard<'db, WriterState>) -> WriteTxn<'db> {
        // Cleared by `drop` (commit and abort end in it): the batch, holding a guard of the
        // writer lock, never leaves its thread.
        shared
            .batch_thread
            .store(crate::engine::thread_token(), Ordering::Release);
        WriteTxn {
            shared,
            state,
            touched: BTreeMap::new(),
            undo: Vec::new(),
            created: Vec::new(),
            dropped: Vec::new(),
            committed: false,
            ops: Vec::new(),
            log_bytes: 0,
            bypass: None,
            durability: shared.default_durability(),
            abort_generation: shared.abort_generation(),
        }
    }

    /// Sets this transaction's durability (default: the database's, `Options::durability`).
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// Records an operation to log (`bytes`: its log size), unless the batch bypasses the log.
    /// Past the threshold it tries to take the checkpoint lock (never waits: this batch holds
    /// the writer lock, which a checkpoint holding the checkpoint lock may be waiting for) and,
    /// once it has it, drops the operations recorded so far.
    fn log_op(&mut self, bytes: u64, op: impl FnOnce() -> Op) {
        if self.bypass.is_some() {
            return;
        }
        self.log_bytes += bytes;
        if self.log_bytes > self.shared.wal_bypass_threshold_bytes {
            if let Some(guard) = self.shared.checkpoint_lock.try_lock() {
                self.bypass = Some(guard);
                self.ops = Vec::new();
                return;
            }
        }
        self.ops.push(op());
    }

    fn check_aborted(&self) -> Result<()> {
        if self.shared.abort_generation() != self.abort_generation {
            return Err(Error::Aborted);
        }
        Ok(())
    }

    fn tree(&mut self, table: &str) -> Result<(&mut Tree, bool)> {
        self.check_aborted()?;
        let state = &mut *self.state;
        let entry = state
            .tables
            .get_mut(table)
            .ok_or_else(|| Error::TableNotFound {
                name: table.to_string(),
            })?;
        // Looked up before inserting, so a batch of many writes allocates no name per write.
        let log = match self.touched.get(table) {
            Some(touch) => matches!(touch, Touch::Undo),
            None => {
                let touch = if self.created.iter().any(|name| name == table) {
                    Touch::Created
                } else {
                    match state.committed.tables.get(table) {
                        Some(snapshot) => Touch::Rollback(snapshot.clone()),
                        None => Touch::Undo,
                    }
                };
                let log = matches!(touch, Touch::Undo);
                self.touched.insert(table.to_string(), touch);
                log
            }
        };
        Ok((&mut entry.tree, log))
    }

    /// Sets `key` to `value` in `table`; returns the previous value.
    pub fn insert(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let (tree, log) = self.tree(table)?;
        let old = tree.insert(key, value).map_err(from_tree)?;
        self.log_op(Op::put_len(key, value), || Op::Put {
            table: table.to_string(),
            key: key.to_vec(),
            value: value.to_vec(),
        });
        if log {
            self.undo.push(Undo {
                table: table.to_string(),
                key: key.to_vec(),
                old: old.clone(),
            });
        }
        Ok(old)
    }

    /// Inserts `key` only if absent (a unique constraint); true if it was inserted.
    pub fn insert_if_absent(&mut self, table: &str, key: &[u8], value: &[u8]) -> Result<bool> {
        let (tree, log) = self.tree(table)?;
        let inserted = tree.insert_if_absent(key, value).map_err(from_tree)?;
        if inserted {
            self.log_op(Op::put_len(key, value), || Op::Put {
                table: table.to_string(),
                key: key.to_vec(),
                value: value.to_vec(),
            });
        }
        if log && inserted {
            self.undo.push(Undo {
                table: table.to_string(),
                key: key.to_vec(),
                old: None,
            });
        }
        Ok(inserted)
    }

    /// Removes `key` from `table`; returns its value.
    pub fn remove(&mut self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (tree, log) = self.tree(table)?;
        let old = tree.remove(key).map_err(from_tree)?;
        if old.is_some() {
            self.log_op(Op::remove_len(key), || Op::Remove {
                table: table.to_string(),
                key: key.to_vec(),
            });
        }
        if log && old.is_some() {
            self.undo.push(Undo {
                table: table.to_string(),
                key: key.to_vec(),
                old: old.clone(),
            });
        }
        Ok(old)
    }

    /// The value of `key` in `table` as this batch sees it (its own writes included).
    pub fn get(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let entry = self
            .state
            .tables
            .get(table)
            .ok_or_else(|| Error::TableNotFound {
                name: table.to_string(),
            })?;
        Ok(entry.tree.get(key).map_err(from_tree)?.map(<[u8]>::to_vec))
    }

    /// Number of keys in `table` as this batch sees it.
    pub fn len(&self, table: &str) -> Result<u64> {
        self.state
            .tables
            .get(table)
            .map(|entry| entry.tree.len())
            .ok_or_else(|| Error::TableNotFound {
                name: table.to_string(),
            })
    }

    /// Creates an empty table.
    pub fn create_table(&mut self, name: &str) -> Result<()> {
        self.check_aborted()?;
        check_table_name(name)?;
        if self.state.tables.contains_key(name) {
            return Err(Error::TableExists {
                name: name.to_string(),
            });
        }
        self.state
            .tables
            .insert(name.to_string(), TableState::empty());
        self.created.push(name.to_string());
        self.log_op(Op::TABLE_OP_LEN, || Op::CreateTable {
            table: name.to_string(),
        });
        self.touched
            .entry(name.to_string())
            .or_insert(Touch::Created);
        Ok(())
    }

    /// Drops a table and all its keys.
    pub fn drop_table(&mut self, name: &str) -> Result<()> {
        self.check_aborted()?;
        let table = self
            .state
            .tables
            .remove(name)
            .ok_or_else(|| Error::TableNotFound {
                name: name.to_string(),
            })?;
        match self.created.iter().position(|created| created == name) {
            // Created in this batch: it simply goes (it has nothing persisted).
            Some(index) => {
                self.created.remove(index);
            }
            None => self.dropped.push((name.to_string(), table)),
        }
        self.log_op(Op::TABLE_OP_LEN, || Op::DropTable {
            table: name.to_string(),
        });
        Ok(())
    }

    /// Whether `table` exists as this batch sees it.
    pub fn has_table(&self, table: &str) -> bool {
        self.state.tables.contains_key(table)
    }

    /// Names of the tables as this batch sees them.
    pub fn table_names(&self) -> Vec<String> {
        self.state.tables.keys().cloned().collect()
    }

    /// Commits the batch: appends its record to the log, releases the writer lock, and
    /// returns once the commit is published: durable first in `Durability::Sync` (module docs).
    /// An error before the record is written rolls the batch back; an I/O error while writing
    /// or syncing it poisons the database (the record may or may not be durable).
    pub fn commit(mut self) -> Result<()> {
        let shared = self.shared;
        let lsn = self.commit_locked()?;
        // Releases the writer lock (the batch is marked committed: nothing is rolled back).
        drop(self);
        if let Some(lsn) = lsn {
            shared.wait_log(lsn, WaitFor::Published)?;
            shared.prune_after_publish();
            shared.maybe_checkpoint();
        }
        Ok(())
    }

    /// The part of `commit` under the writer lock; returns the record's LSN (`None`: the batch
    /// changed nothing and logs nothing, or it bypassed the log and is durable and published).
    fn commit_locked(&mut self) -> Result<Option<u64>> {
        self.check_aborted()?;
        self.shared.check_writable(&self.state)?;
        if self.ops.is_empty() && self.bypass.is_none() {
            self.committed = true;
            return Ok(None);
        }
        let lsn = match self.bypass {
            Some(_) => None,
            None => {
                let record = self
                    .state
                    .wal
                    .encode(&self.ops, self.shared.pipeline.durable_lsn())?;
                Some(self.state.write_log(self.shared, &record)?)
            }
        };
        let touched: Vec<String> = self.touched.keys().cloned().collect();
        let dropped: Vec<(String, TableState)> = std::mem::take(&mut self.dropped);
        let dropped_names: Vec<String> = dropped.iter().map(|(name, _)| name.clone()).collect();
        let state = &mut *self.state;
        for name in &touched {
            if let Some(table) = state.tables.get_mut(name) {
                // An empty table that never had persisted nodes equals its persisted root (the
                // empty word): nothing to write, and the next batch can abort by reopening it
                // instead of keeping an undo log. (Its catalog entry is written all the same.)
                let empty_as_persisted =
                    table.tree.is_empty() && table.persisted_root == ChildWord::EMPTY;
                table.dirty = table.dirty || !empty_as_persisted;
            }
        }
        for (_, table) in dropped {
            state.dropped_trees.push(table.tree);
            state.catalog_dirty = true;
        }
        if !self.created.is_empty() {
            state.catalog_dirty = true;
        }
        // Concurrent write transactions validate against this batch as a write of every table
        // it touched, created or dropped (it keeps no key set).
        let changed: Vec<String> = touched.iter().chain(&dropped_names).cloned().collect();
        let Some(lsn) = lsn else {
            // Marked committed first: whatever happens now, the trees are not rolled back (a
            // failure poisons the database; reopen finds the batch whole or absent).
            self.committed = true;
            state.commit_bypass(self.shared, &changed, |state| {
                state.history.push_whole(changed.iter().map(String::as_str))
            })?;
            crate::engine::prune_history(self.shared, state);
            return Ok(None);
        };
        if !changed.is_empty() {
            state.history.push_whole(changed.iter().map(String::as_str));
        }
        state.enqueue_commit(self.shared, lsn, &touched, self.durability);
        crate::engine::prune_history(self.shared, state);
        self.committed = true;
        Ok(Some(lsn))
    }

    fn abort(&mut self) -> Result<()> {
        let state = &mut *self.state;
        for name in std::mem::take(&mut self.created) {
            state.tables.remove(&name);
        }
        for (name, table) in std::mem::take(&mut self.dropped) {
            state.tables.insert(name, table);
        }
        for undo in std::mem::take(&mut self.undo).into_iter().rev() {
            let Some(table) = state.tables.get_mut(&undo.table) else {
                continue;
            };
            match &undo.old {
                Some(old) => table.tree.insert(&undo.key, old).map_err(from_tree)?,
                None => table.tree.remove(&undo.key).map_err(from_tree)?,
            };
        }
        for (name, touch) in std::mem::take(&mut self.touched) {
            if let (Touch::Rollback(snapshot), Some(table)) = (touch, state.tables.get_mut(&name)) {
                table.tree.rollback_to(&snapshot).map_err(from_tree)?;
            }
        }
        Ok(())
    }
}

impl Drop for WriteTxn<'_> {
    fn drop(&mut self) {
        let aborted = if self.committed { Ok(()) } else { self.abort() };
        if let Err(error) = aborted {
            // The tree could not be put back (a persisted node became unreadable): refuse
            // writes rather than risk committing half a batch later.
            let file = crate::error::FileRole::Database;
            self.state
                .store
                .poison(&error, "roll back a write batch", file);
        }
        self.shared.batch_thread.store(0, Ordering::Release);
    }
}
