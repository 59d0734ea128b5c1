//! Model test: random sequences of write batches (committed or aborted), checkpoints, closes and
//! reopens, and "crashes" (a drop without checkpoint), against a model of `BTreeMap`s. After every
//! step the database must equal the model; every few steps `verify` must find nothing.
//!
//! Scale with `ARTDB_TEST_SCALE` (cases); proptest prints the failing case and saves its seed.

mod common;

use artdb::Error;
use common::{assert_same, memory_db, open_image, Model};
use proptest::prelude::*;
use std::collections::BTreeMap;

const TABLES: [&str; 3] = ["alpha", "beta", "gamma"];

#[derive(Debug, Clone)]
enum Change {
    Insert(usize, Vec<u8>, Vec<u8>),
    InsertIfAbsent(usize, Vec<u8>, Vec<u8>),
    Remove(usize, Vec<u8>),
    Create(usize),
    Drop(usize),
}

#[derive(Debug, Clone)]
enum Step {
    Batch(Vec<Change>, bool),
    Checkpoint,
    CloseReopen,
    CrashReopen,
    Verify,
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(2), Just(255)], 0..6),
        any::<u16>().prop_map(|n| u32::from(n % 2048).to_be_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(|tail| {
            let mut key = b"a shared prefix that is longer than eight bytes/".to_vec();
            key.extend(tail);
            key
        }),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..8),
        3 => proptest::collection::vec(any::<u8>(), 8..64),
        1 => (4000usize..9000).prop_map(|len| vec![0xAB; len]),
        1 => (33_000usize..70_000).prop_map(|len| vec![0xCD; len]),
    ]
}

fn change() -> impl Strategy<Value = Change> {
    let table = 0..TABLES.len();
    prop_oneof![
        10 => (table.clone(), key(), value()).prop_map(|(t, k, v)| Change::Insert(t, k, v)),
        3 => (table.clone(), key(), value()).prop_map(|(t, k, v)| Change::InsertIfAbsent(t, k, v)),
        5 => (table.clone(), key()).prop_map(|(t, k)| Change::Remove(t, k)),
        1 => table.clone().prop_map(Change::Create),
        1 => table.prop_map(Change::Drop),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (proptest::collection::vec(change(), 1..60), prop::bool::weighted(0.8))
            .prop_map(|(changes, commit)| Step::Batch(changes, commit)),
        3 => Just(Step::Checkpoint),
        1 => Just(Step::CloseReopen),
        1 => Just(Step::CrashReopen),
        1 => Just(Step::Verify),
    ]
}

/// Applies one change to the batch and to the model, checking the batch's answer.
fn apply(batch: &mut artdb::WriteTxn<'_>, model: &mut Model, change: &Change) {
    let name = |t: &usize| TABLES[*t];
    match change {
        Change::Insert(t, k, v) => {
            let got = batch.insert(name(t), k, v);
            match model.get_mut(name(t)) {
                Some(table) => assert_eq!(got.expect("insert"), table.insert(k.clone(), v.clone())),
                None => assert!(matches!(got, Err(Error::TableNotFound { .. }))),
            }
        }
        Change::InsertIfAbsent(t, k, v) => {
            let got = batch.insert_if_absent(name(t), k, v);
            match model.get_mut(name(t)) {
                Some(table) => {
                    let absent = !table.contains_key(k);
                    if absent {
                        table.insert(k.clone(), v.clone());
                    }
                    assert_eq!(got.expect("insert_if_absent"), absent);
                }
                None => assert!(matches!(got, Err(Error::TableNotFound { .. }))),
            }
        }
        Change::Remove(t, k) => {
            let got = batch.remove(name(t), k);
            match model.get_mut(name(t)) {
                Some(table) => assert_eq!(got.expect("remove"), table.remove(k)),
                None => assert!(matches!(got, Err(Error::TableNotFound { .. }))),
            }
        }
        Change::Create(t) => {
            let got = batch.create_table(name(t));
            if model.contains_key(name(t)) {
                assert!(matches!(got, Err(Error::TableExists { .. })));
            } else {
                got.expect("create");
                model.insert(name(t).to_string(), BTreeMap::new());
            }
        }
        Change::Drop(t) => {
            let got = batch.drop_table(name(t));
            if model.remove(name(t)).is_some() {
                got.expect("drop");
            } else {
                assert!(matches!(got, Err(Error::TableNotFound { .. })));
            }
        }
    }
}

fn run(steps: &[Step]) {
    let (mut storage, mut db) = memory_db();
    db.create_table(TABLES[0]).expect("create");
    let mut model = Model::new();
    model.insert(TABLES[0].to_string(), BTreeMap::new());
    let mut durable = Model::new();
    db.checkpoint().expect("checkpoint");
    durable.clone_from(&model);
    for step in steps {
        match step {
            Step::Batch(changes, commit) => {
                let mut scratch = model.clone();
                let mut batch = db.write().expect("write");
                for change in changes {
                    apply(&mut batch, &mut scratch, change);
                }
                if *commit {
                    batch.commit().expect("commit");
                    model = scratch;
                } else {
                    drop(batch);
                }
            }
            Step::Checkpoint => {
                db.checkpoint().expect("checkpoint");
                durable.clone_from(&model);
            }
            Step::CloseReopen => {
                db.close().expect("close");
                durable.clone_from(&model);
                (storage, db) = open_image(&storage.image()).expect("reopen");
            }
            Step::CrashReopen => {
                drop(db);
                model.clone_from(&durable);
                (storage, db) = open_image(&storage.image()).expect("reopen after crash");
            }
            Step::Verify => {
                let report = db.verify().expect("verify");
                assert!(report.is_ok(), "verify: {:?}", report.problems);
            }
        }
        assert_same(&db, &model);
    }
    db.close().expect("close");
    let (_, db) = open_image(&storage.image()).expect("final reopen");
    assert_same(&db, &model);
    let report = db.verify().expect("verify");
    assert!(report.is_ok(), "verify: {:?}", report.problems);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64 * artdb_testkit::scale() as u32,
        ..ProptestConfig::default()
    })]

    #[test]
    fn database_matches_model(steps in proptest::collection::vec(step(), 1..40)) {
        run(&steps);
    }
}
