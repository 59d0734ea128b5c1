//! Regression (issue 39, item 8): `compact` could grow the file. Symptom: a small database (a
//! handful of keys, a few pages) was larger after `artdb compact` than before ("did not
//! shrink"), and larger than a backup of it. Cause: `Db::compact` always ran its four
//! checkpoints (a dense copy above the old file, free the old version, a second copy at the
//! low end, free the first), and the result holds the copy, the last checkpoint's catalog and
//! space map, and the previous checkpoint's, which stay until the next checkpoint: a file whose
//! pages were about all in use already ends no smaller, and a tiny one ends larger. Now
//! `compact` estimates the result first and leaves the file as it is when nothing can be
//! gained (`Compaction::NothingToGain`), or while a snapshot holds the old pages
//! (`Compaction::SnapshotHeld`).

use artdb::{Compaction, Db, Options};
use std::path::Path;

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

fn value(i: u32) -> Vec<u8> {
    vec![(i % 251) as u8; 8 + (i % 37) as usize]
}

/// A database at `path` holding `keys` keys in table `t`, written by `sessions` opens (each
/// with a commit and a close, as `artdb put` does), with churn in the last sessions when
/// `churn`.
fn build(path: &Path, keys: u32, sessions: u32, churn: bool) {
    Db::create(path, Options::default())
        .unwrap()
        .close()
        .unwrap();
    if keys == u32::MAX {
        return;
    }
    let db = Db::open(path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    db.close().unwrap();
    for session in 0..sessions {
        let db = Db::open(path, Options::default()).unwrap();
        let mut batch = db.write().unwrap();
        for i in (session..keys).step_by(sessions as usize) {
            batch.insert("t", &i.to_be_bytes(), &value(i)).unwrap();
        }
        if churn && session + 2 >= sessions {
            for i in (0..keys).step_by(3) {
                batch.insert("t", &i.to_be_bytes(), &value(i + 1)).unwrap();
            }
        }
        batch.commit().unwrap();
        db.close().unwrap();
    }
}

fn expected(keys: u32, churn: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    if keys == u32::MAX {
        return Vec::new();
    }
    (0..keys)
        .map(|i| {
            let v = if churn && i % 3 == 0 {
                value(i + 1)
            } else {
                value(i)
            };
            (i.to_be_bytes().to_vec(), v)
        })
        .collect()
}

/// Compacts the closed database at `path`; asserts the file is no larger after, the data
/// unchanged, and returns (before, after, what compact said).
fn compact_once(path: &Path, keys: u32, churn: bool, what: &str) -> (u64, u64, Compaction) {
    let before = file_len(path);
    let db = Db::open(path, Options::default()).unwrap();
    let stats = db.compact().unwrap();
    db.close().unwrap();
    let after = file_len(path);
    assert!(
        after <= before,
        "{what}: compact grew the file {before} -> {after} bytes ({stats:?})"
    );
    if after == before {
        assert!(
            !matches!(stats.compaction, Compaction::None),
            "{what}: {stats:?}"
        );
    }
    let db = Db::open(path, Options::default()).unwrap();
    let read = db.read();
    let found: Vec<(Vec<u8>, Vec<u8>)> = match read.table("t") {
        Ok(table) => table
            .iter()
            .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
            .collect(),
        Err(_) => Vec::new(),
    };
    assert!(found == expected(keys, churn), "{what}: data changed");
    assert!(db.verify().unwrap().is_ok(), "{what}: verify");
    drop(read);
    db.close().unwrap();
    (before, after, stats.compaction)
}

#[test]
fn compact_never_leaves_a_file_larger_than_before() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, u32, u32, bool)] = &[
        ("a fresh file, no table", u32::MAX, 1, false),
        ("0 keys", 0, 1, false),
        ("4 keys, one session", 4, 1, false),
        ("4 keys, four sessions", 4, 4, false),
        ("100 keys, ten sessions", 100, 10, false),
        ("3,000 keys, churned", 3_000, 6, true),
        ("20,000 keys, one session", 20_000, 1, false),
        ("60,000 keys, churned", 60_000, 8, true),
    ];
    for (index, &(what, keys, sessions, churn)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("db{index}"));
        build(&path, keys, sessions, churn);
        let (before, after, first) = compact_once(&path, keys, churn, what);
        // Compacted already: a second compact gains nothing and leaves the file alone.
        let (again_before, again_after, second) =
            compact_once(&path, keys, churn, &format!("{what}, compacted again"));
        assert_eq!(again_before, again_after, "{what}: {second:?}");
        assert!(
            matches!(second, Compaction::NothingToGain { .. }),
            "{what}, compacted again: {second:?}"
        );
        println!("{what}: {before} -> {after} ({first:?})");
    }
}

#[test]
fn a_churned_file_still_shrinks_and_a_snapshot_defers_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    build(&path, 30_000, 8, true);
    let db = Db::open(&path, Options::default()).unwrap();
    let before = file_len(&path);
    let held = db.read();
    let stats = db.compact().unwrap();
    assert_eq!(stats.compaction, Compaction::SnapshotHeld);
    assert_eq!(
        file_len(&path),
        before,
        "a deferred compact leaves the file"
    );
    drop(held);
    let stats = db.compact().unwrap();
    assert_eq!(stats.compaction, Compaction::Rewritten);
    let after = file_len(&path);
    assert!(after < before, "{before} -> {after}");
    db.close().unwrap();
}
