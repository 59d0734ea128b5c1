//! bulk: a sorted load into an empty table (or one it creates), written once into the database
//! file and committed like a transaction that bypasses the log.

use super::state::{check_table_name, Shared, TableState};
use crate::error::{from_tree, Error, Result};
use crate::store::TreeSink;
use artdb_art::Tree;

impl Shared {
    /// The bulk load; after the input ends, `input_failed()` true abandons the written pages
    /// (returning `Ok(None)`) instead of publishing them. `create`: `table` must not exist, and
    /// is added to the tables only once its tree is built, just before the commit that makes
    /// both durable (the bypass record and its checkpoint, which writes the catalog).
    pub(crate) fn bulk_load<I, K, V>(
        &self,
        table: &str,
        pairs: I,
        create: bool,
        input_failed: &dyn Fn() -> bool,
    ) -> Result<Option<u64>>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.refuse_on_batch_thread("Db::bulk_load")?;
        let _checkpointing = self.checkpoint_lock.lock();
        let mut state = self.writer.lock();
        self.check_writable(&state)?;
        self.flush_log(&state)?;
        if create {
            check_table_name(table)?;
            if state.tables.contains_key(table) {
                return Err(Error::TableExists {
                    name: table.to_string(),
                });
            }
        } else {
            let entry = state
                .tables
                .get(table)
                .ok_or_else(|| Error::TableNotFound {
                    name: table.to_string(),
                })?;
            if !entry.tree.is_empty() {
                return Err(Error::TableNotEmpty {
                    name: table.to_string(),
                });
            }
        }
        let built = {
            let mut writer = state.store.begin_bulk()?;
            let mut sink = TreeSink::new(&mut writer);
            match Tree::bulk_persist(pairs, &mut sink) {
                Ok(_) if input_failed() => {
                    writer.abandon();
                    return Ok(None);
                }
                Ok(built) => writer.finish().map(|counts| (built, counts.pages)),
                Err(error) => {
                    let error = sink.convert(error);
                    writer.abandon();
                    Err(error)
                }
            }
        };
        let ((root, len), pages_written) = built.map_err(|error| state.fail(error))?;
        // The loaded tree is dense already: its pages count toward the compaction baseline,
        // or the load's own checkpoint would see the growth and rewrite what it just wrote.
        if let Some(baseline) = state.compact_baseline_pages.as_mut() {
            *baseline += pages_written;
        }
        let tree = Tree::open(root, len, self.tree_source()).map_err(from_tree)?;
        let state = &mut *state;
        if create {
            let mut entry = TableState::empty();
            entry.tree = tree;
            state.tables.insert(table.to_string(), entry);
            state.catalog_dirty = true;
        } else if let Some(entry) = state.tables.get_mut(table) {
            let mut old = std::mem::replace(&mut entry.tree, tree);
            state.released.extend(old.take_released_persisted());
        }
        // The load commits like a transaction that bypasses the log (its pages are written
        // once): a reference record, then the checkpoint that makes it durable and publishes
        // it. The record also moves the LSN, so the load's checkpoint covers an LSN no earlier
        // checkpoint covers and the log cycle after it starts past it: should the newest
        // superblock be damaged so that it looks torn, open finds the log ahead of the
        // previous checkpoint and reports the damage instead of silently opening that
        // checkpoint, which lacks the load (tests/torn_or_damaged.rs). Written once the input
        // is known good, so a failed load leaves the log as it was.
        let tables = [table.to_string()];
        state.commit_bypass(self, &tables, |state| state.history.push_whole([table]))?;
        super::prune_history(self, state);
        Ok(Some(len))
    }
}
