//! A bulk load after a checkpoint does not rewrite what it just wrote.
//!
//! Regression (found while benchmarking the Python package, W7). Symptom: loading 300k pairs
//! into a database that had checkpointed before gave a file twice the size (94.0 MB against 47.1
//! MB) and wrote everything twice. Cause: the compaction baseline (pages in use after the first
//! checkpoint of the process) did not count the loaded pages, so the load's own checkpoint saw
//! the file grow by more than half and compacted the tree the load had just written densely.

use artdb::{Db, Options};

fn pairs(count: u64) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
    (0..count).map(|i| (format!("key{i:010}").into_bytes(), [i as u8; 24].to_vec()))
}

fn file_bytes_after_load(checkpoint_first: bool) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.artdb");
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("small").unwrap();
    db.create_table("big").unwrap();
    if checkpoint_first {
        db.checkpoint().unwrap();
    }
    let bytes_before = db.stats().unwrap().store.file_bytes;
    let loaded = db.bulk_load("big", pairs(100_000)).unwrap();
    assert_eq!(loaded, 100_000);
    let after = db.stats().unwrap().store;
    assert!(db.verify().unwrap().is_ok());
    db.close().unwrap();
    (bytes_before, after.file_bytes)
}

#[test]
fn a_bulk_load_after_a_checkpoint_is_written_once() {
    let (_, without) = file_bytes_after_load(false);
    let (_, with) = file_bytes_after_load(true);
    assert!(
        with <= without + without / 5,
        "file after a load that followed a checkpoint: {with} bytes, without one: {without}"
    );
}
