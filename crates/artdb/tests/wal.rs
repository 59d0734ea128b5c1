//! Write-ahead log tests: commits survive a reopen without a checkpoint (real files), NoSync per
//! database and per transaction, group commit shares syncs among threads, a forced checkpoint
//! aborts a writer, and damage to the log (a byte flipped anywhere, truncation anywhere) gives
//! a cut torn tail or `Error::Corruption`, never a panic and never an acknowledged record
//! silently skipped.

mod common;

use artdb::io::{MemoryStorage, Storage};
use artdb::{CorruptionKind, Db, Durability, Error, Options};
use common::{dump, Model};
use std::sync::Arc;

fn options() -> Options {
    Options {
        checkpoint_on_drop: false,
        ..Options::default()
    }
}

#[test]
fn commits_survive_reopen_without_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(&path, options()).unwrap();
    db.create_table("t").unwrap();
    for i in 0u32..50 {
        let mut txn = db.write().unwrap();
        txn.insert("t", &i.to_be_bytes(), b"value").unwrap();
        if i % 7 == 3 {
            txn.remove("t", &(i - 1).to_be_bytes()).unwrap();
        }
        txn.commit().unwrap();
    }
    let stats = db.stats().unwrap();
    assert_eq!(stats.log.last_lsn, 51);
    assert_eq!(stats.log.records, 51);
    assert_eq!(stats.log.covered_lsn, 0);
    assert!(
        stats.log.syncs >= 1 && stats.log.commits == 51,
        "{:?}",
        stats.log
    );
    let expected = dump(&db).unwrap();
    drop(db);
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(dump(&db).unwrap(), expected);
    let stats = db.stats().unwrap();
    assert_eq!(
        stats.log.covered_lsn, 0,
        "a clean log is replayed, not checkpointed"
    );
    assert_eq!(stats.log.records, 51);
    let mut txn = db.write().unwrap();
    txn.insert("t", b"after", b"reopen").unwrap();
    txn.commit().unwrap();
    let expected = dump(&db).unwrap();
    drop(db);
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(
        dump(&db).unwrap(),
        expected,
        "appends continue after replayed records"
    );
    assert_eq!(db.stats().unwrap().log.last_lsn, 52);
    assert!(db.verify().unwrap().is_ok());
    db.close().unwrap();
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(dump(&db).unwrap(), expected);
    let stats = db.stats().unwrap();
    assert_eq!(
        (stats.log.covered_lsn, stats.log.records),
        (52, 0),
        "close checkpointed"
    );
}

#[test]
fn nosync_per_database_and_per_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::create(
        &path,
        Options {
            durability: Durability::NoSync,
            ..options()
        },
    )
    .unwrap();
    db.create_table("t").unwrap();
    for i in 0u8..10 {
        let mut txn = db.write().unwrap();
        if i % 2 == 0 {
            txn.set_durability(Durability::Sync);
        }
        txn.insert("t", &[i], &[i]).unwrap();
        txn.commit().unwrap();
        assert_eq!(
            db.read().get("t", &[i]).unwrap(),
            Some(&[i][..]),
            "visible at once"
        );
    }
    let stats = db.stats().unwrap();
    assert!(
        stats.log.syncs <= 5,
        "only Sync commits sync: {:?}",
        stats.log
    );
    db.sync().unwrap();
    let expected = dump(&db).unwrap();
    drop(db);
    // A process kill keeps written records (the page cache survives): all ten are there.
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(dump(&db).unwrap(), expected);
}

#[test]
fn group_commit_shares_syncs_among_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Arc::new(Db::create(&path, options()).unwrap());
    db.create_table("t").unwrap();
    let threads = 8u32;
    let per_thread = 40 * artdb_testkit::scale() as u32;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let db = Arc::clone(&db);
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    let mut txn = db.write().unwrap();
                    txn.insert("t", &[t.to_be_bytes(), i.to_be_bytes()].concat(), b"x")
                        .unwrap();
                    txn.commit().unwrap();
                    // Durable and published before commit returned.
                    let key = [t.to_be_bytes(), i.to_be_bytes()].concat();
                    assert!(db.read().get("t", &key).unwrap().is_some());
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let stats = db.stats().unwrap();
    let commits = u64::from(threads * per_thread) + 1;
    assert_eq!(stats.log.commits, commits);
    assert!(
        stats.log.syncs < stats.log.commits,
        "group commit: {} syncs for {} commits",
        stats.log.syncs,
        stats.log.commits
    );
    println!(
        "group commit: {} syncs for {commits} commits",
        stats.log.syncs
    );
    let expected = dump(&db).unwrap();
    drop(db);
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(dump(&db).unwrap(), expected);
    assert_eq!(expected["t"].len() as u64, commits - 1);
}

#[test]
fn force_checkpoint_aborts_the_writer() {
    let storage = Arc::new(MemoryStorage::new().unwrap());
    let db = Arc::new(Db::create_in(storage as Arc<dyn Storage>, options()).unwrap());
    db.create_table("t").unwrap();
    let (began_tx, began_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let mut txn = db.write().unwrap();
            txn.insert("t", b"a", b"1").unwrap();
            began_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            let result = txn.insert("t", b"b", b"2");
            assert!(matches!(result, Err(Error::Aborted)), "{result:?}");
        })
    };
    began_rx.recv().unwrap();
    let checkpoint = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || db.force_checkpoint().unwrap())
    };
    std::thread::sleep(std::time::Duration::from_millis(50));
    go_tx.send(()).unwrap();
    writer.join().unwrap();
    checkpoint.join().unwrap();
    assert_eq!(
        db.read().get("t", b"a").unwrap(),
        None,
        "the aborted batch left nothing"
    );
    let mut txn = db.write().unwrap();
    txn.insert("t", b"c", b"3").unwrap();
    txn.commit().unwrap();
}

/// Issue 9 item 6: `force_checkpoint` aborts write transactions of `begin_write` in progress
/// (at their next call, or at commit), not only the `db.write()` batch; a transaction begun
/// after it is unaffected, and a plain `checkpoint` aborts nothing.
#[test]
fn force_checkpoint_aborts_begin_write_transactions() {
    let storage = Arc::new(MemoryStorage::new().unwrap());
    let db = Db::create_in(storage as Arc<dyn Storage>, options()).unwrap();
    db.create_table("t").unwrap();
    let mut reading = db.begin_write(artdb::WriteOptions::default()).unwrap();
    let mut committing = db.begin_write(artdb::WriteOptions::default()).unwrap();
    let mut kept = db.begin_write(artdb::WriteOptions::default()).unwrap();
    reading.insert("t", b"a", b"1").unwrap();
    committing.insert("t", b"b", b"2").unwrap();
    kept.insert("t", b"k", b"0").unwrap();
    db.checkpoint().unwrap();
    kept.insert("t", b"k", b"1").unwrap();
    kept.commit().unwrap();
    db.force_checkpoint().unwrap();
    assert!(matches!(reading.get("t", b"a"), Err(Error::Aborted)));
    assert!(matches!(
        reading.insert("t", b"c", b"3"),
        Err(Error::Aborted)
    ));
    assert!(matches!(committing.commit(), Err(Error::Aborted)));
    drop(reading);
    let mut after = db.begin_write(artdb::WriteOptions::default()).unwrap();
    after.insert("t", b"d", b"4").unwrap();
    after.commit().unwrap();
    let read = db.read();
    assert_eq!(read.get("t", b"a").unwrap(), None);
    assert_eq!(read.get("t", b"b").unwrap(), None);
    assert_eq!(read.get("t", b"k").unwrap(), Some(&b"1"[..]));
    assert_eq!(read.get("t", b"d").unwrap(), Some(&b"4"[..]));
}

/// A database in memory with `commits` Sync commits in its log (one table per three commits,
/// puts and removes); returns the two images, the model after each commit, and the offset of
/// each record in the log.
fn logged_database(commits: usize) -> (Vec<u8>, Vec<u8>, Vec<Model>, Vec<u64>) {
    let (file, log, db) = common::memory_db_with_log(options());
    let mut models = vec![Model::new()];
    let mut offsets = Vec::new();
    for i in 0..commits {
        offsets.push(4096 + db.stats().unwrap().log.bytes);
        let mut model = models.last().unwrap().clone();
        let mut txn = db.write().unwrap();
        let table = format!("t{}", i / 3);
        if i % 3 == 0 {
            txn.create_table(&table).unwrap();
            model.insert(table.clone(), Default::default());
        }
        for k in 0..(i % 4 + 1) as u8 {
            let value = vec![i as u8; k as usize * 5];
            txn.insert(&table, &[k], &value).unwrap();
            model.get_mut(&table).unwrap().insert(vec![k], value);
        }
        if i % 3 == 2 {
            txn.remove(&table, &[0]).unwrap();
            model.get_mut(&table).unwrap().remove(&vec![0u8]);
        }
        txn.commit().unwrap();
        models.push(model);
    }
    offsets.push(4096 + db.stats().unwrap().log.bytes);
    let file_image = file.image();
    let mut log_image = log.image();
    log_image.truncate(*offsets.last().unwrap() as usize + 4096);
    (file_image, log_image, models, offsets)
}

fn open_images(file: &[u8], log: &[u8]) -> artdb::Result<Db> {
    common::open_images_with_log(file, log, options())
}

#[test]
fn truncation_anywhere_opens_to_the_complete_records() {
    let (file, log, models, offsets) = logged_database(12);
    let end = *offsets.last().unwrap() as usize;
    for len in (0..=end).step_by(4) {
        let opened = open_images(&file, &log[..len]);
        if len < 512 + 64 {
            // The header (epoch 1: slot 1, bytes 512..576) is gone: the log was lost (create
            // syncs the header before the database exists), and commits may have been in it:
            // an error, not an empty log.
            assert!(
                matches!(opened, Err(Error::LogMissing { .. })),
                "truncated to {len}"
            );
            continue;
        }
        if len < 4096 + 32 {
            // Shorter than the log was when its header was written (create makes the header
            // slots and the first record header): a crash never shortens the log, so this is
            // a truncation, refused rather than opened without its commits.
            assert!(
                matches!(
                    opened,
                    Err(Error::Corruption {
                        kind: CorruptionKind::Log { lsn: 0, .. },
                        ..
                    })
                ),
                "truncated to {len}: {:?}",
                opened.err()
            );
            continue;
        }
        let db = opened.unwrap_or_else(|e| panic!("truncated to {len}: {e}"));
        let complete = offsets.iter().filter(|&&at| at as usize <= len).count() - 1;
        assert_eq!(dump(&db).unwrap(), models[complete], "truncated to {len}");
        assert!(db.verify().unwrap().is_ok());
    }
}

#[test]
fn a_flipped_byte_anywhere_is_a_cut_tail_or_corruption() {
    let (file, log, models, offsets) = logged_database(12);
    let full = models.last().unwrap();
    let last_record = offsets[offsets.len() - 2] as usize..offsets[offsets.len() - 1] as usize;
    let records = offsets[0] as usize..last_record.start;
    let mut corruptions = 0;
    for at in 0..log.len() {
        let mut damaged = log.clone();
        damaged[at] ^= 0x08;
        match open_images(&file, &damaged) {
            Ok(db) => {
                let state = dump(&db).unwrap();
                if state != *full {
                    assert!(
                        last_record.contains(&at) && state == models[models.len() - 2],
                        "flip at {at}: opened to a state that skips a committed record"
                    );
                }
                assert!(db.verify().unwrap().is_ok(), "flip at {at}");
            }
            Err(Error::Corruption {
                kind: CorruptionKind::Log { lsn, .. },
                ..
            }) => {
                corruptions += 1;
                let in_header = at < 4096;
                assert!(
                    in_header || records.contains(&at) || last_record.contains(&at),
                    "flip at {at} (LSN {lsn}): corruption outside every record"
                );
                if records.contains(&at) {
                    let index = offsets.iter().rposition(|&o| o as usize <= at).unwrap();
                    assert_eq!(lsn, index as u64 + 1, "flip at {at} names its record's LSN");
                }
            }
            Err(error) => panic!("flip at {at}: {error}"),
        }
    }
    assert!(corruptions > 100, "{corruptions} corruptions found");
}

/// Zeros over acknowledged records (a zeroed record header, or zeros from a record's start up to
/// the last record) are damage, not the log's end: a later record written after the zeroed one
/// was durable says so. Before the fix, a zero record header ended the scan as a clean end, so
/// open silently rolled back every commit from that record on (found by zeroing 4 KiB blocks of
/// a crashed database's log).
#[test]
fn zeros_over_acknowledged_records_are_corruption() {
    let (file, log, models, offsets) = logged_database(12);
    let records = offsets.len() - 1;
    let last_start = offsets[records - 1] as usize;
    for (index, &at) in offsets[..records].iter().enumerate() {
        let at = at as usize;
        let mut header_zeroed = log.clone();
        header_zeroed[at..at + 32].fill(0);
        let mut run_zeroed = log.clone();
        run_zeroed[at..last_start].fill(0);
        for (what, damaged) in [("header", header_zeroed), ("run", run_zeroed)] {
            let opened = open_images(&file, &damaged);
            if index + 1 == records {
                // The last record: nothing after it tells a torn tail from damage.
                let db = opened.unwrap_or_else(|e| panic!("last record's {what} zeroed: {e}"));
                let state = dump(&db).unwrap();
                assert!(state == models[records - 1] || state == models[records]);
                continue;
            }
            match opened {
                Err(Error::Corruption {
                    kind: CorruptionKind::Log { lsn, .. },
                    ..
                }) => assert_eq!(lsn, index as u64 + 1, "{what} of record {index} zeroed"),
                Ok(_) => panic!(
                    "{what} of record {index} zeroed: opened to a state that skips acknowledged \
                     commits"
                ),
                Err(error) => panic!("{what} of record {index} zeroed: {error}"),
            }
        }
    }
}
