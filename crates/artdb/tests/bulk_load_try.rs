//! `Db::bulk_load_try`: fallible input abandons the load.
//!
//! Regression (issue 8 item 3). Symptom: `artdb load` of 100,010 lines whose line 100,001 was
//! malformed committed the first 100,000 pairs durably and then reported the error. Cause: the
//! only bulk load took infallible pairs, so the CLI ended the input early at the bad line and the
//! engine built, published and checkpointed the prefix it had been given.

use artdb::{Db, Error, Options};

#[derive(Debug)]
enum LoadError {
    Input(u64),
    Engine(Error),
}

impl From<Error> for LoadError {
    fn from(error: Error) -> LoadError {
        LoadError::Engine(error)
    }
}

fn pairs(
    count: u64,
    fail_at: Option<u64>,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), LoadError>> {
    (0..count).map(move |i| {
        if Some(i) == fail_at {
            return Err(LoadError::Input(i));
        }
        Ok((format!("key{i:08}").into_bytes(), i.to_le_bytes().to_vec()))
    })
}

/// `table` of `db` holds the `len` pairs [`pairs`] makes (its length and one pair), and the
/// database verifies.
fn assert_loaded(db: &Db, table: &str, len: u64) {
    let read = db.read();
    let table = read.table(table).unwrap();
    assert_eq!(table.len(), len);
    assert_eq!(
        table.get(b"key00012345").unwrap(),
        Some(&12_345u64.to_le_bytes()[..])
    );
    drop(read);
    assert!(db.verify().unwrap().is_ok());
}

#[test]
fn failing_input_leaves_table_empty_and_nothing_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.artdb");
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    db.checkpoint().unwrap();
    let generation = db.stats().unwrap().store.generation;
    for fail_at in [0, 1, 5_000, 49_999] {
        match db.bulk_load_try("t", pairs(50_000, Some(fail_at))) {
            Err(LoadError::Input(at)) => assert_eq!(at, fail_at),
            other => panic!("expected the input error, got {other:?}"),
        }
        assert!(db.read().table("t").unwrap().is_empty());
        assert_eq!(db.stats().unwrap().store.generation, generation);
    }
    assert!(db.verify().unwrap().is_ok());
    // The pages the abandoned loads wrote are reused; a good load afterwards works.
    let loaded: Result<u64, LoadError> = db.bulk_load_try("t", pairs(50_000, None));
    assert_eq!(loaded.unwrap(), 50_000);
    assert!(db.verify().unwrap().is_ok());
    db.close().unwrap();
    let db = Db::open(&path, Options::default()).unwrap();
    assert_loaded(&db, "t", 50_000);
}

#[test]
fn engine_errors_come_back_through_from() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db.artdb"), Options::default()).unwrap();
    db.create_table("t").unwrap();
    let unsorted = vec![
        Ok::<_, LoadError>((b"b".to_vec(), b"1".to_vec())),
        Ok((b"a".to_vec(), b"2".to_vec())),
    ];
    match db.bulk_load_try("t", unsorted) {
        Err(LoadError::Engine(Error::Unsorted { .. })) => {}
        other => panic!("expected Unsorted, got {other:?}"),
    }
    assert!(db.read().table("t").unwrap().is_empty());
}

/// `bulk_load_new_table_try`: the load creates its table, so every failure leaves no table (a
/// killed `artdb load` into a new table used to leave an empty one: `create_table` was a
/// durable commit of its own); a successful load is there, whole, after a reopen.
#[test]
fn a_load_into_a_new_table_leaves_no_table_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.artdb");
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("old").unwrap();
    let generation = db.stats().unwrap().store.generation;
    match db.bulk_load_new_table_try("new", pairs(20_000, Some(7_000))) {
        Err(LoadError::Input(7_000)) => {}
        other => panic!("expected the input error, got {other:?}"),
    }
    let unsorted = vec![
        Ok::<_, LoadError>((b"b".to_vec(), b"1".to_vec())),
        Ok((b"a".to_vec(), b"2".to_vec())),
    ];
    match db.bulk_load_new_table_try("new", unsorted) {
        Err(LoadError::Engine(Error::Unsorted { .. })) => {}
        other => panic!("expected Unsorted, got {other:?}"),
    }
    match db.bulk_load_new_table_try("old", pairs(10, None)) {
        Err(LoadError::Engine(Error::TableExists { name })) => assert_eq!(name, "old"),
        other => panic!("expected TableExists, got {other:?}"),
    }
    match db.bulk_load_new_table_try("", pairs(10, None)) {
        Err(LoadError::Engine(Error::InvalidTableName { .. })) => {}
        other => panic!("expected InvalidTableName, got {other:?}"),
    }
    assert_eq!(db.table_names(), ["old"]);
    assert_eq!(db.stats().unwrap().store.generation, generation);
    assert!(db.verify().unwrap().is_ok());
    let loaded: Result<u64, LoadError> = db.bulk_load_new_table_try("new", pairs(20_000, None));
    assert_eq!(loaded.unwrap(), 20_000);
    let empty: Result<u64, LoadError> = db.bulk_load_new_table_try("empty", pairs(0, None));
    assert_eq!(empty.unwrap(), 0);
    assert_eq!(db.table_names(), ["empty", "new", "old"]);
    assert_eq!(db.read().table("new").unwrap().len(), 20_000);
    drop(db);
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.table_names(), ["empty", "new", "old"]);
    assert_loaded(&db, "new", 20_000);
}

/// A transaction that created the same table while a load made it cannot commit over it.
#[test]
fn a_transaction_creating_the_table_a_load_created_fails_to_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("db.artdb"), Options::default()).unwrap();
    let mut txn = db.begin_write(artdb::WriteOptions::default()).unwrap();
    txn.create_table("race").unwrap();
    txn.insert("race", b"mine", b"1").unwrap();
    let loaded: Result<u64, LoadError> = db.bulk_load_new_table_try("race", pairs(100, None));
    assert_eq!(loaded.unwrap(), 100);
    assert!(txn.commit().is_err());
    let read = db.read();
    let table = read.table("race").unwrap();
    assert_eq!(table.len(), 100);
    assert_eq!(table.get(b"mine").unwrap(), None);
    drop(read);
    assert!(db.verify().unwrap().is_ok());
}
