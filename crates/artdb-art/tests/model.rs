//! Model tests: random operation sequences on `Tree` and on the same sequence applied to a
//! `BTreeMap`, compared after every operation, with `verify()` every 100 steps and at the end.
//!
//! Key classes: dense integers, sparse random u64, random byte strings of length 0..64, keys that
//! share a long prefix, and keys over a two-letter alphabet (many keys are prefixes of others,
//! and the empty key is common), and keys at the length limit (`KEY_LEN_MAX` and just under).
//! Range bounds and cursor targets are pool keys, sometimes stretched by a few bytes, so they
//! are drawn longer than any key can be too (a bound is compared, never stored: issue 8 item
//! 10). Scale with ARTDB_TEST_SCALE (default 1 = a few seconds); proptest prints the failing seed
//! and a minimal case.

use std::collections::BTreeMap;
use std::ops::Bound;

mod common;
use common::scale;

use artdb_art::{Snapshot, Tree, KEY_LEN_MAX};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96 * scale(),
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(usize, Vec<u8>),
    InsertIfAbsent(usize, Vec<u8>),
    Set(usize, Vec<u8>),
    Remove(usize),
    Get(usize),
    Range(Bound<Pick>, Bound<Pick>, Vec<bool>),
    Prefix(usize, usize),
    Cursor(Pick, bool, Vec<bool>),
    FirstLast,
    Snapshot,
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::collection::vec(any::<u8>(), 0..=7),
        1 => proptest::collection::vec(any::<u8>(), 8..40),
    ]
}

/// A pool key for a bound or a cursor target, and how far to stretch it past its end (0: not
/// at all; see [`stretched`]).
type Pick = (usize, u8);

fn target() -> impl Strategy<Value = Pick> {
    (any::<usize>(), prop_oneof![4 => Just(0u8), 1 => 1u8..=4])
}

fn bound() -> impl Strategy<Value = Bound<Pick>> {
    prop_oneof![
        Just(Bound::Unbounded),
        target().prop_map(Bound::Included),
        target().prop_map(Bound::Excluded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (any::<usize>(), value()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => (any::<usize>(), value()).prop_map(|(k, v)| Op::InsertIfAbsent(k, v)),
        3 => (any::<usize>(), value()).prop_map(|(k, v)| Op::Set(k, v)),
        5 => any::<usize>().prop_map(Op::Remove),
        3 => any::<usize>().prop_map(Op::Get),
        1 => (bound(), bound(), proptest::collection::vec(any::<bool>(), 0..12))
            .prop_map(|(a, b, d)| Op::Range(a, b, d)),
        1 => (any::<usize>(), 0usize..12).prop_map(|(k, n)| Op::Prefix(k, n)),
        1 => (target(), any::<bool>(), proptest::collection::vec(any::<bool>(), 0..12))
            .prop_map(|(k, b, s)| Op::Cursor(k, b, s)),
        1 => Just(Op::FirstLast),
        1 => Just(Op::Snapshot),
    ]
}

fn pick(pool: &[Vec<u8>], index: usize) -> &[u8] {
    &pool[index % pool.len()]
}

/// The pool key of `pick`, stretched by 1 or 3 bytes of 0x00 or 0xFF (so a key at the length
/// limit becomes a bound longer than any key, just above it).
fn stretched(pool: &[Vec<u8>], (index, stretch): Pick) -> Vec<u8> {
    let mut key = pick(pool, index).to_vec();
    let (fill, count) = match stretch {
        0 => (0, 0),
        1 => (0x00, 1),
        2 => (0xFF, 1),
        3 => (0x00, 3),
        _ => (0xFF, 3),
    };
    key.resize(key.len() + count, fill);
    key
}

fn map_bound(pool: &[Vec<u8>], bound: &Bound<Pick>) -> Bound<Vec<u8>> {
    match bound {
        Bound::Included(p) => Bound::Included(stretched(pool, *p)),
        Bound::Excluded(p) => Bound::Excluded(stretched(pool, *p)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn valid_range(lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> bool {
    match (lower, upper) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a <= b
        }
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        _ => true,
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn check_snapshot(snapshot: &Snapshot, model: &Model) {
    assert_eq!(snapshot.len(), model.len() as u64);
    let got: Vec<(Vec<u8>, Vec<u8>)> = snapshot
        .iter()
        .map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want, "snapshot differs from its version");
}

/// `get_many` (groups of lookups interleaved level by level, packs in two steps) agrees with
/// the model for every pool key, each key extended by a byte, and each key cut short by one, in
/// batches of several sizes (so groups are full, partial and mixed present/absent).
fn check_get_many(tree: &Tree, model: &Model, pool: &[Vec<u8>]) {
    let mut probes: Vec<Vec<u8>> = Vec::new();
    for key in pool {
        probes.push(key.clone());
        let mut longer = key.clone();
        longer.push(0x5A);
        probes.push(longer);
        if let Some((_, shorter)) = key.split_last() {
            probes.push(shorter.to_vec());
        }
    }
    let mut values = Vec::new();
    // A batch holding a key over the limit is refused as a whole, as `get` refuses it.
    if let Some(long) = probes.iter().find(|key| key.len() > KEY_LEN_MAX) {
        let refused = tree.get_many(&[&long[..]], &mut values);
        assert!(
            matches!(refused, Err(artdb_art::Error::KeyTooLarge { .. })),
            "{refused:?}"
        );
    }
    probes.retain(|key| key.len() <= KEY_LEN_MAX);
    let keys: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
    for batch in [1usize, 7, 16, 33] {
        for chunk in keys.chunks(batch) {
            tree.get_many(chunk, &mut values).unwrap();
            assert_eq!(values.len(), chunk.len());
            for (key, value) in chunk.iter().zip(&values) {
                assert_eq!(
                    *value,
                    model.get(*key).map(Vec::as_slice),
                    "get_many {key:?}"
                );
            }
        }
    }
}

fn run(pool: Vec<Vec<u8>>, ops: Vec<Op>) {
    let mut tree = Tree::new();
    let mut model = Model::new();
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        apply(&mut tree, &mut model, &pool, op, &mut snapshots);
        assert_eq!(tree.len(), model.len() as u64, "len after {op:?}");
        if step % 100 == 99 {
            tree.verify().unwrap();
        }
    }
    tree.verify().unwrap();
    let all: Vec<(Vec<u8>, Vec<u8>)> = tree
        .iter()
        .map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want);
    check_get_many(&tree, &model, &pool);
    let back: Vec<Vec<u8>> = tree.iter().rev().map(|r| r.unwrap().0).collect();
    let want_back: Vec<Vec<u8>> = model.keys().rev().cloned().collect();
    assert_eq!(back, want_back);
    for (snapshot, frozen) in &snapshots {
        check_snapshot(snapshot, frozen);
        snapshot.verify().unwrap();
    }
}

fn apply(
    tree: &mut Tree,
    model: &mut Model,
    pool: &[Vec<u8>],
    op: &Op,
    snapshots: &mut Vec<(Snapshot, Model)>,
) {
    match op {
        Op::Insert(k, v) => {
            let key = pick(pool, *k);
            assert_eq!(
                tree.insert(key, v).unwrap(),
                model.insert(key.to_vec(), v.clone())
            );
        }
        Op::Set(k, v) => {
            let key = pick(pool, *k);
            let replaced = model.insert(key.to_vec(), v.clone()).is_some();
            assert_eq!(tree.set(key, v).unwrap(), replaced);
        }
        Op::InsertIfAbsent(k, v) => {
            let key = pick(pool, *k);
            let absent = !model.contains_key(key);
            if absent {
                model.insert(key.to_vec(), v.clone());
            }
            assert_eq!(tree.insert_if_absent(key, v).unwrap(), absent);
        }
        Op::Remove(k) => {
            let key = pick(pool, *k);
            assert_eq!(tree.remove(key).unwrap(), model.remove(key));
        }
        Op::Get(k) => {
            let key = pick(pool, *k);
            assert_eq!(tree.get(key).unwrap(), model.get(key).map(Vec::as_slice));
            let mut missing = key.to_vec();
            missing.push(0x5A);
            if missing.len() > KEY_LEN_MAX {
                // A lookup key is checked like a stored one (unlike a range bound): a typed
                // error that names the limit, not a silent miss.
                let refused = tree.get(&missing);
                assert!(
                    matches!(refused, Err(artdb_art::Error::KeyTooLarge { .. })),
                    "{refused:?}"
                );
            } else {
                assert_eq!(
                    tree.get(&missing).unwrap(),
                    model.get(&missing).map(Vec::as_slice)
                );
            }
        }
        Op::Range(a, b, directions) => {
            let lower = map_bound(pool, a);
            let upper = map_bound(pool, b);
            if !valid_range(&lower, &upper) {
                return;
            }
            let mut ours = tree.range::<Vec<u8>, _>((lower.clone(), upper.clone()));
            let mut theirs = model.range((lower, upper));
            for &from_front in directions.iter().chain(std::iter::repeat(&true).take(200)) {
                let (got, want) = if from_front {
                    (ours.next(), theirs.next())
                } else {
                    (ours.next_back(), theirs.next_back())
                };
                let got = got.map(|r| r.map(|(k, v)| (k, v.to_vec())).unwrap());
                let want = want.map(|(k, v)| (k.clone(), v.clone()));
                assert_eq!(got, want, "range step");
                if want.is_none() {
                    break;
                }
            }
        }
        Op::Prefix(k, n) => {
            let key = pick(pool, *k);
            let prefix = &key[..(*n).min(key.len())];
            let got: Vec<Vec<u8>> = tree.prefix(prefix).map(|r| r.unwrap().0).collect();
            let want: Vec<Vec<u8>> = model
                .keys()
                .filter(|key| key.starts_with(prefix))
                .cloned()
                .collect();
            assert_eq!(got, want, "prefix {prefix:?}");
            let got_back: Vec<Vec<u8>> = tree.prefix(prefix).rev().map(|r| r.unwrap().0).collect();
            assert_eq!(got_back, want.into_iter().rev().collect::<Vec<_>>());
        }
        Op::Cursor(k, at_or_before, steps) => {
            cursor_walk(tree, model, &stretched(pool, *k), *at_or_before, steps)
        }
        Op::FirstLast => {
            let first = tree.first().unwrap().map(|(k, v)| (k, v.to_vec()));
            assert_eq!(
                first,
                model.first_key_value().map(|(k, v)| (k.clone(), v.clone()))
            );
            let last = tree.last().unwrap().map(|(k, v)| (k, v.to_vec()));
            assert_eq!(
                last,
                model.last_key_value().map(|(k, v)| (k.clone(), v.clone()))
            );
        }
        Op::Snapshot => {
            if snapshots.len() < 4 {
                snapshots.push((tree.snapshot(), model.clone()));
            } else {
                // Check and drop them all: the writer then works without snapshots (in place)
                // until the next one, so both regimes alternate.
                for (snapshot, frozen) in snapshots.drain(..) {
                    check_snapshot(&snapshot, &frozen);
                }
            }
        }
    }
}

fn cursor_walk(tree: &Tree, model: &Model, target: &[u8], at_or_before: bool, steps: &[bool]) {
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    let mut cursor = tree.cursor();
    let mut position = if at_or_before {
        assert_eq!(
            cursor.seek_at_or_before(target).unwrap(),
            model.range(..=target.to_vec()).next_back().is_some()
        );
        keys.iter().rposition(|k| k.as_slice() <= target)
    } else {
        assert_eq!(
            cursor.seek(target).unwrap(),
            model.range(target.to_vec()..).next().is_some()
        );
        keys.iter().position(|k| k.as_slice() >= target)
    };
    for &forward in std::iter::once(&true).take(0).chain(steps) {
        match position {
            Some(i) => {
                assert!(cursor.is_valid());
                assert_eq!(cursor.key(), keys[i].as_slice());
                assert_eq!(cursor.value(), model[keys[i]].as_slice());
            }
            None => assert!(!cursor.is_valid()),
        }
        let moved = if forward {
            cursor.next().unwrap()
        } else {
            cursor.prev().unwrap()
        };
        position = match position {
            Some(i) if forward && i + 1 < keys.len() => Some(i + 1),
            Some(i) if !forward && i > 0 => Some(i - 1),
            _ => None,
        };
        assert_eq!(moved, position.is_some());
    }
}

fn pool_and_ops(
    key: impl Strategy<Value = Vec<u8>>,
    pool_len: std::ops::Range<usize>,
) -> impl Strategy<Value = (Vec<Vec<u8>>, Vec<Op>)> {
    (
        proptest::collection::vec(key, pool_len),
        proptest::collection::vec(op(), 1..400),
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn dense_integers(case in pool_and_ops((0u32..600).prop_map(|i| i.to_be_bytes().to_vec()), 1..600)) {
        run(case.0, case.1);
    }

    #[test]
    fn sparse_u64(case in pool_and_ops(any::<u64>().prop_map(|i| i.to_be_bytes().to_vec()), 1..300)) {
        run(case.0, case.1);
    }

    /// Fixed-width keys and values: leaf packs form, fill, burst and shrink.
    #[test]
    fn fixed_width_pairs_in_leaf_packs(case in pool_and_ops(
        prop_oneof![any::<u64>().prop_map(|i| i & 0xFFFF_0000_00FF_FFFF), 0u64..3000]
            .prop_map(|i| i.to_be_bytes().to_vec()),
        1..600,
    )) {
        let ops = case.1.into_iter().map(|op| match op {
            Op::Insert(k, mut v) => { v.resize(8, 1); Op::Insert(k, v) }
            Op::InsertIfAbsent(k, mut v) => { v.resize(8, 1); Op::InsertIfAbsent(k, v) }
            Op::Set(k, mut v) => { v.resize(8, 1); Op::Set(k, v) }
            other => other,
        }).collect();
        run(case.0, ops);
    }

    /// Long keys and long values in leaf packs (issue 13): composite keys of 16..=72 bytes (a
    /// few index ids and column values, then a random u64 tail, as in W1) or 100-byte keys of
    /// random bytes after a short prefix, with every value of one width per case, from 0 to
    /// `PACK_VALUE_WIDTH_MAX` and wider (wide packs, kind 8) to past `PACK_WIDE_VALUE_WIDTH_MAX`
    /// (no pack). Up to 2,500 pool keys are inserted first, so
    /// packs reach their capacity (1024 entries of 8-byte tails, ~140 of 100-byte suffixes)
    /// and burst, then the random operations run (values resized to the case's width).
    #[test]
    fn wide_keys_and_values_in_leaf_packs(
        (pool, ops, value_len, prefill) in (
            prop_oneof![Just(16usize), Just(32), Just(64), Just(72), Just(100)],
            prop_oneof![
                Just(0usize), Just(8), Just(artdb_art::PACK_VALUE_WIDTH_MAX),
                Just(artdb_art::PACK_VALUE_WIDTH_MAX + 1), Just(128),
                Just(artdb_art::PACK_WIDE_VALUE_WIDTH_MAX),
                Just(artdb_art::PACK_WIDE_VALUE_WIDTH_MAX + 1),
            ],
            1usize..2500,
        ).prop_flat_map(|(key_len, value_len, pool_len)| {
            let key = (0u8..1, 0u16..2, any::<u64>(), proptest::collection::vec(any::<u8>(), 92))
                .prop_map(move |(id, column, tail, random)| {
                    let mut key = vec![0, id];
                    if key_len == 100 {
                        key.extend_from_slice(&[column as u8, 0xAB, 0xCD, 0xEF]);
                        key.extend_from_slice(&random);
                    } else {
                        key.extend(format!("{column:0>width$}", width = key_len - 10).bytes());
                        key.extend_from_slice(&tail.to_be_bytes());
                    }
                    key
                });
            (
                proptest::collection::vec(key, pool_len..=pool_len),
                proptest::collection::vec(op(), 1..300),
                Just(value_len),
                0..=pool_len,
            )
        })
    ) {
        let widen = |mut v: Vec<u8>| { v.resize(value_len, 0x5A); v };
        let ops = (0..prefill)
            .map(|k| Op::Insert(k, widen(vec![k as u8; 3])))
            .chain(ops.into_iter().map(|op| match op {
                Op::Insert(k, v) => Op::Insert(k, widen(v)),
                Op::InsertIfAbsent(k, v) => Op::InsertIfAbsent(k, widen(v)),
                Op::Set(k, v) => Op::Set(k, widen(v)),
                other => other,
            }))
            .collect();
        run(pool, ops);
    }

    #[test]
    fn random_byte_strings(case in pool_and_ops(proptest::collection::vec(any::<u8>(), 0..64), 1..200)) {
        run(case.0, case.1);
    }

    #[test]
    fn long_shared_prefixes(case in pool_and_ops(
        (0usize..3, proptest::collection::vec(0u8..4, 0..6)).prop_map(|(p, tail)| {
            let mut key = vec![b'p'; 20 + p * 7];
            key.extend(tail);
            key
        }),
        1..200,
    )) {
        run(case.0, case.1);
    }

    /// Keys of `KEY_LEN_MAX - 4 ..= KEY_LEN_MAX` bytes sharing all but their last few: a
    /// stretched bound or cursor target is then longer than any key can be.
    #[test]
    fn keys_at_the_length_limit(case in pool_and_ops(
        proptest::collection::vec(prop_oneof![Just(0x00u8), Just(0x7F), Just(0xFF)], 0..=4)
            .prop_map(|tail| {
                let mut key = vec![b'L'; KEY_LEN_MAX - 4];
                key.extend(tail);
                key
            }),
        1..40,
    )) {
        run(case.0, case.1);
    }

    #[test]
    fn prefixes_of_each_other(case in pool_and_ops(proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b')], 0..9), 1..120)) {
        run(case.0, case.1);
    }
}
