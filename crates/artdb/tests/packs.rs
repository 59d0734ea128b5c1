//! Leaf packs survive every way the engine writes a table: a bulk load and a compacting
//! checkpoint (both stream the tree's `bulk_persist`) build them, like inserts do.
//!
//! Regression (issue 13, "packs everywhere"). Symptom: a table of fixed-width keys had 2,532
//! packs in memory and 0 after its second checkpoint; bulk-loaded tables had none at all, so they
//! lost the packs' memory and scan advantage. Cause: the tree's bulk builder (used by
//! `Db::bulk_load` and by compaction's rewrite) built only inner nodes and single leaves.

use artdb::{Db, Options};

fn key(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

#[test]
fn bulk_loaded_and_compacted_tables_have_leaf_packs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.artdb");
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("inserted").unwrap();
    db.create_table("loaded").unwrap();
    let count = 20_000u64;
    let mut batch = db.write().unwrap();
    for i in 0..count {
        batch.insert("inserted", &key(i), &i.to_le_bytes()).unwrap();
    }
    batch.commit().unwrap();
    let mut sorted: Vec<([u8; 8], [u8; 8])> =
        (0..count).map(|i| (key(i), i.to_le_bytes())).collect();
    sorted.sort_unstable();
    assert_eq!(
        db.bulk_load("loaded", sorted.iter().copied()).unwrap(),
        count
    );
    let packs = |db: &Db, table: &str| db.table_tree_stats(table).unwrap().packs;
    assert!(packs(&db, "inserted") > 0);
    assert!(packs(&db, "loaded") > 0, "a bulk load builds packs");
    for round in 0..2 {
        db.compact().unwrap();
        for table in ["inserted", "loaded"] {
            assert!(
                packs(&db, table) > 0,
                "{table}: no packs after compaction {round}"
            );
        }
    }
    db.close().unwrap();
    let db = Db::open(&path, Options::default()).unwrap();
    assert!(packs(&db, "inserted") > 0 && packs(&db, "loaded") > 0);
    assert!(db.verify().unwrap().is_ok());
    let read = db.read();
    for table in ["inserted", "loaded"] {
        let table = read.table(table).unwrap();
        assert_eq!(table.len(), count);
        for i in (0..count).step_by(101) {
            assert_eq!(table.get(&key(i)).unwrap(), Some(&i.to_le_bytes()[..]));
        }
    }
}

/// Dense packs (issue 13, W2's file size): a table of sequential 4-byte keys with 7-byte values,
/// bulk loaded, then changed by write batches (a removal makes a dense pack an ordinary one, a
/// re-insert dense again) and compacted twice, has one dense pack per full run of 256 keys
/// after each compaction, reads back like the model after a reopen, and verifies.
#[test]
fn bulk_loaded_and_compacted_dense_tables_have_dense_packs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.artdb");
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    let runs = 40u32;
    let value = |i: u32| {
        let mut v = [0u8; 7];
        v[..4].copy_from_slice(&i.to_le_bytes());
        v
    };
    let mut model: std::collections::BTreeMap<[u8; 4], [u8; 7]> = (0..runs * 256)
        .map(|i| (i.to_be_bytes(), value(i)))
        .collect();
    db.bulk_load("t", model.iter().map(|(k, v)| (*k, *v)))
        .unwrap();
    let dense = |db: &Db| db.table_tree_stats("t").unwrap().dense_packs;
    assert_eq!(
        dense(&db),
        u64::from(runs),
        "a bulk load builds dense packs"
    );
    // Remove a key from each of three runs, and put one of them back with a new value.
    let mut batch = db.write().unwrap();
    for i in [5u32, 300, 9000] {
        batch.remove("t", &i.to_be_bytes()).unwrap();
        model.remove(&i.to_be_bytes());
    }
    batch.insert("t", &300u32.to_be_bytes(), &value(7)).unwrap();
    model.insert(300u32.to_be_bytes(), value(7));
    batch.commit().unwrap();
    assert_eq!(dense(&db), u64::from(runs) - 2);
    for round in 0..2 {
        db.compact().unwrap();
        assert_eq!(
            dense(&db),
            u64::from(runs) - 2,
            "dense packs after compaction {round}"
        );
    }
    db.close().unwrap();
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(dense(&db), u64::from(runs) - 2);
    assert!(db.verify().unwrap().is_ok());
    let read = db.read();
    let table = read.table("t").unwrap();
    assert_eq!(table.len(), model.len() as u64);
    for i in 0..runs * 256 + 10 {
        let k = i.to_be_bytes();
        assert_eq!(
            table.get(&k).unwrap(),
            model.get(&k).map(|v| &v[..]),
            "key {i}"
        );
    }
}
