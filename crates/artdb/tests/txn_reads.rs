//! A write transaction's reads against a `BTreeMap` model: random puts, removes and unique
//! inserts over a committed (and checkpointed, so partly persisted) table, checked after every
//! few operations through `get`, `len`, iteration both ways, ranges, prefixes, `first`/`last`
//! and a cursor walking randomly in both directions. Also: dropping a transaction changes
//! nothing, and an empty table adopts a write set wholesale. Seeded (`ARTDB_TEST_SEED`), sized
//! by `ARTDB_TEST_SCALE`.

mod common;

use artdb::{Transaction, WriteOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

fn key(rng: &mut StdRng) -> Vec<u8> {
    const BYTES: [u8; 5] = [0, b'a', b'b', b'c', 0xFF];
    let len = rng.gen_range(0..4);
    (0..len)
        .map(|_| BYTES[rng.gen_range(0..BYTES.len())])
        .collect()
}

fn value(rng: &mut StdRng) -> Vec<u8> {
    let len = [0, 3, 8, 40][rng.gen_range(0..4)];
    (0..len).map(|_| rng.gen()).collect()
}

fn pairs<'a>(
    iter: impl Iterator<Item = artdb::Result<(Vec<u8>, &'a [u8])>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    iter.map(|item| item.map(|(k, v)| (k, v.to_vec())).unwrap())
        .collect()
}

fn bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

fn check(txn: &Transaction, model: &Map, rng: &mut StdRng, seed: u64) {
    let ctx = format!("seed {seed}");
    let all: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(pairs(txn.iter("t").unwrap()), all, "{ctx}: forward");
    let mut back = pairs(txn.iter("t").unwrap().rev());
    back.reverse();
    assert_eq!(back, all, "{ctx}: backward");
    assert_eq!(txn.len("t").unwrap(), model.len() as u64, "{ctx}: len");
    let first = txn.first("t").unwrap().map(|(k, v)| (k, v.to_vec()));
    assert_eq!(first, all.first().cloned(), "{ctx}: first");
    let last = txn.last("t").unwrap().map(|(k, v)| (k, v.to_vec()));
    assert_eq!(last, all.last().cloned(), "{ctx}: last");
    for _ in 0..4 {
        let probe = key(rng);
        assert_eq!(
            txn.get("t", &probe).unwrap(),
            model.get(&probe).map(Vec::as_slice),
            "{ctx}: get {probe:?}"
        );
        let range = (bound(rng), bound(rng));
        let valid = match (&range.0, &range.1) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a < b || (a == b && matches!(range, (Bound::Included(_), Bound::Included(_))))
            }
            _ => true,
        };
        if valid {
            let expected: Vec<_> = model
                .range(range.clone())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let borrowed = (
                range.0.as_ref().map(Vec::as_slice),
                range.1.as_ref().map(Vec::as_slice),
            );
            assert_eq!(
                pairs(txn.range::<[u8], _>("t", borrowed).unwrap()),
                expected,
                "{ctx}: range {range:?}"
            );
            let mut back = pairs(txn.range::<[u8], _>("t", borrowed).unwrap().rev());
            back.reverse();
            assert_eq!(back, expected, "{ctx}: range back {range:?}");
        }
        let prefix = key(rng);
        let expected: Vec<_> = model
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(
            pairs(txn.prefix("t", &prefix).unwrap()),
            expected,
            "{ctx}: prefix {prefix:?}"
        );
    }
    // Double-ended: alternate ends, compare with the model's order.
    let mut iter = txn.iter("t").unwrap();
    let (mut lo, mut hi) = (0usize, all.len());
    loop {
        if rng.gen() {
            match iter.next() {
                Some(item) => {
                    assert_eq!(item.unwrap().0, all[lo].0, "{ctx}: mixed front");
                    lo += 1;
                }
                None => break,
            }
        } else {
            match iter.next_back() {
                Some(item) => {
                    hi -= 1;
                    assert_eq!(item.unwrap().0, all[hi].0, "{ctx}: mixed back");
                }
                None => break,
            }
        }
    }
    assert_eq!(lo, hi, "{ctx}: mixed ends met");
    // A cursor walking randomly.
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    let mut cursor = txn.cursor("t").unwrap();
    let mut at: Option<usize> = None;
    for _ in 0..12 {
        match rng.gen_range(0..6) {
            0 => {
                let target = key(rng);
                cursor.seek(&target).unwrap();
                at = keys.iter().position(|k| **k >= target);
            }
            1 => {
                cursor.seek_first().unwrap();
                at = (!keys.is_empty()).then_some(0);
            }
            2 => {
                cursor.seek_last().unwrap();
                at = keys.len().checked_sub(1);
            }
            3 | 4 => {
                cursor.next().unwrap();
                at = at.and_then(|i| (i + 1 < keys.len()).then_some(i + 1));
            }
            _ => {
                cursor.prev().unwrap();
                at = at.and_then(|i| i.checked_sub(1));
            }
        }
        assert_eq!(cursor.is_valid(), at.is_some(), "{ctx}: cursor validity");
        if let Some(i) = at {
            assert_eq!(cursor.key(), keys[i].as_slice(), "{ctx}: cursor key");
            assert_eq!(
                cursor.value(),
                model[keys[i]].as_slice(),
                "{ctx}: cursor value"
            );
        }
    }
}

#[test]
fn merged_reads_match_a_model() {
    let seed = artdb_testkit::seed();
    let mut rng = StdRng::seed_from_u64(seed);
    let rounds = 12 * artdb_testkit::scale();
    for round in 0..rounds {
        let (_, db) = common::memory_db();
        db.create_table("t").unwrap();
        let mut committed = Map::new();
        let mut batch = db.write().unwrap();
        for _ in 0..rng.gen_range(0..60) {
            let (k, v) = (key(&mut rng), value(&mut rng));
            batch.insert("t", &k, &v).unwrap();
            committed.insert(k, v);
        }
        batch.commit().unwrap();
        if round % 2 == 0 {
            db.checkpoint().unwrap();
        }
        let mut txn = db.begin_write(WriteOptions::default()).unwrap();
        let mut model = committed.clone();
        for step in 0..80 {
            let k = key(&mut rng);
            match rng.gen_range(0..4) {
                0 | 1 => {
                    let v = value(&mut rng);
                    txn.insert("t", &k, &v).unwrap();
                    model.insert(k, v);
                }
                2 => {
                    let existed = txn.remove("t", &k).unwrap();
                    assert_eq!(existed, model.remove(&k).is_some(), "seed {seed}: remove");
                }
                _ => {
                    let v = value(&mut rng);
                    let inserted = txn.insert_if_absent("t", &k, &v).unwrap();
                    assert_eq!(inserted, !model.contains_key(&k), "seed {seed}");
                    model.entry(k).or_insert(v);
                }
            }
            if step % 10 == 9 {
                check(&txn, &model, &mut rng, seed);
            }
        }
        // Others see nothing until commit.
        assert_eq!(
            common::dump(&db).unwrap()["t"],
            committed,
            "seed {seed}: isolation"
        );
        if rng.gen() {
            drop(txn);
            assert_eq!(
                common::dump(&db).unwrap()["t"],
                committed,
                "seed {seed}: abort"
            );
        } else {
            txn.commit().unwrap();
            assert_eq!(
                common::dump(&db).unwrap()["t"],
                model,
                "seed {seed}: commit"
            );
            db.checkpoint().unwrap();
            let report = db.verify().unwrap();
            assert!(report.is_ok(), "seed {seed}: {:?}", report.problems);
        }
    }
}

#[test]
fn an_empty_table_adopts_the_write_set() {
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    let mut txn = db.begin_write(WriteOptions::default()).unwrap();
    let n = 20_000u32;
    for i in 0..n {
        txn.insert("t", &i.to_be_bytes(), &(i * 2).to_le_bytes())
            .unwrap();
    }
    // A concurrent reader keeps the empty version.
    let before = db.read();
    txn.commit().unwrap();
    assert_eq!(before.table("t").unwrap().len(), 0);
    let read = db.read();
    let table = read.table("t").unwrap();
    assert_eq!(table.len(), u64::from(n));
    assert_eq!(
        table.get(&7u32.to_be_bytes()).unwrap(),
        Some(14u32.to_le_bytes().as_slice())
    );
    db.checkpoint().unwrap();
    assert!(db.verify().unwrap().is_ok());
    // And later transactions change it as usual.
    db.transact(|txn| {
        txn.remove("t", &7u32.to_be_bytes())?;
        txn.insert("t", &n.to_be_bytes(), b"x")
    })
    .unwrap();
    assert_eq!(db.read().table("t").unwrap().len(), u64::from(n));
}

#[test]
fn stats_report_the_oldest_snapshot_and_the_pages_it_pins() {
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    let fill = |round: u32| {
        db.transact(|txn| {
            for i in 0..4000u32 {
                txn.insert("t", &i.to_be_bytes(), &[round as u8; 24])?;
            }
            Ok(())
        })
        .unwrap();
    };
    fill(1);
    db.checkpoint().unwrap();
    let stats = db.stats().unwrap();
    assert_eq!(stats.txn.oldest_snapshot_age, None);
    assert_eq!(stats.txn.live_writers, 0);
    let reader = db.begin_read();
    let writer = db.begin_write(WriteOptions::default()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // The long reader blocks neither commits nor checkpoints.
    fill(2);
    db.checkpoint().unwrap();
    let stats = db.stats().unwrap();
    assert!(stats.txn.oldest_snapshot_age.unwrap() >= std::time::Duration::from_millis(20));
    assert_eq!(stats.txn.live_writers, 1);
    assert!(
        stats.txn.oldest_snapshot_pinned_pages > 0,
        "the first version's pages are pinned: {stats:?}"
    );
    assert!(
        stats.txn.history_records >= 1,
        "the open writer keeps the record"
    );
    assert_eq!(
        reader.get("t", &1u32.to_be_bytes()).unwrap(),
        Some([1u8; 24].as_slice())
    );
    drop(reader);
    drop(writer);
    let stats = db.stats().unwrap();
    assert_eq!(stats.txn.oldest_snapshot_age, None);
    assert_eq!(stats.txn.oldest_snapshot_pinned_pages, 0);
    assert_eq!(
        stats.txn.history_records, 0,
        "pruned when the last writer ended"
    );
    let free_before = stats.store.free_pages.unwrap_or(0);
    fill(3);
    db.checkpoint().unwrap();
    let stats = db.stats().unwrap();
    assert!(
        stats.store.free_pages.unwrap_or(0) + stats.store.pending_pages.unwrap_or(0) > free_before,
        "its pages are released: {stats:?}"
    );
}
