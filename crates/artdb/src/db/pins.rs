//! pins: which checkpoint epochs live readers may still read from.
//!
//! A read transaction pins the epoch current when it took its snapshot. A checkpoint running at
//! epoch `e` releases the pages of nodes that versions before it referenced; those pages may be
//! reused only when every live pin is `> e` (docs/recovery.md#space-reuse). The pin and the
//! snapshot are taken under the same lock as the checkpoint's epoch increment, so a reader can
//! never hold a version older than its pin says.

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
