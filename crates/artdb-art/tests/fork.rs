//! Forks (`Snapshot::fork`, `Tree::install`): a private writer on a snapshot matches a
//! `BTreeMap` model; dropping it leaves its base untouched; installing it into an unchanged
//! tree makes the tree equal to the fork without copying (the install allocates O(log n) for its
//! retire list, nothing per change); a
//! tree that moved refuses it; a rollback undoes an install; and a counting global allocator
//! shows every byte returned at the end (no leak, and valgrind finds no double free).
//!
//! This binary holds a single test, and the allocator counts only what the test's own thread
//! allocates and frees while the test runs: libtest's main thread allocates while it waits for
//! the test (a channel wait's thread context), which made the byte count fail now and then.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, Ordering};

use artdb_art::{Snapshot, Tree};
use rand::{Rng, SeedableRng};

struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Whether this thread's allocations are counted (const-initialised, no destructor: reading
    /// it never allocates, so the allocator may read it).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTED.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counted() {
            LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counted() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LIVE_BYTES.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live bytes: the counted thread's from the global allocator, and the image arena's (its live
/// images by the bytes they asked for, and its chunks, which it maps outside the allocator).
fn live() -> isize {
    let arena = artdb_art::arena_stats();
    LIVE_BYTES.load(Ordering::SeqCst)
        + arena.image_bytes as isize
        + (arena.held_bytes - arena.spare_bytes) as isize
}

/// Allocations so far: the counted thread's from the global allocator, and the images the
/// tree's arena served (packs and large nodes, which take no global allocation of their own).
fn allocations() -> isize {
    ALLOCATIONS.load(Ordering::SeqCst) + artdb_art::arena_stats().allocations as isize
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(rng: &mut impl Rng, space: u32) -> Vec<u8> {
    let k: u32 = rng.gen_range(0..space);
    // Mixed lengths: shared prefixes, prefixes of other keys, inline and leaf values.
    let mut bytes = k.to_be_bytes().to_vec();
    bytes.truncate(1 + (k as usize % 4));
    bytes
}

fn value(rng: &mut impl Rng) -> Vec<u8> {
    let len = rng.gen_range(0..24usize);
    (0..len).map(|_| rng.gen()).collect()
}

fn contents(pairs: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), artdb_art::Error>>) -> Model {
    pairs.map(|pair| pair.expect("heap trees read")).collect()
}

fn tree_contents(tree: &Tree) -> Model {
    contents(tree.iter().map(|item| item.map(|(k, v)| (k, v.to_vec()))))
}

fn snapshot_contents(snapshot: &Snapshot) -> Model {
    contents(
        snapshot
            .iter()
            .map(|item| item.map(|(k, v)| (k, v.to_vec()))),
    )
}

/// Random sets and removes on `fork` and `model` alike.
fn churn(rng: &mut impl Rng, fork: &mut artdb_art::Fork, model: &mut Model, ops: usize) {
    for _ in 0..ops {
        let k = key(rng, 1 << 18);
        if rng.gen_bool(0.3) {
            let was = fork.remove(&k).expect("remove");
            assert_eq!(was, model.remove(&k).is_some());
        } else {
            let v = value(rng);
            let replaced = fork.set(&k, &v).expect("set");
            assert_eq!(replaced, model.insert(k, v).is_some());
        }
    }
    assert_eq!(fork.len(), model.len() as u64);
}

#[test]
fn forks_match_the_model_install_without_copying_and_free_everything() {
    COUNTED.with(|counted| counted.set(true));
    let start = live();
    let mut rng = rand::rngs::StdRng::seed_from_u64(10);
    for round in 0..12 {
        let mut tree = Tree::new();
        let mut model = Model::new();
        for _ in 0..rng.gen_range(0..3000) {
            let (k, v) = (key(&mut rng, 1 << 18), value(&mut rng));
            tree.insert(&k, &v).expect("insert");
            model.insert(k, v);
        }
        let base = tree.snapshot();
        let mut fork = base.fork();
        let mut forked = model.clone();
        churn(&mut rng, &mut fork, &mut forked, 2000);
        let fork_pairs = contents(fork.iter().map(|item| item.map(|(k, v)| (k, v.to_vec()))));
        assert_eq!(
            fork_pairs, forked,
            "round {round}: the fork reads its changes"
        );
        assert_eq!(snapshot_contents(&base), model, "the base is untouched");
        match round % 4 {
            // Abort: the tree and its snapshot stay as they were.
            0 => {
                drop(fork);
                assert_eq!(tree_contents(&tree), model);
            }
            // Install into the unchanged tree: no allocation, the tree is the fork.
            1 | 2 => {
                let before = allocations();
                let installed = tree.install(fork);
                let allocated = allocations() - before;
                assert!(installed.is_ok(), "an unchanged tree takes the fork");
                // Only the retire list's vectors grow (by doubling): O(log n), never per change
                // (2000 changes here; applying them would allocate thousands of nodes).
                assert!(allocated <= 40, "install copied: {allocated} allocations");
                assert_eq!(tree_contents(&tree), forked);
                assert_eq!(
                    snapshot_contents(&base),
                    model,
                    "readers of the base still see it"
                );
                if round % 4 == 2 {
                    // A failed commit after the install rolls it back like any write.
                    tree.rollback_to(&base).expect("rollback");
                    assert_eq!(tree_contents(&tree), model);
                } else {
                    // The tree goes on writing over the installed nodes.
                    let mut more = forked.clone();
                    for _ in 0..500 {
                        let (k, v) = (key(&mut rng, 1 << 18), value(&mut rng));
                        tree.insert(&k, &v).expect("insert");
                        more.insert(k, v);
                    }
                    let after = tree.snapshot();
                    assert_eq!(snapshot_contents(&after), more);
                }
            }
            // The tree moved since the base: the fork is refused and dropped.
            _ => {
                tree.insert(b"moved", b"1").expect("insert");
                let _moved = tree.snapshot();
                let refused = tree.install(fork);
                assert!(refused.is_err(), "a tree that moved refuses the fork");
                model.insert(b"moved".to_vec(), b"1".to_vec());
                drop(refused);
                assert_eq!(tree_contents(&tree), model);
            }
        }
        drop(base);
    }
    let end = live();
    COUNTED.with(|counted| counted.set(false));
    assert!(
        ALLOCATIONS.load(Ordering::SeqCst) > 0,
        "the test's allocations were counted"
    );
    assert_eq!(end, start, "every byte is returned");
}
