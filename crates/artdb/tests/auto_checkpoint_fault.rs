//! Regression (issue 39, item 4): an automatic checkpoint that failed (a full disk, EIO) left
//! nobody knowing why. Symptom: the commit that triggered it returned `Ok`, and every later
//! call got `Error::Poisoned`, whose message did not say what failed; in some full-disk runs no
//! caller ever saw the ENOSPC or EIO. Cause: `checkpoint_after_commit` discarded the result of
//! the checkpoint it runs beside commits, and the poison was a bare flag. Now the first failure
//! is kept in the poison and every later `Poisoned` names the operation, the file and the
//! operating system's error; the triggering commit still returns `Ok` (it was durable in the
//! log before the checkpoint began), so its next call is the one that learns of the failure.
//!
//! The database file fails its N-th call after the commit that passes the checkpoint
//! threshold, for every N the automatic checkpoint makes, with EIO and with ENOSPC.

use artdb::io::{MemoryStorage, Storage};
use artdb::{Db, Error, FileRole, Options};
use artdb_testkit::{FaultKind, FaultStorage};
use std::sync::Arc;

fn options() -> Options {
    Options {
        checkpoint_on_drop: false,
        checkpoint_threshold_bytes: 2_000,
        ..Options::default()
    }
}

/// Commits below the threshold, then arms `fault` on the database file and makes the commit
/// that passes the threshold (and so runs the automatic checkpoint). Returns that commit's
/// result and the database.
fn commit_into_a_failing_checkpoint(
    file: &Arc<FaultStorage<MemoryStorage>>,
    fault: Option<(u64, FaultKind)>,
) -> (artdb::Result<()>, Db, Arc<MemoryStorage>) {
    let log = Arc::new(MemoryStorage::new().unwrap());
    let db = Db::create_in_with_log(
        file.clone() as Arc<dyn Storage>,
        log.clone() as Arc<dyn Storage>,
        options(),
    )
    .unwrap();
    db.create_table("t").unwrap();
    for i in 0..8u8 {
        let mut batch = db.write().unwrap();
        batch.insert("t", &[i], &[i; 100]).unwrap();
        batch.commit().unwrap();
    }
    assert_eq!(db.stats().unwrap().store.generation, 1, "no checkpoint yet");
    if let Some((call, kind)) = fault {
        file.fail_call(file.calls() + call, kind, false);
    }
    let committed = db.write().and_then(|mut batch| {
        batch.insert("t", b"trigger", &[9; 1_000])?;
        batch.commit()
    });
    (committed, db, log)
}

#[test]
fn a_failed_automatic_checkpoint_is_named_by_every_later_refusal() {
    let clean = Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()));
    let before = {
        let (committed, db, _) = commit_into_a_failing_checkpoint(&clean, None);
        committed.unwrap();
        assert!(
            db.stats().unwrap().store.generation > 1,
            "the checkpoint ran"
        );
        clean.calls()
    };
    assert!(before > 0);
    let mut ops_seen = std::collections::BTreeSet::new();
    for (kind, name, code) in [
        (FaultKind::Io, "EIO", 5),
        (FaultKind::NoSpace, "ENOSPC", 28),
    ] {
        for call in 1..=64 {
            let context = format!("database call {call} of the checkpoint fails with {name}");
            let file = Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()));
            let (committed, db, log) = commit_into_a_failing_checkpoint(&file, Some((call, kind)));
            if !file.failed() {
                // Past the checkpoint's last call.
                assert!(call > 1, "{context}: the checkpoint made no call");
                break;
            }
            // The triggering commit was durable in the log before the checkpoint began.
            committed.unwrap_or_else(|error| panic!("{context}: the commit failed: {error}"));
            let refused = match db.write() {
                Ok(_) => continue, // a failed hint (writeback), which poisons nothing
                Err(error) => error,
            };
            let Error::Poisoned { cause } = &refused else {
                panic!("{context}: expected Poisoned, got {refused}");
            };
            assert_eq!(cause.os_code, Some(code), "{context}: {refused}");
            assert_eq!(cause.file, FileRole::Database, "{context}: {refused}");
            let message = refused.to_string();
            assert!(message.contains(name), "{context}: {message}");
            assert!(
                message.contains("the database file"),
                "{context}: {message}"
            );
            assert!(message.contains(&cause.op), "{context}: {message}");
            // Every later call says the same, not only the first.
            for later in [db.checkpoint().err(), db.compact().err(), db.sync().err()] {
                let later = later.map(|error| error.to_string()).unwrap_or_default();
                assert!(
                    later.contains(name),
                    "{context}: a later call said {later:?}"
                );
                assert!(
                    later.contains(&cause.op),
                    "{context}: a later call said {later:?}"
                );
            }
            ops_seen.insert(cause.op.clone());
            // Reopened, everything acknowledged is there, the triggering commit too.
            drop(db);
            let image = Arc::new(MemoryStorage::from_image(&file.inner().image()).unwrap());
            let log = Arc::new(MemoryStorage::from_image(&log.image()).unwrap());
            let reopened = Db::open_in_with_log(image, log, Options::default())
                .unwrap_or_else(|error| panic!("{context}: reopen: {error}"));
            let read = reopened.read();
            assert_eq!(read.get("t", b"trigger").unwrap(), Some(&[9; 1_000][..]));
            assert_eq!(read.get("t", &[7]).unwrap(), Some(&[7; 100][..]));
        }
    }
    for op in ["sync the checkpoint's pages", "sync the superblock"] {
        assert!(
            ops_seen.contains(op),
            "no fault hit {op:?}: saw {ops_seen:?}"
        );
    }
}
