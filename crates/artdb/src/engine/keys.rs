//! keys: the key sets validation compares (a transaction's write set and read set, a committed
//! transaction's write set), all held in ART trees or their snapshots, so that a set of N keys
//! costs the tree's density and a membership test or a range probe costs O(key length).

use crate::error::{from_tree, Result};
use artdb_art::{Snapshot, Tree};
use std::ops::Bound;

/// A key range with owned bounds.
pub(crate) type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The range as borrowed bounds (what the tree's `range` takes).
pub(crate) fn borrowed(range: &KeyRange) -> (Bound<&[u8]>, Bound<&[u8]>) {
    (as_ref(&range.0), as_ref(&range.1))
}

fn as_ref(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A set of keys held by a tree or a snapshot of one (values are ignored).
#[derive(Clone, Copy)]
pub(crate) enum Keys<'a> {
    Tree(&'a Tree),
    Snapshot(&'a Snapshot),
}

impl Keys<'_> {
    pub fn len(&self) -> u64 {
        match self {
            Keys::Tree(tree) => tree.len(),
            Keys::Snapshot(snapshot) => snapshot.len(),
        }
    }

    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        let found = match self {
            Keys::Tree(tree) => tree.get(key),
            Keys::Snapshot(snapshot) => snapshot.get(key),
        };
        Ok(found.map_err(from_tree)?.is_some())
    }

    /// The smallest key of the set inside `range`, if any.
    pub fn first_in(&self, range: &KeyRange) -> Result<Option<Vec<u8>>> {
        let mut iter = match self {
            Keys::Tree(tree) => tree.range::<[u8], _>(borrowed(range)),
            Keys::Snapshot(snapshot) => snapshot.range::<[u8], _>(borrowed(range)),
        };
        match iter.next() {
            Some(Ok((key, _))) => Ok(Some(key)),
            Some(Err(error)) => Err(from_tree(error)),
            None => Ok(None),
        }
    }

    /// A key in both sets, if any: walks the smaller set and probes the larger, so the cost is
    /// O(min(|a|, |b|) * key length).
    pub fn common(a: Keys<'_>, b: Keys<'_>) -> Result<Option<Vec<u8>>> {
        if a.len() == 0 || b.len() == 0 {
            return Ok(None);
        }
        let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
        let iter = match small {
            Keys::Tree(tree) => tree.iter(),
            Keys::Snapshot(snapshot) => snapshot.iter(),
        };
        for item in iter {
            let (key, _) = item.map_err(from_tree)?;
            if large.contains(&key)? {
                return Ok(Some(key));
            }
        }
        Ok(None)
    }
}
