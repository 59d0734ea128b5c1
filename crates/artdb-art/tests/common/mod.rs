//! Helpers shared by this crate's integration tests (each test binary includes this module and
//! uses what it needs).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use artdb_art::{Error, MemoryNodeStore, Snapshot, Tree};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// The reference model of the model tests.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The model's pairs in key order (bulk build input).
pub fn pairs_of(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    model.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// What an iterator of the tree yields, as a model (panics on an error).
pub fn contents<'a>(iter: impl Iterator<Item = Result<(Vec<u8>, &'a [u8]), Error>>) -> Model {
    iter.map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The range between `a` and `b` (either order; low included, high excluded), forwards and
/// backwards, against the model's.
pub fn range_matches(
    tree: &Tree,
    model: &Model,
    a: Vec<u8>,
    b: Vec<u8>,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let (low, high) = if a <= b { (a, b) } else { (b, a) };
    let bounds = (Bound::Included(low.clone()), Bound::Excluded(high.clone()));
    let got = contents(tree.range::<Vec<u8>, _>(bounds.clone()));
    let want: Model = model
        .range(bounds.clone())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    proptest::prop_assert_eq!(&got, &want);
    let back: Vec<Vec<u8>> = tree
        .range::<Vec<u8>, _>(bounds)
        .rev()
        .map(|r| r.unwrap().0)
        .collect();
    let want_back: Vec<Vec<u8>> = want.keys().rev().cloned().collect();
    proptest::prop_assert_eq!(back, want_back);
    Ok(())
}

/// The first error a lookup of every model key, then a full scan, meets.
pub fn first_error(tree: &Tree, model: &Model) -> Option<Error> {
    for key in model.keys() {
        if let Err(error) = tree.get(key) {
            return Some(error);
        }
    }
    tree.iter().find_map(Result::err)
}

/// A node source over bytes that end early (a truncated file).
pub struct TruncatedStore(pub Vec<u8>);

impl artdb_art::NodeSource for TruncatedStore {
    fn node_image(&self, offset: u64) -> Result<&[u8], Error> {
        usize::try_from(offset)
            .ok()
            .and_then(|start| self.0.get(start..))
            .filter(|bytes| !bytes.is_empty())
            .ok_or_else(|| Error::Persisted {
                offset,
                reason: "offset past the end".into(),
            })
    }
}

/// The test scale: `ARTDB_TEST_SCALE` (at least 1; default 1). Tests multiply case counts and
/// sizes by it.
pub fn scale() -> u32 {
    std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Appends the tree's heap images to a copy of `store` and reopens over it, or (with `adopt`)
/// switches the tree itself onto them.
pub fn checkpoint(tree: &mut Tree, store: &mut MemoryNodeStore, adopt: bool) -> Tree {
    let mut next = store.clone();
    let root = tree.persist(&mut next).unwrap();
    *store = next.clone();
    if adopt {
        let mut moved = std::mem::take(tree);
        moved
            .adopt_persisted(root, moved.len(), Arc::new(next))
            .unwrap();
        moved
    } else {
        Tree::open(root, tree.len(), Arc::new(next)).unwrap()
    }
}

/// How a model test's tree starts.
#[derive(Debug, Clone, Copy)]
pub enum Start {
    /// Inserted key by key.
    Inserted,
    /// `bulk_build`.
    BulkBuilt,
    /// `bulk_build_slice` (the top-down build from a sorted slice).
    SliceBuilt,
    /// `bulk_persist` into `store`, then opened over it.
    BulkPersisted,
}

/// The tree a model test starts from, holding `model` (persisted into `store` for
/// [`Start::BulkPersisted`]).
pub fn start_tree(start: Start, model: &Model, store: &mut MemoryNodeStore) -> Tree {
    match start {
        Start::Inserted => {
            let mut tree = Tree::new();
            for (k, v) in model {
                tree.insert(k, v).unwrap();
            }
            tree
        }
        Start::BulkBuilt => Tree::bulk_build(pairs_of(model)).unwrap(),
        Start::SliceBuilt => Tree::bulk_build_slice(&pairs_of(model)).unwrap(),
        Start::BulkPersisted => {
            let (root, len) = Tree::bulk_persist(pairs_of(model), store).unwrap();
            Tree::open(root, len, Arc::new(store.clone())).unwrap()
        }
    }
}

/// Length, contents both ways, the test's own point reads (`check_points`) and `verify`.
pub fn check_tree(
    tree: &Tree,
    model: &Model,
    check_points: fn(&Tree, &Model) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(tree.len(), model.len() as u64);
    prop_assert_eq!(&contents(tree.iter()), model);
    let backward: Vec<Vec<u8>> = tree.iter().rev().map(|r| r.unwrap().0).collect();
    let expected: Vec<Vec<u8>> = model.keys().rev().cloned().collect();
    prop_assert_eq!(backward, expected);
    check_points(tree, model)?;
    if let Err(violations) = tree.verify() {
        prop_assert!(false, "verify: {:?}", violations);
    }
    Ok(())
}

/// A snapshot still reads the model it was taken with: contents, every seventh key, `verify`.
pub fn check_snapshot(snapshot: &Snapshot, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(&contents(snapshot.iter()), model);
    for (key, value) in model.iter().step_by(7) {
        prop_assert_eq!(snapshot.get(key).unwrap(), Some(value.as_slice()));
    }
    if let Err(violations) = snapshot.verify() {
        prop_assert!(false, "snapshot verify: {:?}", violations);
    }
    Ok(())
}

/// A cursor seek to `target` (at or after it, or with `back` at or before it), then `steps`
/// steps onward, against the model.
pub fn seek_matches(
    tree: &Tree,
    model: &Model,
    target: &[u8],
    back: bool,
    steps: u8,
) -> Result<(), TestCaseError> {
    let mut cursor = tree.cursor();
    let target = target.to_vec();
    let (found, all): (bool, Vec<&Vec<u8>>) = if back {
        let found = cursor.seek_at_or_before(&target).unwrap();
        (
            found,
            model
                .range(..=target.clone())
                .rev()
                .map(|(k, _)| k)
                .collect(),
        )
    } else {
        let found = cursor.seek(&target).unwrap();
        (
            found,
            model.range(target.clone()..).map(|(k, _)| k).collect(),
        )
    };
    prop_assert_eq!(found, !all.is_empty());
    for (i, want) in all.iter().take(usize::from(steps) + 1).enumerate() {
        prop_assert_eq!(cursor.key(), want.as_slice());
        prop_assert_eq!(cursor.value(), model[*want].as_slice());
        let more = if back {
            cursor.prev().unwrap()
        } else {
            cursor.next().unwrap()
        };
        prop_assert_eq!(more, i + 1 < all.len());
    }
    Ok(())
}

/// Snapshots a model test holds, each with the model it was taken with.
pub type Snapshots = Vec<(Snapshot, Model)>;

/// A model test's `Snapshot` step: keeps up to three snapshots.
pub fn take_snapshot(snapshots: &mut Snapshots, tree: &mut Tree, model: &Model) {
    if snapshots.len() < 3 {
        snapshots.push((tree.snapshot(), model.clone()));
    }
}

/// A model test's `DropSnapshots` step: checks each snapshot, then drops them all.
pub fn drop_snapshots(snapshots: &mut Snapshots) -> Result<(), TestCaseError> {
    for (snapshot, model) in snapshots.iter() {
        check_snapshot(snapshot, model)?;
    }
    snapshots.clear();
    Ok(())
}

/// The end of a model test's run: the tree (`check_all`) and every snapshot still read their
/// models, and so do a round trip through the store and a bulk rebuild of the result.
pub fn finish_run(
    tree: &mut Tree,
    store: &mut MemoryNodeStore,
    model: &Model,
    snapshots: &Snapshots,
    check_all: fn(&Tree, &Model) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    check_all(tree, model)?;
    for (snapshot, model) in snapshots {
        check_snapshot(snapshot, model)?;
    }
    let reopened = checkpoint(tree, store, false);
    check_all(&reopened, model)?;
    let rebuilt = Tree::bulk_build(pairs_of(model)).unwrap();
    check_all(&rebuilt, model)?;
    Ok(())
}

/// A xorshift64 sequence for the randomized tests that draw their own cases (`Rng(seed)` with a
/// nonzero seed, or `Rng::new`, which makes any seed nonzero).
pub struct Rng(pub u64);

impl Rng {
    /// A sequence from `seed` (made odd, so never the all-zero state).
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }

    /// True `per_mille` times in a thousand.
    pub fn chance(&mut self, per_mille: usize) -> bool {
        self.below(1000) < per_mille
    }

    /// Shuffles `items` (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}
