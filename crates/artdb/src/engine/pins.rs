//! pins: which checkpoint epochs live readers may still read from.
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

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The live pins: epoch -> number of readers.
#[derive(Debug, Default)]
pub struct Pins {
    live: Mutex<BTreeMap<u64, usize>>,
}

/// One reader's pin; released on drop.
#[derive(Debug)]
pub struct Pin {
    pins: Arc<Pins>,
    epoch: u64,
}

impl Pins {
    /// Pins `epoch`.
    pub fn pin(pins: &Arc<Pins>, epoch: u64) -> Pin {
        *pins.live.lock().entry(epoch).or_insert(0) += 1;
        Pin {
            pins: Arc::clone(pins),
            epoch,
        }
    }

    /// The smallest pinned epoch, if any reader is live.
    pub fn min(&self) -> Option<u64> {
        self.live.lock().keys().next().copied()
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut live = self.pins.live.lock();
        if let Some(count) = live.get_mut(&self.epoch) {
            *count -= 1;
            if *count == 0 {
                live.remove(&self.epoch);
            }
        }
    }
}
