//! Issue 10 item 4: a transaction that no other commit overlapped is not copied again at
//! commit. Its changes were built copy-on-write on its snapshot's tree as it wrote (its fork),
//! and the commit installs that tree as the table's. A counting global allocator measures the
//! commit itself: with the fork installed it allocates at least one object per changed key less
//! than the same commit after another transaction changed the table (which must apply every
//! change again, one new leaf per put at least). `Db::stats().txn` counts both paths, and the
//! result is checked against a model, across a checkpoint and a reopen.
//!
//! This binary holds a single test so that no other test allocates concurrently.

mod common;

use artdb::io::Storage;
use artdb::WriteOptions;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const KEYS: u64 = 20_000;
const CHANGED: u64 = 4_000;

fn key(i: u64) -> Vec<u8> {
    // Spread out (a multiplicative hash), so changes touch many paths.
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16)
        .to_be_bytes()
        .to_vec()
}

/// Values longer than an inline value: every put needs a leaf.
fn value(i: u64, round: u64) -> Vec<u8> {
    format!("value-{round:04}-{i:012}").into_bytes()
}

/// One transaction's changes: `CHANGED` updates, a few inserts and removals.
fn change(txn: &mut artdb::Transaction, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, round: u64) {
    for j in 0..CHANGED {
        let i = (j * 5 + round) % KEYS;
        txn.insert("t", &key(i), &value(i, round)).expect("insert");
        model.insert(key(i), value(i, round));
    }
    for j in 0..100 {
        let i = KEYS + round * 100 + j;
        txn.insert("t", &key(i), &value(i, round)).expect("insert");
        model.insert(key(i), value(i, round));
    }
    for j in 0..100 {
        let i = (j * 97 + round * 13 + 1) % KEYS;
        let removed = txn.remove("t", &key(i)).expect("remove");
        assert_eq!(removed, model.remove(&key(i)).is_some());
    }
}

/// Allocations made by `commit` (this thread is the only one allocating).
fn commit_allocations(txn: artdb::Transaction) -> u64 {
    let before = allocations();
    txn.commit().expect("commit");
    allocations() - before
}

/// Allocations so far: the global allocator's, and the tree images (packs and large nodes)
/// that artdb-art's image arena served without one.
fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::SeqCst) + artdb_art::arena_stats().allocations
}

#[test]
fn a_commit_nobody_overlapped_installs_its_tree_instead_of_copying() {
    let (storage, db) = common::memory_db();
    db.create_table("t").expect("create");
    let mut model = BTreeMap::new();
    db.transact(|txn| {
        for i in 0..KEYS {
            txn.insert("t", &key(i), &value(i, 0))?;
        }
        Ok(())
    })
    .expect("fill");
    for i in 0..KEYS {
        model.insert(key(i), value(i, 0));
    }
    let mut measured = Vec::new();
    // Rounds 1 and 2 over heap trees, 3 and 4 over persisted ones (after a checkpoint).
    for round in 1..=4u64 {
        if round == 3 {
            db.checkpoint().expect("checkpoint");
        }
        let before = db.stats().expect("stats").txn;
        // Not overlapped: installed.
        let mut alone = db.begin_write(WriteOptions::default()).expect("begin");
        change(&mut alone, &mut model, round * 2);
        let installed = commit_allocations(alone);
        let after = db.stats().expect("stats").txn;
        assert_eq!(
            after.tables_installed_at_commit,
            before.tables_installed_at_commit + 1
        );
        assert_eq!(
            after.tables_reapplied_at_commit,
            before.tables_reapplied_at_commit
        );
        // Overlapped by a commit to another key of the table: applied again.
        let mut late = db.begin_write(WriteOptions::default()).expect("begin");
        change(&mut late, &mut model, round * 2 + 1);
        db.transact(|txn| txn.insert("t", b"other", b"x"))
            .expect("other commit");
        model.insert(b"other".to_vec(), b"x".to_vec());
        let reapplied = commit_allocations(late);
        let last = db.stats().expect("stats").txn;
        // Both applied: `late`, and the other commit (it began while `late` was live, so it
        // kept no fork: see txn/write_set.rs).
        assert_eq!(
            last.tables_reapplied_at_commit,
            after.tables_reapplied_at_commit + 2
        );
        assert!(
            installed + CHANGED <= reapplied,
            "round {round}: the installed commit allocated {installed}, the reapplied one \
             {reapplied}: installing saved less than one allocation per changed key"
        );
        measured.push((installed, reapplied));
        assert_eq!(
            common::dump(&db).expect("dump").get("t"),
            Some(&model),
            "round {round}"
        );
    }
    println!("allocations at commit (installed, reapplied), {CHANGED} keys changed: {measured:?}");
    db.close().expect("close");
    let db = artdb::Db::open_in(storage as Arc<dyn Storage>, common::no_drop_checkpoint())
        .expect("reopen");
    assert_eq!(common::dump(&db).expect("dump").get("t"), Some(&model));
}
