//! Helpers shared by this crate's integration tests (each test binary includes this module and
//! uses what it needs).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use artdb_art::{Error, MemoryNodeStore, Tree};

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
