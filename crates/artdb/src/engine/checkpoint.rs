//! checkpoint: the one place the trees' changes reach the database file.
//!
//! The checkpoint (`WriterState::checkpoint`): persist each changed table's heap nodes
//! post-order through the store's page writer, commit the store (blobs, sync, superblock, sync),
//! then switch each tree onto its persisted root and republish, advancing the epoch in the same
//! step as the publish (see `live.rs` for why). A failure before the store commit leaves the
//! trees as they were; an I/O failure poisons the store. A checkpoint first flushes the pipeline
//! (every commit durable and published), and after its superblock is durable recycles the log.
//! `Db::checkpoint` and the automatic checkpoint (`checkpoint_beside_commits`) adopt and
//! publish before the store commit and release the writer lock during its two syncs, so commits
//! go on; then an ordinary checkpoint covers the commits made meanwhile and recycles the log
//! (docs/recovery.md, "Commits beside a checkpoint"). Compaction (`Shared::compact`) is a
//! sequence of ordinary checkpoints.

use super::catalog;
use super::state::{CheckpointStep, Shared, WriterState};
use crate::error::{from_tree, CorruptionKind, Error, FileRole, Result};
use crate::store::{TreeSink, WriteCounts};
use artdb_art::{ChildWord, Tree};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Growth in pages below which no compaction happens (small databases).
const COMPACT_SLACK_PAGES: u64 = 32;

/// What a checkpoint did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Generation of the checkpoint now durable.
    pub generation: u64,
    /// Node images written.
    pub images_written: u64,
    /// Node pages written (metadata blobs not included).
    pub pages_written: u64,
    /// Bytes written: node pages, catalog and space blobs and the superblock.
    pub bytes_written: u64,
    /// Tables whose trees were written.
    pub tables_written: u64,
    /// Whether the tables were rewritten densely, and if `Db::compact` did not, why.
    pub compaction: Compaction,
}

/// Whether a checkpoint rewrote the tables densely ([`CheckpointStats::compaction`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Compaction {
    /// Not rewritten: an ordinary checkpoint.
    #[default]
    None,
    /// Rewritten densely (by `Db::compact`, or by a checkpoint when the pages in use had
    /// grown by half since the last compaction).
    Rewritten,
    /// `Db::compact` left the file as it was: a dense copy would take at least as many pages
    /// as the file has (`page_count`; `estimated_page_count`: the pages after a compaction,
    /// the dense copy beside the current and the previous checkpoint's catalog and space map).
    NothingToGain {
        /// Pages of the file now.
        page_count: u64,
        /// Pages the file would have after compacting.
        estimated_page_count: u64,
    },
    /// `Db::compact` left the file as it was: a live snapshot (or write transaction) reaches
    /// the pages of the current version, so none could be freed and the copy would only add
    /// to the file. Compact again once it has ended.
    SnapshotHeld,
}

impl Shared {
    /// The epoch of the published version (the one a checkpoint running now tags its released
    /// pages with).
    fn epoch(&self) -> u64 {
        self.published.read().epoch
    }

    /// Calls the test hook, if any, at `step` of a checkpoint.
    #[inline]
    fn at_step(&self, step: CheckpointStep) {
        #[cfg(test)]
        {
            let hook = self.hook.lock().clone();
            if let Some(hook) = hook {
                hook(self, step);
            }
        }
        #[cfg(not(test))]
        let _ = step;
    }

    /// `Db::compact`: a checkpoint that also rewrites every table densely, then shrinks the
    /// file (the steps are argued at `Db::compact`).
    pub(crate) fn compact(&self) -> Result<CheckpointStats> {
        self.refuse_on_batch_thread("Db::compact")?;
        let _checkpointing = self.checkpoint_lock.lock();
        let mut state = self.writer.lock();
        self.check_writable(&state)?;
        let mut total = CheckpointStats {
            generation: state.store.durable().generation,
            ..CheckpointStats::default()
        };
        if state.needs_checkpoint() {
            total = state.checkpoint(self, false)?;
        }
        if self.live.min_epoch().is_some() || self.other_process_oldest().is_some() {
            total.compaction = Compaction::SnapshotHeld;
            return Ok(total);
        }
        let dense_pages = {
            let state = &mut *state;
            let tables = &state.tables;
            state.store.dense_copy_pages(|writer| {
                for table in tables.values().filter(|table| !table.tree.is_empty()) {
                    rewrite_table(&table.tree, writer)?;
                }
                Ok(())
            })?
        };
        let (page_count, estimated_page_count) = state.store.compaction_estimate(dense_pages)?;
        if estimated_page_count >= page_count {
            total.compaction = Compaction::NothingToGain {
                page_count,
                estimated_page_count,
            };
            return Ok(total);
        }
        state.store.set_allocation_floor(page_count)?;
        let first = state.checkpoint(self, true);
        state.store.set_allocation_floor(0)?;
        let add = |total: &mut CheckpointStats, step: CheckpointStats| {
            total.generation = step.generation;
            total.images_written += step.images_written;
            total.pages_written += step.pages_written;
            total.bytes_written += step.bytes_written;
            total.tables_written = total.tables_written.max(step.tables_written);
        };
        add(&mut total, first?);
        total.compaction = Compaction::Rewritten;
        // Frees the old version (what no snapshot reaches) and cuts the free tail.
        let step = state.checkpoint(self, false)?;
        add(&mut total, step);
        if self.live.min_epoch().is_some() || self.other_process_oldest().is_some() {
            // A snapshot taken before the first copy was published: the old version stays
            // until it ends, and a later checkpoint frees and cuts it.
            return Ok(total);
        }
        let step = state.checkpoint(self, true)?;
        add(&mut total, step);
        let step = state.checkpoint(self, false)?;
        add(&mut total, step);
        Ok(total)
    }
}

/// The checkpoint a commit triggers once the log passed its threshold (called by
/// [`Shared::maybe_checkpoint`] after the commit is durable and published, with no lock held).
///
/// Its error is not the commit's: the commit was durable in the log before this began (a
/// `NoSync` commit promised no more than the log's page cache, which it reached), and reopening
/// replays it whatever the checkpoint did, so that commit returns `Ok`. Failing it
/// would tell its caller that a durable commit did not happen (a retry would apply it twice).
/// The failure poisons the database instead, and the poison keeps it as the first cause: the
/// committer's next call, and every later one, gets `Error::Poisoned` naming the operation, the
/// file and the operating system's error (docs/recovery.md, "The checkpoint, step by step").
pub(super) fn checkpoint_after_commit(shared: &Shared) {
    // One checkpoint at a time; a commit during a running one does not wait for it (the
    // running one recycles the log, or the next commit triggers again).
    let Some(_checkpointing) = shared.checkpoint_lock.try_lock() else {
        return;
    };
    let state = shared.writer.lock();
    if state.wal.bytes() > shared.checkpoint_threshold_bytes && !state.closed {
        // Kept by the poison (every failure that leaves the file unknown poisons it), which is
        // how the error reaches the next caller; a failure that poisons nothing (the writer
        // refusing, say, after a poison already kept) has nothing more to tell.
        let _ = checkpoint_beside_commits(shared, state);
    }
}

/// The checkpoint of a commit that bypasses the log (`WriterState::commit_bypass`): the
/// ordinary one, holding the writer lock throughout (no record may follow the bypass record
/// until the checkpoint that makes it durable is). Called with both locks held.
///
/// The pages it writes hold the transaction's changes, densely: they count toward the compaction
/// baseline (as a bulk load's do), or the next checkpoint would see them as growth and rewrite
/// every table (W6: the 5M-pair load, then an automatic checkpoint during the batch writes).
pub(super) fn checkpoint_for_bypass(shared: &Shared, state: &mut WriterState) -> Result<()> {
    let baseline = state.compact_baseline_pages;
    let stats = state.checkpoint(shared, false)?;
    if let Some(now) = state.compact_baseline_pages.as_mut() {
        if Some(*now) == baseline {
            *now += stats.pages_written;
        }
    }
    Ok(())
}

impl WriterState {
    /// The checkpoint of `close` (and of a drop that checkpoints): covers every commit and says
    /// in its superblock that the log is closed, so a log deleted afterwards loses nothing
    /// (docs/recovery.md, Missing log). With nothing to checkpoint, only that flag is written
    /// (one superblock), if it is not said already; then a read-only or poisoned database
    /// writes nothing.
    pub(crate) fn checkpoint_at_close(&mut self, shared: &Shared) -> Result<()> {
        if self.store.is_read_only() {
            return Ok(());
        }
        if !self.needs_checkpoint() {
            if shared.check_writable(self).is_err() {
                return Ok(());
            }
            return self.store.mark_log(true);
        }
        self.store.set_log_closed(true);
        let result = self.checkpoint(shared, false).map(drop);
        self.store.set_log_closed(false);
        result
    }

    pub(crate) fn needs_checkpoint(&self) -> bool {
        self.wal.records() > 0
            || self.wal_needs_recycle
            || self.catalog_dirty
            || !self.dropped_trees.is_empty()
            || self.tables.values().any(|table| table.dirty)
    }

    /// The checkpoint (see the module docs), holding the writer lock throughout.
    pub(crate) fn checkpoint(
        &mut self,
        shared: &Shared,
        force_compact: bool,
    ) -> Result<CheckpointStats> {
        let written = self.checkpoint_pages(shared, force_compact)?;
        let superblock = self.store.commit(
            &written.catalog_bytes,
            written.released.iter().copied(),
            written.epoch,
        )?;
        shared.at_step(CheckpointStep::StoreCommitted);
        self.note_compaction_baseline(written.compact)?;
        self.adopt_and_publish(shared, &written.roots)?;
        self.recycle_log(shared, written.covered_lsn)?;
        Ok(checkpoint_stats(
            superblock.generation,
            written.counts,
            &written.catalog_bytes,
            written.roots.len(),
            written.compact,
        ))
    }

    /// Steps 1 and 2 of a checkpoint (module docs): flushes the pipeline, notes the covered
    /// LSN, writes every changed table's nodes; returns what the store commit needs.
    fn checkpoint_pages(&mut self, shared: &Shared, force_compact: bool) -> Result<Written> {
        shared.check_writable(self)?;
        shared.flush_log(self)?;
        let covered_lsn = self.wal.last_lsn();
        self.store.set_covered(covered_lsn, self.wal.epoch());
        shared.at_step(CheckpointStep::Start);
        // The epoch of the published version. Only checkpoints end an epoch, and they hold the
        // writer lock, so it stays the same until this checkpoint publishes.
        let epoch = shared.epoch();
        let pinned_epoch_min = shared.pinned_epoch_min(self);
        let written_generation = self.store.durable().generation + 1;
        let pending_min = self.store.space_map()?.pending_epoch_min();
        let kept_from = pending_min.unwrap_or(epoch).min(epoch);
        self.checkpoint_generations
            .retain(|old, _| *old >= kept_from);
        self.checkpoint_generations
            .insert(epoch, written_generation);
        let compact = self.should_compact()? || force_compact;
        let mut roots: Vec<(String, ChildWord, u64)> = Vec::new();
        let mut compacted_released: Vec<u64> = Vec::new();
        let counts = {
            let mut writer = self.store.begin_checkpoint(pinned_epoch_min)?;
            shared.at_step(CheckpointStep::SpaceOpened);
            let mut failure = None;
            for (name, table) in self.tables.iter() {
                let rewrite = compact && !table.tree.is_empty();
                if !(table.dirty || rewrite) {
                    continue;
                }
                let written = if rewrite {
                    rewrite_table(&table.tree, &mut writer)
                } else {
                    let mut sink = TreeSink::new(&mut writer);
                    table
                        .tree
                        .persist(&mut sink)
                        .map_err(|error| sink.convert(error))
                };
                match written {
                    Ok(root) => roots.push((name.clone(), root, table.tree.len())),
                    Err(error) => {
                        failure = Some(error);
                        break;
                    }
                }
                if rewrite {
                    // Every node of the old version goes; a node that cannot be read stays
                    // allocated (a leak, not a loss).
                    let _ = table
                        .tree
                        .for_each_persisted(|offset| compacted_released.push(offset));
                }
            }
            match failure {
                Some(error) => {
                    writer.abandon();
                    return Err(self.fail(error));
                }
                None => writer.finish().map_err(|error| self.fail(error))?,
            }
        };
        shared.at_step(CheckpointStep::TablesWritten);
        let catalog_bytes = self.catalog_with(&roots);
        let mut released = self.take_released();
        released.extend(compacted_released);
        Ok(Written {
            covered_lsn,
            epoch,
            compact,
            roots,
            counts,
            catalog_bytes,
            released,
        })
    }

    /// Switches each written table onto its persisted root and publishes the new version as
    /// the first of the next epoch.
    fn adopt_and_publish(
        &mut self,
        shared: &Shared,
        roots: &[(String, ChildWord, u64)],
    ) -> Result<()> {
        let source = shared.tree_source();
        let mut touched = Vec::new();
        for (name, root, len) in roots {
            if let Some(table) = self.tables.get_mut(name) {
                let adopted = table.tree.adopt_persisted(*root, *len, Arc::clone(&source));
                if let Err(error) = adopted {
                    // The released pages are pending with `epoch` but the published version
                    // may still reach them: refuse every later checkpoint (which could reuse
                    // them) until the database is reopened.
                    let error = from_tree(error);
                    let during = "switch a table onto its checkpointed root";
                    self.store.poison(&error, during, FileRole::Database);
                    return Err(error);
                }
                table.persisted_root = *root;
                table.persisted_len = *len;
                table.dirty = false;
                touched.push(name.clone());
            }
        }
        self.catalog_dirty = false;
        shared.at_step(CheckpointStep::Adopted);
        // Ends the epoch in the same step as the publish: a reader that pinned `epoch` may hold
        // the version from before this checkpoint (which reaches the pages released above, tagged
        // `epoch`); every reader of a later epoch holds this version or a later one, which does
        // not. The pages become reusable once no pin `<= epoch` is live (space.rs).
        shared.publish_with(self, &touched, true);
        shared.at_step(CheckpointStep::Published);
        Ok(())
    }

    /// Whether this checkpoint rewrites every table compactly: when the pages in use have grown
    /// past 1.5 times what they were after the last compaction (or the first checkpoint of this
    /// process). Random updates leave most pages partly live, and a page is reusable only when
    /// all its nodes are gone; without this the file would settle at many times its data.
    /// Amortized, each compaction's full rewrite is paid for by the growth that triggered it.
    fn should_compact(&mut self) -> Result<bool> {
        let used = self.store.usage()?.used_pages();
        match self.compact_baseline_pages {
            // The first checkpoint of this process sets the baseline when it is done
            // (`note_compaction_baseline`), so what it writes is not counted as growth.
            None => Ok(false),
            Some(baseline) => Ok(used > baseline + baseline / 2 + COMPACT_SLACK_PAGES),
        }
    }

    /// After a checkpoint's superblock is durable: a compacting checkpoint, or the first of
    /// this process, sets the baseline of `should_compact` to the pages in use now. (Set at the
    /// start of the first checkpoint instead, a first checkpoint that wrote a big transaction or
    /// a load into a small file made the next checkpoint rewrite it all: W2's 10M-key insert
    /// batch, then `checkpoint`, spent seconds on a checkpoint with nothing to write.)
    fn note_compaction_baseline(&mut self, compacted: bool) -> Result<()> {
        if compacted || self.compact_baseline_pages.is_none() {
            self.compact_baseline_pages = Some(self.store.usage()?.used_pages());
        }
        Ok(())
    }

    /// Right after a checkpoint (nothing changed since), the space map's node count of every
    /// page must equal the number of persisted nodes the tables reach in it: more is a leak,
    /// fewer a page that could be reused while still in use.
    pub(crate) fn verify_space_accounting(&mut self) -> Result<Vec<Error>> {
        let mut reached: BTreeMap<u64, u64> = BTreeMap::new();
        let mut problems = Vec::new();
        for table in self.tables.values() {
            let walk = table.tree.for_each_persisted(|offset| {
                *reached.entry(offset / crate::store::PAGE_SIZE).or_insert(0) += 1;
            });
            if let Err(error) = walk {
                problems.push(from_tree(error));
                return Ok(problems);
            }
        }
        // An unreadable space map is already among `verify_pages`'s problems.
        let Ok(entries) = self.store.space_entries() else {
            return Ok(problems);
        };
        for (page, &entry) in entries.iter().enumerate() {
            let counted = u64::from(entry);
            let is_node_page = entry != 0 && entry <= crate::store::NODES_PER_PAGE_MAX;
            let expected = if is_node_page { counted } else { 0 };
            let found = reached.remove(&(page as u64)).unwrap_or(0);
            if found != expected {
                problems.push(Error::Corruption {
                    at: page as u64 * crate::store::PAGE_SIZE,
                    kind: CorruptionKind::Invariant(format!(
                        "page {page}: the space map counts {expected} nodes, the tables reach {found}"
                    )),
                });
            }
        }
        for (page, found) in reached {
            problems.push(Error::Corruption {
                at: page * crate::store::PAGE_SIZE,
                kind: CorruptionKind::Invariant(format!(
                    "page {page} past the space map holds {found} reachable nodes"
                )),
            });
        }
        Ok(problems)
    }

    /// Every persisted node unlinked since the last checkpoint: by the tables' trees, by trees
    /// replaced wholesale, and all nodes of dropped tables.
    fn take_released(&mut self) -> Vec<u64> {
        let mut released = std::mem::take(&mut self.released);
        for table in self.tables.values_mut() {
            released.extend(table.tree.take_released_persisted());
        }
        for mut tree in std::mem::take(&mut self.dropped_trees) {
            released.extend(tree.take_released_persisted());
            let mut reachable = Vec::new();
            // A dropped table whose nodes cannot be read keeps its pages (a leak, not a loss):
            // the checkpoint must not fail because of a table nobody can use any more.
            if tree
                .for_each_persisted(|offset| reachable.push(offset))
                .is_ok()
            {
                released.extend(reachable);
            }
        }
        released
    }

    /// Starts a new log cycle once the superblock covering `covered_lsn` is durable. A
    /// failure poisons the database (the log header's state is unknown).
    fn recycle_log(&mut self, shared: &Shared, covered_lsn: u64) -> Result<()> {
        if self.wal.records() == 0 && !self.wal_needs_recycle {
            return Ok(());
        }
        let keep_bytes = shared.checkpoint_threshold_bytes.saturating_mul(2);
        // Readers of other processes copy the log: one whose copy spans this rewrite copies
        // again (left odd on failure: the log's state is unknown until a writer reopens).
        let readers = shared.readers.get();
        if let Some(readers) = readers {
            readers.log_rewrite(true);
        }
        if let Err(error) = self.wal.recycle(covered_lsn, keep_bytes) {
            self.store.poison(&error, "recycle the log", FileRole::Log);
            return Err(error);
        }
        if let Some(readers) = readers {
            readers.log_rewrite(false);
        }
        self.wal_needs_recycle = false;
        shared.log_bytes.store(0, Ordering::Release);
        Ok(())
    }

    pub(super) fn fail(&mut self, error: Error) -> Error {
        if matches!(error, Error::Io { .. }) {
            self.store
                .poison(&error, "write a checkpoint's pages", FileRole::Database);
        }
        error
    }

    fn catalog_with(&self, roots: &[(String, ChildWord, u64)]) -> Vec<u8> {
        let entries = self.tables.iter().map(|(name, table)| {
            match roots.iter().find(|(root_name, _, _)| root_name == name) {
                Some((_, root, len)) => (name.as_str(), *root, *len),
                None => (name.as_str(), table.persisted_root, table.persisted_len),
            }
        });
        catalog::encode(entries)
    }
}

/// What [`WriterState::checkpoint_pages`] wrote, for the store commit and the adoption.
struct Written {
    covered_lsn: u64,
    epoch: u64,
    compact: bool,
    roots: Vec<(String, ChildWord, u64)>,
    counts: WriteCounts,
    catalog_bytes: Vec<u8>,
    released: Vec<u64>,
}

/// The checkpoint of `Db::checkpoint` and of the automatic trigger: commits go on during its two
/// syncs (docs/recovery.md, "Commits beside a checkpoint"). Call with the checkpoint lock held
/// and the writer lock in `state`.
///
/// 1. Under the writer lock: flush, write the pages of the version at LSN `L` (the blocking
///    checkpoint's steps 1 to 3), write the blobs, then switch the trees onto the new roots and
///    publish them as the next epoch (their pages are in the page cache; a failed sync later
///    poisons the database, and a page that cannot be read back is `Corruption`, never another
///    value: pages are checksummed).
/// 2. Without it: sync the pages. Under it: write the superblock covering `L`. Without it: sync.
///    Commits meanwhile append records after `L` to the log and change the adopted trees.
/// 3. Under it: the superblock is the durable one. If no record came after `L`, recycle the log;
///    else run the blocking checkpoint for those commits only (few pages), which recycles it:
///    commits wait for that short one.
pub(crate) fn checkpoint_beside_commits(
    shared: &Shared,
    mut state: parking_lot::MutexGuard<'_, WriterState>,
) -> Result<CheckpointStats> {
    if state.store.durable().log_closed {
        // The first record after a clean close writes a superblock of its own (Missing log):
        // not while this checkpoint's superblock is being made.
        return state.checkpoint(shared, false);
    }
    let written = state.checkpoint_pages(shared, false)?;
    let prepared = state.store.commit_prepare(
        &written.catalog_bytes,
        written.released.iter().copied(),
        written.epoch,
    )?;
    state.adopt_and_publish(shared, &written.roots)?;
    let storage = Arc::clone(state.store.storage());
    drop(state);
    let mut state = sync_released(shared, &storage, "sync the checkpoint's pages")?;
    state.store.commit_write_superblock(&prepared)?;
    drop(state);
    let mut state = sync_released(shared, &storage, "sync the superblock")?;
    let superblock = state.store.commit_finish(prepared)?;
    shared.at_step(CheckpointStep::StoreCommitted);
    state.note_compaction_baseline(written.compact)?;
    if state.wal.last_lsn() == written.covered_lsn {
        state.recycle_log(shared, written.covered_lsn)?;
    } else {
        state.checkpoint(shared, false)?;
    }
    Ok(checkpoint_stats(
        superblock.generation,
        written.counts,
        &written.catalog_bytes,
        written.roots.len(),
        written.compact,
    ))
}

/// Writes `tree`'s current version afresh, densely packed, through `writer` (a streaming bulk
/// build from its own iteration: O(depth) memory); returns the new root.
fn rewrite_table(tree: &Tree, writer: &mut crate::store::PageWriter<'_>) -> Result<ChildWord> {
    let mut failure = None;
    let pairs = tree.iter().map_while(|item| match item {
        Ok(pair) => Some(pair),
        Err(error) => {
            failure = Some(error);
            None
        }
    });
    let mut sink = TreeSink::new(writer);
    let built = Tree::bulk_persist(pairs, &mut sink).map_err(|error| sink.convert(error));
    if let Some(error) = failure {
        return Err(from_tree(error));
    }
    built.map(|(root, _)| root)
}

fn checkpoint_stats(
    generation: u64,
    counts: WriteCounts,
    catalog: &[u8],
    tables_written: usize,
    compacted: bool,
) -> CheckpointStats {
    CheckpointStats {
        generation,
        images_written: counts.images,
        pages_written: counts.pages,
        bytes_written: counts.pages * crate::store::PAGE_SIZE + catalog.len() as u64,
        tables_written: tables_written as u64,
        compaction: if compacted {
            Compaction::Rewritten
        } else {
            Compaction::None
        },
    }
}

/// Syncs the database file with the writer lock released (commits go on meanwhile), then takes
/// the lock again; a failed sync fails the store's commit in progress. `op` names the step.
fn sync_released<'a>(
    shared: &'a Shared,
    storage: &Arc<dyn crate::io::Storage>,
    op: &'static str,
) -> Result<parking_lot::MutexGuard<'a, WriterState>> {
    let synced = storage.sync();
    let mut state = shared.writer.lock();
    if let Err(source) = synced {
        let error = Error::io(op)(source);
        state.store.commit_failed(&error);
        return Err(error);
    }
    Ok(state)
}
