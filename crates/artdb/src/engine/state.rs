//! state: the state shared by a database's handles, transactions and readers, and the commit
//! side of it (`db` builds it at open through [`Shared::new`]; `txn` commits through it).
//!
//! - [`Published`]: what readers see (a tree snapshot per table, the commit sequence number,
//!   the epoch).
//! - [`WriterState`]: the writer's state behind the writer (commit) lock: the store, the trees,
//!   the history, the log, the newest committed view.
//! - [`Shared`]: both locks, the pins of live readers, the live transactions, the pipeline.
//!
//! The checkpoint is `checkpoint.rs`'s; a commit calls it directly ([`Shared::maybe_checkpoint`]
//! after a commit is published, `WriterState::commit_bypass` for a commit that bypasses the
//! log).

use super::checkpoint::{checkpoint_after_commit, checkpoint_for_bypass};
use super::{Durability, History, Live};
use crate::error::{Error, FileRole, Result};
use crate::io::Storage;
use crate::store::{PageSource, Store};
use crate::wal::group::{Pipeline, WaitFor};
use crate::wal::Wal;
use artdb_art::{ChildWord, NodeSource, Snapshot, Tree};
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use crate::error::TABLE_NAME_LEN_MAX;

/// Drops the history no live or future transaction can need (`history.rs`, `live.rs`).
pub(crate) fn prune_history(shared: &Shared, state: &mut WriterState) {
    let published = shared.published.read();
    let keep_after = match shared.live.oldest_writer_start() {
        Some(oldest) => oldest.min(published.seq),
        None => published.seq,
    };
    state.history.prune(keep_after);
}

/// Refuses an empty or over-long table name.
pub(crate) fn check_table_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > TABLE_NAME_LEN_MAX {
        return Err(Error::InvalidTableName {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// How write transactions' changes reached the tables at commit (`Db::stats().txn`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CommitCounters {
    /// Tables whose tree was the transaction's own (its fork installed, or its `puts` adopted
    /// by an empty table): nothing copied at commit.
    pub(crate) installed: u64,
    /// Tables into which the changes were applied again (another commit changed the table since
    /// the transaction's snapshot).
    pub(crate) applied: u64,
    /// Commits that bypassed the log (their nodes went to the database file through a
    /// checkpoint; `WriterState::commit_bypass`).
    pub(crate) bypassed: u64,
}

/// The test hook: called with the database's shared state at each step of every checkpoint.
#[cfg(test)]
pub(crate) type CheckpointHook = Arc<dyn Fn(&Shared, CheckpointStep) + Send + Sync>;

/// One table in the writer's hands.
pub(crate) struct TableState {
    pub(crate) tree: Tree,
    /// Changed since the last checkpoint.
    pub(crate) dirty: bool,
    /// Root and length as of the last checkpoint.
    pub(crate) persisted_root: ChildWord,
    pub(crate) persisted_len: u64,
}

impl TableState {
    pub(crate) fn empty() -> TableState {
        TableState {
            tree: Tree::new(),
            // Equal to its persisted root (empty); the commit marks it dirty if it got keys.
            dirty: false,
            persisted_root: ChildWord::EMPTY,
            persisted_len: 0,
        }
    }
}

/// What readers see.
pub(crate) struct Published {
    pub(crate) tables: BTreeMap<String, Snapshot>,
    /// The commit sequence number of the last commit this state shows (history.rs).
    pub(crate) seq: u64,
    /// The epoch of this version: the number of checkpoints published before it, plus one. A
    /// reader pins exactly this (see `engine/live.rs`): pages released by the checkpoint of epoch `e`
    /// are unreachable from every version of epoch `> e`.
    pub(crate) epoch: u64,
}

/// The writer's state, behind the writer lock.
pub(crate) struct WriterState {
    pub(crate) store: Store,
    pub(crate) tables: BTreeMap<String, TableState>,
    /// Trees of tables dropped since the last checkpoint (their nodes are released then).
    pub(crate) dropped_trees: Vec<Tree>,
    /// Persisted nodes unlinked by trees that were replaced wholesale (bulk load, a write
    /// transaction's tree adopted by an empty table).
    pub(crate) released: Vec<u64>,
    /// What committed write transactions wrote, for validating the live ones.
    pub(crate) history: History,
    pub(crate) catalog_dirty: bool,
    pub(crate) closed: bool,
    /// Pages in use after the last compaction (see `should_compact`).
    pub(crate) compact_baseline_pages: Option<u64>,
    /// How write transactions' changes reached the tables at commit.
    pub(crate) counters: CommitCounters,
    /// The write-ahead log (appended under this lock).
    pub(crate) wal: Wal,
    /// The view of the newest commit, published or still in the pipeline (which publishes in
    /// LSN order): what a commit builds its view from and an abort rolls back to.
    pub(crate) committed: Arc<Published>,
    /// The log must be recycled before its next append (recovery cut a torn tail).
    pub(crate) wal_needs_recycle: bool,
    /// Epoch -> the generation of the superblock its checkpoint writes, for readers in other
    /// processes, who pin generations (`Shared::other_process_pin`). Epoch 0 stands for the
    /// pages free at open: what the checkpoint this process opened reaches not.
    pub(crate) checkpoint_generations: BTreeMap<u64, u64>,
}

pub(crate) struct Shared {
    pub(crate) writer: Mutex<WriterState>,
    pub(crate) published: RwLock<Arc<Published>>,
    pub(crate) source: Arc<PageSource>,
    /// Live snapshots (read and write transactions).
    pub(crate) live: Arc<Live>,
    /// The durable/publish stage of commits (`wal/group.rs`).
    pub(crate) pipeline: Pipeline<Arc<Published>>,
    /// The log's storage, synced by the pipeline's leader without the writer lock.
    pub(crate) log_storage: Arc<dyn Storage>,
    /// Bytes of records in the log's current cycle (read without the writer lock to decide on
    /// an automatic checkpoint).
    pub(crate) log_bytes: AtomicU64,
    /// Bumped by `force_checkpoint`: a write batch begun under an older value is aborted.
    pub(crate) abort_generation: AtomicU64,
    pub(crate) durability: Durability,
    pub(crate) checkpoint_threshold_bytes: u64,
    /// A transaction whose changes exceed this many log bytes bypasses the log.
    pub(crate) wal_bypass_threshold_bytes: u64,
    /// Held by every checkpoint from before it takes the writer lock to its end (a checkpoint
    /// releases the writer lock during its syncs, so commits go on), and by whatever else uses
    /// the store beside commits (bulk load, verify, stats). Lock order: this, then the writer
    /// lock; a commit never takes it while holding the writer lock.
    pub(crate) checkpoint_lock: Mutex<()>,
    /// The `thread_token` of the thread holding a write batch (`Db::write`), 0 if none: a call
    /// that needs the writer from that thread would wait for it forever, and is refused
    /// instead (`Shared::refuse_on_batch_thread`).
    pub(crate) batch_thread: AtomicU64,
    /// The readers file of a database open for writing by path (`io/readers.rs`).
    pub(crate) readers: std::sync::OnceLock<Arc<crate::io::ReadersFile>>,
    #[cfg(test)]
    pub(crate) hook: Mutex<Option<CheckpointHook>>,
}

/// A number for the calling thread, unique in the process and never 0.
pub(crate) fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TOKEN.with(|token| *token)
}

/// What [`Shared::new`] takes from the database's options.
pub(crate) struct Settings {
    pub(crate) durability: Durability,
    pub(crate) checkpoint_threshold_bytes: u64,
    pub(crate) wal_bypass_threshold_bytes: u64,
}

impl Shared {
    /// The state of a database just opened: `tables` as the checkpoint holds them (recovery
    /// replays the log onto them next), published as epoch 1.
    pub(crate) fn new(
        store: Store,
        mut tables: BTreeMap<String, TableState>,
        wal: Wal,
        settings: Settings,
    ) -> Shared {
        let published = Arc::new(Published {
            tables: tables
                .iter_mut()
                .map(|(name, t)| (name.clone(), t.tree.snapshot()))
                .collect(),
            epoch: 1,
            seq: 0,
        });
        let source = Arc::clone(store.source());
        let pipeline = Pipeline::new(wal.last_lsn());
        let log_storage = Arc::clone(wal.storage());
        let log_bytes = AtomicU64::new(wal.bytes());
        let state = WriterState {
            store,
            tables,
            dropped_trees: Vec::new(),
            released: Vec::new(),
            catalog_dirty: false,
            closed: false,
            compact_baseline_pages: None,
            history: History::new(),
            counters: Default::default(),
            wal,
            committed: Arc::clone(&published),
            wal_needs_recycle: false,
            checkpoint_generations: BTreeMap::new(),
        };
        Shared {
            writer: Mutex::new(state),
            published: RwLock::new(published),
            source,
            live: Arc::default(),
            pipeline,
            log_storage,
            log_bytes,
            abort_generation: AtomicU64::new(0),
            durability: settings.durability,
            checkpoint_threshold_bytes: settings.checkpoint_threshold_bytes,
            wal_bypass_threshold_bytes: settings.wal_bypass_threshold_bytes,
            checkpoint_lock: Mutex::new(()),
            batch_thread: AtomicU64::new(0),
            readers: std::sync::OnceLock::new(),
            #[cfg(test)]
            hook: Mutex::new(None),
        }
    }

    /// The oldest checkpoint generation a live reader of another process reads, if any (an
    /// unreadable readers file counts as a reader of generation 0: nothing is reused).
    pub(crate) fn other_process_oldest(&self) -> Option<u64> {
        let readers = self.readers.get()?;
        readers.oldest_live().unwrap_or(Some(0))
    }

    /// The in-process pin equivalent to the readers of other processes, for space reuse: pages
    /// released by the checkpoint of epoch `e` are reachable from every generation below the
    /// one that checkpoint writes, `W(e)`, so they may be reused only if the oldest reader's
    /// generation is at least `W(e)`; the result `p` allows exactly the epochs `e < p`.
    pub(crate) fn other_process_pin(&self, state: &WriterState) -> Option<u64> {
        let oldest = self.other_process_oldest()?;
        let allowed = state
            .checkpoint_generations
            .iter()
            .rev()
            .find(|(_, written)| **written <= oldest)
            .map_or(0, |(epoch, _)| epoch + 1);
        Some(allowed)
    }

    /// The pin a checkpoint honours: the oldest of this process's snapshots and of other
    /// processes' readers.
    pub(crate) fn pinned_epoch_min(&self, state: &WriterState) -> Option<u64> {
        match (self.live.min_epoch(), self.other_process_pin(state)) {
            (Some(own), Some(other)) => Some(own.min(other)),
            (own, other) => own.or(other),
        }
    }

    /// [`Error::BatchHeldByThisThread`] if the calling thread holds a write batch: `call` needs
    /// the writer (or the checkpoint lock, which a big batch holds) and would wait forever.
    /// Called by every public entry that takes them, before it does.
    pub(crate) fn refuse_on_batch_thread(&self, call: &'static str) -> Result<()> {
        if self.batch_thread.load(Ordering::Acquire) == thread_token() {
            return Err(Error::BatchHeldByThisThread { call });
        }
        Ok(())
    }
}

/// The points of a checkpoint at which the test hook runs (deterministic interleavings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum CheckpointStep {
    /// Under the writer lock, before anything.
    Start,
    /// Pending pages promoted, the page writer open.
    SpaceOpened,
    /// Every table's nodes written.
    TablesWritten,
    /// The new superblock durable, the trees not yet switched.
    StoreCommitted,
    /// The trees switched onto their persisted roots, not yet published.
    Adopted,
    /// Published.
    Published,
}

impl Shared {
    /// Replaces the published snapshots of `touched` tables (and drops vanished ones), keeping
    /// the epoch.
    pub(crate) fn publish(&self, state: &mut WriterState, touched: &[String]) {
        self.publish_with(state, touched, false);
    }

    /// As [`Shared::publish`]; `end_epoch` also starts the next epoch in the same step (only a
    /// checkpoint whose released pages the new version no longer reaches may do that).
    /// Publishes at once, bypassing the pipeline: for checkpoints and bulk loads, which hold the
    /// writer lock and flushed the pipeline first (so the committed view is the published one).
    pub(crate) fn publish_with(
        &self,
        state: &mut WriterState,
        touched: &[String],
        end_epoch: bool,
    ) {
        let mut published = self.published.write();
        let epoch = published.epoch + u64::from(end_epoch);
        let view = state.view_with(touched, epoch);
        state.committed = Arc::clone(&view);
        *published = view;
    }

    /// Refuses writes after an I/O failure of unknown outcome (store or log).
    pub(crate) fn check_writable(&self, state: &WriterState) -> Result<()> {
        if state.closed {
            // A transaction that outlived `Db::close`: its commit would append to a log whose
            // database said it was closed, after the checkpoint that `close` promised last.
            return Err(Error::Closed);
        }
        state.store.check_writable()?;
        match self.pipeline.failure() {
            Some(cause) => Err(cause.refusal()),
            None => Ok(()),
        }
    }

    /// The value `force_checkpoint` bumps (a write batch notes it when it begins).
    pub(crate) fn abort_generation(&self) -> u64 {
        self.abort_generation.load(Ordering::Acquire)
    }

    /// The durability a transaction gets unless it sets its own.
    pub(crate) fn default_durability(&self) -> Durability {
        self.durability
    }

    /// Waits in the pipeline for `lsn` (`wal/group.rs`); hold no lock.
    pub(crate) fn wait_log(&self, lsn: u64, wait_for: WaitFor) -> Result<()> {
        let log = Arc::clone(&self.log_storage);
        let sync = move || log.sync();
        self.pipeline.wait(lsn, wait_for, &sync, &mut |view| {
            *self.published.write() = view;
        })
    }

    /// Makes every appended record durable and published (under the writer lock, so nothing
    /// is appended meanwhile): a checkpoint or bulk load publishes directly and must not
    /// overtake a view still in the pipeline, and the epoch rule of page reuse assumes readers
    /// of the new epoch see every commit made before it.
    pub(crate) fn flush_log(&self, state: &WriterState) -> Result<()> {
        self.wait_log(state.wal.last_lsn(), WaitFor::DurableAll)
    }

    /// After a commit is published: drops the history no transaction can need any more (the
    /// commit's own record could not go under the lock: it was not yet published). Skipped when
    /// the writer lock is busy; the next commit prunes.
    pub(crate) fn prune_after_publish(&self) {
        if let Some(mut state) = self.writer.try_lock() {
            prune_history(self, &mut state);
        }
    }

    /// After a commit is published: checkpoint if the log passed its threshold. Errors are not
    /// the commit's (it is durable, and returns `Ok`); an I/O error poisons the database, the
    /// poison keeps it, and the next call's `Error::Poisoned` names it.
    pub(crate) fn maybe_checkpoint(&self) {
        if self.log_bytes.load(Ordering::Acquire) <= self.checkpoint_threshold_bytes {
            return;
        }
        checkpoint_after_commit(self);
    }

    pub(crate) fn tree_source(&self) -> Arc<dyn NodeSource> {
        Arc::clone(&self.source) as Arc<dyn NodeSource>
    }
}

impl WriterState {
    /// The committed view with the trees of `touched` tables snapshotted anew, vanished tables
    /// gone, the commit sequence number of the history and `epoch` (cheap: one reference count
    /// per table).
    pub(crate) fn view_with(&mut self, touched: &[String], epoch: u64) -> Arc<Published> {
        let mut tables = self.committed.tables.clone();
        tables.retain(|name, _| self.tables.contains_key(name));
        for name in touched {
            if let Some(table) = self.tables.get_mut(name) {
                tables.insert(name.clone(), table.tree.snapshot());
            }
        }
        let seq = self.history.seq();
        Arc::new(Published { tables, epoch, seq })
    }

    /// Writes a commit's `record` (from `self.wal.encode`) to the log, under the writer lock.
    /// An I/O error poisons the database: part of the record may be in the file, and the
    /// caller has already applied the commit to the trees (nothing of it is published).
    pub(crate) fn write_log(&mut self, shared: &Shared, record: &[u8]) -> Result<u64> {
        // The first record after an open of a cleanly closed database first makes "the log is
        // in use" durable, so a log deleted from now on is detected at open (Missing log).
        let written = match self.store.mark_log(false) {
            Ok(()) => self
                .wal
                .write(record)
                .map_err(|error| (error, FileRole::Log)),
            Err(error) => Err((error, FileRole::Database)),
        };
        match written {
            Ok(lsn) => {
                shared.log_bytes.store(self.wal.bytes(), Ordering::Release);
                Ok(lsn)
            }
            Err((error, file)) => {
                self.store
                    .poison(&error, "write a commit's log record", file);
                shared.pipeline.fail(&error);
                Err(error)
            }
        }
    }

    /// The commit of a transaction that bypasses the log (docs/recovery.md, "Big transactions
    /// bypass the log"), after its changes are applied to the trees of `tables` (those it
    /// wrote, created or dropped) and before anything is published. Call with the checkpoint
    /// lock and the writer lock held. `push_history` records the commit for validation and
    /// returns its sequence number.
    ///
    /// 1. A record of one `Bypass` operation per table, naming the generation of the
    ///    checkpoint below, goes to the log; the pipeline learns its LSN with the unchanged
    ///    committed view (readers must not see the transaction before it is durable).
    /// 2. The ordinary checkpoint (writer lock held throughout, so no record follows this one
    ///    before that checkpoint is durable) writes every changed node, this transaction's
    ///    among them, into free pages, makes a superblock covering the record durable, publishes
    ///    the new version and recycles the log.
    ///
    /// A failure anywhere poisons the database: the trees hold changes that are not durable
    /// and must never be published; reopen finds the transaction whole (its superblock is
    /// durable) or absent (the record is not covered: recovery drops it), never half.
    pub(crate) fn commit_bypass(
        &mut self,
        shared: &Shared,
        tables: &[String],
        push_history: impl FnOnce(&mut WriterState) -> u64,
    ) -> Result<u64> {
        let result = self.commit_bypass_steps(shared, tables, push_history);
        if let Err(error) = &result {
            self.store.poison(
                error,
                "commit a transaction that bypasses the log",
                FileRole::Database,
            );
        }
        result
    }

    fn commit_bypass_steps(
        &mut self,
        shared: &Shared,
        tables: &[String],
        push_history: impl FnOnce(&mut WriterState) -> u64,
    ) -> Result<u64> {
        // "The log is in use" may write a superblock of its own: before the generation is read.
        self.store.mark_log(false)?;
        let generation = self.store.durable().generation + 1;
        let ops: Vec<crate::wal::Op> = tables
            .iter()
            .map(|table| crate::wal::Op::Bypass {
                table: table.clone(),
                generation,
            })
            .collect();
        let record = self.wal.encode(&ops, shared.pipeline.durable_lsn())?;
        let lsn = self.write_log(shared, &record)?;
        shared
            .pipeline
            .enqueue(lsn, false, Arc::clone(&self.committed));
        let seq = push_history(self);
        for name in tables {
            // Written by the checkpoint (an empty created table too), so that its publish
            // shows every table of the transaction at once.
            if let Some(table) = self.tables.get_mut(name) {
                table.dirty = true;
            }
        }
        checkpoint_for_bypass(shared, self)?;
        self.counters.bypassed += 1;
        Ok(seq)
    }

    /// Hands a commit whose record is written (`lsn`) to the pipeline with its view: the
    /// committed view with `touched` tables snapshotted anew.
    pub(crate) fn enqueue_commit(
        &mut self,
        shared: &Shared,
        lsn: u64,
        touched: &[String],
        durability: Durability,
    ) {
        let view = self.view_with(touched, self.committed.epoch);
        self.committed = Arc::clone(&view);
        let needs_durable = durability == Durability::Sync;
        shared.pipeline.enqueue(lsn, needs_durable, view);
    }
}
