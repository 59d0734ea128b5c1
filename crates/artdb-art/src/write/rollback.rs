//! `Tree::rollback_to`: return the writer to the newest snapshot, freeing what was built since.
//!
//! Precondition: the snapshot is the newest version of this tree (`version == writer - 1`), so
//! everything written since it was written in the current version `V` while it was alive. Then
//! (write/cow.rs): every inner node created since carries `V` and is linked in the tree (an unlinked
//! one was freed at once); every object of the snapshot that was unlinked since sits in the
//! retire list tagged `V` (nothing is freed early while a snapshot lives, and nothing is changed
//! in place). Leaves and packs carry no version, so the fresh ones are told apart from the
//! snapshot's by parentage: a snapshot leaf that is no longer under its snapshot parent was
//! moved away when that parent was copied, so the parent (version < V) is in the retire list
//! tagged `V`; the set K of children of those parents, plus the snapshot root, holds every
//! snapshot leaf that is now retired or under a new node. Fresh leaves are never in K.
//!
//! Rollback therefore: takes the entries tagged `V` off the retire list (snapshot objects are
//! linked again; fresh leaves among them are freed), frees the `V` nodes of the current tree and
//! the fresh leaves below them, and installs the snapshot's root and length.

use std::collections::HashSet;
use std::sync::Arc;

use crate::node;
use crate::tree::Tree;
use crate::word::{self, Word};
use crate::write::cow::Snapshot;
use crate::Error;

/// Child words (and the value word) of the heap inner node at `address`.
fn children(address: usize, out: &mut Vec<u64>) {
    // SAFETY: callers pass live heap inner nodes of this tree; the view ends here.
    let inner = unsafe { node::heap_inner(address) };
    out.push(word::load(inner.value_slot()));
    let mut start = 0usize;
    while let Some((byte, slot)) = inner.next_from(start) {
        out.push(word::load(slot));
        start = byte as usize + 1;
    }
}

fn version_of(address: usize) -> u64 {
    // SAFETY: callers pass live heap inner nodes of this tree; the view ends here.
    unsafe { node::heap_inner(address) }.header().version()
}

impl Tree {
    /// Returns the tree to `snapshot`, which must be the newest snapshot taken of this tree
    /// (else `Error::StaleSnapshot`): undoes every write made since, freeing what they built,
    /// and restores the persisted-release list to its length at that snapshot. Used to abort a
    /// write batch that began with `snapshot()`. Offsets drained with
    /// [`Tree::take_released_persisted`] after that snapshot are linked again by the rollback:
    /// drain only when a batch commits.
    pub fn rollback_to(&mut self, snapshot: &Snapshot) -> Result<(), Error> {
        let current = self.version();
        let stale = Error::StaleSnapshot {
            version: snapshot.version(),
            writing: current,
        };
        let (root_slot, writer) = self.parts_mut();
        if !Arc::ptr_eq(snapshot.registry(), &writer.registry) || snapshot.version() + 1 != current
        {
            return Err(stale);
        }
        let retired = writer.registry.drain_retired_at(current);
        free_built_since(root_slot, &retired, snapshot.root_bits(), current);
        *root_slot = snapshot.root_bits().to_le_bytes();
        writer.len = snapshot.len();
        writer.dirty = false;
        let mark = writer.released_mark.min(writer.released_persisted.len());
        writer.released_persisted.truncate(mark);
        Ok(())
    }
}

/// Frees what a writer at version `current` built since the version whose root was `base_root`
/// (the argument in the module docs): the fresh objects among `retired` (the retire entries
/// tagged `current`), and the nodes of version `current` reachable from `root_slot` with the
/// fresh leaves below them. Objects of the base (including those in `retired`) are left alone.
/// The caller then unlinks `root_slot` (installs another root).
pub(crate) fn free_built_since(root_slot: &[u8; 8], retired: &[u64], base_root: u64, current: u64) {
    let mut snapshot_children: HashSet<u64> = HashSet::new();
    snapshot_children.insert(base_root);
    let mut scratch = Vec::new();
    for &bits in retired {
        if let Word::HeapNode(address) = word::decode(bits) {
            if version_of(address) < current {
                scratch.clear();
                children(address, &mut scratch);
                snapshot_children.extend(scratch.iter().copied());
            }
        }
    }
    let fresh = |bits: u64| match word::decode(bits) {
        Word::HeapNode(address) => version_of(address) == current,
        Word::HeapLeaf(_) => !snapshot_children.contains(&bits),
        // (A pack stamped with V is also fresh; the parentage test above already says so.)
        _ => false,
    };
    let mut doomed: Vec<u64> = retired
        .iter()
        .copied()
        .filter(|&bits| fresh(bits))
        .collect();
    // The current tree's new part: nodes of version V and the fresh leaves below them.
    let mut pending = vec![word::load(root_slot)];
    while let Some(bits) = pending.pop() {
        if !fresh(bits) {
            continue;
        }
        if let Word::HeapNode(address) = word::decode(bits) {
            children(address, &mut pending);
        }
        doomed.push(bits);
    }
    for bits in doomed {
        // SAFETY: built since the base version (argument above), unreachable from it and from
        // every older snapshot, and unlinked by the caller right after.
        unsafe { crate::write::cow::free_word(bits) };
    }
}
