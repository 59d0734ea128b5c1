//! write_set: a transaction's private changes to one table and, when serializable, what it read.
//!
//! Changes live in two ART trees: `puts` (key -> new value) and `dels` (tombstones: keys of the
//! snapshot the transaction removed, empty values). The two are disjoint. Memory is the trees'
//! density over the changed keys only; nothing is stored per untouched key. Removing a key that
//! neither the snapshot holds nor the transaction put leaves no tombstone (it wrote nothing);
//! removing one it put does, even if the snapshot lacks it (it wrote the key: a concurrent
//! writer of it must conflict).
//!
//! Beside them, a [`Fork`] of the table's snapshot (when the snapshot has keys) takes every
//! change too, copy-on-write on the snapshot's nodes: it is the snapshot with the changes, so a
//! point read is one lookup in it, and at commit, if no other commit changed the table since
//! the snapshot, the fork's tree is installed as the table's (`Tree::install`: nothing is
//! copied again). Its memory is the paths it changed (the tree's density over the changed keys).
//! If a change to it fails (an unreadable persisted node), it is dropped and the commit applies
//! the changes instead. The fork is kept only when no other write transaction is live as the
//! transaction first writes the table: with others live, some other commit usually changes the
//! table first, the install is refused, and the fork would only double the copying (W5's
//! 32-thread read-modify-write ran at about half the rate with forks always on).
//!
//! The read set (serializable only) holds point reads in a tree (a key set) and scanned ranges
//! as a list of key ranges (what an iterator consumed from each end; a cursor's visited span).

use crate::engine::keys::{KeyRange, Keys};
use crate::error::{from_tree, Result};
use artdb_art::{Fork, Snapshot, Tree};
use std::ops::Bound;

/// One table's private changes (module docs).
#[derive(Default)]
pub(crate) struct WriteSet {
    pub puts: Tree,
    pub dels: Tree,
    /// The snapshot with the changes (module docs); `None` for an empty snapshot or after a
    /// failed change.
    pub fork: Option<Fork>,
}

impl WriteSet {
    /// An empty write set over the table's snapshot `base`; `fork`: keep a fork of it (see the
    /// module docs; the caller decides whether an install is likely).
    pub fn new(base: &Snapshot, fork: bool) -> WriteSet {
        WriteSet {
            puts: Tree::new(),
            dels: Tree::new(),
            fork: (fork && !base.is_empty()).then(|| base.fork()),
        }
    }

    /// Passes a put on to the fork (dropping the fork if it fails).
    pub fn fork_put(&mut self, key: &[u8], value: &[u8]) {
        if let Some(fork) = &mut self.fork {
            if fork.set(key, value).is_err() {
                self.fork = None;
            }
        }
    }

    /// Passes a removal on to the fork (dropping the fork if it fails).
    pub fn fork_remove(&mut self, key: &[u8]) {
        if let Some(fork) = &mut self.fork {
            if fork.remove(key).is_err() {
                self.fork = None;
            }
        }
    }

    /// The written keys, as two sets.
    pub fn keys(&self) -> [Keys<'_>; 2] {
        [Keys::Tree(&self.puts), Keys::Tree(&self.dels)]
    }

    /// Some written key (to name in a conflict), if any was written.
    pub fn any_key(&self) -> Result<Option<Vec<u8>>> {
        for tree in [&self.puts, &self.dels] {
            if let Some((key, _)) = tree.first().map_err(from_tree)? {
                return Ok(Some(key));
            }
        }
        Ok(None)
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.puts.is_empty() && self.dels.is_empty()
    }
}

/// What a serializable transaction read of one table.
#[derive(Default)]
pub(crate) struct ReadSet {
    points: Tree,
    ranges: Vec<KeyRange>,
}

impl ReadSet {
    pub fn add_point(&mut self, key: &[u8]) -> Result<()> {
        self.points.set(key, &[]).map_err(from_tree)?;
        Ok(())
    }

    /// Adds a range; returns its index (a cursor widens its span in place).
    pub fn add_range(&mut self, range: KeyRange) -> usize {
        self.ranges.push(range);
        self.ranges.len() - 1
    }

    pub fn set_range(&mut self, index: usize, range: KeyRange) {
        if let Some(slot) = self.ranges.get_mut(index) {
            *slot = range;
        }
    }

    pub fn points(&self) -> Keys<'_> {
        Keys::Tree(&self.points)
    }

    pub fn ranges(&self) -> &[KeyRange] {
        &self.ranges
    }

    /// Some key of the read set to name in a conflict (empty if it holds only ranges that
    /// start unbounded); `None` if nothing was read.
    pub fn any_key(&self) -> Option<Vec<u8>> {
        if let Ok(Some((key, _))) = self.points.first() {
            return Some(key);
        }
        self.ranges.first().map(|(lower, _)| match lower {
            Bound::Included(key) | Bound::Excluded(key) => key.clone(),
            Bound::Unbounded => Vec::new(),
        })
    }
}
