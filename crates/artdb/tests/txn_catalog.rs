//! Creating and dropping tables inside a write transaction (issue 10): the same isolation rules
//! as its writes, and logged so that recovery reproduces them.
//!
//! - deterministic interleavings (hermitage style, both levels): a create is private until
//!   commit; of two concurrent creates of one name exactly one commits; a drop conflicts with a
//!   writer of the table in either commit order; drop then re-create in one transaction; abort
//!   leaves nothing; a failed commit leaves nothing;
//! - recovery: a killed process (the database dropped without a checkpoint, only the log
//!   left) reopens with the creates, drops and writes of every committed transaction;
//! - a concurrent model test: threads run random transactions that create, drop, write and read
//!   a few tables, commit or abort; replaying the committed ones in commit order on a model
//!   must accept every operation they made (a create on an absent name, a drop or write on a
//!   present table), reproduce every value each read at its snapshot, and the final state.

mod common;

use artdb::{Db, Error, Isolation, Options, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;
type Model = BTreeMap<String, Map>;

fn both_levels() -> [WriteOptions; 2] {
    [
        WriteOptions::default(),
        WriteOptions::with_isolation(Isolation::Serializable),
    ]
}

fn is_conflict<T: std::fmt::Debug>(result: artdb::Result<T>) -> bool {
    matches!(result, Err(Error::Conflict { .. }))
}

#[test]
fn a_create_is_private_until_commit_and_two_creates_of_one_name_do_not_both_commit() {
    for options in both_levels() {
        let (_, db) = common::memory_db();
        let mut first = db.begin_write(options.clone()).unwrap();
        let mut second = db.begin_write(options.clone()).unwrap();
        first.create_table("new").unwrap();
        first.insert("new", b"k", b"first").unwrap();
        assert_eq!(first.get("new", b"k").unwrap(), Some(&b"first"[..]));
        assert!(first.table_names().contains(&"new".to_string()));
        // Private: neither the other transaction nor a reader sees it.
        assert!(matches!(
            second.get("new", b"k"),
            Err(Error::TableNotFound { .. })
        ));
        assert!(db.read().table("new").is_err());
        second.create_table("new").unwrap();
        second.insert("new", b"k", b"second").unwrap();
        assert!(matches!(
            first.create_table("new"),
            Err(Error::TableExists { .. })
        ));
        first.commit().unwrap();
        assert!(is_conflict(second.commit()), "the second create conflicts");
        let read = db.read();
        assert_eq!(
            read.table("new").unwrap().get(b"k").unwrap(),
            Some(&b"first"[..])
        );
        // Bare creates (no writes): still exactly one.
        let mut one = db.begin_write(options.clone()).unwrap();
        let mut two = db.begin_write(options.clone()).unwrap();
        one.create_table("bare").unwrap();
        two.create_table("bare").unwrap();
        one.commit().unwrap();
        assert!(
            is_conflict(two.commit()),
            "the second bare create conflicts"
        );
    }
}

#[test]
fn a_serializable_transaction_that_saw_no_table_conflicts_with_its_concurrent_create() {
    for serializable in [false, true] {
        let (_, db) = common::memory_db();
        db.create_table("y").unwrap();
        let options = if serializable {
            WriteOptions::with_isolation(Isolation::Serializable)
        } else {
            WriteOptions::default()
        };
        let mut reader = db.begin_write(options).unwrap();
        assert!(matches!(
            reader.get("x", b"k"),
            Err(Error::TableNotFound { .. })
        ));
        reader.insert("y", b"saw-no-x", b"1").unwrap();
        db.transact(|txn| {
            txn.create_table("x")?;
            txn.insert("x", b"k", b"v")
        })
        .unwrap();
        let result = reader.commit();
        if serializable {
            assert!(is_conflict(result), "read skew over the catalog");
        } else {
            result.unwrap();
        }
    }
}

#[test]
fn a_drop_conflicts_with_a_writer_of_the_table_in_either_order() {
    for options in both_levels() {
        for drop_first in [true, false] {
            let (_, db) = common::memory_db();
            db.create_table("t").unwrap();
            db.transact(|txn| txn.insert("t", b"a", b"1")).unwrap();
            let mut dropper = db.begin_write(options.clone()).unwrap();
            let mut writer = db.begin_write(options.clone()).unwrap();
            dropper.drop_table("t").unwrap();
            assert!(matches!(
                dropper.get("t", b"a"),
                Err(Error::TableNotFound { .. })
            ));
            writer.insert("t", b"b", b"2").unwrap();
            if drop_first {
                dropper.commit().unwrap();
                assert!(is_conflict(writer.commit()));
                assert!(db.read().table("t").is_err());
            } else {
                writer.commit().unwrap();
                assert!(is_conflict(dropper.commit()));
                assert_eq!(db.read().table("t").unwrap().len(), 2);
            }
        }
    }
}

#[test]
fn drop_then_create_in_one_transaction_abort_and_a_failed_commit_leave_nothing_behind() {
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    db.create_table("u").unwrap();
    db.transact(|txn| txn.insert("t", b"old", b"1")).unwrap();
    // Drop and re-create: the table is empty, then holds what was written after.
    db.transact(|txn| {
        txn.insert("t", b"lost", b"x")?;
        txn.drop_table("t")?;
        txn.create_table("t")?;
        txn.insert("t", b"new", b"2")?;
        assert_eq!(txn.len("t")?, 1);
        Ok(())
    })
    .unwrap();
    let pairs: Vec<_> = db
        .read()
        .table("t")
        .unwrap()
        .iter()
        .map(|item| item.unwrap().0)
        .collect();
    assert_eq!(pairs, vec![b"new".to_vec()]);
    // Abort: nothing.
    let mut txn = db.begin_write(WriteOptions::default()).unwrap();
    txn.create_table("gone").unwrap();
    txn.drop_table("u").unwrap();
    drop(txn);
    assert_eq!(db.table_names(), vec!["t".to_string(), "u".to_string()]);
    // A failed commit (a conflict on a key after the catalog checks): nothing either.
    let mut txn = db.begin_write(WriteOptions::default()).unwrap();
    txn.create_table("v").unwrap();
    txn.drop_table("u").unwrap();
    txn.insert("t", b"new", b"3").unwrap();
    db.transact(|other| other.insert("t", b"new", b"4"))
        .unwrap();
    assert!(is_conflict(txn.commit()));
    assert_eq!(db.table_names(), vec!["t".to_string(), "u".to_string()]);
    // Names are checked.
    let mut txn = db.begin_write(WriteOptions::default()).unwrap();
    assert!(matches!(
        txn.create_table(""),
        Err(Error::InvalidTableName { .. })
    ));
    assert!(matches!(
        txn.drop_table("nope"),
        Err(Error::TableNotFound { .. })
    ));
}

#[test]
fn recovery_replays_creates_and_drops_of_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let options = Options {
        checkpoint_on_drop: false,
        ..Options::default()
    };
    {
        let db = Db::create(&path, options.clone()).unwrap();
        db.create_table("keep").unwrap();
        db.create_table("doomed").unwrap();
        db.checkpoint().unwrap();
        db.transact(|txn| {
            txn.create_table("made")?;
            txn.insert("made", b"k", b"v")?;
            txn.drop_table("doomed")?;
            txn.insert("keep", b"a", b"1")?;
            Ok(())
        })
        .unwrap();
        db.transact(|txn| {
            txn.drop_table("keep")?;
            txn.create_table("keep")?;
            txn.insert("keep", b"b", b"2")
        })
        .unwrap();
        // Dropped without a checkpoint: like a killed process, only the log has these.
    }
    let db = Db::open(&path, options).unwrap();
    assert_eq!(
        db.table_names(),
        vec!["keep".to_string(), "made".to_string()]
    );
    let read = db.read();
    assert_eq!(
        read.table("made").unwrap().get(b"k").unwrap(),
        Some(&b"v"[..])
    );
    let keep: Vec<_> = read
        .table("keep")
        .unwrap()
        .iter()
        .map(|item| item.unwrap().0)
        .collect();
    assert_eq!(keep, vec![b"b".to_vec()]);
}

/// One transaction's operations, as the model replays them.
#[derive(Debug, Clone)]
enum Op {
    Create(String),
    Drop(String),
    Put(String, Vec<u8>, Vec<u8>),
    /// A read: the value, or `None` for an absent key, or `Err` for an absent table.
    Get(String, Vec<u8>, Result<Option<Vec<u8>>, ()>),
}

struct Record {
    isolation: Isolation,
    snapshot: u64,
    commit: Option<u64>,
    ops: Vec<Op>,
}

const NAMES: [&str; 3] = ["a", "b", "c"];

fn run_one(db: &Db, rng: &mut StdRng, isolation: Isolation, tag: &mut u64) -> Record {
    let mut txn = db
        .begin_write(WriteOptions::with_isolation(isolation))
        .unwrap();
    let snapshot = txn.snapshot_seq();
    let mut ops = Vec::new();
    for _ in 0..rng.gen_range(1..6) {
        *tag += 1;
        let name = NAMES[rng.gen_range(0..NAMES.len())].to_string();
        let key = vec![rng.gen_range(0..6u8)];
        match rng.gen_range(0..10) {
            0 => {
                if txn.create_table(&name).is_ok() {
                    ops.push(Op::Create(name));
                }
            }
            1 => {
                if txn.drop_table(&name).is_ok() {
                    ops.push(Op::Drop(name));
                }
            }
            2..=5 => {
                let value = tag.to_le_bytes().to_vec();
                if txn.insert(&name, &key, &value).is_ok() {
                    ops.push(Op::Put(name, key, value));
                }
            }
            _ => {
                let found = match txn.get(&name, &key) {
                    Ok(value) => Ok(value.map(<[u8]>::to_vec)),
                    Err(Error::TableNotFound { .. }) => Err(()),
                    Err(other) => panic!("get: {other}"),
                };
                ops.push(Op::Get(name, key, found));
            }
        }
    }
    let commit = if rng.gen_range(0..5) == 0 {
        drop(txn);
        None
    } else {
        match txn.commit() {
            Ok(seq) => Some(seq),
            Err(Error::Conflict { .. }) => None,
            Err(other) => panic!("commit: {other}"),
        }
    };
    // A transaction that wrote nothing commits at its snapshot: no new state.
    let wrote = ops.iter().any(|op| !matches!(op, Op::Get(..)));
    Record {
        isolation,
        snapshot,
        commit: commit.filter(|_| wrote),
        ops,
    }
}

/// Applies `ops` to `model`; an operation the model refuses is an error. Reads are checked
/// when `check_reads`.
fn replay(model: &mut Model, ops: &[Op], check_reads: bool) -> Result<(), String> {
    for op in ops {
        match op {
            Op::Create(name) => {
                if model.insert(name.clone(), Map::new()).is_some() {
                    return Err(format!("create of existing {name}"));
                }
            }
            Op::Drop(name) => {
                model
                    .remove(name)
                    .ok_or_else(|| format!("drop of absent {name}"))?;
            }
            Op::Put(name, key, value) => {
                model
                    .get_mut(name)
                    .ok_or_else(|| format!("put into absent {name}"))?
                    .insert(key.clone(), value.clone());
            }
            Op::Get(..) if !check_reads => {}
            Op::Get(name, key, found) => {
                let expected = model.get(name).map(|map| map.get(key).cloned()).ok_or(());
                if &expected != found {
                    return Err(format!(
                        "read {name}/{key:?}: {found:?}, model {expected:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn concurrent_creates_drops_and_writes_replay_in_commit_order() {
    let seed = artdb_testkit::seed();
    let (_, db) = common::memory_db();
    let threads = 3u64;
    let per_thread = 120 * artdb_testkit::scale();
    let records: Vec<Record> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let db = &db;
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed ^ (thread * 0x9E37_79B9));
                    let mut tag = thread << 48;
                    (0..per_thread)
                        .map(|_| {
                            let isolation = if rng.gen() {
                                Isolation::Snapshot
                            } else {
                                Isolation::Serializable
                            };
                            run_one(db, &mut rng, isolation, &mut tag)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap())
            .collect()
    });
    let mut committed: Vec<&Record> = records.iter().filter(|r| r.commit.is_some()).collect();
    committed.sort_by_key(|record| record.commit);
    // The model after each commit sequence number.
    let mut states: BTreeMap<u64, Model> = BTreeMap::new();
    let mut model = Model::new();
    states.insert(0, model.clone());
    for (index, record) in committed.iter().enumerate() {
        let seq = record.commit.unwrap();
        assert_eq!(seq, index as u64 + 1, "commit numbers have no gaps");
        // Serial replay in commit order reproduces what a serializable transaction read; a
        // snapshot-isolation one read its snapshot, which later commits may have changed
        // before it committed (read skew over keys and tables it did not write is allowed
        // there), so its reads are checked against its snapshot below instead.
        let serializable = record.isolation == Isolation::Serializable;
        replay(&mut model, &record.ops, serializable)
            .unwrap_or_else(|error| panic!("seed {seed}: commit {seq}: {error}"));
        states.insert(seq, model.clone());
    }
    // Every transaction read its snapshot plus its own changes.
    for record in &records {
        let mut at_snapshot = states
            .range(..=record.snapshot)
            .next_back()
            .map(|(_, state)| state.clone())
            .unwrap();
        replay(&mut at_snapshot, &record.ops, true).unwrap_or_else(|error| {
            panic!(
                "seed {seed}: a transaction at snapshot {}: {error}",
                record.snapshot
            )
        });
    }
    assert!(committed.len() > 10, "enough commits to mean something");
    let read = db.read();
    let mut actual = Model::new();
    for name in read.table_names() {
        let table = read.table(&name).unwrap();
        let map = table
            .iter()
            .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
            .collect();
        actual.insert(name, map);
    }
    assert_eq!(actual, model, "seed {seed}: final state");
}
