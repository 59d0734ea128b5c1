//! Readers on other threads hold snapshots (`Db::read`) and read them point by point while one
//! writer commits changes to the same leaf packs and checkpoints, compacts and bulk-loads
//! (session 13's soak). The table's keys take every pack shape the tree's fast paths serve:
//! random 8-byte keys with 8-byte values (hinted packs), dense runs of 3-byte keys with 7-byte
//! values (one-byte-suffix packs that burst into a Node256 at their 65th key and end dense),
//! 12-byte keys with 16-byte values and 6-byte keys with 24-byte values (wide packs). Each
//! commit also writes its round number into table `meta`; before committing, the writer
//! publishes the table's model for that round, so a reader knows what its snapshot must hold.
//! Readers check `get` of present and absent keys, `get_many`, cursor seeks with steps both
//! ways and short ranges against that model, keep an older snapshot across several of their
//! own rounds and check it again, so the writer's copies, checkpoints (heap images retired
//! under live snapshots, persisted pages read in place) and page reuse all happen under them.
//! Seeded (`ARTDB_TEST_SEED`), sized by `ARTDB_TEST_SCALE`.

mod common;

use artdb::Db;
use common::memory_db;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn scale() -> u64 {
    std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1u64)
        .max(1)
}

/// A key of one of the four shapes and a value of its width.
fn pair(rng: &mut StdRng) -> (Vec<u8>, Vec<u8>) {
    let (key, width): (Vec<u8>, usize) = match rng.gen_range(0..4) {
        // Random 8-byte keys from a set small enough that writes hit existing packs.
        0 => (
            (rng.gen_range(0u64..6000)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .to_be_bytes()
            .to_vec(),
            8,
        ),
        // Dense runs: [0xD0, run, byte].
        1 => (vec![0xD0, rng.gen_range(0..6u8), rng.gen()], 7),
        // 12-byte keys under a few 4-byte prefixes, 16-byte values.
        2 => {
            let mut key = vec![0xC1, 0xC2, 0xC3, rng.gen_range(0..3u8)];
            key.extend_from_slice(&rng.gen_range(0u64..1500).to_be_bytes());
            (key, 16)
        }
        // 6-byte keys, 24-byte values (wide packs).
        _ => {
            let mut key = vec![0xE0, rng.gen_range(0..2u8)];
            key.extend_from_slice(
                &rng.gen_range(0u32..800)
                    .wrapping_mul(2_654_435_761)
                    .to_be_bytes(),
            );
            (key, 24)
        }
    };
    let value = (0..width).map(|_| rng.gen()).collect();
    (key, value)
}

/// One reader's checks of a snapshot against `model`.
fn check_read(db_read: &artdb::ReadTxn, model: &Map, rng: &mut StdRng, context: &str) {
    let table = db_read.table("t").unwrap();
    assert_eq!(table.len(), model.len() as u64, "{context}: len");
    let mut keys: Vec<Vec<u8>> = Vec::new();
    for _ in 0..64 {
        let (mut key, _) = pair(rng);
        if rng.gen_bool(0.5) {
            // A present key, when there is one near.
            if let Some((k, _)) = model.range(key.clone()..).next() {
                key = k.clone();
            }
        } else if rng.gen_bool(0.3) {
            key.push(rng.gen());
        }
        keys.push(key);
    }
    for key in &keys {
        assert_eq!(
            table.get(key).unwrap(),
            model.get(key).map(Vec::as_slice),
            "{context}: get {key:02x?}"
        );
    }
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    table.get_many(&refs, &mut out).unwrap();
    for (key, got) in keys.iter().zip(&out) {
        assert_eq!(
            *got,
            model.get(key).map(Vec::as_slice),
            "{context}: get_many {key:02x?}"
        );
    }
    let target = &keys[0];
    let mut cursor = table.cursor();
    let found = cursor.seek(target).unwrap();
    let mut want = model.range(target.clone()..);
    assert_eq!(found, want.clone().next().is_some(), "{context}: seek");
    for _ in 0..30 {
        let Some((k, v)) = want.next() else { break };
        assert_eq!(cursor.key(), k.as_slice(), "{context}: next");
        assert_eq!(cursor.value(), v.as_slice(), "{context}: next value");
        cursor.next().unwrap();
    }
    let mut cursor = table.cursor();
    if cursor.seek(target).unwrap() {
        // At the first key >= target; walk back from there.
        let mut want = model.range(..=cursor.key().to_vec()).rev();
        for _ in 0..30 {
            let Some((k, v)) = want.next() else { break };
            assert_eq!(cursor.key(), k.as_slice(), "{context}: prev");
            assert_eq!(cursor.value(), v.as_slice(), "{context}: prev value");
            if !cursor.prev().unwrap() {
                assert!(want.next().is_none(), "{context}: prev ended early");
                break;
            }
        }
    }
    let (low, high) = if keys[1] <= keys[2] {
        (&keys[1], &keys[2])
    } else {
        (&keys[2], &keys[1])
    };
    let got: Vec<(Vec<u8>, Vec<u8>)> = table
        .range::<&[u8], _>(low.as_slice()..high.as_slice())
        .take(50)
        .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model
        .range(low.clone()..high.clone())
        .take(50)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got, want, "{context}: range");
}

/// The round a snapshot was committed at (table `meta`, key `round`).
fn round_of(read: &artdb::ReadTxn) -> u64 {
    let meta = read.table("meta").unwrap();
    let bytes = meta.get(b"round").unwrap().unwrap();
    u64::from_be_bytes(bytes.try_into().unwrap())
}

fn writer(db: &Db, models: &Mutex<Vec<Arc<Map>>>, seed: u64, rounds: u64, done: &AtomicBool) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model = models.lock().unwrap()[0].as_ref().clone();
    for round in 1..=rounds {
        let mut batch = db.write().unwrap();
        for _ in 0..rng.gen_range(1..300) {
            let (key, value) = pair(&mut rng);
            if rng.gen_bool(0.2) {
                let old = batch.remove("t", &key).unwrap();
                assert_eq!(old, model.remove(&key), "seed {seed} round {round}");
            } else {
                let old = batch.insert("t", &key, &value).unwrap();
                assert_eq!(old, model.insert(key, value), "seed {seed} round {round}");
            }
        }
        batch
            .insert("meta", b"round", &round.to_be_bytes())
            .unwrap();
        let abort = rng.gen_bool(0.1);
        if abort {
            drop(batch);
            model = models.lock().unwrap()[round as usize - 1].as_ref().clone();
            let mut batch = db.write().unwrap();
            batch
                .insert("meta", b"round", &round.to_be_bytes())
                .unwrap();
            models.lock().unwrap().push(Arc::new(model.clone()));
            batch.commit().unwrap();
        } else {
            models.lock().unwrap().push(Arc::new(model.clone()));
            batch.commit().unwrap();
        }
        match rng.gen_range(0..20) {
            0..=3 => {
                db.checkpoint().unwrap();
            }
            4 => {
                db.compact().unwrap();
            }
            5 => {
                db.force_checkpoint().unwrap();
            }
            _ => {}
        }
    }
    done.store(true, Ordering::Release);
}

#[test]
fn readers_hold_snapshots_while_the_writer_rewrites_their_packs() {
    let seed = artdb_testkit::seed();
    println!("seed {seed} (ARTDB_TEST_SEED replays the writer; the readers' timing varies)");
    let (_storage, db) = memory_db();
    db.create_table("t").unwrap();
    db.create_table("meta").unwrap();
    // Start from a bulk load (full packs, no spare slots), then checkpoint: the first reads
    // go through persisted images.
    let mut rng = StdRng::seed_from_u64(seed ^ 1);
    let mut start = Map::new();
    for _ in 0..6000 {
        let (key, value) = pair(&mut rng);
        start.insert(key, value);
    }
    db.bulk_load("t", start.iter()).unwrap();
    let mut batch = db.write().unwrap();
    batch.insert("meta", b"round", &0u64.to_be_bytes()).unwrap();
    batch.commit().unwrap();
    db.checkpoint().unwrap();
    let models = Mutex::new(vec![Arc::new(start)]);
    let done = AtomicBool::new(false);
    let checks = AtomicU64::new(0);
    let rounds = 150 * scale();
    std::thread::scope(|scope| {
        for reader in 0..2u64 {
            let (db, models, done, checks) = (&db, &models, &done, &checks);
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed ^ (reader + 7));
                let mut held: Option<(artdb::ReadTxn, Arc<Map>, u64)> = None;
                let mut own_round = 0u64;
                while !done.load(Ordering::Acquire) || own_round < 3 {
                    own_round += 1;
                    let read = db.read();
                    let round = round_of(&read);
                    let model = models.lock().unwrap()[round as usize].clone();
                    let context = format!("seed {seed}, reader {reader}, round {round}");
                    check_read(&read, &model, &mut rng, &context);
                    if let Some((old, old_model, old_round)) = &held {
                        let context =
                            format!("seed {seed}, reader {reader}, held round {old_round}");
                        check_read(old, old_model, &mut rng, &context);
                    }
                    if held.is_none() || rng.gen_bool(0.2) {
                        held = Some((read, model, round));
                    }
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        writer(&db, &models, seed, rounds, &done);
    });
    let checks = checks.load(Ordering::Relaxed);
    println!("{rounds} rounds, {checks} reader checks");
    assert!(checks >= 6);
    let last = models.lock().unwrap().last().unwrap().clone();
    let read = db.read();
    let table = read.table("t").unwrap();
    let all: Map = table
        .iter()
        .map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
        .collect();
    assert_eq!(all, *last, "seed {seed}: final contents");
    drop(read);
    assert!(db.verify().unwrap().is_ok());
}
