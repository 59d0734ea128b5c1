//! Stress test of space reuse under live readers: reader threads take snapshots continually and
//! hold several at once across many commits, checkpoints and compactions (forced and automatic),
//! checking every key of every snapshot against the exact version it must see.
//!
//! Regression (issue 8, item 1). Symptom: a snapshot taken while a checkpoint compacted read
//! pages that had been freed and reused: wrong values or "unknown node kind", no error. Cause: the
//! reader pinned an epoch newer than the version it held (db/pins.rs explains the rule now).
//!
//! Scale: about 3 s at the default `ARTDB_TEST_SCALE`; `ARTDB_TEST_SCALE=50` soaks for minutes.

mod common;

use artdb::{Db, ReadTxn};
use parking_lot::RwLock;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const KEYS: u32 = 2000;

/// A value naming its key and version (so another key's value or an old value shows), of a
/// length that varies with both.
fn value(key: u32, version: u32) -> Vec<u8> {
    let text = format!("{key}:{version};");
    let len = 6 + (key.wrapping_mul(2_654_435_761) ^ version.wrapping_mul(40_503)) as usize % 60;
    text.bytes().cycle().take(len.max(text.len())).collect()
}

/// Per key, the versions that wrote it, in order: `(version, present)`.
struct History {
    writes: RwLock<Vec<Vec<(u32, bool)>>>,
}

impl History {
    /// The value `key` has at `version`.
    fn expected(&self, key: u32, version: u32) -> Option<Vec<u8>> {
        let writes = self.writes.read();
        let list = &writes[key as usize];
        let at = list.partition_point(|&(written, _)| written <= version);
        match at.checked_sub(1).map(|i| list[i]) {
            Some((written, true)) => Some(value(key, written)),
            _ => None,
        }
    }
}

/// Checks every key of `read` (iteration and point lookups) against the history; returns the
/// snapshot's version.
fn check(read: &ReadTxn, history: &History) -> u32 {
    let version_bytes = read.get("meta", b"v").unwrap().expect("version key");
    let version = u32::from_be_bytes(version_bytes.try_into().unwrap());
    let table = read.table("t").unwrap();
    let mut next = 0u32;
    let mut count = 0u64;
    for item in table.iter() {
        let (key, got) = item.unwrap_or_else(|error| panic!("version {version}: {error}"));
        let key = u32::from_be_bytes(key.as_slice().try_into().expect("4-byte key"));
        for absent in next..key {
            assert_eq!(
                history.expected(absent, version),
                None,
                "v{version} key {absent}"
            );
        }
        let want = history.expected(key, version);
        assert_eq!(Some(got), want.as_deref(), "version {version} key {key}");
        next = key + 1;
        count += 1;
    }
    for absent in next..KEYS {
        assert_eq!(
            history.expected(absent, version),
            None,
            "v{version} key {absent}"
        );
    }
    assert_eq!(table.len(), count, "version {version}: len");
    for key in (version % 17..KEYS).step_by(17) {
        let got = table
            .get(&key.to_be_bytes())
            .unwrap_or_else(|error| panic!("version {version}: {error}"));
        assert_eq!(got, history.expected(key, version).as_deref(), "get {key}");
    }
    version
}

#[test]
fn readers_holding_snapshots_across_commits_checkpoints_and_compactions_see_their_version() {
    let scale = artdb_testkit::scale();
    let seed = artdb_testkit::seed();
    println!("seed {seed} (ARTDB_TEST_SEED replays the writer's choices)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::create(dir.path().join("db"), common::no_drop_checkpoint()).unwrap());
    db.create_table("t").unwrap();
    db.create_table("meta").unwrap();
    let history = Arc::new(History {
        writes: RwLock::new(vec![Vec::new(); KEYS as usize]),
    });
    let mut batch = db.write().unwrap();
    for key in 0..KEYS {
        history.writes.write()[key as usize].push((1, true));
        batch
            .insert("t", &key.to_be_bytes(), &value(key, 1))
            .unwrap();
    }
    batch.insert("meta", b"v", &1u32.to_be_bytes()).unwrap();
    batch.commit().unwrap();
    db.checkpoint().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|reader| {
            let (db, history, stop, checks) = (
                Arc::clone(&db),
                Arc::clone(&history),
                Arc::clone(&stop),
                Arc::clone(&checks),
            );
            std::thread::spawn(move || {
                let mut held: VecDeque<ReadTxn> = VecDeque::new();
                let mut turn = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    held.push_back(db.read());
                    // Reread an older snapshot (not only the newest): its pages are the ones
                    // at risk.
                    turn += 1;
                    let pick = (turn + reader) % held.len();
                    check(&held[pick], &history);
                    checks.fetch_add(1, Ordering::Relaxed);
                    if held.len() > 2 + reader {
                        let oldest = held.pop_front().expect("not empty");
                        check(&oldest, &history);
                    }
                }
                for read in &held {
                    check(read, &history);
                }
            })
        })
        .collect();

    let commits = 300 * scale as u32;
    for version in 2..commits + 2 {
        let changes = rng.gen_range(1..120);
        let mut batch = db.write().unwrap();
        {
            let mut writes = history.writes.write();
            for _ in 0..changes {
                let key = rng.gen_range(0..KEYS);
                let present = rng.gen_bool(0.85);
                let list = &mut writes[key as usize];
                if list.last().is_some_and(|&(written, _)| written == version) {
                    continue;
                }
                list.push((version, present));
                if present {
                    batch
                        .insert("t", &key.to_be_bytes(), &value(key, version))
                        .unwrap();
                } else {
                    batch.remove("t", &key.to_be_bytes()).unwrap();
                }
            }
        }
        batch.insert("meta", b"v", &version.to_be_bytes()).unwrap();
        batch.commit().unwrap();
        match version % 12 {
            0 => {
                db.compact().unwrap();
            }
            3 | 6 | 9 => {
                db.checkpoint().unwrap();
            }
            _ => {}
        }
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader
            .join()
            .expect("a reader failed (see its panic above)");
    }
    let final_read = db.read();
    assert_eq!(check(&final_read, &history), commits + 1);
    drop(final_read);
    db.checkpoint().unwrap();
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    println!(
        "{} snapshot checks over {commits} commits",
        checks.load(Ordering::Relaxed)
    );
}
