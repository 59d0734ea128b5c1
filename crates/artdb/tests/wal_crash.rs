//! Crash tests of durable commits: a database file and its log on one simulated machine
//! (`CrashStorage::sibling`), power lost at every sync of a workload of commits, checkpoints
//! (with their log recycling) and a reopen, with unsynced writes kept, dropped or torn. After
//! the crash the images open to exactly the commits that returned `Ok` (a model per table checks
//! every key), plus possibly the one in flight, never part of one. Then the recovery itself is
//! crashed at each of its syncs, and the open after that gives the same state.
//! Also: many threads committing at once on the crashing machine.
//!
//! Replay a tear with the seed printed in the failure message (`ARTDB_TEST_SEED`).

mod common;

use artdb::io::Storage;
use artdb::{Db, Options};
use artdb_testkit::{CrashMode, CrashStorage};
use common::{dump, Model};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

enum Step {
    Commit(Vec<Op>),
    Checkpoint,
    Reopen,
}

#[derive(Clone)]
enum Op {
    Put(String, Vec<u8>, Vec<u8>),
    Remove(String, Vec<u8>),
    Create(String),
    Drop(String),
    /// `Db::bulk_load_new_table_try` (alone in its step): a new table and its sorted pairs.
    LoadNew(String, Vec<(Vec<u8>, Vec<u8>)>),
}

fn options() -> Options {
    Options {
        checkpoint_on_drop: false,
        ..Options::default()
    }
}

/// Options under which a commit of more than a few keys bypasses the log.
fn bypass_options() -> Options {
    Options {
        wal_bypass_threshold_bytes: BYPASS_THRESHOLD_BYTES,
        ..options()
    }
}

const BYPASS_THRESHOLD_BYTES: u64 = 300;

/// Adds commits bigger than `BYPASS_THRESHOLD_BYTES` to `steps` (one in three commits), so
/// that under `bypass_options` they bypass the log, among small logged ones.
fn with_big_commits(seed: u64, steps: Vec<Step>) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for (i, step) in steps.into_iter().enumerate() {
        out.push(step);
        if i % 3 == 2 {
            let mut ops = Vec::new();
            for k in 0..rng.gen_range(8..24u8) {
                let table = if rng.gen_bool(0.6) { "a" } else { "b" };
                let key = vec![rng.gen_range(0..40u8), k];
                if rng.gen_bool(0.2) {
                    ops.push(Op::Remove(table.into(), key));
                } else {
                    ops.push(Op::Put(table.into(), key, vec![i as u8; 30]));
                }
            }
            out.push(Step::Commit(ops));
        }
    }
    out
}

fn workload(seed: u64) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut steps = vec![Step::Commit(vec![
        Op::Create("a".into()),
        Op::Create("b".into()),
    ])];
    for i in 0..24 {
        if i % 8 == 7 {
            steps.push(Step::Checkpoint);
        }
        if i == 12 {
            steps.push(Step::Reopen);
        }
        if i == 16 {
            steps.push(Step::Commit(vec![
                Op::Drop("b".into()),
                Op::Create("b".into()),
            ]));
        }
        let mut ops = Vec::new();
        for _ in 0..rng.gen_range(1..6) {
            let table = if rng.gen_bool(0.7) { "a" } else { "b" };
            let key = vec![rng.gen_range(0..20u8)];
            if rng.gen_bool(0.25) {
                ops.push(Op::Remove(table.into(), key));
            } else {
                let value = vec![i as u8; rng.gen_range(0..40)];
                ops.push(Op::Put(table.into(), key, value));
            }
        }
        steps.push(Step::Commit(ops));
    }
    steps
}

fn apply(model: &Model, ops: &[Op]) -> Model {
    let mut model = model.clone();
    for op in ops {
        match op {
            Op::Put(t, k, v) => {
                model.get_mut(t).unwrap().insert(k.clone(), v.clone());
            }
            Op::Remove(t, k) => {
                model.get_mut(t).unwrap().remove(k);
            }
            Op::Create(t) => {
                model.insert(t.clone(), Default::default());
            }
            Op::Drop(t) => {
                model.remove(t);
            }
            Op::LoadNew(t, pairs) => {
                model.insert(t.clone(), pairs.iter().cloned().collect());
            }
        }
    }
    model
}

fn commit(db: &Db, ops: &[Op]) -> artdb::Result<()> {
    if let [Op::LoadNew(table, pairs)] = ops {
        let pairs = pairs.iter().map(|(k, v)| Ok::<_, artdb::Error>((k, v)));
        return db.bulk_load_new_table_try(table, pairs).map(drop);
    }
    let mut txn = db.write()?;
    for op in ops {
        match op {
            Op::Put(t, k, v) => drop(txn.insert(t, k, v)?),
            Op::Remove(t, k) => drop(txn.remove(t, k)?),
            Op::Create(t) => txn.create_table(t)?,
            Op::Drop(t) => txn.drop_table(t)?,
            Op::LoadNew(..) => panic!("a load is a step of its own"),
        }
    }
    txn.commit()
}

struct Machine {
    file: Arc<CrashStorage>,
    log: Arc<CrashStorage>,
}

impl Machine {
    fn new() -> Machine {
        let file = Arc::new(CrashStorage::new().unwrap());
        let log = Arc::new(file.sibling(&[]).unwrap());
        Machine { file, log }
    }

    fn from_images(file: &[u8], log: &[u8]) -> Machine {
        let file = Arc::new(CrashStorage::from_image(file).unwrap());
        let log = Arc::new(file.sibling(log).unwrap());
        Machine { file, log }
    }

    fn storages(&self) -> (Arc<dyn Storage>, Arc<dyn Storage>) {
        (
            self.file.clone() as Arc<dyn Storage>,
            self.log.clone() as Arc<dyn Storage>,
        )
    }

    fn images(&self) -> (Vec<u8>, Vec<u8>) {
        (self.file.durable_image(), self.log.durable_image())
    }
}

/// Runs the workload; returns the model of the acknowledged commits, the model with the commit
/// in flight at the first error (if a commit failed), and whether it ran to the end.
fn run(machine: &Machine, steps: &[Step], options: &Options) -> (Model, Option<Model>, bool) {
    let (file, log) = machine.storages();
    let mut acked = Model::new();
    let Ok(mut db) = Db::create_in_with_log(file, log, options.clone()) else {
        return (acked, None, false);
    };
    for step in steps {
        match step {
            Step::Commit(ops) => {
                let after = apply(&acked, ops);
                if commit(&db, ops).is_err() {
                    return (acked, Some(after), false);
                }
                acked = after;
            }
            Step::Checkpoint => {
                if db.checkpoint().is_err() {
                    return (acked, None, false);
                }
            }
            Step::Reopen => {
                drop(db);
                let (file, log) = machine.storages();
                match Db::open_in_with_log(file, log, options.clone()) {
                    Ok(reopened) => db = reopened,
                    Err(_) => return (acked, None, false),
                }
            }
        }
    }
    (acked, None, true)
}

fn open_images(file: &[u8], log: &[u8]) -> artdb::Result<(Machine, Db)> {
    open_images_with(file, log, &options())
}

fn open_images_with(file: &[u8], log: &[u8], options: &Options) -> artdb::Result<(Machine, Db)> {
    let machine = Machine::from_images(file, log);
    let (f, l) = machine.storages();
    let db = Db::open_in_with_log(f, l, options.clone())?;
    Ok((machine, db))
}

#[test]
fn every_sync_crash_keeps_exactly_the_acknowledged_commits() {
    every_sync_crash(&workload(11), &options(), false);
}

/// The same with one commit in three bigger than the bypass threshold: those write their nodes
/// straight into free pages through a checkpoint and log only a reference. A crash at any of
/// their syncs opens to the state before or after them, never part, and (checked after a
/// checkpoint of the reopened database) no page leaked.
#[test]
fn every_sync_crash_with_bypassed_commits_keeps_exactly_the_acknowledged_commits() {
    let steps = with_big_commits(12, workload(13));
    every_sync_crash(&steps, &bypass_options(), true);
}

/// Bulk loads into new tables (`Db::bulk_load_new_table_try`) among the commits: a crash at
/// any sync opens to the state before a load (no table: not even an empty one, which
/// `create_table` then a bulk load left when `artdb load` was killed) or after it.
#[test]
fn every_sync_crash_with_bulk_loads_into_new_tables_keeps_whole_loads() {
    let mut steps = workload(17);
    for (at, name) in [(30, "n2"), (20, "n1"), (3, "n0")] {
        let pairs = (0..60u8).map(|k| (vec![b'k', k], vec![k; 40])).collect();
        steps.insert(at, Step::Commit(vec![Op::LoadNew(name.into(), pairs)]));
    }
    every_sync_crash(&steps, &options(), true);
}

fn every_sync_crash(steps: &[Step], options: &Options, bypass: bool) {
    let clean = Machine::new();
    let (final_model, _, finished) = run(&clean, steps, options);
    assert!(finished);
    let total_syncs = clean.file.syncs();
    assert!(total_syncs > 30, "{total_syncs} syncs");
    let base_seed = artdb_testkit::seed();
    let mut modes = vec![CrashMode::Keep, CrashMode::Drop];
    modes.extend((0..2 * artdb_testkit::scale()).map(|i| CrashMode::Tear {
        seed: base_seed.wrapping_add(i),
    }));
    let mut recovery_crashes = 0;
    for sync in 1..=total_syncs {
        for &mode in &modes {
            let context = format!("crash at sync {sync} of {total_syncs}, {mode:?}");
            let machine = Machine::new();
            machine.file.crash_at_sync(sync, mode);
            let (acked, in_flight, finished) = run(&machine, steps, options);
            assert!(!finished, "{context}: the workload must see the crash");
            let (file, log) = machine.images();
            let state = match open_images_with(&file, &log, options) {
                Ok((_, db)) => {
                    let state = dump(&db).unwrap_or_else(|e| panic!("{context}: {e}"));
                    if bypass {
                        // Space accounting is checked only with nothing left to checkpoint.
                        db.checkpoint().unwrap_or_else(|e| panic!("{context}: {e}"));
                    }
                    let report = db.verify().unwrap_or_else(|e| panic!("{context}: {e}"));
                    assert!(report.is_ok(), "{context}: {:?}", report.problems);
                    state
                }
                // The crash hit `create` before its first superblock was durable.
                Err(artdb::Error::Corruption { .. } | artdb::Error::NotADatabase { .. })
                    if sync <= 3 && acked.is_empty() =>
                {
                    continue
                }
                Err(error) => panic!("{context}: open failed: {error}"),
            };
            assert!(
                state == acked || Some(&state) == in_flight.as_ref(),
                "{context}: opened to neither the acknowledged commits nor those plus the one \
                 in flight"
            );
            recovery_crashes += crash_recovery(&context, &file, &log, &state);
        }
    }
    assert!(recovery_crashes > 0);
    let (file, log) = clean.images();
    let (_, db) = open_images_with(&file, &log, options).unwrap();
    assert_eq!(dump(&db).unwrap(), final_model);
}

/// Crashes the open of `file`/`log` at each of its syncs (recovery writes a checkpoint and
/// recycles the log); the open after each crash must give `expected`. Returns the crashes made.
fn crash_recovery(context: &str, file: &[u8], log: &[u8], expected: &Model) -> usize {
    let probe = Machine::from_images(file, log);
    let (f, l) = probe.storages();
    drop(Db::open_in_with_log(f, l, options()).unwrap());
    let syncs = probe.file.syncs();
    for sync in 1..=syncs {
        for mode in [CrashMode::Keep, CrashMode::Tear { seed: sync }] {
            let machine = Machine::from_images(file, log);
            machine.file.crash_at_sync(sync, mode);
            let (f, l) = machine.storages();
            assert!(
                Db::open_in_with_log(f, l, options()).is_err(),
                "{context}: recovery crash at its sync {sync} {mode:?} not seen"
            );
            let (file2, log2) = machine.images();
            let (_, db) = open_images(&file2, &log2).unwrap_or_else(|e| {
                panic!("{context}: reopen after recovery crash at {sync} {mode:?}: {e}")
            });
            assert_eq!(
                &dump(&db).unwrap(),
                expected,
                "{context}: recovery crash at its sync {sync} {mode:?} changed the state"
            );
        }
    }
    syncs as usize
}

#[test]
fn group_commit_crash_keeps_every_acknowledged_commit_whole() {
    let threads = 6u8;
    let rounds = 4 * artdb_testkit::scale();
    let mut rng = StdRng::seed_from_u64(artdb_testkit::seed());
    for round in 0..rounds {
        let machine = Machine::new();
        let (file, log) = machine.storages();
        let db = Arc::new(Db::create_in_with_log(file, log, options()).unwrap());
        db.create_table("a").unwrap();
        db.create_table("b").unwrap();
        let crash_at = machine.file.syncs() + rng.gen_range(1..40);
        machine
            .file
            .crash_at_sync(crash_at, CrashMode::Tear { seed: round });
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let db = Arc::clone(&db);
                std::thread::spawn(move || {
                    let mut acked = 0u32;
                    for i in 0u32..200 {
                        let key = [vec![t], i.to_be_bytes().to_vec()].concat();
                        let result = db.write().and_then(|mut txn| {
                            txn.insert("a", &key, b"x")?;
                            txn.insert("b", &key, b"y")?;
                            txn.commit()
                        });
                        if result.is_err() {
                            break;
                        }
                        acked = i + 1;
                    }
                    acked
                })
            })
            .collect();
        let acked: Vec<u32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        drop(db);
        let (file, log) = machine.images();
        let (_, reopened) = open_images(&file, &log).unwrap();
        let state = dump(&reopened).unwrap();
        assert_eq!(
            state["a"].keys().collect::<Vec<_>>(),
            state["b"].keys().collect::<Vec<_>>(),
            "round {round}: a commit was split"
        );
        for t in 0..threads {
            let present: Vec<u32> = state["a"]
                .keys()
                .filter(|k| k[0] == t)
                .map(|k| u32::from_be_bytes([k[1], k[2], k[3], k[4]]))
                .collect();
            let prefix: Vec<u32> = (0..present.len() as u32).collect();
            assert_eq!(present, prefix, "round {round} thread {t}: not a prefix");
            let acked = acked[usize::from(t)];
            assert!(
                present.len() as u32 >= acked && present.len() as u32 <= acked + 1,
                "round {round} thread {t}: {acked} acknowledged, {} present",
                present.len()
            );
        }
    }
}

/// Issue 9 item 6: commits go on while a checkpoint syncs its pages and its superblock (the
/// writer lock is released then). Power lost at every sync number of a run where two threads
/// commit while a third checkpoints in a loop (kept, dropped, torn): the images open to every
/// acknowledged commit of each thread, at most one more, never part of one, and verify.
#[test]
fn crash_at_every_sync_of_checkpoints_with_commits_beside_them() {
    let threads = 2u8;
    let syncs_max = 160 * artdb_testkit::scale();
    let modes = |n: u64| {
        [
            CrashMode::Keep,
            CrashMode::Drop,
            CrashMode::Tear { seed: n },
        ]
    };
    let mut checkpoints_total = 0u64;
    for crash_at in 1..=syncs_max {
        for mode in modes(crash_at) {
            let machine = Machine::new();
            let (file, log) = machine.storages();
            // The database file's syncs take a little time, as a disk's do: the window in
            // which the checkpoint has released the writer lock is long enough for commits.
            let file = Arc::new(SlowSync(file)) as Arc<dyn Storage>;
            let db = Arc::new(Db::create_in_with_log(file, log, options()).unwrap());
            db.create_table("a").unwrap();
            db.create_table("b").unwrap();
            machine
                .file
                .crash_at_sync(machine.file.syncs() + crash_at, mode);
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let checkpointer = {
                let db = Arc::clone(&db);
                let done = Arc::clone(&done);
                std::thread::spawn(move || {
                    let mut checkpoints = 0u64;
                    while !done.load(std::sync::atomic::Ordering::Acquire) {
                        if db.checkpoint().is_err() {
                            break;
                        }
                        checkpoints += 1;
                    }
                    checkpoints
                })
            };
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let db = Arc::clone(&db);
                    std::thread::spawn(move || {
                        let mut acked = 0u32;
                        for i in 0u32..40 {
                            let key = [vec![t], i.to_be_bytes().to_vec()].concat();
                            let result = db.write().and_then(|mut txn| {
                                txn.insert("a", &key, &[7; 300])?;
                                txn.insert("b", &key, b"y")?;
                                txn.commit()
                            });
                            if result.is_err() {
                                break;
                            }
                            acked = i + 1;
                        }
                        acked
                    })
                })
                .collect();
            let acked: Vec<u32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
            done.store(true, std::sync::atomic::Ordering::Release);
            checkpoints_total += checkpointer.join().unwrap();
            drop(db);
            let context = format!("crash at sync {crash_at} {mode:?}");
            let (file, log) = machine.images();
            let (_, reopened) =
                open_images(&file, &log).unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
            let state = dump(&reopened).unwrap();
            assert_eq!(
                state["a"].keys().collect::<Vec<_>>(),
                state["b"].keys().collect::<Vec<_>>(),
                "{context}: a commit was split"
            );
            for t in 0..threads {
                let present: Vec<u32> = state["a"]
                    .keys()
                    .filter(|k| k[0] == t)
                    .map(|k| u32::from_be_bytes([k[1], k[2], k[3], k[4]]))
                    .collect();
                let prefix: Vec<u32> = (0..present.len() as u32).collect();
                assert_eq!(present, prefix, "{context} thread {t}: not a prefix");
                let acked = acked[usize::from(t)];
                assert!(
                    present.len() as u32 >= acked && present.len() as u32 <= acked + 1,
                    "{context} thread {t}: {acked} acknowledged, {} present",
                    present.len()
                );
            }
            assert!(reopened.verify().unwrap().is_ok(), "{context}");
        }
    }
    assert!(
        checkpoints_total > 0,
        "no checkpoint completed before a crash"
    );
}

/// A storage whose sync sleeps 300 microseconds before the real one.
struct SlowSync(Arc<dyn Storage>);

impl Storage for SlowSync {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.0.read_at(offset, buf)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.0.write_at(offset, data)
    }
    fn sync(&self) -> std::io::Result<()> {
        std::thread::sleep(std::time::Duration::from_micros(300));
        self.0.sync()
    }
    fn len(&self) -> std::io::Result<u64> {
        self.0.len()
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.0.set_len(len)
    }
    fn map(&self, len: u64) -> std::io::Result<artdb::io::Map> {
        self.0.map(len)
    }
}
