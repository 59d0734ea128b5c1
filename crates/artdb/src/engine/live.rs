//! live: the snapshots in use (read transactions and write transactions), for pruning the commit
//! history and for `stats` (age of the oldest snapshot and the epoch it pins).
//!
//! Registration happens while the publish lock is held for reading (`Db::read`,
//! `Db::begin_write`), and pruning reads the oldest live start while holding it too, so a
//! transaction that took its snapshot at seq `s` is either seen as live by the pruner or took
//! its snapshot at or after the published seq the pruner uses: records after `s` survive.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Default)]
struct LiveState {
    next_id: u64,
    /// Start seq of each live write transaction -> how many.
    writers: BTreeMap<u64, usize>,
    /// Every live snapshot, oldest first: id -> (taken at, checkpoint epoch pinned).
    all: BTreeMap<u64, (Instant, u64)>,
}

/// The registry of live snapshots.
#[derive(Default)]
pub(crate) struct Live {
    state: Mutex<LiveState>,
}

/// One live snapshot; unregistered on drop.
pub(crate) struct LiveGuard {
    live: Arc<Live>,
    id: u64,
    writer_start: Option<u64>,
}

/// The oldest live snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Oldest {
    pub age: Duration,
    pub epoch: u64,
}

impl Live {
    /// Registers a snapshot taken at `seq` and pinning `epoch`; a write transaction's start
    /// also holds back history pruning.
    pub fn register(live: &Arc<Live>, seq: u64, epoch: u64, writer: bool) -> LiveGuard {
        let mut state = live.state.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.all.insert(id, (Instant::now(), epoch));
        if writer {
            *state.writers.entry(seq).or_insert(0) += 1;
        }
        LiveGuard {
            live: Arc::clone(live),
            id,
            writer_start: writer.then_some(seq),
        }
    }

    /// The smallest start seq of a live write transaction.
    pub fn oldest_writer_start(&self) -> Option<u64> {
        self.state.lock().writers.keys().next().copied()
    }

    /// Number of live write transactions.
    pub fn writers(&self) -> usize {
        self.state.lock().writers.values().sum()
    }

    /// Number of live snapshots (read transactions and write transactions).
    pub fn count(&self) -> usize {
        self.state.lock().all.len()
    }

    /// The oldest live snapshot, if any.
    pub fn oldest(&self) -> Option<Oldest> {
        let state = self.state.lock();
        let (_, &(taken, _)) = state.all.iter().next()?;
        let epoch = state.all.values().map(|&(_, epoch)| epoch).min()?;
        Some(Oldest {
            age: taken.elapsed(),
            epoch,
        })
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        let mut state = self.live.state.lock();
        state.all.remove(&self.id);
        if let Some(seq) = self.writer_start {
            if let Some(count) = state.writers.get_mut(&seq) {
                *count -= 1;
                if *count == 0 {
                    state.writers.remove(&seq);
                }
            }
        }
    }
}
