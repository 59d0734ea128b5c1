//! Concurrent write transactions against a `BTreeMap` model, and the bank-transfer invariant.
//!
//! Model test: threads run random transactions (gets, ranges both ways, puts, removes,
//! `insert_if_absent`) and commit or abort at random. Every transaction records what it read
//! and did; committed writers also their commit sequence number. Replaying the committed
//! writers one by one in commit order on a `BTreeMap` must give:
//! - the sequence numbers 1..n without gaps, and the database's final state exactly;
//! - for every transaction (committed, aborted or conflicted, any level), the values it read
//!   equal the model at its snapshot's sequence number plus its own earlier writes (snapshot
//!   reads);
//! - for every committed serializable writer, the values it read equal the model just before
//!   its own commit (it is serializable in commit order).
//!
//! Runs at snapshot isolation only, serializable only, and mixed. Seeded (`ARTDB_TEST_SEED`),
//! sized by `ARTDB_TEST_SCALE`.

mod common;

use artdb::{Db, Error, Isolation, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u16 = 24;

#[derive(Debug, Clone)]
enum Op {
    Get(Vec<u8>, Option<Vec<u8>>),
    /// lo, hi, reverse, how many pairs it took at most, the pairs in the order taken.
    Range(Vec<u8>, Vec<u8>, bool, usize, Vec<(Vec<u8>, Vec<u8>)>),
    /// A cursor: seek target, steps (true = next), the pair at each position (None: not valid).
    Cursor(Vec<u8>, Vec<bool>, Vec<Option<(Vec<u8>, Vec<u8>)>>),
    Put(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>, bool),
    InsertIfAbsent(Vec<u8>, Vec<u8>, bool),
}

#[derive(Debug)]
struct Record {
    isolation: Isolation,
    snapshot: u64,
    /// `Some(seq)` for a committed transaction that wrote something.
    commit: Option<u64>,
    ops: Vec<Op>,
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    rng.gen_range(0..KEYS).to_be_bytes().to_vec()
}

/// Seeks a cursor to `target` and steps it randomly both ways, recording each position.
fn cursor_op(txn: &artdb::Transaction, rng: &mut StdRng, target: Vec<u8>) -> Op {
    let mut cursor = txn.cursor("t").unwrap();
    cursor.seek(&target).unwrap();
    let here = |cursor: &artdb::TxnCursor<'_>| {
        cursor
            .is_valid()
            .then(|| (cursor.key().to_vec(), cursor.value().to_vec()))
    };
    let mut seen = vec![here(&cursor)];
    let mut steps = Vec::new();
    for _ in 0..rng.gen_range(0..5) {
        let forward: bool = rng.gen();
        if forward {
            cursor.next().unwrap();
        } else {
            cursor.prev().unwrap();
        }
        steps.push(forward);
        seen.push(here(&cursor));
    }
    Op::Cursor(target, steps, seen)
}

fn run_one(db: &Db, rng: &mut StdRng, isolation: Isolation, tag: &mut u64) -> Record {
    let mut txn = db
        .begin_write(WriteOptions::with_isolation(isolation))
        .unwrap();
    let snapshot = txn.snapshot_seq();
    let mut ops = Vec::new();
    for _ in 0..rng.gen_range(1..8) {
        *tag += 1;
        let value = tag.to_le_bytes().to_vec();
        let k = key(rng);
        match rng.gen_range(0..10) {
            0..=1 => {
                let found = txn.get("t", &k).unwrap().map(<[u8]>::to_vec);
                ops.push(Op::Get(k, found));
            }
            2 => ops.push(cursor_op(&txn, rng, k)),
            3 => {
                let mut hi = key(rng);
                let lo = k.min(hi.clone());
                hi = hi.max(lo.clone());
                let reverse = rng.gen();
                // Sometimes only the first few pairs (a partial scan reads less).
                let limit = if rng.gen() {
                    rng.gen_range(1..4)
                } else {
                    usize::MAX
                };
                let iter = txn.range("t", lo.clone()..hi.clone()).unwrap();
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = if reverse {
                    iter.rev()
                        .take(limit)
                        .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
                        .collect()
                } else {
                    iter.take(limit)
                        .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
                        .collect()
                };
                ops.push(Op::Range(lo, hi, reverse, limit, pairs));
            }
            4..=6 => {
                txn.insert("t", &k, &value).unwrap();
                ops.push(Op::Put(k, value));
            }
            7 => {
                let existed = txn.remove("t", &k).unwrap();
                ops.push(Op::Remove(k, existed));
            }
            _ => {
                let inserted = txn.insert_if_absent("t", &k, &value).unwrap();
                ops.push(Op::InsertIfAbsent(k, value, inserted));
            }
        }
        if rng.gen_range(0..20) == 0 {
            std::thread::yield_now();
        }
    }
    let wrote = !txn.is_read_only();
    let commit = if rng.gen_range(0..5) == 0 {
        txn.abort();
        None
    } else {
        match txn.commit() {
            Ok(seq) => wrote.then_some(seq),
            Err(Error::Conflict { .. }) => None,
            Err(other) => panic!("commit: {other}"),
        }
    };
    Record {
        isolation,
        snapshot,
        commit,
        ops,
    }
}

/// Replays `ops` on `base`, checking every read; applies the writes.
fn replay(base: &mut Map, ops: &[Op], check_reads: bool) -> Result<(), String> {
    for op in ops {
        match op {
            Op::Get(k, found) => {
                if check_reads && base.get(k) != found.as_ref() {
                    return Err(format!(
                        "get {k:?}: read {found:?}, model {:?}",
                        base.get(k)
                    ));
                }
            }
            Op::Range(lo, hi, reverse, limit, pairs) => {
                let range = base.range(lo.clone()..hi.clone());
                let pair = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
                let expected: Vec<_> = if *reverse {
                    range.rev().take(*limit).map(pair).collect()
                } else {
                    range.take(*limit).map(pair).collect()
                };
                if check_reads && &expected != pairs {
                    return Err(format!("range {lo:?}..{hi:?} (reverse {reverse}): read {pairs:?}, model {expected:?}"));
                }
            }
            Op::Cursor(target, steps, seen) => {
                let keys: Vec<&Vec<u8>> = base.keys().collect();
                let mut at = keys.iter().position(|k| *k >= target);
                let pair = |at: Option<usize>| at.map(|i| (keys[i].clone(), base[keys[i]].clone()));
                let mut expected = vec![pair(at)];
                for &forward in steps {
                    at = match at {
                        Some(i) if forward => (i + 1 < keys.len()).then_some(i + 1),
                        Some(i) => i.checked_sub(1),
                        None => None,
                    };
                    expected.push(pair(at));
                }
                if check_reads && &expected != seen {
                    return Err(format!(
                        "cursor from {target:?} steps {steps:?}: saw {seen:?}, model {expected:?}"
                    ));
                }
            }
            Op::Put(k, v) => {
                base.insert(k.clone(), v.clone());
            }
            Op::Remove(k, existed) => {
                if check_reads && base.contains_key(k) != *existed {
                    return Err(format!("remove {k:?}: saw {existed}"));
                }
                if *existed {
                    base.remove(k);
                }
            }
            Op::InsertIfAbsent(k, v, inserted) => {
                if check_reads && base.contains_key(k) == *inserted {
                    return Err(format!("insert_if_absent {k:?}: inserted {inserted}"));
                }
                if *inserted {
                    base.insert(k.clone(), v.clone());
                }
            }
        }
    }
    Ok(())
}

fn model_test(mode: &str) {
    let seed = artdb_testkit::seed();
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    let mut initial = Map::new();
    let start_seq = {
        let mut txn = db.begin_write(WriteOptions::default()).unwrap();
        for i in 0..KEYS / 2 {
            let k = (i * 2).to_be_bytes().to_vec();
            txn.insert("t", &k, b"init").unwrap();
            initial.insert(k, b"init".to_vec());
        }
        txn.commit().unwrap()
    };
    let threads = 4u64;
    let per_thread = 150 * artdb_testkit::scale();
    let records: Vec<Record> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let db = &db;
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed ^ (thread * 0x9E37_79B9));
                    let mut tag = thread << 48;
                    let mut records = Vec::new();
                    for _ in 0..per_thread {
                        let isolation = match mode {
                            "snapshot" => Isolation::Snapshot,
                            "serializable" => Isolation::Serializable,
                            _ if rng.gen() => Isolation::Snapshot,
                            _ => Isolation::Serializable,
                        };
                        if rng.gen_range(0..8) == 0 {
                            // The checkpoint runs beside the transactions too.
                            db.checkpoint().unwrap();
                        }
                        records.push(run_one(db, &mut rng, isolation, &mut tag));
                    }
                    records
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut writers: Vec<&Record> = records.iter().filter(|r| r.commit.is_some()).collect();
    writers.sort_by_key(|r| r.commit);
    // States by commit sequence number.
    let mut states: BTreeMap<u64, Map> = BTreeMap::new();
    states.insert(start_seq, initial.clone());
    let mut model = initial;
    let mut seq = start_seq;
    for record in &writers {
        let commit = record.commit.unwrap_or(0);
        assert_eq!(commit, seq + 1, "seed {seed}: commit numbers without gaps");
        let check = record.isolation == Isolation::Serializable;
        if let Err(problem) = replay(&mut model, &record.ops, check) {
            panic!("seed {seed} mode {mode}: serializable txn {commit} is not serializable in commit order: {problem}");
        }
        seq = commit;
        states.insert(seq, model.clone());
    }
    assert_eq!(
        common::dump(&db).unwrap()["t"],
        model,
        "seed {seed} mode {mode}: final state"
    );
    for record in &records {
        let mut base = states
            .get(&record.snapshot)
            .unwrap_or_else(|| panic!("seed {seed}: snapshot seq {} unknown", record.snapshot))
            .clone();
        if let Err(problem) = replay(&mut base, &record.ops, true) {
            panic!(
                "seed {seed} mode {mode}: a {:?} txn on snapshot {} read wrongly: {problem}",
                record.isolation, record.snapshot
            );
        }
    }
    let committed = writers.len();
    let serializable = writers
        .iter()
        .filter(|r| r.isolation == Isolation::Serializable)
        .count();
    assert!(committed > 0, "seed {seed}: something committed");
    eprintln!("seed {seed} mode {mode}: {} txns, {committed} committed writers ({serializable} serializable)", records.len());
    db.checkpoint().unwrap();
    assert!(db.verify().unwrap().is_ok());
    // Every transaction ended: the history is pruned (at the latest when the next one ends).
    drop(db.begin_write(WriteOptions::default()).unwrap());
    let stats = db.stats().unwrap();
    assert_eq!(stats.txn.live_writers, 0);
    assert_eq!(stats.txn.history_records, 0, "seed {seed}: history pruned");
}

#[test]
fn concurrent_model_snapshot_isolation() {
    model_test("snapshot");
}

#[test]
fn concurrent_model_serializable() {
    model_test("serializable");
}

#[test]
fn concurrent_model_mixed() {
    model_test("mixed");
}

fn bank(isolation: Isolation) {
    let seed = artdb_testkit::seed();
    let (_, db) = common::memory_db();
    db.create_table("bank").unwrap();
    let accounts = 8u64;
    let total = accounts * 100;
    db.transact(|txn| {
        for account in 0..accounts {
            txn.insert("bank", &account.to_be_bytes(), &100u64.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    let balance = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap());
    let stop = AtomicBool::new(false);
    // The workers start once the reader has checked its first snapshot, so the reader overlaps
    // them on any schedule (on 2 cores, 4 fast workers could finish before it ran at all).
    let reader_started = AtomicBool::new(false);
    let transfers = 200 * artdb_testkit::scale();
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut snapshots = 0u64;
            while snapshots == 0 || !stop.load(Ordering::Acquire) {
                let read = db.begin_read();
                let sum: u64 = read
                    .table("bank")
                    .unwrap()
                    .iter()
                    .map(|item| balance(item.unwrap().1))
                    .sum();
                assert_eq!(sum, total, "seed {seed}: a snapshot saw a half transfer");
                snapshots += 1;
                reader_started.store(true, Ordering::Release);
            }
            snapshots
        });
        let workers: Vec<_> = (0..4u64)
            .map(|thread| {
                let db = &db;
                let reader_started = &reader_started;
                scope.spawn(move || {
                    while !reader_started.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                    let mut rng = StdRng::seed_from_u64(seed ^ thread);
                    for _ in 0..transfers {
                        let from = rng.gen_range(0..accounts);
                        let to = (from + rng.gen_range(1..accounts)) % accounts;
                        let amount = rng.gen_range(0..30u64);
                        let options = WriteOptions::with_isolation(isolation).max_attempts(1000);
                        let moved = db.transact_with(options, |txn| {
                            let a =
                                balance(txn.get("bank", &from.to_be_bytes())?.unwrap_or(&[0; 8]));
                            let b = balance(txn.get("bank", &to.to_be_bytes())?.unwrap_or(&[0; 8]));
                            if a < amount {
                                return Ok(false);
                            }
                            // Check the sum inside the transaction too (its snapshot).
                            let sum: u64 =
                                txn.iter("bank")?.map(|item| balance(item.unwrap().1)).sum();
                            assert_eq!(sum, total);
                            txn.insert("bank", &from.to_be_bytes(), &(a - amount).to_le_bytes())?;
                            txn.insert("bank", &to.to_be_bytes(), &(b + amount).to_le_bytes())?;
                            Ok(true)
                        });
                        moved.unwrap();
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        stop.store(true, Ordering::Release);
        assert!(reader.join().unwrap() > 0);
    });
    let read = db.read();
    let sum: u64 = read
        .table("bank")
        .unwrap()
        .iter()
        .map(|item| balance(item.unwrap().1))
        .sum();
    assert_eq!(sum, total, "seed {seed}: money was created or destroyed");
}

#[test]
fn bank_transfers_keep_the_sum_snapshot_isolation() {
    bank(Isolation::Snapshot);
}

#[test]
fn bank_transfers_keep_the_sum_serializable() {
    bank(Isolation::Serializable);
}

/// The same checks, deterministic: one thread interleaves up to four open transactions (either
/// level) step by step (replayable from the printed seed), and compares the database with
/// the model after every commit.
///
/// Regression: a transaction that put a key its snapshot lacked and then removed it left no
/// tombstone, so a concurrent commit's value for that key survived although the transaction's
/// last word on it was "removed" and no conflict was raised (write sets must hold every key
/// written, whatever the net effect). Found by this test; `remove` now keeps a tombstone.
#[test]
fn interleaved_transactions_match_the_model() {
    let seed = artdb_testkit::seed();
    let mut rng = StdRng::seed_from_u64(seed);
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    let mut model = Map::new();
    let mut states: BTreeMap<u64, Map> = BTreeMap::new();
    states.insert(
        db.begin_write(WriteOptions::default())
            .unwrap()
            .snapshot_seq(),
        Map::new(),
    );
    let mut open: Vec<(artdb::Transaction, Vec<Op>)> = Vec::new();
    let steps = 20_000 * artdb_testkit::scale();
    let mut tag = 0u64;
    for step in 0..steps {
        if open.len() < 4 && rng.gen_range(0..3) == 0 {
            let isolation = if rng.gen() {
                Isolation::Snapshot
            } else {
                Isolation::Serializable
            };
            let options = WriteOptions::with_isolation(isolation);
            open.push((db.begin_write(options).unwrap(), Vec::new()));
            continue;
        }
        if open.is_empty() {
            continue;
        }
        let i = rng.gen_range(0..open.len());
        if rng.gen_range(0..6) == 0 {
            let (txn, ops) = open.swap_remove(i);
            let snapshot = txn.snapshot_seq();
            let mut base = states[&snapshot].clone();
            if let Err(p) = replay(&mut base, &ops, true) {
                panic!("seed {seed} step {step}: snapshot {snapshot}: {p}; ops {ops:?}");
            }
            let wrote = !txn.is_read_only();
            let serializable = txn.isolation() == Isolation::Serializable;
            let committed = match txn.commit() {
                Ok(seq) => Some(seq),
                Err(Error::Conflict { .. }) => None,
                Err(other) => panic!("seed {seed}: commit: {other}"),
            };
            if let Some(seq) = committed {
                if wrote {
                    if serializable {
                        if let Err(p) = replay(&mut model.clone(), &ops, true) {
                            panic!("seed {seed} step {step}: serializable commit {seq}: {p}");
                        }
                    }
                    replay(&mut model, &ops, false).unwrap();
                    states.insert(seq, model.clone());
                    let got = common::dump(&db).unwrap()["t"].clone();
                    if got != model {
                        for k in got.keys().chain(model.keys()) {
                            if got.get(k) != model.get(k) {
                                eprintln!(
                                    "key {k:?}: db {:?} model {:?}",
                                    got.get(k),
                                    model.get(k)
                                );
                            }
                        }
                        panic!(
                            "seed {seed} step {step} seq {seq} snapshot {snapshot}: ops {ops:?}"
                        );
                    }
                }
            }
            continue;
        }
        let (txn, ops) = &mut open[i];
        tag += 1;
        let value = tag.to_le_bytes().to_vec();
        let k = key(&mut rng);
        match rng.gen_range(0..10) {
            0..=1 => {
                let found = txn.get("t", &k).unwrap().map(<[u8]>::to_vec);
                ops.push(Op::Get(k, found));
            }
            2 => ops.push(cursor_op(txn, &mut rng, k)),
            3 => {
                let mut hi = key(&mut rng);
                let lo = k.clone().min(hi.clone());
                hi = hi.max(lo.clone());
                let limit = if rng.gen() {
                    rng.gen_range(1..4)
                } else {
                    usize::MAX
                };
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = txn
                    .range("t", lo.clone()..hi.clone())
                    .unwrap()
                    .take(limit)
                    .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
                    .collect();
                ops.push(Op::Range(lo, hi, false, limit, pairs));
            }
            4..=6 => {
                txn.insert("t", &k, &value).unwrap();
                ops.push(Op::Put(k, value));
            }
            7 => {
                let existed = txn.remove("t", &k).unwrap();
                ops.push(Op::Remove(k, existed));
            }
            _ => {
                let inserted = txn.insert_if_absent("t", &k, &value).unwrap();
                ops.push(Op::InsertIfAbsent(k, value, inserted));
            }
        }
    }
}
