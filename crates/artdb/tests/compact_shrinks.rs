//! `Db::compact` shrinks the file in the same call (issue 8 item 9, last bullet; issue 12 item 5).
//!
//! Regression. Symptom: `artdb checkpoint --compact` and `artdb compact` left the file as large
//! as before; only a later checkpoint shrank it. Cause: the compacted copy is written while the
//! old version still holds its pages (they are reusable only after the new superblock is durable
//! and no snapshot reaches them), so it lands beside them and the file's tail is not free when
//! the compacting checkpoint ends. Now `compact` goes on with checkpoints of its own until the
//! free tail is cut: once the old pages are free, a second dense copy fills the file from its low
//! end and the first copy's pages, now the tail, are cut off.

use artdb::{Db, Options};
use std::collections::BTreeMap;
use std::path::Path;

type State = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    Options {
        checkpoint_on_drop: false,
        ..Options::default()
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

fn read_all(db: &Db) -> State {
    let read = db.read();
    let table = read.table("t").unwrap();
    table
        .iter()
        .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
        .collect()
}

/// A table churned by rounds of random updates and removals with a checkpoint after each, so
/// its file holds many partly live pages.
fn churned(path: &Path, keys: u32) -> (Db, State) {
    let db = Db::create(path, options()).unwrap();
    db.create_table("t").unwrap();
    let mut model = State::new();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..6u32 {
        let mut batch = db.write().unwrap();
        for _ in 0..keys {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = ((x % u64::from(keys) * 2) as u32).to_be_bytes().to_vec();
            if round > 2 && x % 5 == 0 {
                batch.remove("t", &key).unwrap();
                model.remove(&key);
            } else {
                let value = vec![(x >> 8) as u8; 24 + (x % 40) as usize];
                batch.insert("t", &key, &value).unwrap();
                model.insert(key, value);
            }
        }
        batch.commit().unwrap();
        db.checkpoint().unwrap();
    }
    (db, model)
}

/// The size of a fresh database holding the same data, written densely by a bulk load.
fn dense_size(dir: &Path, model: &State) -> u64 {
    let path = dir.join("dense");
    let db = Db::create(&path, options()).unwrap();
    db.create_table("t").unwrap();
    db.bulk_load("t", model.iter()).unwrap();
    db.close().unwrap();
    file_len(&path)
}

#[test]
fn compact_shrinks_the_file_in_the_same_call() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let keys = 30_000 * artdb_testkit::scale() as u32;
    let (db, model) = churned(&path, keys);
    let before = file_len(&path);
    db.compact().unwrap();
    let after = file_len(&path);
    let dense = dense_size(dir.path(), &model);
    eprintln!("compact: {before} -> {after} bytes; a dense bulk-loaded copy: {dense}");
    assert_eq!(read_all(&db), model);
    assert!(db.verify().unwrap().is_ok());
    assert!(
        after * 10 <= dense * 13,
        "after compact {after} bytes, a dense copy {dense} (before {before})"
    );
    assert!(after < before, "{after} >= {before}");
    db.close().unwrap();
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(read_all(&db), model);
    assert!(db.verify().unwrap().is_ok());
}

#[test]
fn a_snapshot_held_across_compact_reads_its_version_and_the_file_shrinks_after() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (db, model) = churned(&path, 8_000 * artdb_testkit::scale() as u32);
    let held = db.read();
    let before = file_len(&path);
    db.compact().unwrap();
    // The pages of the held version cannot be reused or cut while it is held.
    let seen: State = held
        .table("t")
        .unwrap()
        .iter()
        .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
        .collect();
    assert_eq!(seen, model);
    drop(held);
    db.compact().unwrap();
    let after = file_len(&path);
    let dense = dense_size(dir.path(), &model);
    assert!(
        after * 10 <= dense * 13,
        "after compact {after} bytes, a dense copy {dense} (before {before})"
    );
    assert_eq!(read_all(&db), model);
    assert!(db.verify().unwrap().is_ok());
}
