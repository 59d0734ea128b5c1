//! Crash tests: a workload of checkpoints over a storage that simulates power loss at one sync,
//! with the unsynced writes kept, dropped or torn. After every crash the durable image must open
//! to exactly the last completed checkpoint, or (for a crash at a checkpoint's final sync, whose
//! superblock write may or may not have reached the disk) to that checkpoint.
//!
//! Replay a tear with the seed printed in the failure message.

mod common;

use artdb::io::Storage;
use artdb::{Db, Error};
use artdb_testkit::{CrashMode, CrashStorage};
use common::{assert_same, checkpoint_workload, no_drop_checkpoint, open_image, Model};
use std::sync::{Arc, Mutex};

const ROUNDS: usize = 5;
const WORKLOAD_SEED: u64 = 42;

struct Plan {
    /// For each checkpoint (0 = create): the model durable after it and its sync numbers.
    checkpoints: Vec<(Model, Vec<u64>)>,
}

fn clean_run() -> Plan {
    let storage = Arc::new(CrashStorage::new().unwrap());
    let syncs_before = Mutex::new(0);
    let mut checkpoints: Vec<(Model, Vec<u64>)> = Vec::new();
    let (_, result, _) = checkpoint_workload(
        || Db::create_in(storage.clone() as Arc<dyn Storage>, no_drop_checkpoint()),
        ROUNDS,
        WORKLOAD_SEED,
        |_| *syncs_before.lock().unwrap() = storage.syncs(),
        |_, model| {
            let first = *syncs_before.lock().unwrap() + 1;
            checkpoints.push((model.clone(), (first..=storage.syncs()).collect()));
        },
    );
    result.expect("clean run");
    Plan { checkpoints }
}

#[test]
fn every_sync_crash_opens_to_the_last_checkpoint() {
    let plan = clean_run();
    let mut seeds = vec![CrashMode::Keep, CrashMode::Drop];
    let tears = 3 * artdb_testkit::scale();
    let base_seed = artdb_testkit::seed();
    seeds.extend((0..tears).map(|i| CrashMode::Tear {
        seed: base_seed.wrapping_add(i),
    }));
    let mut crashes = 0;
    for (index, (_, syncs)) in plan.checkpoints.iter().enumerate() {
        // A checkpoint syncs twice: data, then superblock. `Db::compact` is several checkpoints
        // in a row (the data of the round lands with the first; the others move it and cut the
        // file), so a crash after its first superblock sync opens to the new state.
        assert!(
            syncs.len() >= 2 && syncs.len() % 2 == 0,
            "checkpoint {index}: {} syncs",
            syncs.len()
        );
        for (position, &sync) in syncs.iter().enumerate() {
            let stage = match position {
                0 => Stage::Data,
                1 => Stage::Superblock,
                _ => Stage::After,
            };
            for &mode in &seeds {
                check_crash(&plan, index, stage, sync, mode);
                crashes += 1;
            }
        }
    }
    assert!(crashes >= 2 * (ROUNDS + 1) * 5);
}

/// Where in a checkpoint (or a compact's run of them) the crash hits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage {
    /// The first checkpoint's data sync: its superblock is not written yet.
    Data,
    /// The first checkpoint's superblock sync: it may or may not have landed.
    Superblock,
    /// A later checkpoint of a compact: the new state is durable already.
    After,
}

fn check_crash(plan: &Plan, index: usize, stage: Stage, sync: u64, mode: CrashMode) {
    let final_sync = stage == Stage::Superblock;
    let context = format!("crash at sync {sync} (checkpoint {index}) mode {mode:?}");
    let storage = Arc::new(CrashStorage::new().unwrap());
    storage.crash_at_sync(sync, mode);
    let (_, result, db) = checkpoint_workload(
        || Db::create_in(storage.clone() as Arc<dyn Storage>, no_drop_checkpoint()),
        ROUNDS,
        WORKLOAD_SEED,
        |_| {},
        |_, _| {},
    );
    assert!(
        result.is_err(),
        "{context}: the workload must see the crash"
    );
    assert!(storage.crashed(), "{context}");
    drop(db);
    let image = storage.durable_image();
    let opened = open_image(&image);
    let mut allowed: Vec<&Model> = Vec::new();
    if index > 0 && stage != Stage::After {
        allowed.push(&plan.checkpoints[index - 1].0);
    }
    let superblock_may_have_landed = final_sync && mode != CrashMode::Drop;
    if superblock_may_have_landed || stage == Stage::After {
        allowed.push(&plan.checkpoints[index].0);
    }
    match opened {
        Ok((_, db)) => {
            let state = common::dump(&db).unwrap_or_else(|e| panic!("{context}: read: {e}"));
            let position = allowed.iter().position(|model| **model == state);
            assert!(
                position.is_some(),
                "{context}: opened to a state that is no checkpoint"
            );
            if (mode == CrashMode::Keep && final_sync) || stage == Stage::After {
                assert_same(&db, &plan.checkpoints[index].0);
            }
            let report = db
                .verify()
                .unwrap_or_else(|e| panic!("{context}: verify: {e}"));
            assert!(report.is_ok(), "{context}: {:?}", report.problems);
        }
        Err(Error::Corruption { .. } | Error::NotADatabase { .. })
            if index == 0 && !(final_sync && mode == CrashMode::Keep) =>
        {
            // The crash hit `create` itself before its superblock was durable: no database.
        }
        Err(error) => panic!("{context}: open failed: {error}"),
    }
}
