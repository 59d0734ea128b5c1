//! live: the snapshots in use (read transactions and write transactions): the checkpoint
//! epochs they pin, for page reuse, and the write transactions' starts, for pruning the commit
//! history; and for `stats` (age of the oldest snapshot and the epoch it pins).
//!
//! # Pins: which checkpoint epochs live readers may still read from
//!
//! Epochs count checkpoints: every published version carries the epoch it belongs to, and the
//! checkpoint of epoch `e` publishes the first version of epoch `e + 1` (commits keep the epoch).
//! A read transaction pins the epoch *of the version it holds* (`Shared::read`: the version and
//! the pin are taken together under the read side of the publish lock, so a checkpoint cannot
//! publish in between).
//!
//! Reuse rule (docs/recovery.md#space-reuse): the checkpoint of epoch `e` releases the pages of
//! nodes that no version of epoch `> e` reaches (nodes unlinked by the commits since the previous
//! checkpoint, and, when it compacts, every node of the old copy), tagged `e`; they may be reused
//! only when every live pin is `> e`. A version of epoch `e` may reach them; a version of epoch
//! `> e` was published by this checkpoint or derived from its version by later commits, which
//! never link a released node again, so it cannot.
//!
//! The rule this replaced pinned the epoch *counter*, advanced at the start of a checkpoint: a
//! reader arriving after the advance but before the publish pinned `e + 1` while holding the
//! version of epoch `e`, and a compaction's pages (tagged `e`) were reused under it
//! (`db::tests::snapshots_taken_at_every_step_of_a_compacting_checkpoint_stay_intact`).
//!
//! # Registration
//!
//! A snapshot's [`Pin`] is counted in its thread's part of a sharded registry (`shards.rs`), so
//! that readers on different threads begin and end snapshots without taking turns; a write
//! transaction's start ([`LiveGuard`]) is in one map, which every commit asks about.
//! Registration happens while the publish lock is held for reading (`Db::read`,
//! `Db::begin_write`), and pruning reads the oldest live start while holding it too, so a
//! transaction that took its snapshot at seq `s` is either seen as live by the pruner or took
//! its snapshot at or after the published seq the pruner uses: records after `s` survive.

use super::shards::Sharded;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One thread part of the live snapshots (`shards.rs`).
#[derive(Default)]
struct Snapshots {
    next_id: u64,
    /// Every live snapshot of the part, oldest first: id -> (taken at, checkpoint epoch pinned).
    all: BTreeMap<u64, (Instant, u64)>,
}

/// The registry of live snapshots (module docs).
#[derive(Default)]
pub(crate) struct Live {
    snapshots: Sharded<Snapshots>,
    /// Start seq of each live write transaction -> how many.
    writers: Mutex<BTreeMap<u64, usize>>,
}

/// One live snapshot, pinning the epoch of the version it holds; released on drop (on any
/// thread).
pub(crate) struct Pin {
    live: Arc<Live>,
    part: usize,
    id: u64,
}

/// One live write transaction's start; unregistered on drop.
pub(crate) struct LiveGuard {
    live: Arc<Live>,
    start: u64,
}

/// The oldest live snapshot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Oldest {
    pub age: Duration,
    pub epoch: u64,
}

impl Live {
    /// Registers a snapshot of a version of `epoch` (the epoch stays pinned until the pin is
    /// dropped).
    pub fn pin(live: &Arc<Live>, epoch: u64) -> Pin {
        let part = Sharded::<Snapshots>::index();
        let mut snapshots = live.snapshots.lock(part);
        let id = snapshots.next_id;
        snapshots.next_id += 1;
        snapshots.all.insert(id, (Instant::now(), epoch));
        drop(snapshots);
        Pin {
            live: Arc::clone(live),
            part,
            id,
        }
    }

    /// Registers a write transaction that started at `seq` (holding back history pruning).
    pub fn register_writer(live: &Arc<Live>, seq: u64) -> LiveGuard {
        *live.writers.lock().entry(seq).or_insert(0) += 1;
        LiveGuard {
            live: Arc::clone(live),
            start: seq,
        }
    }

    /// The smallest epoch a live snapshot pins.
    pub fn min_epoch(&self) -> Option<u64> {
        self.snapshots
            .each(|part| part.all.values().map(|&(_, epoch)| epoch).min())
            .into_iter()
            .flatten()
            .min()
    }

    /// The smallest start seq of a live write transaction.
    pub fn oldest_writer_start(&self) -> Option<u64> {
        self.writers.lock().keys().next().copied()
    }

    /// Number of live write transactions.
    pub fn writers(&self) -> usize {
        self.writers.lock().values().sum()
    }

    /// Number of live snapshots (read transactions and write transactions).
    pub fn count(&self) -> usize {
        self.snapshots.each(|part| part.all.len()).into_iter().sum()
    }

    /// The oldest live snapshot, if any: the earliest taken, and the smallest epoch pinned.
    pub fn oldest(&self) -> Option<Oldest> {
        let parts: Vec<(Option<Instant>, Option<u64>)> = self.snapshots.each(|part| {
            let taken = part.all.values().next().map(|&(taken, _)| taken);
            let epoch = part.all.values().map(|&(_, epoch)| epoch).min();
            (taken, epoch)
        });
        let taken = parts.iter().filter_map(|part| part.0).min()?;
        let epoch = parts.iter().filter_map(|part| part.1).min()?;
        Some(Oldest {
            age: taken.elapsed(),
            epoch,
        })
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        self.live.snapshots.lock(self.part).all.remove(&self.id);
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        let mut writers = self.live.writers.lock();
        if let Some(count) = writers.get_mut(&self.start) {
            *count -= 1;
            if *count == 0 {
                writers.remove(&self.start);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_pinned_epoch_counts_every_thread_and_a_pin_dropped_elsewhere() {
        let live = Arc::new(Live::default());
        assert_eq!(live.min_epoch(), None);
        // Threads beyond the number of parts share parts; every pin counts wherever it is.
        let pins: Vec<Pin> = (0..40u64)
            .map(|epoch| {
                let live = Arc::clone(&live);
                std::thread::spawn(move || Live::pin(&live, 100 + epoch))
                    .join()
                    .unwrap()
            })
            .collect();
        assert_eq!(live.min_epoch(), Some(100));
        assert_eq!(live.count(), 40);
        let mut pins = pins.into_iter();
        // Dropped on this thread, not the one that took them.
        for expected in 101..140 {
            drop(pins.next());
            assert_eq!(live.min_epoch(), Some(expected));
        }
        drop(pins);
        assert_eq!(live.min_epoch(), None);
        assert_eq!(live.count(), 0);
        assert!(live.oldest().is_none());
    }

    #[test]
    fn writers_are_counted_apart_from_snapshots() {
        let live = Arc::new(Live::default());
        let snapshot = Live::pin(&live, 3);
        let first = Live::register_writer(&live, 7);
        let second = Live::register_writer(&live, 5);
        assert_eq!(live.writers(), 2);
        assert_eq!(live.oldest_writer_start(), Some(5));
        drop(second);
        assert_eq!(live.oldest_writer_start(), Some(7));
        drop(first);
        assert_eq!(live.writers(), 0);
        assert_eq!(live.oldest().map(|oldest| oldest.epoch), Some(3));
        drop(snapshot);
        assert!(live.oldest().is_none());
    }
}
