//! fork: a private writer on a snapshot ([`Snapshot::fork`]), for a write transaction that
//! changes a table beside others: it writes copy-on-write on its snapshot's nodes, and at
//! commit [`Tree::install`] makes its root the tree's own when the tree has not moved since
//! the snapshot (nothing is copied again), or refuses (the caller then applies the changes).
//!
//! Argument (in the terms of write/cow.rs and write/rollback.rs). The base snapshot has version `s`; every
//! node it reaches is stamped `<= s`. The fork's writer stamps version `F = s + 1` and has a
//! private registry holding one permanent live version (0), so it never adopts a node in
//! place (`no_snapshots` is false) and never frees what it unlinks unless stamped `F` (its
//! own): every base object it unlinks, and every leaf it unlinks (leaves carry no version), goes
//! to its private retire list tagged `F`.
//! - Drop (abort): the retire list and the fork's tree are split by write/rollback.rs's parentage
//!   rule (a base leaf it unlinked is a child of a base node it copied, or the base root) and
//!   only what the fork built is freed; the base is untouched.
//! - Install into the tree `T` the snapshot came from: allowed only when `T` has the same
//!   registry, the base's root, writes version `F` (no snapshot taken of a changed tree since,
//!   so its version is still `s + 1`) and has not changed since its last snapshot. Then the
//!   fork's nodes (stamped `F`) are exactly as if `T` had made the writes itself: the fork's
//!   root becomes `T`'s, its retire list joins `T`'s registry tagged `F` (base objects are
//!   freed when no snapshot older than `F` lives, as for `T`'s own writes; fresh leaves in it
//!   reach nobody and are freed then too), and its released persisted offsets join `T`'s. A
//!   later `T::rollback_to` of the snapshot of version `s` undoes the install like any write.

use std::sync::Arc;

use crate::cursor::{Iter, Pair};
use crate::tree::Tree;
use crate::word;
use crate::write::cow::{Registry, Snapshot};
use crate::write::rollback::free_built_since;
use crate::write::writer::Writer;
use crate::Error;

/// A private writer on a snapshot (module docs). Dropping it frees what it built.
pub struct Fork {
    tree: Tree,
    base: Snapshot,
}

impl Snapshot {
    /// A private writer whose tree starts as this snapshot (module docs of `write/fork.rs`). O(1).
    pub fn fork(&self) -> Fork {
        let registry = Registry::new();
        // Never released: the fork must see a live snapshot at all times (module docs).
        registry.register(0);
        let writer = Writer {
            version: self.version() + 1,
            dirty: false,
            len: self.len(),
            registry,
            source: self.source().cloned(),
            released_persisted: Vec::new(),
            released_mark: 0,
        };
        Fork {
            tree: Tree::from_parts(self.root_bits(), writer),
            base: self.clone(),
        }
    }
}

impl Fork {
    /// Sets `key` to `value`; `true` if a value was replaced.
    pub fn set(&mut self, key: &[u8], value: &[u8]) -> Result<bool, Error> {
        self.tree.set(key, value)
    }

    /// Removes `key`; `true` if it was present.
    pub fn remove(&mut self, key: &[u8]) -> Result<bool, Error> {
        Ok(self.tree.remove(key)?.is_some())
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>, Error> {
        self.tree.get(key)
    }

    /// Number of keys (the base's, with the fork's changes).
    pub fn len(&self) -> u64 {
        self.tree.len()
    }

    /// Whether it holds no keys.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// All pairs in key order.
    pub fn iter(&self) -> Iter<'_> {
        self.tree.iter()
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Result<Option<Pair<'_>>, Error> {
        self.tree.first()
    }

    /// The snapshot it started from.
    pub fn base(&self) -> &Snapshot {
        &self.base
    }

    /// Unlinks everything: frees what the fork built and leaves its tree empty (the base is
    /// untouched).
    fn discard(&mut self) {
        let (root_slot, writer) = self.tree.parts_mut();
        let current = writer.version;
        let retired = writer.registry.drain_retired_at(current);
        free_built_since(root_slot, &retired, self.base.root_bits(), current);
        *root_slot = [0u8; 8];
        writer.len = 0;
        writer.released_persisted.clear();
    }
}

impl Drop for Fork {
    fn drop(&mut self) {
        // After `install`, the root is empty and the retire list drained: nothing to free.
        self.discard();
    }
}

impl Tree {
    /// Makes `fork`'s tree this tree's current version, if this tree is still at the fork's
    /// base (the same tree, not changed since the base snapshot was taken: see `write/fork.rs`):
    /// nothing is copied. Otherwise gives the fork back unchanged, and the caller applies the
    /// changes another way.
    pub fn install(&mut self, mut fork: Fork) -> Result<(), Fork> {
        let fork_version = fork.tree.version();
        let (root_slot, writer) = self.parts_mut();
        let same = Arc::ptr_eq(&writer.registry, fork.base.registry())
            && word::load(root_slot) == fork.base.root_bits()
            && writer.version == fork_version
            && !writer.dirty;
        if !same {
            return Err(fork);
        }
        let (fork_root, fork_writer) = fork.tree.parts_mut();
        let retired = fork_writer.registry.drain_retired_at(fork_version);
        writer.registry.retire_all(fork_version, &retired);
        *root_slot = *fork_root;
        *fork_root = [0u8; 8];
        writer.len = fork_writer.len;
        writer.dirty = fork_writer.dirty;
        writer
            .released_persisted
            .append(&mut fork_writer.released_persisted);
        fork_writer.len = 0;
        Ok(())
    }
}
