//! Wide packs (issue 13): leaf packs of values over `PACK_VALUE_WIDTH_MAX` bytes (kind 8), whose
//! sorted records hold a value slot and whose values sit in an area of their own, so that an
//! insert moves the suffixes and slots but not the values (node/pack/wide.rs). Model tests against
//! `BTreeMap` over trees that are inserted, bulk-built or bulk-persisted, with W1's shape (random
//! 8-byte keys, ~150 and more under one 2-byte prefix, so packs fill, take in-place inserts into
//! spare slots, are copied when full and burst at their capacity), removals (in place: the last
//! value moves into the freed slot), replacements, values of another width (burst), snapshots
//! (copy-on-write), checkpoints (persisted wide packs read, copied and rewritten); every read
//! path is compared: `get` of present and absent keys, `get_many`, iteration both ways, ranges,
//! cursor seek / next / prev; `verify()` every few steps. Then the typed errors for corrupt
//! wide-pack images.

use std::sync::Arc;

mod common;
use common::{
    check_snapshot, check_tree, checkpoint, drop_snapshots, finish_run, first_error, range_matches,
    scale, seek_matches, start_tree, take_snapshot, Model, Snapshots, Start, TruncatedStore,
};

use artdb_art::{Error, MemoryNodeStore, Snapshot, Tree};
use proptest::prelude::*;

/// 8-byte keys: one of three 2-byte prefixes (0x0000, 0x0001, 0x7F7F), then 6 bytes of `tail`.
fn key(prefix: usize, tail: u64) -> Vec<u8> {
    let prefix: [u8; 2] = match prefix % 3 {
        0 => [0, 0],
        1 => [0, 1],
        _ => [0x7F, 0x7F],
    };
    let mut key = prefix.to_vec();
    key.extend_from_slice(&tail.to_be_bytes()[2..]);
    key
}

fn value(seed: u64, width: usize) -> Vec<u8> {
    (0..width)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i as u64 * 7) >> 3) as u8)
        .collect()
}

/// Tails spread over a small space (so removals and replacements meet present keys) or over
/// all 6 bytes.
fn tail() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..600, any::<u64>().prop_map(|t| t & 0xFFFF_FFFF_FFFF)]
}

#[derive(Debug, Clone)]
enum Op {
    Insert(usize, u64, u64),
    /// An insert whose value has another width (a pack holding its neighbours must burst).
    InsertOtherWidth(usize, u64, u64),
    Remove(usize, u64),
    /// Inserts `n` keys of one prefix (packs fill up, are copied and burst).
    Fill(usize, u64, u16),
    /// Removes every key of a prefix whose tail is `residue` modulo 3.
    Thin(usize, u8),
    Seek(usize, u64, bool, u8),
    Range(usize, u64, usize, u64),
    Snapshot,
    DropSnapshots,
    Checkpoint(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (any::<usize>(), tail(), any::<u64>()).prop_map(|(p, t, v)| Op::Insert(p, t, v)),
        1 => (any::<usize>(), tail(), any::<u64>())
            .prop_map(|(p, t, v)| Op::InsertOtherWidth(p, t, v)),
        6 => (any::<usize>(), tail()).prop_map(|(p, t)| Op::Remove(p, t)),
        1 => (any::<usize>(), any::<u64>(), 1u16..300).prop_map(|(p, s, n)| Op::Fill(p, s, n)),
        1 => (any::<usize>(), 0u8..3).prop_map(|(p, r)| Op::Thin(p, r)),
        3 => (any::<usize>(), tail(), any::<bool>(), 0u8..120)
            .prop_map(|(p, t, back, n)| Op::Seek(p, t, back, n)),
        2 => (any::<usize>(), tail(), any::<usize>(), tail())
            .prop_map(|(p, t, q, u)| Op::Range(p, t, q, u)),
        1 => Just(Op::Snapshot),
        1 => Just(Op::DropSnapshots),
        1 => any::<bool>().prop_map(Op::Checkpoint),
    ]
}

/// Point reads of every model key, of its neighbours (tail +- 1, absent or present), and of a
/// shorter and a longer key, against the model; one-at-a-time and batched.
fn check_points(tree: &Tree, model: &Model) -> Result<(), TestCaseError> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for k in model.keys() {
        keys.push(k.clone());
        let mut next = k.clone();
        next[7] = next[7].wrapping_add(1);
        keys.push(next);
        let mut before = k.clone();
        before[7] = before[7].wrapping_sub(1);
        keys.push(before);
    }
    keys.push(key(0, 5)[..7].to_vec());
    let mut longer = key(1, 5);
    longer.push(0);
    keys.push(longer);
    for key in &keys {
        prop_assert_eq!(tree.get(key).unwrap(), model.get(key).map(Vec::as_slice));
    }
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let mut values = Vec::new();
    tree.get_many(&refs, &mut values).unwrap();
    for (key, value) in refs.iter().zip(&values) {
        prop_assert_eq!(*value, model.get(*key).map(Vec::as_slice));
    }
    Ok(())
}

fn check_all(tree: &Tree, model: &Model) -> Result<(), TestCaseError> {
    check_tree(tree, model, check_points)
}

fn run(
    start: Start,
    width: usize,
    initial: Vec<(usize, u64)>,
    ops: Vec<Op>,
) -> Result<(), TestCaseError> {
    let mut model = Model::new();
    for (prefix, tail) in initial {
        model.insert(key(prefix, tail), value(tail, width));
    }
    let mut store = MemoryNodeStore::new();
    let mut tree = start_tree(start, &model, &mut store);
    let stats = tree.stats();
    prop_assert_eq!(stats.packs, stats.wide_packs, "{:?}", stats);
    if model.len() >= 2 {
        prop_assert!(stats.wide_packs > 0, "{:?}", stats);
    }
    check_all(&tree, &model)?;
    let mut snapshots = Snapshots::new();
    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Insert(prefix, tail, seed) => {
                let (k, v) = (key(prefix, tail), value(seed, width));
                let old = tree.insert(&k, &v).unwrap();
                prop_assert_eq!(old, model.insert(k, v));
            }
            Op::InsertOtherWidth(prefix, tail, seed) => {
                let other = if seed % 2 == 0 {
                    width - 1 - seed as usize % 8
                } else {
                    width + 1
                };
                let (k, v) = (key(prefix, tail), value(seed, other.min(300)));
                let old = tree.insert(&k, &v).unwrap();
                prop_assert_eq!(old, model.insert(k, v));
            }
            Op::Remove(prefix, tail) => {
                let k = key(prefix, tail);
                prop_assert_eq!(tree.remove(&k).unwrap(), model.remove(&k));
            }
            Op::Fill(prefix, seed, n) => {
                let mut state = seed | 1;
                for _ in 0..n {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let (k, v) = (key(prefix, state), value(state, width));
                    let old = tree.insert(&k, &v).unwrap();
                    prop_assert_eq!(old, model.insert(k, v));
                }
            }
            Op::Thin(prefix, residue) => {
                let doomed: Vec<Vec<u8>> = model
                    .keys()
                    .filter(|k| k[..2] == key(prefix, 0)[..2])
                    .filter(|k| k[7] % 3 == residue)
                    .cloned()
                    .collect();
                for k in doomed {
                    prop_assert_eq!(tree.remove(&k).unwrap(), model.remove(&k));
                }
            }
            Op::Seek(prefix, tail, back, steps) => {
                seek_matches(&tree, &model, &key(prefix, tail), back, steps)?;
            }
            Op::Range(p, t, q, u) => {
                let (a, b) = (key(p, t), key(q, u));
                range_matches(&tree, &model, a, b)?;
            }
            Op::Snapshot => take_snapshot(&mut snapshots, &mut tree, &model),
            Op::DropSnapshots => drop_snapshots(&mut snapshots)?,
            Op::Checkpoint(adopt) => {
                tree = checkpoint(&mut tree, &mut store, adopt);
                check_all(&tree, &model)?;
            }
        }
        if step % 8 == 7 {
            check_all(&tree, &model)?;
        }
    }
    finish_run(&mut tree, &mut store, &model, &snapshots, check_all)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48 * scale(), ..ProptestConfig::default() })]

    #[test]
    fn wide_packs_behave_like_the_model(
        start in prop_oneof![
            Just(Start::Inserted), Just(Start::BulkBuilt), Just(Start::SliceBuilt),
            Just(Start::BulkPersisted),
        ],
        width in prop_oneof![
            Just(artdb_art::PACK_VALUE_WIDTH_MAX + 1), Just(128usize),
            Just(artdb_art::PACK_WIDE_VALUE_WIDTH_MAX),
        ],
        initial in proptest::collection::vec((0usize..3, tail()), 0..400),
        ops in proptest::collection::vec(op(), 0..50),
    ) {
        run(start, width, initial, ops)?;
    }
}

/// W1's shape at a small scale: random 8-byte keys with 128-byte values under a few 2-byte
/// prefixes, inserted in random order (in-place inserts into spare slots, copies of full packs,
/// bursts past the capacity), removed in place (values moved into freed slots), replaced, with
/// a snapshot alive over part of the run (copies instead of in-place changes), then persisted.
#[test]
fn wide_pack_lifecycle() {
    let mut tree = Tree::new();
    let mut model = Model::new();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let keys: Vec<Vec<u8>> = (0..3_000).map(|i| key(i % 13, next())).collect();
    let mut snapshot: Option<(Snapshot, Model)> = None;
    for round in 0..4u64 {
        for (i, k) in keys.iter().enumerate() {
            let r = next();
            match (r % 5, round) {
                (0, _) | (1, _) | (2, 0) => {
                    let v = value(r, 128);
                    assert_eq!(tree.insert(k, &v).unwrap(), model.insert(k.clone(), v));
                }
                (3, _) => assert_eq!(tree.remove(k).unwrap(), model.remove(k)),
                _ => assert_eq!(tree.get(k).unwrap(), model.get(k).map(Vec::as_slice)),
            }
            if i % 700 == 0 {
                if let Some((old, frozen)) = snapshot.take() {
                    check_snapshot(&old, &frozen).unwrap();
                }
                if round % 2 == 1 {
                    snapshot = Some((tree.snapshot(), model.clone()));
                }
            }
        }
        check_all(&tree, &model).unwrap();
        let stats = tree.stats();
        assert!(stats.wide_packs > 0, "{stats:?}");
        assert_eq!(stats.packs, stats.wide_packs, "{stats:?}");
    }
    let mut store = MemoryNodeStore::new();
    let reopened = checkpoint(&mut tree, &mut store, false);
    check_all(&reopened, &model).unwrap();
    assert!(reopened.stats().wide_packs > 0);
}

/// The memory a wide pack saves: 2,000 random keys with 128-byte values, ~154 under each of 13
/// 4-byte prefixes, against a leaf per key (what the tree made before wide packs: a leaf of
/// 8 + 4 + 128 bytes per key, in a Node256 of 2,080 bytes per prefix; the allocator adds ~16
/// bytes per leaf on top, which `heap_bytes` does not count).
#[test]
fn wide_packs_are_smaller_than_leaves() {
    let mut tree = Tree::new();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..2_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // ~150 keys under each prefix, as under each 2-byte prefix at 10M random keys.
        tree.insert(&key(0, state % 0x0D_0000_0000), &value(state, 128))
            .unwrap();
    }
    let stats = tree.stats();
    assert!(stats.wide_packs > 0, "{stats:?}");
    let leaves = 2_000 * (8 + 4 + 128) + 13 * 2_080;
    assert!(
        stats.heap_bytes < leaves,
        "{} heap bytes for 2,000 keys (leaves: {leaves})",
        stats.heap_bytes
    );
}

/// Runs of one-byte suffixes with wide values (the engine's `sigkill` test found this: 2,000
/// keys `[n, i]` with 40-byte values): 256 of them under one prefix is a full run, which for
/// values of up to 16 bytes becomes a dense pack; with wider values it must stay a wide pack
/// with its fence. Inserted in order and in reverse, through a fork, bulk-built, slice-built,
/// bulk-persisted and checkpointed; then removed one by one.
#[test]
fn full_runs_of_one_byte_suffixes_with_wide_values() {
    for width in [17usize, 40, 100, 255] {
        // 255-byte values: a wide pack of one-byte suffixes holds 107, so a run of 256 bursts
        // into a node of leaves.
        let packed = artdb_art::pack_capacity_max_for(1, width) >= 256;
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0u64..2_000)
            .map(|i| {
                (
                    [7u64.to_be_bytes(), i.to_be_bytes()].concat(),
                    value(i, width),
                )
            })
            .collect();
        let model: Model = pairs.iter().cloned().collect();
        let check = |tree: &Tree, label: &str| {
            check_all(tree, &model).unwrap();
            let stats = tree.stats();
            assert_eq!(stats.dense_packs, 0, "{stats:?}");
            assert_eq!(stats.packs, stats.wide_packs, "{stats:?}");
            // (`bulk_build_slice` bounds packs by 16 KiB of whole records, so its runs of
            // 100-byte values burst: conservative, see docs/journal/art.md, "Wide pack".)
            let slice_burst = label == "slice" && width > 60;
            assert!(
                !packed || slice_burst || stats.wide_packs >= 7,
                "{label} {width}: {stats:?}"
            );
        };
        let mut ascending = Tree::new();
        for (k, v) in &pairs {
            ascending.insert(k, v).unwrap();
        }
        check(&ascending, "ascending");
        let mut descending = Tree::new();
        for (k, v) in pairs.iter().rev() {
            descending.insert(k, v).unwrap();
        }
        check(&descending, "descending");
        let mut forked = Tree::new();
        let base = forked.snapshot();
        let mut fork = base.fork();
        for (k, v) in &pairs {
            fork.set(k, v).unwrap();
        }
        drop(base);
        assert!(forked.install(fork).is_ok());
        check(&forked, "forked");
        check(&Tree::bulk_build(pairs.iter().cloned()).unwrap(), "bulk");
        check(&Tree::bulk_build_slice(&pairs).unwrap(), "slice");
        let mut store = MemoryNodeStore::new();
        let (root, len) = Tree::bulk_persist(pairs.iter().cloned(), &mut store).unwrap();
        check(
            &Tree::open(root, len, Arc::new(store.clone())).unwrap(),
            "persisted",
        );
        let mut reopened = checkpoint(&mut ascending, &mut store, true);
        check(&reopened, "reopened");
        let mut left = model.clone();
        for (k, _) in pairs.iter().step_by(3) {
            assert_eq!(reopened.remove(k).unwrap(), left.remove(k));
        }
        check_all(&reopened, &left).unwrap();
    }
}

/// A persisted tree whose root is a wide pack: 100 keys with 128-byte values under one prefix.
fn persisted_wide() -> (Model, MemoryNodeStore, artdb_art::ChildWord, usize) {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0u64..100)
        .map(|i| (key(2, i * 977), value(i, 128)))
        .collect();
    let mut store = MemoryNodeStore::new();
    let (root, len) = Tree::bulk_persist(pairs.iter().cloned(), &mut store).unwrap();
    assert_eq!(len, 100);
    let offset = root.persisted_offset().unwrap() as usize;
    assert_eq!(store.bytes()[offset], 8, "the root is a wide pack");
    (pairs.into_iter().collect(), store, root, offset)
}

#[test]
fn corrupt_wide_packs_are_typed_errors() {
    let (model, store, root, offset) = persisted_wide();
    let intact = Tree::open(root, model.len() as u64, Arc::new(store.clone())).unwrap();
    assert!(first_error(&intact, &model).is_none());
    intact.verify().unwrap();
    let image = &store.bytes()[offset..];
    let key_width = usize::from(image[1]);
    let count = usize::from(u16::from_le_bytes([image[2], image[3]]));
    let capacity = count + usize::from(image[5]);
    let prefix_len = usize::from(u16::from_le_bytes([image[6], image[7]]));
    let records_at = 16 + prefix_len + capacity;
    let stride = key_width - 1 + 2;
    let image_len = records_at + capacity * stride + capacity * 128;
    // The slot of entry 3 (its record's last two bytes).
    let slot_at = records_at + 3 * stride + key_width - 1;
    // Header fields out of range (value width 16 says an ordinary pack, whose kind is 6; a count
    // past the capacity bound); a slot past the values (one past the count, and 0xFFFF); and an
    // unknown kind (what a build before wide packs meets: "unknown node kind").
    let cases: [(usize, Vec<u8>, &str); 6] = [
        (4, vec![16], "pack widths, count or capacity"),
        (2, vec![0xFF, 0x03], "pack widths, count or capacity"),
        (
            slot_at,
            (count as u16).to_le_bytes().to_vec(),
            "value slot out of range",
        ),
        (slot_at, vec![0xFF, 0xFF], "value slot out of range"),
        (0, vec![9], "unknown node kind"),
        (6, vec![0xFF, 0xFF], "past"),
    ];
    for (at, bytes, reason) in cases {
        let mut bad = store.clone();
        bad.bytes_mut()[offset + at..offset + at + bytes.len()].copy_from_slice(&bytes);
        let tree = Tree::open(root, model.len() as u64, Arc::new(bad)).unwrap();
        let error = first_error(&tree, &model).expect("corruption noticed");
        match &error {
            Error::Persisted {
                offset: at,
                reason: said,
            } => {
                assert_eq!(*at, offset as u64, "{error}");
                assert!(said.contains(reason), "{said:?} for a corrupt byte {at}");
            }
            other => panic!("not a persisted-image error: {other:?}"),
        }
        assert!(tree.verify().is_err());
    }
    // Two records naming one value: reads give no error (the slots are in range) but `verify`
    // reports the pack.
    let mut bad = store.clone();
    let other_slot = records_at + 4 * stride + key_width - 1;
    let copy: Vec<u8> = bad.bytes()[offset + slot_at..offset + slot_at + 2].to_vec();
    bad.bytes_mut()[offset + other_slot..offset + other_slot + 2].copy_from_slice(&copy);
    let tree = Tree::open(root, model.len() as u64, Arc::new(bad)).unwrap();
    assert!(tree.verify().is_err());
    // Truncated: the image ends before its last value.
    let mut bytes = store.bytes().to_vec();
    bytes.truncate(offset + image_len - 1);
    let short = TruncatedStore(bytes);
    let tree = Tree::open(root, model.len() as u64, Arc::new(short)).unwrap();
    let error = first_error(&tree, &model).expect("truncation noticed");
    assert!(
        matches!(&error, Error::Persisted { reason, .. } if reason.contains("past the image")),
        "{error}"
    );
    assert!(tree.verify().is_err());
    // Single-byte corruptions of the header, fence and records (and a few values): an error or
    // different contents, never a panic.
    for position in (offset..offset + records_at + capacity * stride)
        .chain((offset + records_at + capacity * stride..offset + image_len).step_by(61))
    {
        for flip in [0x01u8, 0x80] {
            let mut bad = store.clone();
            bad.bytes_mut()[position] ^= flip;
            let tree = Tree::open(root, model.len() as u64, Arc::new(bad)).unwrap();
            let _ = first_error(&tree, &model);
            let _ = tree.verify();
            let _ = tree.stats();
            let mut cursor = tree.cursor();
            if cursor.seek(&key(2, 5000)).is_ok() {
                while let Ok(true) = cursor.next() {}
            }
        }
    }
}
