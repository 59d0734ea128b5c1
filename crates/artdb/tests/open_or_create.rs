//! The calls a new user reaches for first (issue 43 items 2 and 13).
//!
//! Symptoms: there was no open-or-create (`Db::create` fails on an existing file, `Db::open` on
//! a missing one), `create_table` fails if the table exists, and an empty file (as
//! `tempfile::NamedTempFile` or `touch` makes) was refused as corruption where sqlite3 and LMDB
//! set it up as a new database. `Db::open_or_create` and `Db::create_table_if_missing` close
//! those gaps; an empty file is never a database (create formats under a temporary name and
//! links the finished file into place), so replacing it loses nothing.

use artdb::{Db, Error, Options};

#[test]
fn open_or_create_creates_a_missing_file_then_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.artdb");
    let db = Db::open_or_create(&path, Options::default()).unwrap();
    assert!(db.create_table_if_missing("t").unwrap());
    assert!(!db.create_table_if_missing("t").unwrap(), "exists now");
    db.transact(|txn| txn.insert("t", b"k", b"v")).unwrap();
    db.close().unwrap();
    let db = Db::open_or_create(&path, Options::default()).unwrap();
    assert_eq!(db.read().get("t", b"k").unwrap(), Some(&b"v"[..]));
    assert!(!db.create_table_if_missing("t").unwrap());
    assert_eq!(db.read().get("t", b"k").unwrap(), Some(&b"v"[..]), "kept");
}

#[test]
fn an_empty_file_becomes_a_new_database() {
    let file = tempfile::NamedTempFile::new().unwrap();
    assert_eq!(std::fs::metadata(file.path()).unwrap().len(), 0);
    let db = Db::open_or_create(file.path(), Options::default()).unwrap();
    db.create_table_if_missing("t").unwrap();
    db.transact(|txn| txn.insert("t", b"k", b"v")).unwrap();
    db.close().unwrap();
    let db = Db::open(file.path(), Options::default()).unwrap();
    assert_eq!(db.read().get("t", b"k").unwrap(), Some(&b"v"[..]));
    drop(db);
    std::fs::remove_file(artdb::db::log_path(file.path())).unwrap();
}

#[test]
fn other_files_are_opened_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, b"not a database").unwrap();
    assert!(matches!(
        Db::open_or_create(&path, Options::default()),
        Err(Error::NotADatabase { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), b"not a database");
    let missing_dir = dir.path().join("no-such-dir").join("x.artdb");
    assert!(matches!(
        Db::open_or_create(&missing_dir, Options::default()),
        Err(Error::Open { .. })
    ));
}

#[test]
fn read_only_never_creates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.artdb");
    let read_only = Options {
        read_only: true,
        ..Options::default()
    };
    assert!(Db::open_or_create(&path, read_only).is_err());
    assert!(!path.exists(), "a read-only open made a file");
}
