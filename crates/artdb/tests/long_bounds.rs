//! Range bounds longer than any key, through the engine (issue 8 item 10).
//!
//! Regression. Symptom: on a table holding keys of 4,095 and 4,096 bytes, `Table::range(..=k)`
//! with a 4,097-byte `k` iterated forward correctly, but `next_back()` on `range(..k)` returned
//! `KeyTooLarge`. Cause: the tree cursor's seek checked a bound's length as if it were a key to
//! store; a bound is only compared. The tree's own tests cover the cursor; this one covers what
//! a user of the engine reaches: a snapshot's table (in memory and after a checkpoint, so read
//! from the file), a write transaction's merged view, and their cursors, in both directions.

mod common;

use artdb::{Transaction, WriteOptions};
use artdb_art::KEY_LEN_MAX;
use std::collections::BTreeMap;
use std::ops::Bound;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn keys() -> Vec<Vec<u8>> {
    vec![
        vec![7u8; KEY_LEN_MAX - 1],
        vec![7u8; KEY_LEN_MAX],
        vec![8u8; KEY_LEN_MAX],
        vec![6u8; 3],
        vec![7u8; 5],
        Vec::new(),
    ]
}

/// Bounds over the limit, just above and just below the keys at the limit, and ranges made of
/// them on either side.
fn ranges() -> Vec<Range> {
    let mut above = vec![7u8; KEY_LEN_MAX];
    above.push(0);
    let mut below = vec![7u8; KEY_LEN_MAX - 1];
    below.extend_from_slice(&[6, 9]);
    let longs = [
        vec![7u8; KEY_LEN_MAX + 1],
        vec![7u8; KEY_LEN_MAX + 40],
        vec![0xFFu8; KEY_LEN_MAX + 1],
        above,
        below,
    ];
    let mut out = Vec::new();
    for long in &longs {
        out.push((Bound::Unbounded, Bound::Excluded(long.clone())));
        out.push((Bound::Unbounded, Bound::Included(long.clone())));
        out.push((Bound::Excluded(long.clone()), Bound::Unbounded));
        out.push((Bound::Included(long.clone()), Bound::Unbounded));
        out.push((Bound::Included(vec![6u8; 3]), Bound::Excluded(long.clone())));
        out.push((Bound::Excluded(long.clone()), Bound::Included(vec![9u8; 2])));
    }
    out
}

/// What the model holds in `range`; an inverted range (start above end, which `BTreeMap`
/// refuses with a panic) holds nothing.
fn expected(model: &Map, range: &Range) -> Vec<Vec<u8>> {
    let inverted = match (&range.0, &range.1) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a >= b
        }
        _ => false,
    };
    if inverted {
        return Vec::new();
    }
    model.range(range.clone()).map(|(k, _)| k.clone()).collect()
}

fn collect<'a>(
    iter: impl DoubleEndedIterator<Item = artdb::Result<(Vec<u8>, &'a [u8])>>,
    backward: bool,
) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = if backward {
        iter.rev().map(|item| item.unwrap().0).collect()
    } else {
        iter.map(|item| item.unwrap().0).collect()
    };
    if backward {
        keys.reverse();
    }
    keys
}

fn check_table(db: &artdb::Db, model: &Map, when: &str) {
    let read = db.read();
    let table = read.table("t").unwrap();
    for range in ranges() {
        let want = expected(model, &range);
        for backward in [false, true] {
            let got = collect(table.range::<Vec<u8>, _>(range.clone()), backward);
            assert_eq!(
                got, want,
                "{when}: table range {range:?} backward={backward}"
            );
        }
        // A cursor seeks to an over-long target, then walks both ways.
        if let Bound::Included(target) | Bound::Excluded(target) = &range.0 {
            let mut cursor = table.cursor();
            let found = cursor.seek(target).unwrap();
            let first_at_or_after = model.range(target.clone()..).next().map(|(k, _)| k);
            assert_eq!(found, first_at_or_after.is_some(), "{when}: seek");
            if let Some(key) = first_at_or_after {
                assert_eq!(cursor.key(), key.as_slice(), "{when}: seek lands");
            }
        }
    }
    // No key can start with a prefix longer than any key.
    let long_prefix = vec![7u8; KEY_LEN_MAX + 1];
    let found: Vec<Vec<u8>> = table.prefix(&long_prefix).map(|r| r.unwrap().0).collect();
    assert!(found.is_empty(), "{when}: over-long prefix found {found:?}");
}

fn check_txn(txn: &Transaction, model: &Map) {
    for range in ranges() {
        let want = expected(model, &range);
        for backward in [false, true] {
            let got = collect(
                txn.range::<Vec<u8>, _>("t", range.clone()).unwrap(),
                backward,
            );
            assert_eq!(got, want, "transaction range {range:?} backward={backward}");
        }
    }
}

#[test]
fn over_long_bounds_agree_in_both_directions_in_tables_and_transactions() {
    let (_storage, db) = common::memory_db();
    db.create_table("t").unwrap();
    let mut model = Map::new();
    let mut batch = db.write().unwrap();
    for key in keys() {
        batch.insert("t", &key, b"v").unwrap();
        model.insert(key, b"v".to_vec());
    }
    batch.commit().unwrap();
    check_table(&db, &model, "in memory");
    db.checkpoint().unwrap();
    check_table(&db, &model, "after a checkpoint");

    // A write transaction's view merges its own changes with its snapshot.
    let mut txn = db.begin_write(WriteOptions::default()).unwrap();
    let mut mine = model.clone();
    let mut added = vec![7u8; KEY_LEN_MAX - 2];
    added.push(9);
    txn.insert("t", &added, b"w").unwrap();
    mine.insert(added, b"w".to_vec());
    txn.remove("t", &[7u8; KEY_LEN_MAX]).unwrap();
    mine.remove(&vec![7u8; KEY_LEN_MAX]);
    check_txn(&txn, &mine);
    txn.commit().unwrap();
    check_table(&db, &mine, "after the transaction");
}
