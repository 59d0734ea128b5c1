//! A newest superblock that looks torn but was durable is told apart by the write-ahead log
//! (issue 8 item 2, its last sentence).
//!
//! Symptom guarded against: both copies of the newest superblock damaged so that neither is
//! sealed look exactly like a superblock write torn by a crash, so the file alone falls back to
//! the previous checkpoint and the commits in between vanish without an error. Cause it relies
//! on: the log is recycled only after the superblock that covers it is durable, so a log cycle
//! that starts after the LSN the opened checkpoint covers proves that a newer checkpoint was
//! durable: open must say the newest checkpoint is damaged, not roll back. A genuinely torn
//! superblock (log not recycled) still opens at the previous checkpoint and replays the log:
//! `wal_crash.rs` covers that at every sync.

use artdb::{Db, Error, Options};
use std::collections::BTreeMap;
use std::path::Path;

const PAGE: usize = 32 * 1024;

fn options() -> Options {
    Options {
        checkpoint_on_drop: false,
        ..Options::default()
    }
}

fn commit_keys(db: &Db, keys: std::ops::Range<u32>, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    for i in keys {
        let mut txn = db.write().unwrap();
        txn.insert("t", &i.to_be_bytes(), &[i as u8; 9]).unwrap();
        txn.commit().unwrap();
        model.insert(i.to_be_bytes().to_vec(), vec![i as u8; 9]);
    }
}

/// Two checkpoints, then commits in the log only, then a crash (no checkpoint at drop).
/// Returns the state of the previous checkpoint and the final committed state.
type State = BTreeMap<Vec<u8>, Vec<u8>>;

fn build(path: &Path) -> (State, State) {
    let db = Db::create(path, options()).unwrap();
    db.create_table("t").unwrap();
    let mut model = BTreeMap::new();
    commit_keys(&db, 0..20, &mut model);
    db.checkpoint().unwrap();
    let previous = model.clone();
    commit_keys(&db, 20..40, &mut model);
    db.checkpoint().unwrap();
    commit_keys(&db, 40..60, &mut model);
    drop(db);
    (previous, model)
}

fn read_all(db: &Db) -> State {
    let read = db.read();
    let table = read.table("t").unwrap();
    table
        .iter()
        .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
        .collect()
}

fn generation(image: &[u8], slot: usize) -> u64 {
    let at = PAGE * (1 + slot) + 16;
    u64::from_le_bytes(image[at..at + 8].try_into().unwrap())
}

/// Unseals both copies of the newest superblock (a flipped magic byte in each), as a torn write
/// of that slot would leave them.
fn unseal_newest(path: &Path) {
    let mut image = std::fs::read(path).unwrap();
    let newest = usize::from(generation(&image, 1) > generation(&image, 0));
    for copy in [0, PAGE / 2] {
        image[PAGE * (1 + newest) + copy] ^= 0x20;
    }
    std::fs::write(path, image).unwrap();
}

#[test]
fn undamaged_control_recovers_every_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (_, model) = build(&path);
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(read_all(&db), model);
}

#[test]
fn a_durable_newest_superblock_that_looks_torn_is_reported_not_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (previous, _) = build(&path);
    unseal_newest(&path);
    match Db::open(&path, options()) {
        Err(error @ Error::Corruption { .. }) => {
            let message = error.to_string();
            assert!(
                message.contains("newest checkpoint"),
                "the message should name the damaged checkpoint: {message}"
            );
        }
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(db) => panic!(
            "opened silently with {} keys of 60: a rollback",
            read_all(&db).len()
        ),
    }
    // The file is untouched by the failed open: the explicit salvage option still reads the
    // previous checkpoint, read-only.
    let salvage = Options {
        salvage_previous_checkpoint: true,
        ..options()
    };
    let db = Db::open(&path, salvage).expect("salvage opens the previous checkpoint");
    assert_eq!(read_all(&db), previous);
    assert!(matches!(db.write().err(), Some(Error::ReadOnly)));
}

/// A bulk load writes its pages and checkpoints without a log record; a damaged superblock of
/// that checkpoint must not silently open the checkpoint before it, which lacks the load.
#[test]
fn a_damaged_checkpoint_of_a_bulk_load_is_reported_not_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, options()).unwrap();
    db.create_table("t").unwrap();
    db.create_table("u").unwrap();
    let mut model = BTreeMap::new();
    commit_keys(&db, 0..5, &mut model);
    db.checkpoint().unwrap();
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0u32..1000)
        .map(|i| (i.to_be_bytes().to_vec(), vec![1u8; 4]))
        .collect();
    db.bulk_load("u", pairs.iter().map(|(k, v)| (k, v)))
        .unwrap();
    drop(db);
    unseal_newest(&path);
    match Db::open(&path, options()) {
        Err(Error::Corruption { .. }) => {}
        Err(other) => panic!("expected corruption, got {other}"),
        Ok(db) => {
            let read = db.read();
            let loaded = read.table("u").map(|table| table.len()).unwrap_or(0);
            assert_eq!(loaded, 1000, "opened silently without the bulk load");
        }
    }
}

/// Issue 39 item 9: a database whose newest superblock is damaged and whose log is absent
/// reported "log missing", hiding the damage. Cause: the missing-log check ran before anything
/// looked at the slot of the next generation. Now the damage is reported first (the newest
/// checkpoint, with salvage as the way out), and salvage then opens the previous one.
#[test]
fn a_damaged_newest_superblock_without_its_log_reports_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (previous, _) = build(&path);
    unseal_newest(&path);
    std::fs::remove_file(artdb::db::log_path(&path)).unwrap();
    match Db::open(&path, options()) {
        Err(error @ Error::Corruption { .. }) => {
            let message = error.to_string();
            assert!(
                message.contains("newest checkpoint") && message.contains("salvage"),
                "{message}"
            );
        }
        Err(other) => panic!("expected the damaged superblock, got {other}"),
        Ok(_) => panic!("opened without its log and newest checkpoint"),
    }
    let salvage = Options {
        salvage_previous_checkpoint: true,
        ..options()
    };
    let db = Db::open(&path, salvage).expect("salvage opens the previous checkpoint");
    assert_eq!(read_all(&db), previous);
}
