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

/// Under these options a commit of more than a few keys bypasses the log.
fn bypass_options() -> Options {
    Options {
        wal_bypass_threshold_bytes: 300,
        ..options()
    }
}

/// Extra keys of a big commit (one in three with `big`): past the bypass threshold.
const BIG_EXTRA_KEYS: u8 = 16;

/// Commit `i` of the workload: two keys in `t`, one removal; with `big`, every third commit
/// also puts `BIG_EXTRA_KEYS` keys.
fn commit(db: &Db, model: &Model, i: u8, big: bool) -> (artdb::Result<()>, Model) {
    let extra = if big && i % 3 == 1 { BIG_EXTRA_KEYS } else { 0 };
    let mut after = model.clone();
    let table = after.entry("t".to_string()).or_default();
    table.insert(vec![i], vec![i; 3]);
    table.insert(vec![i, 1], vec![i; 20]);
    table.remove(&vec![i.wrapping_sub(2)]);
    for k in 0..extra {
        table.insert(vec![k, 2, i], vec![i; 30]);
    }
    let result = db.write().and_then(|mut txn| {
        txn.insert("t", &[i], &[i; 3])?;
        txn.insert("t", &[i, 1], &[i; 20])?;
        txn.remove("t", &[i.wrapping_sub(2)])?;
        for k in 0..extra {
            txn.insert("t", &[k, 2, i], &[i; 30])?;
        }
        txn.commit()
    });
    (result, after)
}

/// Runs the workload; returns the acknowledged model, the model with the commit in flight, the
/// first error and the database (if it got that far).
fn run(file: &Arc<MemoryStorage>, log: &Arc<Faulty>) -> (Model, Option<Model>, Option<Error>) {
    run_with(
        file.clone() as Arc<dyn Storage>,
        log.clone() as Arc<dyn Storage>,
        &options(),
        false,
    )
}

fn run_with(
    file: Arc<dyn Storage>,
    log: Arc<dyn Storage>,
    options: &Options,
    big: bool,
) -> (Model, Option<Model>, Option<Error>) {
    let mut acked = Model::new();
    let db = match Db::create_in_with_log(file, log, options.clone()) {
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
        let (result, after) = commit(&db, &acked, i, big);
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
        matches!(db.write().err(), Some(Error::Poisoned { .. })),
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

/// The workload with one commit in three past the bypass threshold (its nodes go to the file
/// through a checkpoint): every call to the database file, then every call to the log, fails
/// in turn (EIO, ENOSPC). A typed error; the database refuses writes until reopened (a failed
/// read of the file, which poisons nothing, is let through); the reopened images hold exactly
/// the acknowledged commits or those plus the one in flight, and no page leaked.
#[test]
fn every_failed_call_with_bypassed_commits_reopens_to_acknowledged_commits() {
    let clean_file = Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()));
    let clean_log = Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()));
    let (_, _, error) = run_with(
        clean_file.clone() as Arc<dyn Storage>,
        clean_log.clone() as Arc<dyn Storage>,
        &bypass_options(),
        true,
    );
    assert!(error.is_none(), "clean run: {error:?}");
    let file_calls = clean_file.calls();
    let log_calls = clean_log.calls();
    assert!(
        file_calls > 20 && log_calls > 20,
        "{file_calls} {log_calls}"
    );
    let mut failures_seen = 0;
    for kind in [FaultKind::Io, FaultKind::NoSpace] {
        let code = if kind == FaultKind::Io { 5 } else { 28 };
        for (on_file, calls) in [(true, file_calls), (false, log_calls)] {
            for call in 1..=calls {
                let which = if on_file { "file" } else { "log" };
                let context = format!("{which} call {call} fails with {kind:?}");
                let file = Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()));
                let log = Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()));
                if on_file {
                    file.fail_call(call, kind, false);
                } else {
                    log.fail_call(call, kind, false);
                }
                let (acked, in_flight, error) = run_with(
                    file.clone() as Arc<dyn Storage>,
                    log.clone() as Arc<dyn Storage>,
                    &bypass_options(),
                    true,
                );
                match &error {
                    Some(Error::Io { source, .. }) => {
                        assert_eq!(source.raw_os_error(), Some(code), "{context}")
                    }
                    None => continue,
                    Some(other) => panic!("{context}: expected an I/O error, got {other}"),
                }
                failures_seen += 1;
                let reopened = Db::open_in_with_log(
                    Arc::new(MemoryStorage::from_image(&file.inner().image()).unwrap()),
                    Arc::new(MemoryStorage::from_image(&log.inner().image()).unwrap()),
                    bypass_options(),
                );
                let db = match reopened {
                    Ok(db) => db,
                    Err(Error::Corruption { .. } | Error::NotADatabase { .. })
                        if acked.is_empty() =>
                    {
                        continue
                    }
                    Err(error) => panic!("{context}: reopen: {error}"),
                };
                let state = dump(&db).unwrap();
                assert!(
                    state == acked || Some(&state) == in_flight.as_ref(),
                    "{context}: reopened to neither the acknowledged commits nor those plus \
                     the one in flight"
                );
                db.checkpoint().unwrap();
                let report = db.verify().unwrap();
                assert!(report.is_ok(), "{context}: {:?}", report.problems);
            }
        }
    }
    assert!(failures_seen > 40, "{failures_seen}");
}
