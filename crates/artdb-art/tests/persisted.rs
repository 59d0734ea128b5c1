//! Persisted nodes: trees whose lower levels live in a `NodeSource` (the `MemoryNodeStore`
//! test double) are read and modified correctly (modifying copies from the "file"), released
//! persisted offsets are reported exactly, and corrupt images are errors, never panics.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod common;
use common::{checkpoint, scale};

use artdb_art::{ChildWord, Error, MemoryNodeStore, NodeSink, NodeSource, QuickRegion, Tree};
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn contents(tree: &Tree) -> Model {
    tree.iter()
        .map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect::<Result<_, _>>()
        .unwrap()
}

fn persisted_set(tree: &Tree) -> BTreeSet<u64> {
    let mut set = BTreeSet::new();
    tree.for_each_persisted(|offset| assert!(set.insert(offset), "offset {offset} twice"))
        .unwrap();
    set
}

#[derive(Debug, Clone)]
enum Op {
    Insert(usize, Vec<u8>),
    Remove(usize),
    Checkpoint(bool),
    /// A batch of writes (key indexes, remove if odd) rolled back.
    AbortedBatch(Vec<usize>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 0..14)).prop_map(|(k, v)| Op::Insert(k, v)),
        4 => any::<usize>().prop_map(Op::Remove),
        1 => any::<bool>().prop_map(Op::Checkpoint),
        1 => proptest::collection::vec(any::<usize>(), 0..20).prop_map(Op::AbortedBatch),
    ]
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<u64>().prop_map(|i| i.to_be_bytes().to_vec()),
        (0u32..400).prop_map(|i| i.to_be_bytes().to_vec()),
        proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..10),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48 * scale(), ..ProptestConfig::default() })]

    #[test]
    fn modify_a_persisted_tree(
        pool in proptest::collection::vec(key(), 1..200),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        modify_a_persisted(&pool, &ops, |v| v.to_vec())?;
    }

    /// The same over W1-shaped 32-byte composite keys (two column values, a random u64 tail)
    /// with every value 16 bytes wide: packs of up to 1024 entries (issue 13) are persisted,
    /// reopened, copied from the file, filled and burst.
    #[test]
    fn modify_a_persisted_tree_of_wide_pairs(
        pool in proptest::collection::vec(
            (0u8..2, any::<u64>()).prop_map(|(column, tail)| {
                let mut key = vec![0, 3];
                key.extend(format!("{column:0>22}").bytes());
                key.extend_from_slice(&tail.to_be_bytes());
                key
            }),
            1..2600,
        ),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        modify_a_persisted(&pool, &ops, |v| {
            let mut v = v.to_vec();
            v.resize(16, 0xA5);
            v
        })?;
    }
}

/// Inserts every other pool key (values through `widen`), checkpoints, runs `ops` against a
/// model with checkpoints and rolled-back batches, and checks that exactly the checkpoint's
/// persisted offsets stay reachable or are released, and the contents at the end.
fn modify_a_persisted(
    pool: &[Vec<u8>],
    ops: &[Op],
    widen: impl Fn(&[u8]) -> Vec<u8>,
) -> Result<(), TestCaseError> {
    let mut model = Model::new();
    let mut tree = Tree::new();
    for (i, key) in pool.iter().enumerate().step_by(2) {
        let value = widen(&vec![i as u8; i % 12]);
        tree.insert(key, &value).unwrap();
        model.insert(key.clone(), value);
    }
    let mut store = MemoryNodeStore::new();
    tree = checkpoint(&mut tree, &mut store, false);
    let mut at_checkpoint = persisted_set(&tree);
    let mut released = BTreeSet::new();
    for op in ops {
        match op {
            Op::Insert(k, v) => {
                let key = &pool[k % pool.len()];
                let v = widen(v);
                prop_assert_eq!(tree.insert(key, &v).unwrap(), model.insert(key.clone(), v));
            }
            Op::Remove(k) => {
                let key = &pool[k % pool.len()];
                prop_assert_eq!(tree.remove(key).unwrap(), model.remove(key));
            }
            Op::AbortedBatch(writes) => {
                let start = tree.snapshot();
                for (n, k) in writes.iter().enumerate() {
                    let key = &pool[k % pool.len()];
                    if n % 2 == 1 {
                        tree.remove(key).unwrap();
                    } else {
                        tree.insert(key, &widen(&[n as u8; 5])).unwrap();
                    }
                }
                tree.rollback_to(&start).unwrap();
            }
            Op::Checkpoint(adopt) => {
                released.extend(tree.take_released_persisted());
                let still: BTreeSet<u64> = persisted_set(&tree);
                // Exactly what the checkpoint had: still reachable, or released once.
                prop_assert!(still.is_disjoint(&released));
                prop_assert_eq!(
                    still.union(&released).copied().collect::<BTreeSet<_>>(),
                    at_checkpoint.clone()
                );
                tree = checkpoint(&mut tree, &mut store, *adopt);
                tree.take_released_persisted();
                // Right after a checkpoint the root is persisted: the point reader's quick path.
                check_point_reader(&mut tree, pool, &model)?;
                at_checkpoint = persisted_set(&tree);
                released.clear();
            }
        }
        prop_assert_eq!(tree.len(), model.len() as u64);
    }
    tree.verify().unwrap();
    prop_assert_eq!(contents(&tree), model.clone());
    for key in pool {
        prop_assert_eq!(tree.get(key).unwrap(), model.get(key).map(Vec::as_slice));
    }
    check_point_reader(&mut tree, pool, &model)?;
    let mut values = Vec::new();
    let keys: Vec<&[u8]> = pool.iter().map(Vec::as_slice).collect();
    tree.get_many(&keys, &mut values).unwrap();
    for (key, value) in keys.iter().zip(&values) {
        prop_assert_eq!(*value, model.get(*key).map(Vec::as_slice));
    }
    Ok(())
}

/// `Snapshot::point_reader` against the model: every pool key, and each one byte longer and
/// shorter (absent keys, keys that end at an inner node).
fn check_point_reader(
    tree: &mut Tree,
    pool: &[Vec<u8>],
    model: &Model,
) -> Result<(), TestCaseError> {
    let snapshot = tree.snapshot();
    let reader = snapshot.point_reader();
    for key in pool {
        let mut longer = key.clone();
        longer.push(0x5A);
        let shorter = &key[..key.len().saturating_sub(1)];
        for probe in [key.as_slice(), longer.as_slice(), shorter] {
            prop_assert_eq!(
                reader.get(probe).unwrap(),
                model.get(probe).map(Vec::as_slice)
            );
        }
    }
    Ok(())
}

fn sample_tree() -> (Model, MemoryNodeStore, ChildWord) {
    let mut model = Model::new();
    let mut tree = Tree::new();
    for i in 0u32..300 {
        let key = i.wrapping_mul(2654435761u32).to_be_bytes().to_vec();
        let value = vec![i as u8; (i % 20) as usize];
        tree.insert(&key, &value).unwrap();
        model.insert(key, value);
    }
    for word in [
        "",
        "a",
        "ab",
        "abc",
        "abcdefghijklmnop",
        "abcdefghijklmnopq",
    ] {
        tree.insert(word.as_bytes(), word.as_bytes()).unwrap();
        model.insert(word.as_bytes().to_vec(), word.as_bytes().to_vec());
    }
    let mut store = MemoryNodeStore::new();
    let root = tree.persist(&mut store).unwrap();
    (model, store, root)
}

/// Everything a reader can do; errors are fine, panics are not.
fn exercise(tree: &Tree, model: &Model) -> Result<(), Error> {
    for key in model.keys() {
        tree.get(key)?;
    }
    for pair in tree.iter() {
        pair?;
    }
    for pair in tree.iter().rev() {
        pair?;
    }
    let mut cursor = tree.cursor();
    cursor.seek(b"ab")?;
    while cursor.next()? {}
    let _ = tree.verify();
    let _ = tree.stats();
    Ok(())
}

#[test]
fn persisted_tree_reads_back() {
    let (model, store, root) = sample_tree();
    let tree = Tree::open(root, model.len() as u64, Arc::new(store)).unwrap();
    tree.verify().unwrap();
    assert_eq!(contents(&tree), model);
    assert_eq!(
        tree.stats().heap_bytes,
        0,
        "nothing was copied to the heap by reading"
    );
}

#[test]
fn corrupt_images_are_errors_not_panics() {
    let (model, store, root) = sample_tree();
    let len = store.bytes().len();
    let step = (len / (400 * scale() as usize)).max(1);
    let mut failures = 0usize;
    for position in (8..len).step_by(step) {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut bad = store.clone();
            bad.bytes_mut()[position] ^= flip;
            let mut tree = Tree::open(root, model.len() as u64, Arc::new(bad)).unwrap();
            same_answers_through_point_reader(&mut tree, &model);
            if exercise(&tree, &model).is_err()
                || tree.verify().is_err()
                || contents_differ(&tree, &model)
            {
                failures += 1;
            }
        }
    }
    assert!(failures > 0, "corruption went unnoticed everywhere");
}

/// `Snapshot::point_reader` answers exactly as `Snapshot::get` (the same value, or an error
/// for both), also on a corrupt tree: its quick path checks what the per-call path checks.
fn same_answers_through_point_reader(tree: &mut Tree, model: &Model) {
    let snapshot = tree.snapshot();
    let reader = snapshot.point_reader();
    for key in model.keys() {
        let mut longer = key.clone();
        longer.push(0);
        for probe in [
            key.as_slice(),
            longer.as_slice(),
            &key[..key.len().saturating_sub(1)],
        ] {
            match (reader.get(probe), snapshot.get(probe)) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{probe:?}"),
                (Err(_), Err(_)) => {}
                (a, b) => panic!("{probe:?}: point reader {a:?}, snapshot {b:?}"),
            }
        }
    }
}

/// A source whose pages (512 bytes) start unverified and are verified by `node_image`, as the
/// engine's pages are by their first use (checksum): a point reader made before any lookup
/// holds a region whose bits are all clear, and sees them set by the lookups it makes.
struct LazyStore {
    inner: MemoryNodeStore,
    verified: Vec<AtomicU64>,
    node_image_calls: AtomicU64,
}

const LAZY_PAGE_SHIFT: u32 = 9;

impl LazyStore {
    fn new(inner: MemoryNodeStore) -> LazyStore {
        let words = (inner.bytes().len() >> LAZY_PAGE_SHIFT) / 64 + 1;
        LazyStore {
            inner,
            verified: (0..words).map(|_| AtomicU64::new(0)).collect(),
            node_image_calls: AtomicU64::new(0),
        }
    }
}

impl NodeSource for LazyStore {
    fn node_image(&self, offset: u64) -> Result<&[u8], Error> {
        self.node_image_calls.fetch_add(1, Ordering::Relaxed);
        let page = offset >> LAZY_PAGE_SHIFT;
        if let Some(word) = self.verified.get((page / 64) as usize) {
            word.fetch_or(1 << (page % 64), Ordering::AcqRel);
        }
        self.inner.node_image(offset)
    }

    fn quick_region(&self) -> Option<QuickRegion<'_>> {
        Some(QuickRegion::new(
            self.inner.bytes(),
            &self.verified,
            LAZY_PAGE_SHIFT,
            0,
        ))
    }
}

#[test]
fn point_reader_sees_pages_verified_after_it_was_made() {
    // W2's shape (4-byte big-endian keys, 7-byte values: dense packs under Node256s) and the
    // sample tree (prefixes, Node4..Node256, leaves, packs, a key that ends at an inner node).
    let w2: Model = (0u32..20_000)
        .map(|i| {
            (
                i.to_be_bytes().to_vec(),
                i.to_le_bytes()[..3].repeat(2)[..5].to_vec(),
            )
        })
        .collect();
    let (sample, _, _) = sample_tree();
    for model in [w2, sample] {
        let mut store = MemoryNodeStore::new();
        let (root, len) = Tree::bulk_persist(model.clone(), &mut store).unwrap();
        let source = Arc::new(LazyStore::new(store));
        let mut tree = Tree::open(root, len, source.clone()).unwrap();
        let snapshot = tree.snapshot();
        let reader = snapshot.point_reader();
        for round in 0..2 {
            for (key, value) in &model {
                assert_eq!(reader.get(key).unwrap(), Some(value.as_slice()), "{key:?}");
                let mut longer = key.clone();
                longer.push(1);
                assert_eq!(
                    reader.get(&longer).unwrap(),
                    model.get(&longer).map(Vec::as_slice)
                );
            }
            let calls = source.node_image_calls.swap(0, Ordering::Relaxed);
            if round == 0 {
                assert!(
                    calls > 0,
                    "the first round verifies pages through the source"
                );
            }
        }
        // Every page a lookup reached is verified now: the second round needed the source only
        // for what the quick path hands to the general path (leaves, packs other than dense).
        assert!(source
            .verified
            .iter()
            .any(|word| word.load(Ordering::Relaxed) != 0));
    }
}

/// `get_many` on a tree whose pages start unverified (the persisted group walk hands each
/// lookup that meets such a page to the path that has the source verify it): the same answers
/// as the model, for dense keys (dense packs), random 8-byte keys (ordinary packs under
/// Node256s), the sample tree, present and absent keys, in batches of every size up to 40.
#[test]
fn get_many_sees_pages_verified_by_its_own_lookups() {
    let w2: Model = (0u32..20_000)
        .map(|i| (i.to_be_bytes().to_vec(), i.to_le_bytes()[..3].to_vec()))
        .collect();
    let random = random_model(30_000, 0x2545_F491_4F6C_DD1D, u64::MAX);
    let (sample, _, _) = sample_tree();
    for model in [w2, random, sample] {
        let mut store = MemoryNodeStore::new();
        let (root, len) = Tree::bulk_persist(model.clone(), &mut store).unwrap();
        let source = Arc::new(LazyStore::new(store));
        let mut tree = Tree::open(root, len, source.clone()).unwrap();
        let snapshot = tree.snapshot();
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for key in model.keys() {
            probes.push(key.clone());
            let mut absent = key.clone();
            absent.push(9);
            probes.push(absent);
        }
        let mut out = Vec::new();
        for round in 0..2 {
            let mut at = 0;
            let mut size = 1;
            while at < probes.len() {
                let batch = &probes[at..(at + size).min(probes.len())];
                let keys: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                snapshot.get_many(&keys, &mut out).unwrap();
                for (key, value) in batch.iter().zip(&out) {
                    assert_eq!(*value, model.get(key).map(Vec::as_slice), "{key:?}");
                }
                at += size;
                size = size % 40 + 1;
            }
            let calls = source.node_image_calls.swap(0, Ordering::Relaxed);
            if round == 0 {
                assert!(
                    calls > 0,
                    "the first round verifies pages through the source"
                );
            }
        }
    }
}

/// `n` pairs of 8-byte keys from an xorshift stream seeded with `seed` (each masked with
/// `mask`, so that some bytes are 0) and 8-byte values (the pair's index).
fn random_model(n: u64, seed: u64, mask: u64) -> Model {
    let mut state = seed;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (
                (state & mask).to_be_bytes().to_vec(),
                i.to_le_bytes().to_vec(),
            )
        })
        .collect()
}

fn contents_differ(tree: &Tree, model: &Model) -> bool {
    let got: Result<Model, Error> = tree
        .iter()
        .map(|r| r.map(|(k, v)| (k, v.to_vec())))
        .collect();
    got.map_or(true, |got| got != *model)
}

#[test]
fn a_child_not_below_its_parent_is_an_error() {
    let (model, mut store, root) = sample_tree();
    let root_offset = root.persisted_offset().unwrap() as usize;
    // Point the root's first child slot (Node256 children start at byte 32) back at the root.
    let bytes = store.bytes_mut();
    let kind = bytes[root_offset];
    let first_child = match kind {
        1 => root_offset + 40,
        2 => root_offset + 48,
        3 => root_offset + 288,
        _ => root_offset + 32,
    };
    let cycle = ChildWord::persisted(root_offset as u64)
        .unwrap()
        .to_bits()
        .to_le_bytes();
    for slot in (first_child..first_child + 8 * 4).step_by(8) {
        bytes[slot..slot + 8].copy_from_slice(&cycle);
    }
    let tree = Tree::open(root, model.len() as u64, Arc::new(store)).unwrap();
    let error = exercise(&tree, &model).unwrap_err();
    assert!(matches!(error, Error::Persisted { .. }), "{error}");
    assert!(tree.verify().is_err());
}

#[test]
fn heap_words_are_refused_as_roots() {
    let store = Arc::new(MemoryNodeStore::new());
    assert!(ChildWord::from_bits(0x1000).is_none());
    assert!(matches!(Tree::open(ChildWord::EMPTY, 0, store), Ok(tree) if tree.is_empty()));
}

#[test]
fn tree_without_source_reports_persisted_words() {
    let (model, store, root) = sample_tree();
    let tree = Tree::open(root, model.len() as u64, Arc::new(store)).unwrap();
    // A sink that refuses to write: persist of an untouched persisted tree writes nothing.
    struct Refuse;
    impl NodeSink for Refuse {
        fn write(&mut self, _: &[u8], _: Option<u64>) -> Result<u64, Error> {
            Err(Error::Storage("refused".into()))
        }
    }
    assert_eq!(tree.persist(&mut Refuse).unwrap(), root);
}

#[test]
fn bulk_persist_streams_a_tree() {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0u32..3000)
        .map(|i| {
            (
                (i * 7).to_be_bytes().to_vec(),
                vec![i as u8; (i % 11) as usize],
            )
        })
        .collect();
    let mut store = MemoryNodeStore::new();
    let (root, len) = Tree::bulk_persist(pairs.iter().cloned(), &mut store).unwrap();
    assert_eq!(len, 3000);
    let tree = Tree::open(root, len, Arc::new(store)).unwrap();
    tree.verify().unwrap();
    let model: Model = pairs.into_iter().collect();
    assert_eq!(contents(&tree), model);
    // Fixed-width keys and values: the streamed images include leaf packs (regression: bulk
    // builds made none), and every read path accepts them (checked persisted images).
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0u64..5000)
        .map(|i| {
            let key = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            (key.to_be_bytes().to_vec(), i.to_le_bytes().to_vec())
        })
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    let mut store = MemoryNodeStore::new();
    let (root, len) = Tree::bulk_persist(pairs.iter().cloned(), &mut store).unwrap();
    let tree = Tree::open(root, len, Arc::new(store)).unwrap();
    tree.verify().unwrap();
    assert!(tree.stats().packs > 0, "{:?}", tree.stats());
    let model: Model = pairs.into_iter().collect();
    assert_eq!(contents(&tree), model);
    let keys: Vec<Vec<u8>> = model
        .keys()
        .flat_map(|k| {
            let mut next = k.clone();
            next[7] ^= 1;
            [k.clone(), next]
        })
        .collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let mut values = Vec::new();
    tree.get_many(&refs, &mut values).unwrap();
    for (key, value) in refs.iter().zip(&values) {
        assert_eq!(*value, model.get(*key).map(Vec::as_slice));
        assert_eq!(tree.get(key).unwrap(), model.get(*key).map(Vec::as_slice));
    }
    let mut store = MemoryNodeStore::new();
    let error = Tree::bulk_persist([(b"b", b"1"), (b"a", b"2")], &mut store).unwrap_err();
    assert_eq!(error, Error::Unsorted { index: 1 });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32 * scale(), ..ProptestConfig::default() })]

    /// A streamed bulk build (images composed straight for the sink) reads back like the model,
    /// through every persisted lookup path: point gets of each key and of its neighbours (one
    /// byte changed, one byte shorter, one byte longer: value slots, prefixes that differ), and
    /// `get_many`. Key sets mix dense runs (Node256 of inline values, the dense fast path),
    /// sparse and variable-length keys (Node4/16/48, prefixes, keys ending at inner nodes) and
    /// value lengths around the inline limit.
    #[test]
    fn bulk_persist_reads_back_like_the_model(
        keys in proptest::collection::btree_set(
            prop_oneof![
                (0u32..2000).prop_map(|i| i.to_be_bytes().to_vec()),
                any::<u32>().prop_map(|i| i.to_be_bytes().to_vec()),
                proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..14),
            ],
            0..1200,
        ),
        value_len in prop_oneof![Just(0usize), Just(7), Just(8), Just(20)],
    ) {
        let model: Model = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), vec![(i % 251) as u8; value_len + i % 2]))
            .collect();
        let mut store = MemoryNodeStore::new();
        let (root, len) = Tree::bulk_persist(model.iter(), &mut store).unwrap();
        prop_assert_eq!(len, model.len() as u64);
        let tree = Tree::open(root, len, Arc::new(store)).unwrap();
        tree.verify().unwrap();
        prop_assert_eq!(&contents(&tree), &model);
        let heap = Tree::bulk_build(model.iter()).unwrap();
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for key in model.keys() {
            probes.push(key.clone());
            let mut longer = key.clone();
            longer.push(0);
            probes.push(longer);
            if let Some((last, shorter)) = key.split_last() {
                probes.push(shorter.to_vec());
                let mut other = shorter.to_vec();
                other.push(last.wrapping_add(1));
                probes.push(other);
            }
        }
        for probe in &probes {
            let want = model.get(probe).map(Vec::as_slice);
            prop_assert_eq!(tree.get(probe).unwrap(), want);
            prop_assert_eq!(heap.get(probe).unwrap(), want);
        }
        let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
        let mut values = Vec::new();
        tree.get_many(&refs, &mut values).unwrap();
        for (probe, value) in refs.iter().zip(&values) {
            prop_assert_eq!(*value, model.get(*probe).map(Vec::as_slice));
        }
    }
}

/// Persisted roots that are a leaf or a pack, with header bytes that an inner node would read as
/// a short prefix at depth 0 (a leaf's value length 7; a pack's spare count and prefix length):
/// lookups must take their kind first (regression: the persisted lookup fast path compared such
/// bytes as a prefix and answered "absent").
#[test]
fn persisted_leaf_and_pack_roots_answer_lookups() {
    let long_key = b"abcdefghijklmnopqrstuvwxyz".to_vec();
    let cases: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![
        vec![(long_key.clone(), b"1234567".to_vec())],
        vec![(long_key.clone(), vec![9u8; 3])],
        (0u8..6)
            .map(|i| {
                let mut key = long_key.clone();
                key[25] = b'a' + i;
                (key, vec![i; 7])
            })
            .collect(),
    ];
    for pairs in cases {
        let mut tree = Tree::new();
        for (key, value) in &pairs {
            tree.insert(key, value).unwrap();
        }
        let mut store = MemoryNodeStore::new();
        let root = tree.persist(&mut store).unwrap();
        let tree = Tree::open(root, pairs.len() as u64, Arc::new(store)).unwrap();
        tree.verify().unwrap();
        for (key, value) in &pairs {
            assert_eq!(tree.get(key).unwrap(), Some(&value[..]), "{key:?}");
            let mut other = key.clone();
            other[25] = b'#';
            assert_eq!(tree.get(&other).unwrap(), None);
            assert_eq!(tree.get(&key[..7]).unwrap(), None);
        }
    }
}

/// The images of `store` on the first paths down from `root`: the root, up to `fan` children
/// of each inner node (children read from the documented layouts, node/mod.rs), to `levels`.
fn images_near_root(
    store: &MemoryNodeStore,
    root: ChildWord,
    fan: usize,
    levels: usize,
) -> Vec<usize> {
    let bytes = store.bytes();
    let mut found = Vec::new();
    let mut level = vec![root.persisted_offset().unwrap() as usize];
    for _ in 0..levels {
        let mut next = Vec::new();
        for &offset in &level {
            found.push(offset);
            let slots: Vec<usize> = match bytes[offset] {
                1 => (0..4).map(|i| offset + 40 + 8 * i).collect(),
                2 => (0..16).map(|i| offset + 48 + 8 * i).collect(),
                3 => (0..48).map(|i| offset + 288 + 8 * i).collect(),
                4 => (0..256).map(|i| offset + 32 + 8 * i).collect(),
                _ => Vec::new(),
            };
            let children = slots.into_iter().filter_map(|slot| {
                let word = u64::from_le_bytes(bytes[slot..slot + 8].try_into().unwrap());
                ChildWord::from_bits(word).and_then(ChildWord::persisted_offset)
            });
            next.extend(children.take(fan).map(|offset| offset as usize));
        }
        level = next;
    }
    found
}

/// A source with no `QuickRegion`: every lookup takes the checked general path
/// (`Resolver::resolve` at each level).
struct GeneralOnly(MemoryNodeStore);

impl NodeSource for GeneralOnly {
    fn node_image(&self, offset: u64) -> Result<&[u8], Error> {
        self.0.node_image(offset)
    }
}

/// The quick paths (a point reader's checked root, then `lookup::persisted::get` with its Node256
/// and dense-pack forms of the checks) answer exactly as the general path, also on damaged
/// images: every byte of the headers (and first child slots) of the images near the root of a
/// W2-shaped tree and of the sample tree, flipped three ways, then looked up through a point
/// reader, `Snapshot::get` and `Tree::get` over a store with a region, against `Tree::get` over
/// the same bytes without one: the same value, or an error on both.
#[test]
fn quick_paths_answer_as_the_general_path_on_damaged_images() {
    // W2's shape: a root with a one-byte prefix, Node256s, dense packs of 7-byte values.
    let w2: Model = (0u32..70_000)
        .map(|i| {
            (
                i.to_be_bytes().to_vec(),
                i.to_le_bytes()[..3].repeat(3)[..7].to_vec(),
            )
        })
        .collect();
    // Random keys: ordinary packs of ~15 entries below the root's Node256.
    let random = random_model(4_000, 0x9E37_79B9_7F4A_7C15, 0xFFFF_0000_0000_FFFF);
    let (sample, _, _) = sample_tree();
    for model in [w2, random, sample] {
        let mut store = MemoryNodeStore::new();
        let (root, len) = Tree::bulk_persist(model.clone(), &mut store).unwrap();
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for key in model.keys().step_by(37) {
            let mut longer = key.clone();
            longer.push(3);
            probes.extend([
                key.clone(),
                longer,
                key[..key.len().saturating_sub(1)].to_vec(),
            ]);
        }
        probes.extend([vec![0, 1, 2, 3], vec![9, 9, 9, 9], vec![0, 0, 0, 0, 0]]);
        let images = images_near_root(&store, root, 2, 3);
        assert!(images.len() >= 3, "{images:?}");
        let mut positions: Vec<usize> = images
            .iter()
            .flat_map(|&offset| offset..(offset + 48).min(store.bytes().len()))
            .collect();
        positions.push(usize::MAX); // the intact store
        let mut noticed = 0usize;
        for position in positions {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = store.clone();
                if position != usize::MAX {
                    bad.bytes_mut()[position] ^= flip;
                }
                let general = Tree::open(root, len, Arc::new(GeneralOnly(bad.clone()))).unwrap();
                let mut quick = Tree::open(root, len, Arc::new(bad)).unwrap();
                let snapshot = quick.snapshot();
                let reader = snapshot.point_reader();
                for probe in &probes {
                    let expected = general.get(probe);
                    let answers = [reader.get(probe), snapshot.get(probe), quick.get(probe)];
                    for answer in answers {
                        match (&answer, &expected) {
                            (Ok(a), Ok(b)) => assert_eq!(a, b, "{probe:?} at {position}"),
                            (Err(_), Err(_)) => {}
                            (a, b) => panic!("{probe:?} at {position}: quick {a:?}, general {b:?}"),
                        }
                    }
                    // `get_many` of the probe alone: the persisted group walk.
                    let mut many = Vec::new();
                    match (snapshot.get_many(&[probe], &mut many), &expected) {
                        (Ok(()), Ok(b)) => assert_eq!(many[0], *b, "{probe:?} at {position}"),
                        (Err(_), Err(_)) => {}
                        (a, b) => panic!("{probe:?} at {position}: get_many {a:?}, general {b:?}"),
                    }
                    if position == usize::MAX {
                        assert_eq!(expected.unwrap(), model.get(probe).map(Vec::as_slice));
                    } else if !matches!(expected, Ok(value) if value == model.get(probe).map(Vec::as_slice))
                    {
                        noticed += 1;
                    }
                }
            }
        }
        assert!(noticed > 0, "no damage changed an answer");
    }
}

/// `get_many` of many keys at once on damaged images: when it answers, every answer is the
/// general path's, and it fails only when the general path fails for one of the keys.
#[test]
fn get_many_answers_as_the_general_path_on_damaged_images() {
    let model = random_model(3_000, 0x2545_F491_4F6C_DD1D, 0xFFFF_0000_0000_FFFF);
    let mut store = MemoryNodeStore::new();
    let (root, len) = Tree::bulk_persist(model.clone(), &mut store).unwrap();
    let mut probes: Vec<Vec<u8>> = model.keys().step_by(5).cloned().collect();
    probes.extend(model.keys().step_by(11).map(|key| {
        let mut absent = key.clone();
        absent[7] ^= 0x55;
        absent
    }));
    let images = images_near_root(&store, root, 2, 3);
    let mut errors = 0;
    for &offset in &images {
        for position in offset..(offset + 48).min(store.bytes().len()) {
            let mut bad = store.clone();
            bad.bytes_mut()[position] ^= 0x81;
            let general = Tree::open(root, len, Arc::new(GeneralOnly(bad.clone()))).unwrap();
            let mut quick = Tree::open(root, len, Arc::new(bad)).unwrap();
            let snapshot = quick.snapshot();
            let expected: Vec<_> = probes.iter().map(|probe| general.get(probe)).collect();
            for batch in (0..probes.len()).collect::<Vec<_>>().chunks(23) {
                let keys: Vec<&[u8]> = batch.iter().map(|&i| probes[i].as_slice()).collect();
                let mut many = Vec::new();
                match snapshot.get_many(&keys, &mut many) {
                    Ok(()) => {
                        for (&i, value) in batch.iter().zip(&many) {
                            assert_eq!(
                                expected[i].as_ref().ok(),
                                Some(value),
                                "{:?} at {position}",
                                probes[i]
                            );
                        }
                    }
                    Err(_) => {
                        errors += 1;
                        assert!(batch.iter().any(|&i| expected[i].is_err()), "at {position}");
                    }
                }
            }
        }
    }
    assert!(errors > 0, "no damage was noticed");
}
