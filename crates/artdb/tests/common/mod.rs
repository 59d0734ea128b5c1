//! Helpers shared by the engine's integration tests: a model of the database (tables of
//! `BTreeMap`s), comparison of a database with it, and reopening a database from bytes.

#![allow(dead_code)]

use artdb::io::{MemoryStorage, Storage};
use artdb::{Db, Options};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The model: table name -> ordered map.
pub type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// Options that do not checkpoint on drop (so dropping a `Db` is like a crash after the last
/// checkpoint, for tests that want exactly that).
pub fn no_drop_checkpoint() -> Options {
    Options {
        checkpoint_on_drop: false,
        ..Options::default()
    }
}

/// A fresh in-memory database and its storage.
pub fn memory_db() -> (Arc<MemoryStorage>, Db) {
    let storage = Arc::new(MemoryStorage::new().expect("reserve memory"));
    let db =
        Db::create_in(storage.clone() as Arc<dyn Storage>, no_drop_checkpoint()).expect("create");
    (storage, db)
}

/// A fresh in-memory database with its log in a storage of its own; returns both storages.
pub fn memory_db_with_log(options: Options) -> (Arc<MemoryStorage>, Arc<MemoryStorage>, Db) {
    let file = Arc::new(MemoryStorage::new().expect("reserve memory"));
    let log = Arc::new(MemoryStorage::new().expect("reserve memory"));
    let db = Db::create_in_with_log(
        file.clone() as Arc<dyn Storage>,
        log.clone() as Arc<dyn Storage>,
        options,
    )
    .expect("create");
    (file, log, db)
}

/// Opens a database from an image of its file and one of its log.
pub fn open_images_with_log(file: &[u8], log: &[u8], options: Options) -> artdb::Result<Db> {
    Db::open_in_with_log(
        Arc::new(MemoryStorage::from_image(file).expect("reserve memory")),
        Arc::new(MemoryStorage::from_image(log).expect("reserve memory")),
        options,
    )
}

/// Opens a database from a file image; returns its new storage too.
pub fn open_image(image: &[u8]) -> artdb::Result<(Arc<MemoryStorage>, Db)> {
    let storage = Arc::new(MemoryStorage::from_image(image).expect("reserve memory"));
    let db = Db::open_in(storage.clone() as Arc<dyn Storage>, no_drop_checkpoint())?;
    Ok((storage, db))
}

/// Reads every table of `db` into a model.
pub fn dump(db: &Db) -> artdb::Result<Model> {
    let read = db.read();
    let mut model = Model::new();
    for name in read.table_names() {
        let table = read.table(&name)?;
        let mut pairs = BTreeMap::new();
        for item in table.iter() {
            let (key, value) = item?;
            pairs.insert(key, value.to_vec());
        }
        assert_eq!(pairs.len() as u64, table.len(), "len of table {name}");
        model.insert(name, pairs);
    }
    Ok(model)
}

/// Asserts that `db` holds exactly `model`, through iteration both ways, point lookups,
/// `get_many` and a few ranges and cursors.
pub fn assert_same(db: &Db, model: &Model) {
    let read = db.read();
    assert_eq!(
        read.table_names(),
        model.keys().cloned().collect::<Vec<_>>(),
        "table names"
    );
    for (name, expected) in model {
        let table = read.table(name).expect("table");
        assert_eq!(table.len(), expected.len() as u64, "len of {name}");
        let forward: Vec<(Vec<u8>, Vec<u8>)> = table
            .iter()
            .map(|item| item.map(|(k, v)| (k, v.to_vec())).expect("iter"))
            .collect();
        let expected_pairs: Vec<(Vec<u8>, Vec<u8>)> = expected
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(forward, expected_pairs, "forward iteration of {name}");
        let backward: Vec<Vec<u8>> = table
            .iter()
            .rev()
            .map(|item| item.expect("iter back").0)
            .collect();
        let expected_back: Vec<Vec<u8>> = expected.keys().rev().cloned().collect();
        assert_eq!(backward, expected_back, "backward iteration of {name}");
        let keys: Vec<&[u8]> = expected.keys().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        table.get_many(&keys, &mut out).expect("get_many");
        for ((key, value), got) in expected.iter().zip(&out) {
            assert_eq!(*got, Some(value.as_slice()), "get_many {key:?} in {name}");
            assert_eq!(
                table.get(key).expect("get"),
                Some(value.as_slice()),
                "get {key:?}"
            );
        }
        if let (Some(low), Some(high)) = (
            expected.keys().nth(expected.len() / 3),
            expected.keys().last(),
        ) {
            let got: Vec<Vec<u8>> = table
                .range::<&[u8], _>(low.as_slice()..high.as_slice())
                .map(|item| item.expect("range").0)
                .collect();
            let want: Vec<Vec<u8>> = expected
                .range(low.clone()..high.clone())
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(got, want, "range of {name}");
            let mut cursor = table.cursor();
            assert!(cursor.seek(low).expect("seek"));
            assert_eq!(cursor.key(), low.as_slice());
        }
    }
}

/// A deterministic workload of `rounds` write batches, each followed by a checkpoint, over two
/// tables, with updates and removals so that pages are freed and reused. Calls `between` after
/// `create` and after each checkpoint with the checkpoint's index (0 = create) and the model that
/// is then durable. Stops at the first error and returns it.
pub fn checkpoint_workload(
    db_create: impl FnOnce() -> artdb::Result<Db>,
    rounds: usize,
    seed: u64,
    mut before_checkpoint: impl FnMut(usize),
    mut after_checkpoint: impl FnMut(usize, &Model),
) -> (Model, artdb::Result<()>, Option<Db>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut model = Model::new();
    before_checkpoint(0);
    let db = match db_create() {
        Ok(db) => db,
        Err(error) => return (model, Err(error), None),
    };
    after_checkpoint(0, &model);
    let mut run = || -> artdb::Result<()> {
        for round in 1..=rounds {
            let mut batch = db.write()?;
            for name in ["t0", "t1"] {
                if !model.contains_key(name) {
                    batch.create_table(name)?;
                    model.insert(name.to_string(), BTreeMap::new());
                }
            }
            for _ in 0..150 {
                let table = if rng.gen_bool(0.7) { "t0" } else { "t1" };
                let key = rng.gen_range(0u32..600).to_be_bytes().to_vec();
                if rng.gen_bool(0.25) {
                    batch.remove(table, &key)?;
                    model.get_mut(table).map(|t| t.remove(&key));
                } else {
                    let len = match rng.gen_range(0..100) {
                        0 => 5000,
                        1 => 40_000,
                        _ => rng.gen_range(0..24),
                    };
                    let value: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                    batch.insert(table, &key, &value)?;
                    model.get_mut(table).map(|t| t.insert(key, value));
                }
            }
            if round == rounds / 2 {
                batch.drop_table("t1")?;
                model.remove("t1");
            }
            batch.commit()?;
            before_checkpoint(round);
            if round % 2 == 0 {
                db.compact()?;
            } else {
                db.checkpoint()?;
            }
            after_checkpoint(round, &model);
        }
        Ok(())
    };
    let result = run();
    (model, result, Some(db))
}

/// Reads every table of one read transaction into a model.
pub fn dump_read(read: &artdb::ReadTxn) -> artdb::Result<Model> {
    let mut model = Model::new();
    for name in read.table_names() {
        let mut pairs = BTreeMap::new();
        for item in read.table(&name)?.iter() {
            let (key, value) = item?;
            pairs.insert(key, value.to_vec());
        }
        model.insert(name, pairs);
    }
    Ok(model)
}
