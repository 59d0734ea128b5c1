//! `get_many` on trees whose root is a heap Node256 (issue 13, session 22): the group walk reads
//! such a root's header once per group and takes each key's first level as a prefix compare and
//! one child load (`lookup::heap::get_group`). Model tests against `BTreeMap` and against `get`,
//! with root prefixes of every length (none, inline, longer than the header holds), children of
//! every kind under the root (single leaves, inline values, packs, inner nodes), and queries that
//! are present, absent at the root's byte, absent deeper, differ inside the root's prefix, end
//! inside or right after it, are empty, or run past a stored key.

use std::collections::BTreeMap;

mod common;
use common::scale;
#[path = "../examples/common/splitmix.rs"]
mod stream;
use stream::splitmix;

use artdb_art::Tree;
use proptest::prelude::*;

/// A tree's shape: the root prefix, and for each first byte below it how many keys it holds.
#[derive(Debug, Clone)]
struct Shape {
    prefix: Vec<u8>,
    /// (first byte, keys under it, key length after the first byte, value length, whether the
    /// keys under it count up from 0 in their last bytes: 256 of them make a dense pack whose
    /// prefix is the bytes between the first and the last)
    children: Vec<(u8, usize, usize, usize, bool)>,
    seed: u64,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        prop::collection::vec(any::<u8>(), 0..12),
        // More than 48 distinct first bytes: the root must be a Node256.
        prop::collection::btree_map(
            any::<u8>(),
            (
                prop_oneof![
                    3 => Just(1usize),
                    2 => 2usize..8,
                    1 => 8usize..300,
                    1 => Just(256usize)
                ],
                0usize..6,
                0usize..12,
                any::<bool>(),
            ),
            49..=256,
        ),
        any::<u64>(),
    )
        .prop_map(|(prefix, children, seed)| Shape {
            prefix,
            children: children
                .into_iter()
                .map(|(byte, (count, len, value_len, sequential))| {
                    (byte, count, len, value_len, sequential)
                })
                .collect(),
            seed,
        })
}

fn build(shape: &Shape) -> (Tree, BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut tree = Tree::new();
    let mut model = BTreeMap::new();
    let mut state = shape.seed;
    for &(byte, count, len, value_len, sequential) in &shape.children {
        for i in 0..count {
            state = splitmix(state);
            let mut key = shape.prefix.clone();
            key.push(byte);
            // Keys under one first byte: `len` bytes after it, spread (a few dense runs when
            // there are many keys and the length is short).
            let tail = if len <= 1 || sequential {
                i as u64
            } else {
                state
            };
            key.extend((0..len).map(|j| (tail >> (8 * (len - 1 - j).min(7))) as u8));
            let value: Vec<u8> = (0..value_len)
                .map(|j| (state >> (j % 8)) as u8 ^ j as u8)
                .collect();
            tree.insert(&key, &value).unwrap();
            model.insert(key, value);
        }
    }
    (tree, model)
}

/// Queries: every stored key, each changed in its last byte, cut short by one byte and grown
/// by one, every fifth changed in each of its bytes in turn (inside a pack's prefix, too), and
/// keys that leave the root's prefix, end inside it or right after it.
fn queries(shape: &Shape, model: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<Vec<u8>> {
    let mut queries: Vec<Vec<u8>> = Vec::new();
    for key in model.keys() {
        queries.push(key.clone());
        let mut changed = key.clone();
        if let Some(last) = changed.last_mut() {
            *last = last.wrapping_add(1);
        }
        queries.push(changed);
        queries.push(key[..key.len() - 1].to_vec());
        let mut longer = key.clone();
        longer.push(0);
        queries.push(longer);
    }
    for key in model.keys().step_by(5) {
        for at in 0..key.len() {
            let mut changed = key.clone();
            changed[at] ^= 1;
            queries.push(changed);
        }
    }
    queries.push(Vec::new());
    for cut in 0..=shape.prefix.len() {
        queries.push(shape.prefix[..cut].to_vec());
        if cut < shape.prefix.len() {
            let mut other = shape.prefix.clone();
            other[cut] ^= 0x80;
            other.push(shape.children[0].0);
            other.push(0);
            queries.push(other);
        }
    }
    // Every first byte below the prefix, stored or not.
    for byte in 0..=255u8 {
        let mut key = shape.prefix.clone();
        key.push(byte);
        queries.push(key.clone());
        key.extend([0, 0, 0]);
        queries.push(key);
    }
    // Shuffled, so a group mixes lookups that end in every way.
    let mut state = shape.seed ^ 0x5555;
    for i in (1..queries.len()).rev() {
        state = splitmix(state);
        queries.swap(i, state as usize % (i + 1));
    }
    queries
}

fn check(tree: &Tree, model: &BTreeMap<Vec<u8>, Vec<u8>>, queries: &[Vec<u8>]) {
    let refs: Vec<&[u8]> = queries.iter().map(Vec::as_slice).collect();
    // Batches of several lengths, so groups start at different places.
    for batch in [1, 7, 16, 33, refs.len().max(1)] {
        // `get_many` replaces what `out` held: gather each call's answers.
        let mut out = Vec::new();
        let mut answers = Vec::new();
        for chunk in refs.chunks(batch) {
            tree.get_many(chunk, &mut answers).unwrap();
            assert_eq!(answers.len(), chunk.len());
            out.extend_from_slice(&answers);
        }
        assert_eq!(out.len(), refs.len());
        for (key, got) in refs.iter().zip(&out) {
            let want = model.get(*key).map(Vec::as_slice);
            assert_eq!(*got, want, "get_many of {key:02x?} (batch {batch})");
            assert_eq!(tree.get(key).unwrap(), want, "get of {key:02x?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24 * scale()))]

    #[test]
    fn get_many_below_a_node256_root_matches_the_model(shape in shape()) {
        let (mut tree, model) = build(&shape);
        prop_assert!(tree.stats().node256 >= 1, "the root is a Node256");
        let queries = queries(&shape, &model);
        check(&tree, &model, &queries);
        // The same through a snapshot, then after removing every third key.
        let snapshot = tree.snapshot();
        let refs: Vec<&[u8]> = queries.iter().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        snapshot.get_many(&refs, &mut out).unwrap();
        for (key, got) in refs.iter().zip(&out) {
            prop_assert_eq!(*got, model.get(*key).map(Vec::as_slice));
        }
        drop(snapshot);
        let mut model = model;
        let removed: Vec<Vec<u8>> = model.keys().step_by(3).cloned().collect();
        for key in &removed {
            prop_assert!(tree.remove(key).unwrap().is_some());
            model.remove(key);
        }
        check(&tree, &model, &queries);
        prop_assert!(tree.verify().is_ok());
    }
}
