//! Copy-on-write versions: snapshots, the registry of live snapshot versions, and reclamation.
//!
//! Versions. The writer stamps every inner node it creates with its current version `V`
//! (`Header::version`). It writes a node in place only if `node.version == V`: such a node was
//! created after the last snapshot, so no snapshot can reach it. Any other node (older heap
//! node, persisted image) is copied first, and the copy is linked into the (already writable)
//! parent: a write copies exactly its path. `Tree::snapshot` publishes the current root as
//! version `V` and moves the writer to `V + 1`, only if something changed since the last
//! snapshot (otherwise the new snapshot shares the last one's version).
//!
//! Reclamation argument. Every heap image is owned by exactly one of: the writer's current tree
//! (reachable from its root) or the retire list (it was unlinked from the current tree). A node
//! unlinked while writing version `r` is reachable from snapshots of versions `< r` only (a
//! snapshot of version `s` holds the root as it was when `V` moved past `s`). So:
//! - a node stamped `V` is freed at once when unlinked (no snapshot has version `>= V`);
//! - with no live snapshot at all, anything unlinked is freed at once (checked with an atomic
//!   count: only the writer creates the first snapshot, so the count cannot rise concurrently);
//! - otherwise it goes to the retire list as `(r, word)` and is freed when no live snapshot has a
//!   version `< r`, i.e. when the smallest live version is `>= r` or none is live;
//! - when the tree is dropped while snapshots live, its root is parked in the registry; the last
//!   snapshot to go frees that whole tree (a walk) and the rest of the retire list. Whoever is
//!   last, tree or snapshot, frees everything that remains, exactly once.
//!
//! Freeing an unlinked node frees only that image, never its children: they are still linked
//! from the current tree (or were unlinked and retired on their own).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::lookup::{Resolver, View};
use crate::node;
use crate::persist::source::NodeSource;
use crate::word::{self, Word};

/// The shared bookkeeping of one tree and its snapshots.
pub(crate) struct Registry {
    state: Mutex<RegistryState>,
    live_count: AtomicUsize,
}

struct RegistryState {
    /// Live snapshot versions and how many `Snapshot` handles (distinct takes) hold each.
    live: BTreeMap<u64, usize>,
    /// Unlinked heap words and the version that unlinked them.
    retired: Vec<(u64, u64)>,
    /// The root of a dropped tree whose nodes snapshots may still share.
    orphan_root: Option<u64>,
}

impl Registry {
    pub fn new() -> Arc<Registry> {
        Arc::new(Registry {
            state: Mutex::new(RegistryState {
                live: BTreeMap::new(),
                retired: Vec::new(),
                orphan_root: None,
            }),
            live_count: AtomicUsize::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, RegistryState> {
        // A poisoned lock only means another thread panicked while holding it; the state is
        // still consistent because every update below is a single push/insert/remove.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether no snapshot is alive (and so none can read any node).
    #[inline]
    pub fn no_snapshots(&self) -> bool {
        self.live_count.load(Ordering::Acquire) == 0
    }

    pub fn register(&self, version: u64) {
        let mut state = self.lock();
        *state.live.entry(version).or_insert(0) += 1;
        self.live_count.fetch_add(1, Ordering::AcqRel);
    }

    pub fn retire(&self, version: u64, bits: u64) {
        self.lock().retired.push((version, bits));
    }

    /// [`Registry::retire`] for each of `words` (one lock).
    pub fn retire_all(&self, version: u64, words: &[u64]) {
        let mut state = self.lock();
        state
            .retired
            .extend(words.iter().map(|&bits| (version, bits)));
    }

    /// A snapshot of `version` is gone.
    pub fn release(&self, version: u64) {
        let mut state = self.lock();
        if let Some(count) = state.live.get_mut(&version) {
            *count -= 1;
            if *count == 0 {
                state.live.remove(&version);
            }
        }
        self.live_count.fetch_sub(1, Ordering::AcqRel);
        collect(&mut state);
    }

    /// The tree is gone; `root` is its current root word.
    pub fn tree_dropped(&self, root: u64) {
        let mut state = self.lock();
        state.orphan_root = Some(root);
        collect(&mut state);
    }

    /// Removes and returns the words retired while writing `version`.
    pub fn drain_retired_at(&self, version: u64) -> Vec<u64> {
        let mut state = self.lock();
        let mut drained = Vec::new();
        state.retired.retain(|&(retired_at, bits)| {
            if retired_at == version {
                drained.push(bits);
            }
            retired_at != version
        });
        drained
    }

    /// Retired entries (for stats and tests).
    pub fn retired_len(&self) -> usize {
        self.lock().retired.len()
    }
}

/// Frees what no live snapshot can reach.
fn collect(state: &mut RegistryState) {
    let oldest = state.live.keys().next().copied();
    state.retired.retain(|&(version, bits)| {
        let reachable = oldest.is_some_and(|oldest| oldest < version);
        if !reachable {
            // SAFETY: `bits` was unlinked from the current tree while writing `version`; only
            // snapshots older than `version` could reach it and none is alive (module docs).
            unsafe { free_word(bits) };
        }
        reachable
    });
    if oldest.is_none() {
        if let Some(root) = state.orphan_root.take() {
            // SAFETY: the tree is dropped and no snapshot is alive: nothing can reach its nodes.
            unsafe { free_tree(root) };
        }
    }
}

/// Frees the single heap image a word names (nothing for other words).
///
/// # Safety
/// The word's heap image (if any) is live and nothing will reach it again.
pub(crate) unsafe fn free_word(bits: u64) {
    match word::decode(bits) {
        // SAFETY: a live inner image of ours that nothing reaches again (caller).
        Word::HeapNode(address) => unsafe { node::free_heap_inner(address) },
        // SAFETY: a live leaf of ours that nothing reaches again (caller).
        Word::HeapLeaf(address) => unsafe { node::free_heap_leaf(address) },
        _ => {}
    }
}

/// Frees every heap image reachable from `root` (persisted images are the engine's).
///
/// # Safety
/// Every heap image reachable from `root` is live, reachable only through `root`, and nothing
/// will reach any of them again.
pub(crate) unsafe fn free_tree(root: u64) {
    let mut pending = vec![root];
    while let Some(bits) = pending.pop() {
        if let Word::HeapNode(address) = word::decode(bits) {
            // SAFETY: a live inner image of ours (caller); the view ends before it is freed.
            let inner = unsafe { node::heap_inner(address) };
            pending.push(word::load(inner.value_slot()));
            let mut start = 0usize;
            while let Some((byte, slot)) = inner.next_from(start) {
                pending.push(word::load(slot));
                start = byte as usize + 1;
            }
        }
        // SAFETY: live and unreachable from now on (caller); children were collected above.
        unsafe { free_word(bits) };
    }
}

/// An immutable version of the tree. `Send + Sync + Clone`; taking one is O(1).
///
/// Reads borrow from the snapshot; the nodes it reaches are never changed and are freed only
/// after the last clone of it is dropped.
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

struct SnapshotInner {
    root: [u8; 8],
    len: u64,
    version: u64,
    registry: Arc<Registry>,
    source: Option<Arc<dyn NodeSource>>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        self.registry.release(self.version);
    }
}

impl Snapshot {
    pub(crate) fn new(
        root: u64,
        len: u64,
        version: u64,
        registry: Arc<Registry>,
        source: Option<Arc<dyn NodeSource>>,
    ) -> Snapshot {
        registry.register(version);
        Snapshot {
            inner: Arc::new(SnapshotInner {
                root: root.to_le_bytes(),
                len,
                version,
                registry,
                source,
            }),
        }
    }

    pub(crate) fn root_bits(&self) -> u64 {
        word::load(&self.inner.root)
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.inner.registry
    }

    pub(crate) fn source(&self) -> Option<&Arc<dyn NodeSource>> {
        self.inner.source.as_ref()
    }

    #[inline]
    pub(crate) fn view(&self) -> View<'_> {
        View {
            root: &self.inner.root,
            resolver: Resolver {
                source: self.inner.source.as_deref(),
            },
        }
    }

    /// Number of keys.
    pub fn len(&self) -> u64 {
        self.inner.len
    }

    /// Whether the snapshot has no keys.
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }

    /// The version number of this snapshot (increases with every snapshot of a changed tree).
    pub fn version(&self) -> u64 {
        self.inner.version
    }
}
