//! Helpers shared by this crate's integration tests (each test binary includes this module and
//! uses what it needs).
#![allow(dead_code)]

use std::sync::Arc;

use artdb_art::{MemoryNodeStore, Tree};

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
