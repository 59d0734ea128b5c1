//! bulk_build: equal to inserting the same pairs, every node at the smallest kind that fits,
//! typed errors for unsorted and duplicate input.

use std::collections::BTreeMap;

mod common;
use common::scale;

use artdb_art::{Error, Tree};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48 * scale(), ..ProptestConfig::default() })]

    #[test]
    fn bulk_build_matches_the_model(
        pairs in proptest::collection::btree_map(
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..12),
                proptest::collection::vec(prop_oneof![Just(b'x'), Just(b'y')], 0..8),
                any::<u16>().prop_map(|i| i.to_be_bytes().to_vec()),
            ],
            proptest::collection::vec(any::<u8>(), 0..12),
            0..400,
        )
    ) {
        let tree = Tree::bulk_build(pairs.iter()).unwrap();
        tree.verify().unwrap();
        prop_assert_eq!(tree.len(), pairs.len() as u64);
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            tree.iter().map(|r| r.map(|(k, v)| (k, v.to_vec()))).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&got, &pairs);
        // Every node has the smallest kind for its children (checked via the histogram of
        // kinds against the key count: no node is larger than it needs to be).
        let stats = tree.stats();
        prop_assert_eq!(stats.keys, pairs.len() as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24 * scale(), ..ProptestConfig::default() })]

    /// Keys of one width and values of one width: bulk-built subtrees that fit a pack's capacity
    /// (`pack_capacity_max` of their record width: 1024 short records, fewer long ones) become
    /// leaf packs (regression: bulk_build made none, so bulk-loaded trees lost the packs' memory
    /// and scan advantage). Dense runs (more than 256 keys under a prefix) and random ones.
    #[test]
    fn bulk_build_makes_leaf_packs_and_matches_the_model(
        keys in proptest::collection::btree_set(
            prop_oneof![0u32..3000, any::<u32>(), (0u32..40).prop_map(|i| i << 20)],
            0..1500,
        ),
        value_len in prop_oneof![
            Just(0usize), Just(3), Just(8), Just(16), Just(17), Just(128),
            Just(artdb_art::PACK_VALUE_WIDTH_MAX), Just(artdb_art::PACK_VALUE_WIDTH_MAX + 1),
            Just(artdb_art::PACK_WIDE_VALUE_WIDTH_MAX),
            Just(artdb_art::PACK_WIDE_VALUE_WIDTH_MAX + 1),
        ],
    ) {
        let pairs: BTreeMap<Vec<u8>, Vec<u8>> = keys
            .iter()
            .map(|k| (k.to_be_bytes().to_vec(), vec![(*k % 251) as u8; value_len]))
            .collect();
        let tree = Tree::bulk_build(pairs.iter()).unwrap();
        tree.verify().unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            tree.iter().map(|r| r.map(|(k, v)| (k, v.to_vec()))).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&got, &pairs);
        let mut probes: Vec<Vec<u8>> = pairs.keys().cloned().collect();
        probes.extend(keys.iter().map(|k| k.wrapping_add(1).to_be_bytes().to_vec()));
        let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
        let mut values = Vec::new();
        tree.get_many(&refs, &mut values).unwrap();
        for (key, value) in refs.iter().zip(&values) {
            prop_assert_eq!(tree.get(key).unwrap(), pairs.get(*key).map(Vec::as_slice));
            prop_assert_eq!(*value, pairs.get(*key).map(Vec::as_slice));
        }
        let stats = tree.stats();
        prop_assert_eq!(stats.keys, pairs.len() as u64);
        let siblings = keys.iter().zip(keys.iter().skip(1)).any(|(a, b)| a >> 8 == b >> 8);
        if value_len == 8 && siblings {
            // Two keys differ only in their last byte: the subtree holding them is a pack (or
            // inside a larger one), never a node of single leaves.
            prop_assert!(stats.packs > 0, "{:?}", stats);
        }
        if (value_len == 8 || value_len == 128) && siblings {
            // Two keys differ only in their last byte: the subtree holding them is a pack (or
            // inside a larger one; a wide pack for 128-byte values), never a node of leaves.
            prop_assert!(stats.packs > 0, "{:?}", stats);
        }
        if value_len > artdb_art::PACK_VALUE_WIDTH_MAX {
            // Wider values go to wide packs (kind 8), up to PACK_WIDE_VALUE_WIDTH_MAX.
            prop_assert_eq!(stats.packs, stats.wide_packs);
        } else {
            prop_assert_eq!(stats.wide_packs, 0);
        }
        if value_len > artdb_art::PACK_WIDE_VALUE_WIDTH_MAX {
            prop_assert_eq!(stats.packs, 0);
        }
    }
}

/// A bulk-built tree of random 8-byte keys with 8-byte values has the shape an inserted one has
/// (packs under two key bytes) and no more heap bytes.
#[test]
fn bulk_built_random_keys_are_packed_like_inserted_ones() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut keys: Vec<u64> = (0..200_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        })
        .collect();
    let mut inserted = Tree::new();
    for key in &keys {
        inserted
            .insert(&key.to_be_bytes(), &key.to_le_bytes())
            .unwrap();
    }
    keys.sort_unstable();
    keys.dedup();
    let bulk = Tree::bulk_build(keys.iter().map(|k| (k.to_be_bytes(), k.to_le_bytes()))).unwrap();
    bulk.verify().unwrap();
    let (a, b) = (inserted.stats(), bulk.stats());
    assert_eq!(a.keys, b.keys);
    assert!(
        b.packs > 0 && b.leaves <= a.leaves,
        "inserted {a:?}\nbulk {b:?}"
    );
    assert!(b.heap_bytes <= a.heap_bytes, "inserted {a:?}\nbulk {b:?}");
    for key in keys.iter().step_by(97) {
        assert_eq!(
            bulk.get(&key.to_be_bytes()).unwrap(),
            Some(&key.to_le_bytes()[..])
        );
    }
}

#[test]
fn exact_node_sizes() {
    // 256 x 20 x 3 keys: Node256 root, Node48 (20 children) and Node4 (3 children) below.
    let pairs = (0..=255u8)
        .flat_map(|a| (0..20u8).flat_map(move |b| (0..3u8).map(move |c| (vec![a, b, c], vec![c]))));
    let tree = Tree::bulk_build(pairs).unwrap();
    tree.verify().unwrap();
    let stats = tree.stats();
    assert_eq!(
        (stats.node256, stats.node48, stats.node16, stats.node4),
        (1, 256, 0, 256 * 20)
    );
}

#[test]
fn unsorted_and_duplicate_input_are_errors() {
    let unsorted = [
        (b"a".to_vec(), b"1"),
        (b"c".to_vec(), b"2"),
        (b"b".to_vec(), b"3"),
    ];
    assert_eq!(
        Tree::bulk_build(unsorted).err(),
        Some(Error::Unsorted { index: 2 })
    );
    let duplicate = [(b"a".to_vec(), b"1"), (b"a".to_vec(), b"2")];
    assert_eq!(
        Tree::bulk_build(duplicate).err(),
        Some(Error::Duplicate { index: 1 })
    );
    let long = vec![0u8; artdb_art::KEY_LEN_MAX + 1];
    assert!(matches!(
        Tree::bulk_build([(long, b"1")]).err(),
        Some(Error::KeyTooLarge { .. })
    ));
    let empty: [(&[u8], &[u8]); 0] = [];
    assert!(Tree::bulk_build(empty).unwrap().is_empty());
}

/// Regression (found with the dense-pack tests, issue 13): a bulk-built tree's nodes carry the
/// writer's first version, and its first snapshot did not move the writer on (the tree was not
/// marked changed), so later writes changed nodes and packs in place (or freed them) under the
/// snapshot.
#[test]
fn a_snapshot_of_a_bulk_built_tree_keeps_its_version() {
    for (keys, width) in [(3000u32, 7usize), (3000, 12), (40, 3)] {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..keys)
            .map(|i| ((i * 3).to_be_bytes().to_vec(), vec![i as u8; width]))
            .collect();
        let before: BTreeMap<Vec<u8>, Vec<u8>> = pairs.iter().cloned().collect();
        let seen = snapshot_after_changes(Tree::bulk_build(pairs).unwrap(), keys);
        assert_eq!(seen, before, "{keys} keys, {width}-byte values");
    }
}

/// Takes a snapshot of `tree` (keys `3i` for `i < keys`), then removes a third of those keys,
/// replaces the rest and inserts `3i + 1` for every `i`; returns what the snapshot reads.
fn snapshot_after_changes(mut tree: Tree, keys: u32) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let snapshot = tree.snapshot();
    for i in 0..keys {
        let key = (i * 3).to_be_bytes();
        if i % 3 == 0 {
            tree.remove(&key).unwrap();
        } else {
            tree.insert(&key, &[0xEE; 5]).unwrap();
        }
        tree.insert(&(i * 3 + 1).to_be_bytes(), &[0xDD; 2]).unwrap();
    }
    snapshot
        .iter()
        .map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

/// `bulk_build_slice` and `bulk_build_fixed` trees, like `bulk_build`'s, move the writer to a new
/// version at their first snapshot: writes after it copy what the snapshot reads (regression:
/// they changed nodes and freed packs under the snapshot).
#[test]
fn a_snapshot_of_a_slice_built_tree_keeps_its_version() {
    for keys in [3000u32, 40] {
        let pairs: Vec<([u8; 4], [u8; 8])> = (0..keys)
            .map(|i| {
                let mut value = [i as u8; 8];
                value[7] = (i % 8) as u8;
                ((i * 3).to_be_bytes(), value)
            })
            .collect();
        let before: BTreeMap<Vec<u8>, Vec<u8>> = pairs
            .iter()
            .map(|(k, v)| (k.to_vec(), v[..usize::from(v[7])].to_vec()))
            .collect();
        let slices: Vec<(Vec<u8>, Vec<u8>)> = before.clone().into_iter().collect();
        for tree in [
            Tree::bulk_build_fixed(&pairs).unwrap(),
            Tree::bulk_build_slice(&slices).unwrap(),
        ] {
            assert_eq!(snapshot_after_changes(tree, keys), before, "{keys} keys");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24 * scale(), ..ProptestConfig::default() })]

    /// Long runs of siblings (keys that differ from the last one only in their final byte: the
    /// builder's fast path once one went in as a sibling), broken now and then by a value too long
    /// to be inline, a longer or shorter key, or a new prefix: the tree equals the model. And an
    /// out-of-order or repeated key placed inside such a run is reported at its index.
    #[test]
    fn sibling_runs_with_breaks_match_the_model_and_report_bad_order(
        spans in proptest::collection::vec((any::<u8>(), 1usize..600), 1..6),
        long_every in prop_oneof![Just(0usize), 1usize..40],
        bad_at in any::<prop::sample::Index>(),
        repeat in any::<bool>(),
    ) {
        let mut pairs: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for (prefix, count) in &spans {
            for i in 0..*count {
                let mut key = vec![*prefix, (i >> 8) as u8, i as u8];
                if long_every != 0 && i % (long_every * 3 + 1) == long_every {
                    // A longer key right after its prefix key: it breaks the run.
                    pairs.insert(key.clone(), vec![1]);
                    key.push(7);
                }
                let value_len = if long_every != 0 && i % long_every == 0 { 8 + i % 5 } else { i % 8 };
                pairs.insert(key, vec![i as u8; value_len]);
            }
        }
        let tree = Tree::bulk_build(pairs.iter()).unwrap();
        tree.verify().unwrap();
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            tree.iter().map(|r| r.map(|(k, v)| (k, v.to_vec()))).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&got, &pairs);
        for (key, value) in &pairs {
            prop_assert_eq!(tree.get(key).unwrap(), Some(value.as_slice()));
        }
        // A bad key at index `at` (>= 1): a repeat of the key before it, or a key below it.
        let mut list: Vec<(Vec<u8>, Vec<u8>)> = pairs.into_iter().collect();
        if list.len() >= 2 {
            let at = 1 + bad_at.index(list.len() - 1);
            let before = list[at - 1].0.clone();
            if repeat {
                list[at].0 = before;
                prop_assert_eq!(
                    Tree::bulk_build(list.iter().cloned()).err(),
                    Some(Error::Duplicate { index: at as u64 })
                );
            } else if before.last().is_some_and(|&b| b > 0) {
                let mut lower = before.clone();
                *lower.last_mut().unwrap() -= 1;
                list[at].0 = lower;
                prop_assert_eq!(
                    Tree::bulk_build(list.iter().cloned()).err(),
                    Some(Error::Unsorted { index: at as u64 })
                );
            }
        }
    }
}
