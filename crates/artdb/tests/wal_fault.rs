//! Fault tests of the log: a workload of commits, a checkpoint (with its log recycling) and a
//! reopen, with the N-th I/O call on the log failing (EIO, then ENOSPC), for every N the
//! workload makes. Each failure is a typed `Error::Io` with the injected code; after a failed
//! log write or sync the database refuses writes (`Error::Poisoned`) until reopened; the reopened
//! images hold exactly the acknowledged commits, or those plus the one in flight.

mod common;

use artdb::io::{MemoryStorage, Storage};
use artdb::{Db, Error, Options};
use artdb_testkit::{FaultKind, FaultStorage};
use common::{dump, Model};
use std::sync::Arc;

fn options() -> Options {
    Options {
        checkpoint_on_drop: false,
        ..Options::default()
    }
}

type Faulty = FaultStorage<MemoryStorage>;

/// Commit `i` of the workload: two keys in `t`, one removal.
fn commit(db: &Db, model: &Model, i: u8) -> (artdb::Result<()>, Model) {
    let mut after = model.clone();
    let table = after.entry("t".to_string()).or_default();
    table.insert(vec![i], vec![i; 3]);
    table.insert(vec![i, 1], vec![i; 20]);
    table.remove(&vec![i.wrapping_sub(2)]);
    let result = db.write().and_then(|mut txn| {
        txn.insert("t", &[i], &[i; 3])?;
        txn.insert("t", &[i, 1], &[i; 20])?;
        txn.remove("t", &[i.wrapping_sub(2)])?;
        txn.commit()
    });
    (result, after)
}

/// Runs the workload; returns the acknowledged model, the model with the commit in flight, the
/// first error and the database (if it got that far).
fn run(file: &Arc<MemoryStorage>, log: &Arc<Faulty>) -> (Model, Option<Model>, Option<Error>) {
    let mut acked = Model::new();
    let db = match Db::create_in_with_log(
        file.clone() as Arc<dyn Storage>,
        log.clone() as Arc<dyn Storage>,
        options(),
    ) {
        Ok(db) => db,
        Err(error) => return (acked, None, Some(error)),
    };
    let (result, after) = {
        let result = db.create_table("t");
        let mut after = acked.clone();
        after.insert("t".into(), Default::default());
        (result, after)
    };
    if let Err(error) = result {
        return (acked, Some(after), Some(expect_poisoned(&db, error)));
    }
    acked = after;
    for i in 0..12u8 {
        if i == 6 {
            if let Err(error) = db.checkpoint() {
                return (acked, None, Some(expect_poisoned(&db, error)));
            }
        }
        let (result, after) = commit(&db, &acked, i);
        if let Err(error) = result {
            return (acked, Some(after), Some(expect_poisoned(&db, error)));
        }
        acked = after;
    }
    (acked, None, None)
}

/// After a failed log call the database refuses writes until reopened.
fn expect_poisoned(db: &Db, error: Error) -> Error {
    assert!(
        matches!(db.write().err(), Some(Error::Poisoned)),
        "after {error}: writes not refused"
    );
    error
}

#[test]
fn every_failed_log_call_is_typed_poisons_and_reopens_to_acknowledged_commits() {
    let clean_log = Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()));
    let clean_file = Arc::new(MemoryStorage::new().unwrap());
    let (_, _, error) = run(&clean_file, &clean_log);
    assert!(error.is_none(), "clean run: {error:?}");
    let calls = clean_log.calls();
    assert!(calls > 20, "{calls} log calls");
    for kind in [FaultKind::Io, FaultKind::NoSpace] {
        let code = if kind == FaultKind::Io { 5 } else { 28 };
        for call in 1..=calls {
            let context = format!("log call {call} fails with {kind:?}");
            let file = Arc::new(MemoryStorage::new().unwrap());
            let log = Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()));
            log.fail_call(call, kind, false);
            let (acked, in_flight, error) = run(&file, &log);
            match &error {
                Some(Error::Io { source, .. }) => {
                    assert_eq!(source.raw_os_error(), Some(code), "{context}")
                }
                // A read of the log that fails never happens in this workload but for `len`.
                None => continue,
                Some(other) => panic!("{context}: expected an I/O error, got {other}"),
            }
            let reopened = Db::open_in_with_log(
                Arc::new(MemoryStorage::from_image(&file.image()).unwrap()),
                Arc::new(MemoryStorage::from_image(&log.inner().image()).unwrap()),
                options(),
            );
            let db = match reopened {
                Ok(db) => db,
                // The failure hit create before its first superblock.
                Err(Error::Corruption { .. } | Error::NotADatabase { .. }) if acked.is_empty() => {
                    continue
                }
                Err(error) => panic!("{context}: reopen: {error}"),
            };
            let state = dump(&db).unwrap();
            assert!(
                state == acked || Some(&state) == in_flight.as_ref(),
                "{context}: reopened to neither the acknowledged commits nor those plus the one \
                 in flight"
            );
            assert!(db.verify().unwrap().is_ok(), "{context}");
        }
    }
}
