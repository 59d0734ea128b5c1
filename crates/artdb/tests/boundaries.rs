//! Node-boundary tests: a node of each kind grown through every capacity (4, 16, 48, 256) and
//! shrunk through every shrink threshold (36, 12, 3), with a checkpoint and a reopen from the
//! file in the middle of each phase, against a model. Values both inline (<= 7 bytes) and in
//! leaves; a key that ends at the inner node itself; a long compressed prefix.

mod common;

use artdb_art::{
    NODE16_CAPACITY, NODE16_SHRINK_COUNT, NODE256_CAPACITY, NODE256_SHRINK_COUNT, NODE48_CAPACITY,
    NODE48_SHRINK_COUNT, NODE4_CAPACITY,
};
use common::{assert_same, memory_db, open_image, Model};
use std::collections::BTreeMap;

fn key(prefix: &[u8], byte: u8) -> Vec<u8> {
    let mut key = prefix.to_vec();
    key.push(byte);
    key
}

fn value(byte: u8, long: bool) -> Vec<u8> {
    if long {
        vec![byte; 20]
    } else {
        vec![byte; (byte % 8) as usize]
    }
}

type Opened = (std::sync::Arc<artdb::io::MemoryStorage>, artdb::Db);

/// Closes (checkpoints), reopens from the file image and compares.
fn reopen((storage, db): Opened, model: &Model) -> Opened {
    db.close().unwrap();
    let (storage, db) = open_image(&storage.image()).unwrap();
    assert_same(&db, model);
    assert!(db.verify().unwrap().is_ok());
    (storage, db)
}

fn boundary_counts() -> Vec<usize> {
    let mut counts = Vec::new();
    for boundary in [
        NODE4_CAPACITY,
        NODE16_CAPACITY,
        NODE48_CAPACITY,
        NODE256_CAPACITY,
        NODE16_SHRINK_COUNT,
        NODE48_SHRINK_COUNT,
        NODE256_SHRINK_COUNT,
    ] {
        counts.extend([boundary.saturating_sub(1), boundary, boundary + 1]);
    }
    counts.retain(|&count| (1..=256).contains(&count));
    counts.sort_unstable();
    counts.dedup();
    counts
}

#[test]
fn every_capacity_and_shrink_threshold_survives_checkpoint_and_reopen() {
    let counts = boundary_counts();
    for prefix in [
        b"p".to_vec(),
        b"a long shared prefix of many bytes/".to_vec(),
    ] {
        for long in [false, true] {
            let mut opened = memory_db();
            opened.1.create_table("t").unwrap();
            let mut model = Model::new();
            model.insert("t".into(), BTreeMap::new());
            // The key that ends at the inner node.
            let mut batch = opened.1.write().unwrap();
            batch.insert("t", &prefix, b"at node").unwrap();
            batch.commit().unwrap();
            model
                .get_mut("t")
                .unwrap()
                .insert(prefix.clone(), b"at node".to_vec());
            // Grow one child at a time; at each boundary count, checkpoint and reopen.
            for byte in 0..=255u8 {
                let mut batch = opened.1.write().unwrap();
                batch
                    .insert("t", &key(&prefix, byte), &value(byte, long))
                    .unwrap();
                batch.commit().unwrap();
                model
                    .get_mut("t")
                    .unwrap()
                    .insert(key(&prefix, byte), value(byte, long));
                if counts.contains(&(byte as usize + 1)) {
                    opened = reopen(opened, &model);
                }
            }
            // Shrink from the top down, again stopping at every boundary.
            for byte in (0..=255u8).rev() {
                let mut batch = opened.1.write().unwrap();
                assert!(batch.remove("t", &key(&prefix, byte)).unwrap().is_some());
                batch.commit().unwrap();
                model.get_mut("t").unwrap().remove(&key(&prefix, byte));
                if counts.contains(&(byte as usize)) {
                    opened = reopen(opened, &model);
                }
            }
            assert_same(&opened.1, &model);
        }
    }
}
