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

use super::state::{Published, Shared, TableState, WriterState};
use crate::error::{from_tree, CorruptionKind, Error, Result};
use crate::wal::{OpRef, Recovered, Recovery};

impl Shared {
    /// Replays `recovery` and checkpoints it; on failure the database is closed without a
    /// checkpoint (so nothing half-replayed is ever written).
    pub(crate) fn recover(&self, mut recovery: Recovery) -> Result<()> {
        let mut state = self.writer.lock();
        if recovery.records.is_empty() && !recovery.needs_recycle {
            return Ok(());
        }
        let uncommitted_bypass = drop_uncommitted_bypass(&mut recovery, &state)?;
        state.wal_needs_recycle = recovery.needs_recycle || uncommitted_bypass;
        let checkpoint_now = state.wal_needs_recycle;
        let log = std::sync::Arc::clone(state.wal.storage());
        let result = recovery
            .records
            .iter()
            .try_for_each(|record| state.replay(&recovery, record))
            .and_then(|()| {
                // Every table anew: replay may have dropped and recreated one under its name.
                let names: Vec<String> = state.tables.keys().cloned().collect();
                let epoch = state.committed.epoch;
                state.committed = std::sync::Arc::new(Published {
                    tables: std::collections::BTreeMap::new(),
                    epoch,
                    seq: state.history.seq(),
                });
                state.committed = state.view_with(&names, epoch);
                if state.store.is_read_only() {
                    // Read-only: the replayed commits stay in memory (nothing may be written).
                    self.publish(&mut state, &names);
                    return Ok(());
                }
                if checkpoint_now {
                    return state.checkpoint(self, false).map(drop);
                }
                log.sync().map_err(Error::io("sync the log at open"))?;
                let view = std::sync::Arc::clone(&state.committed);
                *self.published.write() = view;
                Ok(())
            });
        if result.is_err() {
            state.closed = true;
        }
        result
    }
}

/// A record of a transaction that bypassed the log (`Op::Bypass`) which the durable superblock
/// does not cover is a commit whose checkpoint never became durable: the transaction did not
/// commit, and its pages are free in the durable space map. The writer held the lock from that
/// record to the end of its checkpoint, and the checkpoint recycles the log, so such a record
/// is the last of its cycle: it is dropped (true: the log must be recycled, as after a cut
/// tail, so that nothing is appended after it). A record after it, or a reference to a
/// generation the durable superblock has reached, cannot come from a crash: `Corruption`.
fn drop_uncommitted_bypass(recovery: &mut Recovery, state: &WriterState) -> Result<bool> {
    let found = recovery
        .records
        .iter()
        .enumerate()
        .find_map(|(index, record)| {
            record
                .bypass_generation
                .map(|generation| (index, generation))
        });
    let Some((index, generation)) = found else {
        return Ok(false);
    };
    let lsn = recovery.records[index].lsn;
    let durable = state.store.durable().generation;
    let problem = if index + 1 != recovery.records.len() {
        Some(format!(
            "the record of a transaction that bypassed the log (its data in checkpoint \
             {generation}, which the database file lacks) is followed by LSN {}",
            recovery.records[index + 1].lsn
        ))
    } else if generation <= durable {
        Some(format!(
            "the record of a transaction that bypassed the log names checkpoint {generation}, \
             but the newest checkpoint ({durable}) does not cover it"
        ))
    } else {
        None
    };
    if let Some(what) = problem {
        return Err(Error::corruption(0, CorruptionKind::Log { lsn, what }));
    }
    recovery.records.pop();
    Ok(true)
}

impl WriterState {
    fn replay(&mut self, recovery: &Recovery, record: &Recovered) -> Result<()> {
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
        for op in recovery.ops(record)? {
            match op {
                OpRef::Put { table, key, value } => {
                    let entry = self.replay_table(table, &does_not_apply)?;
                    // `set`: the old value is not copied out (most replayed puts replace one).
                    entry.tree.set(key, value).map_err(from_tree)?;
                    entry.dirty = true;
                }
                OpRef::Remove { table, key } => {
                    let entry = self.replay_table(table, &does_not_apply)?;
                    entry.tree.remove(key).map_err(from_tree)?;
                    entry.dirty = true;
                }
                OpRef::CreateTable { table } => {
                    if self.tables.contains_key(table) {
                        return Err(does_not_apply(format!("table {table:?} exists")));
                    }
                    self.tables.insert(table.to_string(), TableState::empty());
                    self.catalog_dirty = true;
                }
                OpRef::Bypass { .. } => {
                    // Dropped before replay (`drop_uncommitted_bypass`) or covered.
                    return Err(does_not_apply("a bypassed transaction's record".into()));
                }
                OpRef::DropTable { table } => {
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
