//! shards: a value split in per-thread parts, each on its own cache line, for the registries
//! every read snapshot enters and leaves (`live.rs`).
//!
//! One lock shared by every reader makes snapshots of concurrent threads take turns, and its
//! cache line moves between cores at each begin and end. With a part per thread (threads are
//! dealt parts round-robin at their first use), a thread's begin and end lock a part no other
//! thread uses unless there are more threads than parts; a question about all of them (the
//! smallest pinned epoch, the oldest snapshot) looks at every part, which only checkpoints and
//! `stats` ask.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many parts.
pub(crate) const SHARDS: usize = 16;

/// One part, alone on its cache line (two lines: adjacent-line prefetch pairs them).
#[repr(align(128))]
#[derive(Default)]
struct Padded<T>(Mutex<T>);

/// `SHARDS` parts of a `T` behind their own locks.
pub(crate) struct Sharded<T> {
    parts: [Padded<T>; SHARDS],
}

impl<T: Default> Default for Sharded<T> {
    fn default() -> Self {
        Sharded {
            parts: std::array::from_fn(|_| Padded::default()),
        }
    }
}

impl<T> Sharded<T> {
    /// This thread's part.
    pub fn index() -> usize {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local! {
            static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
        }
        INDEX.with(|index| *index)
    }

    /// Part `index` locked.
    pub fn lock(&self, index: usize) -> parking_lot::MutexGuard<'_, T> {
        self.parts[index % SHARDS].0.lock()
    }

    /// Every part, locked one after another (never two at once).
    pub fn each<R>(&self, mut f: impl FnMut(&mut T) -> R) -> Vec<R> {
        self.parts
            .iter()
            .map(|part| f(&mut part.0.lock()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_part_and_threads_spread_over_parts() {
        let mine = Sharded::<u64>::index();
        assert_eq!(Sharded::<u64>::index(), mine);
        let others: Vec<usize> = (0..SHARDS)
            .map(|_| std::thread::spawn(Sharded::<u64>::index).join().unwrap())
            .collect();
        let mut distinct = others.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > SHARDS / 2, "{others:?}");
    }

    #[test]
    fn each_sees_every_part() {
        let sharded = Sharded::<u64>::default();
        for index in 0..SHARDS {
            *sharded.lock(index) = index as u64 + 1;
        }
        let sum: u64 = sharded.each(|part| *part).into_iter().sum();
        assert_eq!(sum, (1..=SHARDS as u64).sum());
    }
}
