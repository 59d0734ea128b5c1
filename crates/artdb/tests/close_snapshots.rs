//! Regression (issue 39, item 6): `Db::close` returned `Ok` while a read snapshot was alive, yet
//! the snapshot kept the file (and its lock) open, so a reopen of the same path right after the
//! `Ok` failed with `Locked`. Cause: a snapshot reaches the file's pages through the store's
//! shared storage, which holds the lock; `close` only checkpointed and never looked at the live
//! snapshots. `close` now says so (`Error::SnapshotsAlive`, with their count) after it has
//! checkpointed; an `Ok` means the path opens again at once.

use artdb::{Db, Error, Options, WriteOptions};

fn database_with_one_key(path: &std::path::Path) -> Db {
    let db = Db::create(path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    let mut batch = db.write().unwrap();
    batch.insert("t", b"k", b"v").unwrap();
    batch.commit().unwrap();
    // A snapshot reaches the file only through persisted nodes.
    db.checkpoint().unwrap();
    db
}

#[test]
fn close_with_a_live_snapshot_says_so_and_the_path_opens_once_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("close.artdb");
    let db = database_with_one_key(&path);
    let snapshot = db.read();
    let second = db.read();
    match db.close() {
        Err(error @ Error::SnapshotsAlive { count: 2 }) => {
            let message = error.to_string();
            assert!(message.contains("2 read snapshot"), "{message}");
            assert!(message.contains("drop them"), "{message}");
        }
        other => panic!("close with live snapshots must say so, got {other:?}"),
    }
    // The snapshot still reads its version: the file is still mapped and locked.
    assert_eq!(snapshot.get("t", b"k").unwrap(), Some(&b"v"[..]));
    let no_wait = Options {
        lock_wait_max: std::time::Duration::ZERO,
        ..Options::default()
    };
    let reopened = Db::open(&path, no_wait);
    assert!(
        matches!(reopened, Err(Error::Locked { .. })),
        "{:?}",
        reopened.err()
    );
    drop(snapshot);
    drop(second);
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.read().get("t", b"k").unwrap(), Some(&b"v"[..]));
    db.close().unwrap();
}

#[test]
fn close_returning_ok_releases_the_file_for_a_reopen_in_the_same_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("close_ok.artdb");
    let db = database_with_one_key(&path);
    {
        let snapshot = db.read();
        assert_eq!(snapshot.get("t", b"k").unwrap(), Some(&b"v"[..]));
    }
    let transaction = db.begin_write(WriteOptions::default()).unwrap();
    drop(transaction);
    db.close().unwrap();
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.read().get("t", b"k").unwrap(), Some(&b"v"[..]));
    let transaction = db.begin_write(WriteOptions::default()).unwrap();
    assert!(matches!(
        db.close(),
        Err(Error::SnapshotsAlive { count: 1 })
    ));
    drop(transaction);
    Db::open(&path, Options::default())
        .unwrap()
        .close()
        .unwrap();
}

/// A write transaction that outlives `Db::close` is refused at commit (`Error::Closed`). Found
/// driving the engine through the C API: before, such a commit returned `Ok` and appended to
/// the log of a database whose last superblock said the log was closed, after the checkpoint
/// `close` had promised was the last.
#[test]
fn a_transaction_that_outlives_close_cannot_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("closed.artdb");
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    let mut txn = db.begin_write(artdb::WriteOptions::default()).unwrap();
    txn.insert("t", b"late", b"1").unwrap();
    let _ = db.close();
    assert!(matches!(txn.commit(), Err(Error::Closed)));
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.read().get("t", b"late").unwrap(), None);
}
