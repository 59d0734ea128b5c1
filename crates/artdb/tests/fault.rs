//! Fault tests: the same checkpoint workload as the crash tests, with the N-th I/O call failing
//! (EIO, then ENOSPC), for every N the workload makes. Each failure must surface as a typed
//! error; after a failed checkpoint the database still reads its committed state, refuses
//! writes (`Error::Poisoned`), and the file reopens to the last completed checkpoint (or, if only
//! the final sync failed, to that checkpoint: its superblock reached the page cache).

mod common;

use artdb::io::{MemoryStorage, Storage};
use artdb::{Db, Error};
use artdb_testkit::{FaultKind, FaultStorage};
use common::{assert_same, checkpoint_workload, dump, no_drop_checkpoint, open_image, Model};
use std::cell::Cell;
use std::sync::Arc;

const ROUNDS: usize = 4;
const WORKLOAD_SEED: u64 = 7;

type Faulty = FaultStorage<MemoryStorage>;

fn faulty() -> Arc<Faulty> {
    Arc::new(FaultStorage::new(MemoryStorage::new().unwrap()))
}

/// Checkpoint models and the call-number range of each checkpoint in a clean run.
fn clean_run() -> (Vec<(Model, u64, u64)>, u64) {
    let storage = faulty();
    let start = Cell::new(0);
    let mut checkpoints = Vec::new();
    let (_, result, db) = checkpoint_workload(
        || Db::create_in(storage.clone() as Arc<dyn Storage>, no_drop_checkpoint()),
        ROUNDS,
        WORKLOAD_SEED,
        |_| start.set(storage.calls() + 1),
        |_, model| checkpoints.push((model.clone(), start.get(), storage.calls())),
    );
    result.expect("clean run");
    drop(db);
    (checkpoints, storage.calls())
}

#[test]
fn every_failed_call_is_a_typed_error_and_reopens_to_a_checkpoint() {
    let (checkpoints, total_calls) = clean_run();
    assert!(total_calls > 20, "the workload makes {total_calls} calls");
    for kind in [FaultKind::Io, FaultKind::NoSpace] {
        for call in 1..=total_calls {
            check_fault(&checkpoints, call, kind);
        }
    }
}

fn check_fault(checkpoints: &[(Model, u64, u64)], call: u64, kind: FaultKind) {
    let context = format!("call {call} fails with {kind:?}");
    let storage = faulty();
    storage.fail_call(call, kind, false);
    let (model, result, db) = checkpoint_workload(
        || Db::create_in(storage.clone() as Arc<dyn Storage>, no_drop_checkpoint()),
        ROUNDS,
        WORKLOAD_SEED,
        |_| {},
        |_, _| {},
    );
    let index = checkpoints
        .iter()
        .position(|&(_, first, last)| (first..=last).contains(&call))
        .unwrap_or_else(|| panic!("{context}: call outside every checkpoint"));
    match &result {
        // A failed map is retried with a smaller window; the workload then completes.
        Ok(()) => {
            let db = db.as_ref().unwrap_or_else(|| panic!("{context}"));
            assert_same(db, &checkpoints[checkpoints.len() - 1].0);
            return;
        }
        Err(Error::Io { source, .. }) => {
            let code = if kind == FaultKind::Io {
                libc_eio()
            } else {
                libc_enospc()
            };
            assert_eq!(source.raw_os_error(), Some(code), "{context}");
        }
        other => panic!("{context}: expected an I/O error, got {other:?}"),
    }
    if let Some(db) = db {
        // The committed state is still readable, and writes are refused until reopened.
        assert_same(&db, &model);
        assert!(
            matches!(db.write().err(), Some(Error::Poisoned { .. })),
            "{context}: not poisoned"
        );
        assert!(
            matches!(db.checkpoint(), Err(Error::Poisoned { .. })),
            "{context}"
        );
    }
    let last_call = checkpoints[index].2;
    let mut allowed = Vec::new();
    if index > 0 {
        allowed.push(&checkpoints[index - 1].0);
    }
    // `Db::compact` (even rounds) is several checkpoints in a row; the round's data is durable
    // after the first, so a failure in a later one reopens to the new state.
    // The superblock's sync is the last call, or the one before a shrink of the file (`set_len`
    // after the superblock, when the checkpoint freed the file's tail).
    let compact_round = index > 0 && index % 2 == 0;
    if call + 1 >= last_call || compact_round {
        allowed.push(&checkpoints[index].0);
    }
    match open_image(&storage.inner().image()) {
        Ok((_, reopened)) => {
            let state = dump(&reopened).unwrap_or_else(|e| panic!("{context}: read: {e}"));
            assert!(
                allowed.contains(&&state),
                "{context}: reopened to no allowed checkpoint (failure in checkpoint {index}, \
                 calls {:?}; the state is that of checkpoint {:?})",
                (checkpoints[index].1, checkpoints[index].2),
                checkpoints.iter().position(|(model, _, _)| *model == state)
            );
            let report = reopened
                .verify()
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            assert!(report.is_ok(), "{context}: {:?}", report.problems);
        }
        Err(Error::Corruption { .. } | Error::NotADatabase { .. }) if index == 0 => {}
        Err(error) => panic!("{context}: reopen failed: {error}"),
    }
}

fn libc_eio() -> i32 {
    5
}

fn libc_enospc() -> i32 {
    28
}
