//! Big transactions bypass the log (issue 9 item 5; docs/recovery.md, "Big transactions bypass
//! the log"): a commit bigger than `Options::wal_bypass_threshold_bytes` writes its nodes into
//! the database file through a checkpoint and logs only a reference, so its data is written
//! once. Checked here with real files: the log stays small, the data survives a reopen, an
//! abort writes nothing and leaks nothing, bulk loads go the same way, and bypassed commits mix
//! with small logged ones from other threads. The crash tests are in `wal_crash.rs`
//! (`every_sync_crash_with_bypassed_commits_...`), the fault tests in `wal_fault.rs`, the killed
//! processes in `sigkill.rs`.

mod common;

use artdb::{Db, Durability, Options, WriteOptions};
use common::{dump, Model};
use std::sync::Arc;

const THRESHOLD_BYTES: u64 = 64 << 10;
/// Keys of a transaction well past the threshold (8-byte keys, 16-byte values).
const BIG_KEYS: u64 = 20_000;

fn options(threshold: u64) -> Options {
    Options {
        checkpoint_on_drop: false,
        wal_bypass_threshold_bytes: threshold,
        ..Options::default()
    }
}

/// A new database in a temporary directory with the table `t` (keep the directory alive).
fn new_db(threshold: u64) -> (tempfile::TempDir, std::path::PathBuf, Db) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, options(threshold)).unwrap();
    db.create_table("t").unwrap();
    (dir, path, db)
}

fn value(i: u64, round: u64) -> Vec<u8> {
    [i.to_le_bytes(), round.to_le_bytes()].concat()
}

/// One transaction of `BIG_KEYS` puts, through `begin_write` or through a write batch.
fn big_commit(db: &Db, round: u64, batch: bool) {
    if batch {
        let mut txn = db.write().unwrap();
        for i in 0..BIG_KEYS {
            txn.insert("t", &i.to_be_bytes(), &value(i, round)).unwrap();
        }
        txn.commit().unwrap();
    } else {
        let mut txn = db.begin_write(WriteOptions::default()).unwrap();
        for i in 0..BIG_KEYS {
            txn.insert("t", &i.to_be_bytes(), &value(i, round)).unwrap();
        }
        txn.commit().unwrap();
    }
}

#[test]
fn a_big_transaction_goes_to_the_file_once_and_the_log_holds_a_reference() {
    for batch in [false, true] {
        let (_dir, path, db) = new_db(THRESHOLD_BYTES);
        let before = db.stats().unwrap();
        big_commit(&db, 1, batch);
        big_commit(&db, 2, batch);
        let after = db.stats().unwrap();
        assert_eq!(
            after.txn.commits_bypassing_log,
            before.txn.commits_bypassing_log + 2,
            "batch {batch}"
        );
        // Each bypassed commit checkpointed: the superblock covers its record and the log was
        // recycled (nothing of the 20,000 keys went to it).
        assert!(after.store.generation >= before.store.generation + 2);
        assert_eq!(after.log.covered_lsn, after.log.last_lsn, "batch {batch}");
        assert_eq!(after.log.bytes, 0, "batch {batch}: {:?}", after.log);
        assert!(after.log.file_bytes < 1 << 20, "{:?}", after.log);
        let mut txn = db.write().unwrap();
        txn.insert("t", b"small", b"logged").unwrap();
        txn.commit().unwrap();
        assert!(
            db.stats().unwrap().log.bytes > 0,
            "a small commit is logged"
        );
        let expected = dump(&db).unwrap();
        assert_eq!(expected["t"].len() as u64, BIG_KEYS + 1);
        assert_eq!(expected["t"][&7u64.to_be_bytes().to_vec()], value(7, 2));
        drop(db);
        let db = Db::open(&path, options(THRESHOLD_BYTES)).unwrap();
        assert_eq!(dump(&db).unwrap(), expected, "batch {batch}");
        db.checkpoint().unwrap();
        let report = db.verify().unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
    }
}

#[test]
fn without_the_bypass_the_same_transaction_is_one_big_log_record() {
    let (_dir, _path, db) = new_db(u64::MAX);
    big_commit(&db, 1, false);
    let stats = db.stats().unwrap();
    assert_eq!(stats.txn.commits_bypassing_log, 0);
    assert!(stats.log.bytes > BIG_KEYS * 24, "{:?}", stats.log);
}

#[test]
fn an_aborted_big_transaction_writes_nothing_and_leaks_nothing() {
    let (_dir, _path, db) = new_db(THRESHOLD_BYTES);
    big_commit(&db, 1, false);
    let before = db.stats().unwrap();
    let expected = dump(&db).unwrap();
    {
        let mut txn = db.begin_write(WriteOptions::default()).unwrap();
        for i in 0..BIG_KEYS * 2 {
            txn.insert("t", &i.to_be_bytes(), b"never").unwrap();
        }
        txn.abort();
    }
    {
        let mut txn = db.write().unwrap();
        for i in 0..BIG_KEYS * 2 {
            txn.insert("t", &i.to_be_bytes(), b"never").unwrap();
        }
        drop(txn);
    }
    let after = db.stats().unwrap();
    assert_eq!(after.store.generation, before.store.generation);
    assert_eq!(after.store.file_bytes, before.store.file_bytes);
    assert_eq!(after.log.last_lsn, before.log.last_lsn);
    assert_eq!(dump(&db).unwrap(), expected);
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn a_conflicting_big_transaction_is_refused_with_nothing_written() {
    let (_dir, _path, db) = new_db(THRESHOLD_BYTES);
    let mut big = db.begin_write(WriteOptions::default()).unwrap();
    for i in 0..BIG_KEYS {
        big.insert("t", &i.to_be_bytes(), b"big").unwrap();
    }
    let mut small = db.begin_write(WriteOptions::default()).unwrap();
    small.insert("t", &5u64.to_be_bytes(), b"first").unwrap();
    small.commit().unwrap();
    let generation = db.stats().unwrap().store.generation;
    assert!(matches!(big.commit(), Err(artdb::Error::Conflict { .. })));
    let stats = db.stats().unwrap();
    assert_eq!(stats.store.generation, generation);
    assert_eq!(stats.txn.commits_bypassing_log, 0);
    let state = dump(&db).unwrap();
    assert_eq!(state["t"].len(), 1);
}

#[test]
fn a_bypassed_commit_is_durable_whatever_its_durability() {
    let (_dir, _path, db) = new_db(THRESHOLD_BYTES);
    let mut txn = db
        .begin_write(WriteOptions::default().durability(Durability::NoSync))
        .unwrap();
    for i in 0..BIG_KEYS {
        txn.insert("t", &i.to_be_bytes(), b"v").unwrap();
    }
    txn.commit().unwrap();
    let stats = db.stats().unwrap();
    assert_eq!(stats.log.covered_lsn, stats.log.last_lsn);
    assert_eq!(stats.txn.commits_bypassing_log, 1);
}

#[test]
fn bulk_load_bypasses_the_log() {
    let (_dir, path, db) = new_db(THRESHOLD_BYTES);
    let before = db.stats().unwrap();
    let loaded = db
        .bulk_load("t", (0..BIG_KEYS).map(|i| (i.to_be_bytes(), value(i, 0))))
        .unwrap();
    assert_eq!(loaded, BIG_KEYS);
    let after = db.stats().unwrap();
    assert_eq!(after.txn.commits_bypassing_log, 1);
    assert_eq!(after.log.last_lsn, before.log.last_lsn + 1);
    assert_eq!(after.log.covered_lsn, after.log.last_lsn);
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    drop(db);
    let db = Db::open(&path, options(THRESHOLD_BYTES)).unwrap();
    assert_eq!(dump(&db).unwrap()["t"].len() as u64, BIG_KEYS);
}

/// Threads committing small transactions (logged, grouped) beside one that commits big ones
/// (bypassed): every acknowledged commit is there after a reopen, each whole.
#[test]
fn bypassed_commits_beside_small_logged_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Arc::new(Db::create(&path, options(THRESHOLD_BYTES)).unwrap());
    db.create_table("t").unwrap();
    db.create_table("small").unwrap();
    let rounds = 3 * artdb_testkit::scale();
    let big = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            for round in 1..=rounds {
                big_commit(&db, round, round % 2 == 0);
            }
        })
    };
    let smalls: Vec<_> = (0..3u8)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                let mut model = Model::new();
                for i in 0u32..300 {
                    let key = [vec![t], i.to_be_bytes().to_vec()].concat();
                    db.transact(|txn| {
                        txn.insert("small", &key, b"x")?;
                        // Reads the big table too: its snapshot is one commit or the other.
                        let seen = txn.get("t", &0u64.to_be_bytes())?.map(<[u8]>::to_vec);
                        if let Some(seen) = seen {
                            let round = u64::from_le_bytes(seen[8..16].try_into().unwrap());
                            let last = txn.get("t", &(BIG_KEYS - 1).to_be_bytes())?;
                            assert_eq!(last, Some(&value(BIG_KEYS - 1, round)[..]));
                        }
                        Ok(())
                    })
                    .unwrap();
                    model
                        .entry("small".into())
                        .or_default()
                        .insert(key, b"x".to_vec());
                }
                model
            })
        })
        .collect();
    big.join().unwrap();
    let mut expected_small = std::collections::BTreeMap::new();
    for handle in smalls {
        expected_small.extend(handle.join().unwrap().remove("small").unwrap());
    }
    let stats = db.stats().unwrap();
    assert_eq!(stats.txn.commits_bypassing_log, rounds);
    let state = dump(&db).unwrap();
    drop(db);
    let db = Db::open(&path, options(THRESHOLD_BYTES)).unwrap();
    let reopened = dump(&db).unwrap();
    assert_eq!(reopened, state);
    assert_eq!(reopened["small"], expected_small);
    assert_eq!(reopened["t"].len() as u64, BIG_KEYS);
    assert_eq!(
        reopened["t"][&0u64.to_be_bytes().to_vec()],
        value(0, rounds)
    );
}

/// Creates, drops and a big write in one bypassed transaction (both kinds), then a reopen:
/// the catalog changes travel with the checkpoint, an empty created table too.
#[test]
fn catalog_changes_in_a_bypassed_transaction() {
    let (_dir, path, db) = new_db(THRESHOLD_BYTES);
    db.create_table("doomed").unwrap();
    {
        let mut txn = db.begin_write(WriteOptions::default()).unwrap();
        txn.create_table("fresh").unwrap();
        txn.create_table("empty").unwrap();
        txn.drop_table("doomed").unwrap();
        for i in 0..BIG_KEYS {
            txn.insert("fresh", &i.to_be_bytes(), &value(i, 3)).unwrap();
        }
        txn.commit().unwrap();
    }
    {
        let mut batch = db.write().unwrap();
        batch.create_table("batch").unwrap();
        batch.drop_table("t").unwrap();
        for i in 0..BIG_KEYS {
            batch
                .insert("batch", &i.to_be_bytes(), &value(i, 4))
                .unwrap();
        }
        batch.commit().unwrap();
    }
    assert_eq!(db.stats().unwrap().txn.commits_bypassing_log, 2);
    let expected = dump(&db).unwrap();
    let names: Vec<&String> = expected.keys().collect();
    assert_eq!(names, ["batch", "empty", "fresh"]);
    assert_eq!(expected["fresh"].len() as u64, BIG_KEYS);
    assert!(expected["empty"].is_empty());
    drop(db);
    let db = Db::open(&path, options(THRESHOLD_BYTES)).unwrap();
    assert_eq!(dump(&db).unwrap(), expected);
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// A big transaction into a new file, then checkpoints: nothing is rewritten. (The compaction
/// baseline was set at the start of the first checkpoint, before the transaction's pages, so
/// the next checkpoint took them for growth and rewrote the table: W2's store step.)
#[test]
fn the_checkpoint_after_a_bypassed_commit_does_not_rewrite_it() {
    for first_checkpoint_before in [false, true] {
        let (_dir, _path, db) = new_db(THRESHOLD_BYTES);
        if first_checkpoint_before {
            db.checkpoint().unwrap();
        }
        let mut batch = db.write().unwrap();
        for i in 0..300_000u64 {
            batch.insert("t", &i.to_be_bytes(), &value(i, 1)).unwrap();
        }
        batch.commit().unwrap();
        let pages = db.stats().unwrap().store.page_count;
        // Well past the compaction slack (32 pages).
        assert!(pages > 100, "{pages}");
        for _ in 0..3 {
            let stats = db.checkpoint().unwrap();
            assert!(
                stats.pages_written <= 2,
                "first checkpoint before: {first_checkpoint_before}: {stats:?}"
            );
        }
        let mut txn = db.write().unwrap();
        txn.insert("t", b"one", b"more").unwrap();
        txn.commit().unwrap();
        let stats = db.checkpoint().unwrap();
        assert!(
            stats.pages_written < pages / 4,
            "{stats:?} of {pages} pages"
        );
    }
}
