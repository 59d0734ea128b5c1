//! recovery: what open does with the write-ahead log's records that the checkpoint does not
//! cover: replay them into the trees in LSN order. Then:
//! - the log ended cleanly (zeros or the end of the file after the last valid record): appends
//!   continue after it. The log is synced once first, so no reader sees a replayed record that
//!   a power loss could still take back (a killed process leaves its writes in the page cache).
//!   Nothing else is written: an open costs a read of the log, not a checkpoint, and a CLI
//!   command that commits one record leaves one record, not a checkpoint.
//! - a torn tail was cut: checkpoint at once (which recycles the log). A cut tail may leave
//!   valid-looking records of the lost group beyond the cut; a new cycle (new epoch, so those
//!   records no longer validate) is the only safe place for the next append, and a new cycle
//!   may start only after a superblock covers every record of the old one.
//!
//! Crash-safety: replay writes nothing; the checkpoint is an ordinary one (docs/recovery.md); a
//! crash inside it leaves the log as it was, and the next open replays the same records onto
//! the same checkpoint. Bounds: the records were read once by the scan (at most the log's
//! length).

use super::{Db, TableState, WriterState};
use crate::error::{from_tree, CorruptionKind, Error, Result};
use crate::wal::{Op, Recovered, Recovery};

impl Db {
    /// Replays `recovery` and checkpoints it; on failure the database is closed without a
    /// checkpoint (so nothing half-replayed is ever written).
    pub(super) fn recover(&self, recovery: Recovery) -> Result<()> {
        let mut state = self.shared.writer.lock();
        if recovery.records.is_empty() && !recovery.needs_recycle {
            return Ok(());
        }
        state.wal_needs_recycle = recovery.needs_recycle;
        let checkpoint_now = recovery.needs_recycle;
        let log = std::sync::Arc::clone(state.wal.storage());
        let result = recovery
            .records
            .iter()
            .try_for_each(|record| state.replay(record))
            .and_then(|()| {
                // Every table anew: replay may have dropped and recreated one under its name.
                let names: Vec<String> = state.tables.keys().cloned().collect();
                let epoch = state.committed.epoch;
                state.committed = std::sync::Arc::new(super::Published {
                    tables: std::collections::BTreeMap::new(),
                    epoch,
                    seq: state.history.seq(),
                });
                state.committed = state.view_with(&names, epoch);
                if state.store.is_read_only() {
                    // Read-only: the replayed commits stay in memory (nothing may be written).
                    self.shared.publish(&mut state, &names);
                    return Ok(());
                }
                if checkpoint_now {
                    return state.checkpoint(&self.shared, false).map(drop);
                }
                log.sync().map_err(Error::io("sync the log at open"))?;
                let view = std::sync::Arc::clone(&state.committed);
                *self.shared.published.write() = view;
                Ok(())
            });
        if result.is_err() {
            state.closed = true;
        }
        result
    }
}

impl WriterState {
    fn replay(&mut self, record: &Recovered) -> Result<()> {
        let lsn = record.lsn;
        let does_not_apply = |what: String| {
            Error::corruption(
                0,
                CorruptionKind::Log {
                    lsn,
                    what: format!("the record does not apply to the database: {what}"),
                },
            )
        };
        for op in &record.ops {
            match op {
                Op::Put { table, key, value } => {
                    let entry = self.replay_table(table, &does_not_apply)?;
                    // `set`: the old value is not copied out (most replayed puts replace one).
                    entry.tree.set(key, value).map_err(from_tree)?;
                    entry.dirty = true;
                }
                Op::Remove { table, key } => {
                    let entry = self.replay_table(table, &does_not_apply)?;
                    entry.tree.remove(key).map_err(from_tree)?;
                    entry.dirty = true;
                }
                Op::CreateTable { table } => {
                    if self.tables.contains_key(table) {
                        return Err(does_not_apply(format!("table {table:?} exists")));
                    }
                    self.tables.insert(table.clone(), TableState::empty());
                    self.catalog_dirty = true;
                }
                Op::DropTable { table } => {
                    let dropped = self
                        .tables
                        .remove(table)
                        .ok_or_else(|| does_not_apply(format!("no table {table:?} to drop")))?;
                    self.dropped_trees.push(dropped.tree);
                    self.catalog_dirty = true;
                }
            }
        }
        Ok(())
    }

    fn replay_table(
        &mut self,
        table: &str,
        does_not_apply: &dyn Fn(String) -> Error,
    ) -> Result<&mut TableState> {
        self.tables
            .get_mut(table)
            .ok_or_else(|| does_not_apply(format!("no table {table:?}")))
    }
}
