//! Smoke test of the public API: create, write, checkpoint, reopen from the file's bytes.

use artdb::io::MemoryStorage;
use artdb::{Db, Options};
use std::sync::Arc;

#[test]
fn write_checkpoint_reopen() {
    let storage = Arc::new(MemoryStorage::new().unwrap());
    let db = Db::create_in(storage.clone(), Options::default()).unwrap();
    db.create_table("t").unwrap();
    let mut batch = db.write().unwrap();
    for i in 0u32..20_000 {
        batch
            .insert("t", &i.to_be_bytes(), &(i * 2).to_le_bytes())
            .unwrap();
    }
    batch.insert("t", b"big", &vec![7u8; 10_000]).unwrap();
    batch.commit().unwrap();
    let stats = db.checkpoint().unwrap();
    assert!(stats.pages_written > 0);
    let read = db.read();
    assert_eq!(
        read.get("t", &5u32.to_be_bytes()).unwrap(),
        Some(&10u32.to_le_bytes()[..])
    );
    db.close().unwrap();
    let reopened = Db::open_in(
        Arc::new(MemoryStorage::from_image(&storage.image()).unwrap()),
        Options::default(),
    )
    .unwrap();
    let read = reopened.read();
    let table = read.table("t").unwrap();
    assert_eq!(table.len(), 20_001);
    for i in 0u32..20_000 {
        assert_eq!(
            table.get(&i.to_be_bytes()).unwrap(),
            Some(&(i * 2).to_le_bytes()[..])
        );
    }
    assert_eq!(table.get(b"big").unwrap().map(<[u8]>::len), Some(10_000));
    assert_eq!(table.iter().count(), 20_001);
    let report = reopened.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}
