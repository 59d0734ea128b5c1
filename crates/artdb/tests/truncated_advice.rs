//! Regression (issue 39, item 9b): a database file one byte short advised `--salvage`, and the
//! salvage open then failed too. Cause: a truncation that reaches the pages of the newest
//! checkpoint is reported as `NewestCheckpoint`, whose message points at the salvage option,
//! without asking whether the previous checkpoint is any more reachable: a file cut short
//! usually lost the end that both checkpoints need. Now open tries the salvage open itself
//! before advising it; when that fails too, the error is `NoCheckpointReadable` (restore from a
//! backup) and names why the previous checkpoint cannot be read.
//!
//! Every truncation here (one byte short, a few bytes, half a page, a page, every page
//! boundary) of databases written as the CLI writes them (one open per command) and of a
//! churned one: if the error names salvage, a salvage open succeeds.

use artdb::{CorruptionKind, Db, Error, Options};
use std::path::Path;

const PAGE: u64 = 32 * 1024;

/// `artdb create` then one `put` per key, each a separate open and close.
fn written_by_commands(path: &Path, keys: u32) {
    Db::create(path, Options::default())
        .unwrap()
        .close()
        .unwrap();
    for i in 0..keys {
        let db = Db::open(path, Options::default()).unwrap();
        if i == 0 {
            db.create_table("t").unwrap();
        }
        let mut batch = db.write().unwrap();
        batch.insert("t", &i.to_be_bytes(), b"value").unwrap();
        batch.commit().unwrap();
        db.close().unwrap();
    }
}

/// Bigger, with checkpoints of different sizes one after another.
fn churned(path: &Path) {
    let db = Db::create(path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    for round in 0..4u32 {
        let mut batch = db.write().unwrap();
        for i in 0..(3_000 - round * 700) {
            let value = vec![round as u8; 20 + (i % 50) as usize];
            batch
                .insert("t", &(i * 3 + round).to_be_bytes(), &value)
                .unwrap();
        }
        batch.commit().unwrap();
        db.checkpoint().unwrap();
    }
    db.close().unwrap();
}

fn salvage() -> Options {
    Options {
        salvage_previous_checkpoint: true,
        ..Options::default()
    }
}

/// Cuts a copy of the database at `original` (and its log) to `len` bytes; returns the open
/// error's message, and checks that advised salvage works. Returns whether salvage was advised.
fn check_cut(dir: &Path, original: &Path, len: u64, what: &str) -> bool {
    let path = dir.join("cut");
    std::fs::copy(original, &path).unwrap();
    std::fs::copy(artdb::db::log_path(original), artdb::db::log_path(&path)).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len)
        .unwrap();
    let context = format!("{what} cut to {len} bytes");
    let error = match Db::open(&path, Options::default()) {
        Ok(db) => panic!("{context}: opened ({:?})", db.table_names()),
        Err(error) => error,
    };
    let message = error.to_string();
    let advised = message.contains("--salvage") || message.contains("salvage option");
    if advised {
        let salvaged = Db::open(&path, salvage())
            .unwrap_or_else(|second| panic!("{context}: advised {message:?}, salvage: {second}"));
        drop(salvaged);
    } else {
        assert!(
            message.contains("backup"),
            "{context}: no advice in {message:?}"
        );
        if let Error::Corruption {
            kind: CorruptionKind::NoCheckpointReadable { .. },
            ..
        } = error
        {
            assert!(
                Db::open(&path, salvage()).is_err(),
                "{context}: salvage works but was not advised: {message}"
            );
        }
    }
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(artdb::db::log_path(&path)).unwrap();
    advised
}

fn check_all_cuts(dir: &Path, original: &Path, what: &str) -> (u32, u32) {
    let len = std::fs::metadata(original).unwrap().len();
    let mut cuts: Vec<u64> = vec![len - 1, len - 7, len - PAGE / 2, len - PAGE, 3 * PAGE + 1];
    cuts.extend((4..len / PAGE).map(|page| page * PAGE));
    cuts.extend((4..len / PAGE).map(|page| page * PAGE - 1));
    cuts.sort_unstable();
    cuts.dedup();
    let (mut advised, mut refused) = (0, 0);
    for cut in cuts.into_iter().filter(|&cut| cut < len) {
        if check_cut(dir, original, cut, what) {
            advised += 1;
        } else {
            refused += 1;
        }
    }
    (advised, refused)
}

#[test]
fn a_truncated_file_advises_salvage_only_when_salvage_opens() {
    let dir = tempfile::tempdir().unwrap();
    let mut totals = (0, 0);
    for keys in [0, 1, 4, 12] {
        let path = dir.path().join(format!("commands{keys}"));
        written_by_commands(&path, keys);
        let (advised, refused) = check_all_cuts(dir.path(), &path, &format!("{keys} puts"));
        totals = (totals.0 + advised, totals.1 + refused);
    }
    let path = dir.path().join("churned");
    churned(&path);
    let (advised, refused) = check_all_cuts(dir.path(), &path, "churned");
    totals = (totals.0 + advised, totals.1 + refused);
    println!(
        "salvage advised {} times, refused {} times",
        totals.0, totals.1
    );
    assert!(totals.1 > 0, "no cut was refused salvage");
}

#[test]
fn a_file_one_byte_short_names_what_can_be_done() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    written_by_commands(&path, 4);
    let len = std::fs::metadata(&path).unwrap().len();
    check_cut(dir.path(), &path, len - 1, "4 puts, one byte short");
}
