//! A deleted write-ahead log (issue 9 item 6, the missing-log part). Symptom before the fix: a
//! database whose `.wal` was deleted opened silently at its last checkpoint, without the
//! commits only the log held, and the next checkpoint made the loss permanent. Cause: open made
//! a fresh log whenever none was there. Now the superblock says whether the log was closed
//! (written by the checkpoint at close, cleared durably before the first record after an open),
//! and a missing log of a database not closed cleanly is `Error::LogMissing` unless
//! `Options::open_without_log` asks for the last checkpoint.

use artdb::{Db, Error, Options};
use std::path::{Path, PathBuf};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("artdb-missing-log-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An abandoned process: commits durably, then goes without close or checkpoint.
fn commit_and_abandon(path: &Path, key: &[u8]) {
    let options = Options {
        checkpoint_on_drop: false,
        ..Options::default()
    };
    let db = Db::open(path, options).unwrap();
    let mut batch = db.write().unwrap();
    batch.insert("t", key, b"v").unwrap();
    batch.commit().unwrap();
}

fn has(path: &Path, key: &[u8], options: Options) -> bool {
    let db = Db::open(path, options).unwrap();
    let found = db.read().get("t", key).unwrap().is_some();
    found
}

#[test]
fn a_missing_log_after_commits_is_an_error_not_a_silent_loss() {
    let dir = temp_dir("unclean");
    let path = dir.join("db");
    let log = artdb::db::log_path(&path);
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    db.close().unwrap();
    commit_and_abandon(&path, b"only-in-the-log");
    std::fs::remove_file(&log).unwrap();
    for read_only in [false, true] {
        let options = Options {
            read_only,
            ..Options::default()
        };
        match Db::open(&path, options) {
            Err(error @ Error::LogMissing { .. }) => {
                let text = error.to_string();
                assert!(text.contains("db.wal is missing"), "{text}");
                assert!(text.contains("open_without_log"), "{text}");
            }
            Err(other) => panic!("expected LogMissing, got {other}"),
            Ok(_) => panic!("opened without its log (read_only {read_only})"),
        }
        assert!(!log.exists(), "a refused open leaves no log behind");
    }
    // The explicit way out: the last checkpoint, without the commit only the log held.
    let without = Options {
        open_without_log: true,
        ..Options::default()
    };
    assert!(!has(&path, b"only-in-the-log", without));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_cleanly_closed_database_opens_without_its_log_until_it_commits_again() {
    let dir = temp_dir("clean");
    let path = dir.join("db");
    let log = artdb::db::log_path(&path);
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    let mut batch = db.write().unwrap();
    batch.insert("t", b"a", b"1").unwrap();
    batch.commit().unwrap();
    db.close().unwrap();
    std::fs::remove_file(&log).unwrap();
    assert!(
        has(&path, b"a", Options::default()),
        "closed cleanly: nothing lost"
    );
    // A checkpoint, then close with nothing left to checkpoint: close still marks the log closed.
    let db = Db::open(&path, Options::default()).unwrap();
    let mut batch = db.write().unwrap();
    batch.insert("t", b"b", b"2").unwrap();
    batch.commit().unwrap();
    db.checkpoint().unwrap();
    db.close().unwrap();
    std::fs::remove_file(&log).unwrap();
    assert!(has(&path, b"b", Options::default()));
    // The first commit after that open marked the log in use again.
    commit_and_abandon(&path, b"c");
    std::fs::remove_file(&log).unwrap();
    assert!(matches!(
        Db::open(&path, Options::default()),
        Err(Error::LogMissing { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}
