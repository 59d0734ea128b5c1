//! Node-kind boundaries: one node driven through every capacity and shrink threshold, growing
//! and shrinking, at the root and below it, with and without a value slot, with a checkpoint
//! (persist, then reopen over the persisted images) midway so that writes also copy nodes out
//! of the "file".

use std::collections::BTreeMap;
use std::sync::Arc;

use artdb_art::{
    MemoryNodeStore, Tree, NODE16_CAPACITY, NODE16_SHRINK_COUNT, NODE256_SHRINK_COUNT,
    NODE48_CAPACITY, NODE48_SHRINK_COUNT, NODE4_CAPACITY,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Collapsed,
    N4,
    N16,
    N48,
    N256,
}

/// The kind the node must have after an insert brought it to `count` children.
fn after_insert(kind: Kind, count: usize, has_value: bool) -> Kind {
    let entries = count + usize::from(has_value);
    match kind {
        Kind::Collapsed if entries >= 2 => Kind::N4,
        Kind::N4 if count > NODE4_CAPACITY => Kind::N16,
        Kind::N16 if count > NODE16_CAPACITY => Kind::N48,
        Kind::N48 if count > NODE48_CAPACITY => Kind::N256,
        other => other,
    }
}

/// The kind the node must have after a removal left it with `count` children.
fn after_remove(kind: Kind, count: usize, has_value: bool) -> Kind {
    if count + usize::from(has_value) <= 1 {
        return Kind::Collapsed;
    }
    match kind {
        Kind::N16 if count <= NODE16_SHRINK_COUNT => Kind::N4,
        Kind::N48 if count <= NODE48_SHRINK_COUNT => Kind::N16,
        Kind::N256 if count <= NODE256_SHRINK_COUNT => Kind::N48,
        other => other,
    }
}

struct Case {
    /// Key bytes before the byte that varies.
    path: Vec<u8>,
    /// Keys outside the node under test (they give it a parent).
    others: Vec<Vec<u8>>,
    /// Whether a key ends exactly at the node (its value slot).
    with_value: bool,
}

fn counts(tree: &Tree) -> [u64; 4] {
    let stats = tree.stats();
    [stats.node4, stats.node16, stats.node48, stats.node256]
}

fn expected(case: &Case, kind: Kind, count: usize) -> [u64; 4] {
    let mut counts = [0u64; 4];
    if !case.others.is_empty() && count + usize::from(case.with_value) > 0 {
        counts[0] += 1; // the parent Node4 (gone, collapsed, once the node under test is empty)
    }
    match kind {
        Kind::Collapsed => {}
        Kind::N4 => counts[0] += 1,
        Kind::N16 => counts[1] += 1,
        Kind::N48 => counts[2] += 1,
        Kind::N256 => counts[3] += 1,
    }
    counts
}

/// Checkpoint: append the tree's heap nodes to (a copy of) the store its persisted nodes live
/// in, then reopen over the result.
fn reopen(tree: Tree, store: &mut MemoryNodeStore) -> Tree {
    let mut next = store.clone();
    let root = tree.persist(&mut next).unwrap();
    let reopened = Tree::open(root, tree.len(), Arc::new(next.clone())).unwrap();
    *store = next;
    reopened.verify().unwrap();
    reopened
}

/// Values too wide for any leaf pack (wide packs included), so the inner node kinds are what the
/// keys build.
fn value(byte: u8) -> Vec<u8> {
    vec![byte; artdb_art::PACK_WIDE_VALUE_WIDTH_MAX + 1]
}

fn drive(case: &Case) {
    let mut tree = Tree::new();
    let mut store = MemoryNodeStore::new();
    let mut model = BTreeMap::new();
    for key in &case.others {
        tree.insert(key, b"other").unwrap();
        model.insert(key.clone(), b"other".to_vec());
    }
    if case.with_value {
        tree.insert(&case.path, b"at the node").unwrap();
        model.insert(case.path.clone(), b"at the node".to_vec());
    }
    // A scattered order of all 256 bytes.
    let order: Vec<u8> = (0..=255u8)
        .map(|i| i.wrapping_mul(167).wrapping_add(13))
        .collect();
    let key = |byte: u8| {
        let mut key = case.path.clone();
        key.push(byte);
        key
    };
    let mut kind = Kind::Collapsed;
    let mut count = 0usize;
    for (step, &byte) in order.iter().enumerate() {
        tree.insert(&key(byte), &value(byte)).unwrap();
        model.insert(key(byte), value(byte));
        count += 1;
        kind = after_insert(kind, count, case.with_value);
        assert_eq!(
            counts(&tree),
            expected(case, kind, count),
            "insert #{count} ({kind:?})"
        );
        if step % 61 == 60 {
            tree = reopen(tree, &mut store);
        }
    }
    tree.verify().unwrap();
    for (step, &byte) in order.iter().rev().enumerate() {
        assert_eq!(tree.remove(&key(byte)).unwrap(), Some(value(byte)));
        model.remove(&key(byte));
        count -= 1;
        kind = after_remove(kind, count, case.with_value);
        assert_eq!(
            counts(&tree),
            expected(case, kind, count),
            "remove to {count} ({kind:?})"
        );
        // Hysteresis: one insert and one removal at the current size never change the kind.
        if count > 1 {
            tree.insert(&key(byte), &value(byte)).unwrap();
            let grown = after_insert(kind, count + 1, case.with_value);
            assert_eq!(
                counts(&tree),
                expected(case, grown, count + 1),
                "re-insert at {count}"
            );
            tree.remove(&key(byte)).unwrap();
            assert_eq!(
                counts(&tree),
                expected(case, after_remove(grown, count, case.with_value), count)
            );
        }
        if step % 53 == 52 {
            tree = reopen(tree, &mut store);
        }
        if step % 16 == 0 {
            tree.verify().unwrap();
        }
    }
    let all: BTreeMap<Vec<u8>, Vec<u8>> = tree
        .iter()
        .map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(all, model);
}

#[test]
fn root_node() {
    drive(&Case {
        path: vec![],
        others: vec![],
        with_value: false,
    });
}

#[test]
fn root_node_with_value_slot() {
    drive(&Case {
        path: vec![],
        others: vec![],
        with_value: true,
    });
}

#[test]
fn inner_node_with_prefix() {
    drive(&Case {
        path: b"common prefix longer than eight bytes".to_vec(),
        others: vec![b"zzz".to_vec()],
        with_value: false,
    });
}

#[test]
fn inner_node_with_prefix_and_value_slot() {
    drive(&Case {
        path: vec![7, 7],
        others: vec![vec![8]],
        with_value: true,
    });
}

/// Leaf packs: two keys of equal width start one, it grows to its capacity (PACK_ENTRIES_MAX
/// entries for short records, fewer for wide ones: `pack_capacity_max`), the next key bursts it
/// into an inner node; removals shrink packs down to a single value word.
#[test]
fn leaf_pack_capacity_and_burst() {
    leaf_pack_fills_to_capacity(0, 8);
    assert_eq!(
        artdb_art::pack_capacity_max(2 + 8),
        artdb_art::PACK_ENTRIES_MAX
    );
}

/// The same with long keys, whose packs are bounded by bytes (`PACK_AREA_LEN_MAX`): 40-byte
/// suffixes with 16-byte values, and the widest suffixes and values.
#[test]
fn wide_leaf_pack_capacity_and_burst() {
    leaf_pack_fills_to_capacity(37, 16);
    leaf_pack_fills_to_capacity(
        artdb_art::PACK_KEY_WIDTH_MAX - 3,
        artdb_art::PACK_VALUE_WIDTH_MAX,
    );
    assert!(artdb_art::pack_capacity_max(39 + 16) < artdb_art::PACK_ENTRIES_MAX);
}

/// Keys `k` ++ 3 distinct bytes ++ `filler` bytes (all one width), values of `value_len`:
/// one pack up to its capacity, a burst at one more, with checkpoint + reopen midway.
fn leaf_pack_fills_to_capacity(filler: usize, value_len: usize) {
    let mut store = MemoryNodeStore::new();
    let mut tree = Tree::new();
    let mut model = BTreeMap::new();
    let key = |i: usize| {
        let mut key = vec![
            b'k',
            (i * 7 % 256) as u8,
            (i / 256) as u8,
            (i * 13 % 251) as u8,
        ];
        key.extend((0..filler).map(|j| (i + j) as u8));
        key
    };
    let value = |i: usize| vec![(i % 251) as u8; value_len];
    let max = artdb_art::pack_capacity_max(2 + filler + value_len);
    let reopen_every = (max / 3).max(1);
    for i in 0..=max {
        tree.insert(&key(i), &value(i)).unwrap();
        model.insert(key(i), value(i));
        let stats = tree.stats();
        match i + 1 {
            1 => assert_eq!((stats.packs, stats.leaves), (0, 1)),
            n if n <= max => assert_eq!(
                (
                    stats.packs,
                    stats.node4 + stats.node16 + stats.node48 + stats.node256
                ),
                (1, 0),
                "{n} keys fit one pack"
            ),
            _ => assert!(
                stats.node256 + stats.node48 + stats.node16 >= 1,
                "burst at {}",
                i + 1
            ),
        }
        if i % reopen_every == reopen_every - 1 || i + 1 == max {
            tree = reopen(tree, &mut store);
            for j in (0..=i).step_by(7) {
                assert_eq!(tree.get(&key(j)).unwrap(), Some(&value(j)[..]));
            }
        }
    }
    tree.verify().unwrap();
    for i in (0..=max).rev() {
        assert_eq!(tree.remove(&key(i)).unwrap(), model.remove(&key(i)));
        if i % 29 == 0 {
            tree.verify().unwrap();
            let all: Vec<Vec<u8>> = tree.iter().map(|r| r.unwrap().0).collect();
            assert!(all.iter().eq(model.keys()));
        }
    }
    assert!(tree.is_empty());
}

#[test]
fn leaf_pack_width_change_bursts() {
    let mut tree = Tree::new();
    // Width changes burst a pack at once.
    tree.insert(b"ab", b"1").unwrap();
    tree.insert(b"ac", b"2").unwrap();
    assert_eq!(tree.stats().packs, 1);
    tree.insert(b"ad", b"333").unwrap();
    assert_eq!(tree.stats().packs, 0);
    tree.verify().unwrap();
    let all: Vec<Vec<u8>> = tree.iter().map(|r| r.unwrap().0).collect();
    assert_eq!(all, vec![b"ab".to_vec(), b"ac".to_vec(), b"ad".to_vec()]);
}
