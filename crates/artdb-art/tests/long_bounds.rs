//! Range bounds longer than any key (issue 8 item 10).
//!
//! Regression. Symptom: on a tree holding keys of 4,095 and 4,096 bytes, `range(..=k)` with a
//! 4,097-byte `k` iterated forward correctly, but `next_back()` on `range(..k)` returned
//! `KeyTooLarge`. Cause: the cursor's seek checked the target's length as if it were a key to
//! store; a bound is only compared. Now seek compares an over-long target by its first
//! `KEY_LEN_MAX` bytes, so both ends of a range agree in both directions.

use artdb_art::{Tree, KEY_LEN_MAX};
use std::collections::BTreeMap;
use std::ops::Bound;

type Bounds<'a> = (Bound<&'a [u8]>, Bound<&'a [u8]>);

#[test]
fn over_long_bounds_work_in_both_directions() {
    let mut tree = Tree::new();
    let mut model = BTreeMap::new();
    let keys: Vec<Vec<u8>> = vec![
        vec![7u8; KEY_LEN_MAX - 1],
        vec![7u8; KEY_LEN_MAX],
        vec![8u8; KEY_LEN_MAX],
        vec![6u8; 3],
        vec![7u8; 5],
        b"".to_vec(),
    ];
    for key in &keys {
        tree.insert(key, b"v").unwrap();
        model.insert(key.clone(), b"v".to_vec());
    }
    let mut long_bounds = vec![vec![7u8; KEY_LEN_MAX + 1], vec![7u8; KEY_LEN_MAX + 3]];
    let mut above = vec![7u8; KEY_LEN_MAX];
    above.push(0);
    long_bounds.push(above);
    let mut below = vec![7u8; KEY_LEN_MAX - 1];
    below.extend_from_slice(&[6, 9]);
    long_bounds.push(below);
    for bound in &long_bounds {
        let cases: Vec<Bounds<'_>> = vec![
            (Bound::Unbounded, Bound::Excluded(bound)),
            (Bound::Unbounded, Bound::Included(bound)),
            (Bound::Excluded(bound), Bound::Unbounded),
            (Bound::Included(bound), Bound::Unbounded),
            (Bound::Included(&keys[3][..]), Bound::Excluded(bound)),
        ];
        for (start, end) in cases {
            let expected: Vec<Vec<u8>> = model
                .range::<[u8], _>((start, end))
                .map(|(k, _)| k.clone())
                .collect();
            let forward: Vec<Vec<u8>> = tree
                .range::<&[u8], _>((start, end))
                .map(|item| item.unwrap().0.to_vec())
                .collect();
            assert_eq!(forward, expected, "forward {start:?}..{end:?}");
            let mut backward: Vec<Vec<u8>> = tree
                .range::<&[u8], _>((start, end))
                .rev()
                .map(|item| item.unwrap().0.to_vec())
                .collect();
            backward.reverse();
            assert_eq!(backward, expected, "backward");
        }
    }
}
