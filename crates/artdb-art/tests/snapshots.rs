//! Copy-on-write versions: every snapshot keeps reading exactly its version while the writer
//! goes on, on this thread and on others.

use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};

use artdb_art::{Snapshot, Tree};
use rand::{Rng, SeedableRng};

fn scale() -> usize {
    std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn contents(snapshot: &Snapshot) -> Model {
    snapshot
        .iter()
        .map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

fn random_write(tree: &mut Tree, model: &mut Model, rng: &mut impl Rng) {
    let key: Vec<u8> = match rng.gen_range(0..3) {
        0 => (rng.gen_range(0u32..3000)).to_be_bytes().to_vec(),
        1 => rng.gen::<u64>().to_be_bytes().to_vec(),
        _ => (0..rng.gen_range(0..12))
            .map(|_| rng.gen_range(b'a'..b'e'))
            .collect(),
    };
    if rng.gen_bool(0.3) {
        assert_eq!(tree.remove(&key).unwrap(), model.remove(&key));
    } else {
        let value: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen()).collect();
        assert_eq!(tree.insert(&key, &value).unwrap(), model.insert(key, value));
    }
}

/// A random seed (printed, so a failure can be replayed) and its generator.
fn seeded() -> (u64, rand::rngs::StdRng) {
    let seed = rand::random::<u64>();
    println!("seed {seed}");
    (seed, rand::rngs::StdRng::seed_from_u64(seed))
}

#[test]
fn every_snapshot_reads_its_version() {
    let (seed, mut rng) = seeded();
    let (mut tree, mut model) = (Tree::new(), Model::new());
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    for round in 0..200 * scale() {
        for _ in 0..rng.gen_range(0..30) {
            random_write(&mut tree, &mut model, &mut rng);
        }
        let snapshot = tree.snapshot();
        if round % 3 == 0 {
            // A second snapshot without writes in between shares the version.
            let again = tree.snapshot();
            assert_eq!(again.version(), snapshot.version());
        }
        snapshots.push((snapshot, model.clone()));
        if snapshots.len() > 40 {
            let index = rng.gen_range(0..snapshots.len());
            let (snapshot, frozen) = snapshots.swap_remove(index);
            assert_eq!(contents(&snapshot), frozen, "seed {seed}");
        }
    }
    tree.verify().unwrap();
    for (snapshot, frozen) in &snapshots {
        snapshot.verify().unwrap();
        assert_eq!(contents(snapshot), *frozen, "seed {seed}");
        assert_eq!(snapshot.len(), frozen.len() as u64);
        for key in frozen.keys().take(50) {
            assert_eq!(
                snapshot.get(key).unwrap(),
                frozen.get(key).map(Vec::as_slice)
            );
        }
    }
    // Everything retired is freed once the snapshots go.
    drop(snapshots);
    assert_eq!(tree.retired_len(), 0);
}

#[test]
fn writes_after_a_snapshot_copy_only_their_path() {
    let mut tree = Tree::new();
    for i in 0u32..5000 {
        tree.insert(&i.to_be_bytes(), b"v").unwrap();
    }
    let before = tree.stats();
    let snapshot = tree.snapshot();
    tree.insert(&77u32.to_be_bytes(), b"w").unwrap();
    // One key of 4 bytes: at most a handful of nodes on its path were copied.
    assert!(tree.retired_len() <= 4, "retired {}", tree.retired_len());
    assert_eq!(tree.stats().heap_bytes, before.heap_bytes);
    assert_eq!(snapshot.get(&77u32.to_be_bytes()).unwrap(), Some(&b"v"[..]));
    assert_eq!(tree.get(&77u32.to_be_bytes()).unwrap(), Some(&b"w"[..]));
    // A second write on the same path changes the copies in place.
    let retired = tree.retired_len();
    tree.insert(&78u32.to_be_bytes(), b"w").unwrap();
    assert_eq!(tree.retired_len(), retired);
}

#[test]
fn readers_on_other_threads_while_one_writer_writes() {
    let seed = rand::random::<u64>();
    println!("seed {seed}");
    let rounds = 60 * scale();
    let readers = 3;
    let mut senders = Vec::new();
    let mut handles = Vec::new();
    for _ in 0..readers {
        let (send, receive) = mpsc::channel::<(Snapshot, Arc<Model>)>();
        senders.push(send);
        handles.push(std::thread::spawn(move || {
            let mut checked = 0usize;
            while let Ok((snapshot, model)) = receive.recv() {
                assert_eq!(snapshot.len(), model.len() as u64);
                for (key, value) in model.iter().step_by(7) {
                    assert_eq!(snapshot.get(key).unwrap(), Some(value.as_slice()));
                }
                let got: Vec<Vec<u8>> = snapshot.iter().rev().map(|r| r.unwrap().0).collect();
                assert_eq!(got, model.keys().rev().cloned().collect::<Vec<_>>());
                checked += 1;
            }
            checked
        }));
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut tree = Tree::new();
    let mut model = Model::new();
    for _ in 0..rounds {
        for _ in 0..200 {
            random_write(&mut tree, &mut model, &mut rng);
        }
        let shared = Arc::new(model.clone());
        for send in &senders {
            send.send((tree.snapshot(), shared.clone())).unwrap();
        }
    }
    drop(senders);
    for handle in handles {
        assert_eq!(handle.join().unwrap(), rounds);
    }
    tree.verify().unwrap();
}

#[test]
fn snapshot_outlives_tree() {
    let mut tree = Tree::new();
    for i in 0u32..1000 {
        tree.insert(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
    }
    let snapshot = tree.snapshot();
    for i in 0u32..1000 {
        tree.remove(&i.to_be_bytes()).unwrap();
    }
    drop(tree);
    let reader = std::thread::spawn(move || {
        assert_eq!(snapshot.len(), 1000);
        assert_eq!(snapshot.iter().count(), 1000);
        assert_eq!(
            snapshot.get(&5u32.to_be_bytes()).unwrap(),
            Some(&5u32.to_le_bytes()[..])
        );
    });
    reader.join().unwrap();
}

#[test]
fn snapshot_is_send_sync_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Snapshot>();
    fn send<T: Send>() {}
    send::<Tree>();
}

#[test]
fn rollback_to_the_newest_snapshot_undoes_a_batch() {
    let seed = rand::random::<u64>();
    println!("seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut tree = Tree::new();
    let mut model = Model::new();
    let mut readers: Vec<(Snapshot, Model)> = Vec::new();
    for round in 0..60 * scale() {
        for _ in 0..rng.gen_range(0..60) {
            random_write(&mut tree, &mut model, &mut rng);
        }
        if round % 7 == 0 {
            // An older reader snapshot that must survive later rollbacks untouched.
            readers.push((tree.snapshot(), model.clone()));
        }
        let start = tree.snapshot();
        let mut scratch = model.clone();
        for _ in 0..rng.gen_range(0..80) {
            random_write(&mut tree, &mut scratch, &mut rng);
        }
        if rng.gen_bool(0.5) {
            tree.rollback_to(&start).unwrap();
            assert_eq!(tree.len(), model.len() as u64, "seed {seed}");
        } else {
            model = scratch;
        }
        drop(start);
        if round % 5 == 0 {
            tree.verify().unwrap();
            let got: Model = tree
                .iter()
                .map(|r| r.map(|(k, v)| (k, v.to_vec())))
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(got, model, "seed {seed}");
        }
        if readers.len() > 3 {
            let (snapshot, frozen) = readers.remove(0);
            assert_eq!(contents(&snapshot), frozen, "seed {seed}");
        }
    }
    for (snapshot, frozen) in &readers {
        assert_eq!(contents(snapshot), *frozen, "seed {seed}");
    }
}

#[test]
fn rollback_refuses_a_stale_or_foreign_snapshot() {
    let mut tree = Tree::new();
    tree.insert(b"a", b"1").unwrap();
    let old = tree.snapshot();
    tree.insert(b"b", b"2").unwrap();
    let _newer = tree.snapshot();
    tree.insert(b"c", b"3").unwrap();
    assert!(matches!(
        tree.rollback_to(&old),
        Err(artdb_art::Error::StaleSnapshot { .. })
    ));
    let mut other = Tree::new();
    other.insert(b"x", b"1").unwrap();
    let foreign = other.snapshot();
    assert!(tree.rollback_to(&foreign).is_err());
    assert_eq!(tree.len(), 3);
}

/// Regression (engine report 03:20): with a snapshot alive, every insert into a leaf pack copied
/// the pack and retired the copy (packs carried no version), so a batch of N inserts cost
/// O(N * pack size) time and memory. Here: nothing accumulates; `tests/no_leaks.rs` checks
/// with an allocation count that the fresh packs are written in place.
#[test]
fn inserts_with_a_snapshot_alive_write_fresh_nodes_in_place() {
    let n = 20_000u32 * scale() as u32;
    let mut tree = Tree::new();
    let reader = tree.snapshot();
    for i in 0..n {
        tree.insert(&i.to_be_bytes(), &(i as u64).to_le_bytes()[..7])
            .unwrap();
    }
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        tree.insert(&state.to_be_bytes(), &state.to_le_bytes())
            .unwrap();
    }
    // Only the few leaves turned into packs are retired, not one copy per insert.
    assert!(
        tree.retired_len() < (n / 50) as usize,
        "retired {}",
        tree.retired_len()
    );
    let stats = tree.stats();
    assert!(
        stats.heap_bytes < 40 * u64::from(n),
        "heap bytes {}",
        stats.heap_bytes
    );
    assert!(reader.is_empty());
    tree.verify().unwrap();
}

/// Fixed-width keys and values, so most writes land in leaf packs (the writer's fast path:
/// write/fast.rs): inserts into spare slots, replacements in place, and the same writes while
/// snapshots that reach the packs are alive (which must copy, not write in place). Every
/// snapshot keeps its version; replacements return the old value.
#[test]
fn pack_writes_under_snapshots_keep_every_version() {
    let (seed, mut rng) = seeded();
    let (mut tree, mut model) = (Tree::new(), Model::new());
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    for round in 0..60 * scale() {
        for _ in 0..rng.gen_range(0..200) {
            let key: Vec<u8> = match rng.gen_range(0..4) {
                // Dense 4-byte keys: one-byte-suffix packs that fill up and turn dense.
                0 => rng.gen_range(0u32..2000).to_be_bytes().to_vec(),
                // Random 8-byte keys from a small set: packs, and replacements.
                1 => (rng
                    .gen_range(0u64..3000)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .to_be_bytes()
                .to_vec(),
                // Keys under a long shared prefix: packs with prefixes, prefix splits.
                2 => {
                    let mut key = b"prefix:".to_vec();
                    key.extend_from_slice(&rng.gen_range(0u16..900).to_be_bytes());
                    key
                }
                _ => rng.gen::<u64>().to_be_bytes().to_vec(),
            };
            if rng.gen_bool(0.1) {
                assert_eq!(
                    tree.remove(&key).unwrap(),
                    model.remove(&key),
                    "seed {seed}"
                );
            } else {
                // Mostly one value width; now and then another (a burst).
                let width = if rng.gen_bool(0.97) { 8 } else { 3 };
                let value: Vec<u8> = (0..width).map(|_| rng.gen()).collect();
                if rng.gen_bool(0.5) {
                    assert_eq!(
                        tree.insert(&key, &value).unwrap(),
                        model.insert(key, value),
                        "seed {seed}"
                    );
                } else {
                    let replaced = tree.set(&key, &value).unwrap();
                    assert_eq!(replaced, model.insert(key, value).is_some(), "seed {seed}");
                }
            }
        }
        assert_eq!(tree.len(), model.len() as u64, "seed {seed}");
        if round % 2 == 0 {
            snapshots.push((tree.snapshot(), model.clone()));
        }
        if snapshots.len() > 8 {
            let index = rng.gen_range(0..snapshots.len());
            let (snapshot, frozen) = snapshots.swap_remove(index);
            assert_eq!(contents(&snapshot), frozen, "seed {seed}");
        }
    }
    tree.verify().unwrap();
    let everything: Model = tree
        .iter()
        .map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(everything, model, "seed {seed}");
    for (snapshot, frozen) in &snapshots {
        snapshot.verify().unwrap();
        assert_eq!(contents(snapshot), *frozen, "seed {seed}");
        for key in frozen.keys().take(100) {
            assert_eq!(
                snapshot.get(key).unwrap(),
                frozen.get(key).map(Vec::as_slice),
                "seed {seed}"
            );
        }
    }
    drop(snapshots);
    assert_eq!(tree.retired_len(), 0);
}
