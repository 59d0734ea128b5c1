//! Snapshot isolation across checkpoints and space reuse: readers taken at different times keep
//! reading exactly their version while later commits and checkpoints replace (and reuse the pages
//! of) the nodes they read; a reader thread scans while the writer commits and checkpoints; and
//! the file stops growing under a steady update load once freed pages are reused.

mod common;

use common::{dump_read, memory_db, open_image, Model};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

fn update_round(db: &artdb::Db, model: &mut Model, rng: &mut impl Rng, keys: u32, changes: usize) {
    let mut batch = db.write().unwrap();
    for _ in 0..changes {
        let key = rng.gen_range(0..keys).to_be_bytes().to_vec();
        if rng.gen_bool(0.1) {
            batch.remove("t", &key).unwrap();
            model.get_mut("t").unwrap().remove(&key);
        } else {
            let value = rng.gen::<u64>().to_le_bytes().to_vec();
            batch.insert("t", &key, &value).unwrap();
            model.get_mut("t").unwrap().insert(key, value);
        }
    }
    batch.commit().unwrap();
}

#[test]
fn old_snapshots_read_their_version_across_checkpoints_and_reuse() {
    let seed = artdb_testkit::seed();
    println!("seed {seed} (ARTDB_TEST_SEED replays it)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let (storage, db) = memory_db();
    db.create_table("t").unwrap();
    let mut model = Model::new();
    model.insert("t".into(), BTreeMap::new());
    update_round(&db, &mut model, &mut rng, 3000, 3000);
    db.checkpoint().unwrap();
    let mut readers = vec![(db.read(), model.clone())];
    for round in 0..12 {
        update_round(&db, &mut model, &mut rng, 3000, 400);
        if round % 3 == 0 {
            readers.push((db.read(), model.clone()));
        }
        db.checkpoint().unwrap();
        if round % 4 == 1 {
            // Let the oldest readers go so their pages become reusable while others stay.
            readers.remove(0);
        }
        for (read, expected) in &readers {
            assert_eq!(
                &dump_read(read).unwrap(),
                expected,
                "seed {seed} round {round}"
            );
        }
    }
    let stats = db.stats().unwrap();
    assert!(stats.store.free_pages.is_some());
    drop(readers);
    db.close().unwrap();
    let (_, reopened) = open_image(&storage.image()).unwrap();
    assert_eq!(common::dump(&reopened).unwrap(), model, "seed {seed}");
}

#[test]
fn reader_thread_scans_while_writer_commits_and_checkpoints() {
    let (_, db) = memory_db();
    db.create_table("t").unwrap();
    let mut model = Model::new();
    model.insert("t".into(), BTreeMap::new());
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    update_round(&db, &mut model, &mut rng, 2000, 2000);
    db.checkpoint().unwrap();
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            for _ in 0..30 {
                let read = db.read();
                let table = read.table("t").unwrap();
                let mut count = 0u64;
                let mut previous: Option<Vec<u8>> = None;
                for item in table.iter() {
                    let (key, _) = item.unwrap();
                    assert!(previous.as_ref().map_or(true, |p| *p < key), "order");
                    previous = Some(key);
                    count += 1;
                }
                assert_eq!(
                    count,
                    table.len(),
                    "one snapshot: len equals what iteration yields"
                );
            }
        });
        for _ in 0..15 {
            update_round(&db, &mut model, &mut rng, 2000, 200);
            db.checkpoint().unwrap();
        }
        reader.join().unwrap();
    });
    assert_eq!(common::dump(&db).unwrap(), model);
}

#[test]
fn file_stops_growing_under_steady_updates() {
    let (storage, db) = memory_db();
    db.create_table("t").unwrap();
    let mut model = Model::new();
    model.insert("t".into(), BTreeMap::new());
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    update_round(&db, &mut model, &mut rng, 20_000, 20_000);
    db.checkpoint().unwrap();
    let mut sizes = Vec::new();
    for _ in 0..40 {
        update_round(&db, &mut model, &mut rng, 20_000, 1000);
        db.checkpoint().unwrap();
        sizes.push(db.stats().unwrap().store.page_count);
    }
    // Freed pages are reused and sparse pages compacted: the size follows a sawtooth (growth,
    // then a compacting rewrite and a shrink) whose peaks stop rising.
    let peak_first = sizes[..20].iter().max().copied().unwrap_or(0);
    let peak_second = sizes[20..].iter().max().copied().unwrap_or(0);
    assert!(
        peak_second <= peak_first + peak_first / 10,
        "the file keeps growing: {sizes:?}"
    );
    let at_40 = peak_second;
    let (_, fresh) = memory_db();
    fresh.create_table("t").unwrap();
    fresh.bulk_load("t", model["t"].iter()).unwrap();
    let compact_pages = fresh.stats().unwrap().store.page_count;
    assert!(
        at_40 <= 5 * compact_pages,
        "settles too large: {sizes:?} vs {compact_pages}"
    );
    assert_eq!(common::dump(&db).unwrap(), model);
    db.close().unwrap();
    let (_, reopened) = open_image(&storage.image()).unwrap();
    assert!(reopened.verify().unwrap().is_ok());
}
