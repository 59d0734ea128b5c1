//! Crash test of concurrent write transactions: threads run read-modify-write transactions
//! (`Db::transact`, half at snapshot isolation, half serializable) that each add the thread's
//! next key and increment one shared counter (a hot key: many conflicts and retries), on a
//! simulated machine (database file and log, `CrashStorage::sibling`) that loses power at a
//! random sync with unsynced writes torn. After reopening the images:
//! - each thread's keys are a prefix 0..n with acknowledged <= n <= acknowledged + 1 (every
//!   acknowledged commit is there, at most the one in flight besides);
//! - the counter equals the number of thread keys present: no commit is split and no
//!   increment is lost or doubled across conflicts, retries and the crash.
//!
//! Replay a tear with the seed printed in the failure message (`ARTDB_TEST_SEED`).

mod common;

use artdb::io::Storage;
use artdb::{Db, Error, Isolation, Options, WriteOptions};
use artdb_testkit::{CrashMode, CrashStorage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

fn options() -> Options {
    Options {
        checkpoint_on_drop: false,
        ..Options::default()
    }
}

fn counter(bytes: Option<&[u8]>) -> u64 {
    bytes
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

#[test]
fn concurrent_transactions_survive_a_crash_whole() {
    let seed = artdb_testkit::seed();
    let mut rng = StdRng::seed_from_u64(seed);
    let threads = 4u8;
    for round in 0..3 * artdb_testkit::scale() {
        let file = Arc::new(CrashStorage::new().unwrap());
        let log = Arc::new(file.sibling(&[]).unwrap());
        let db = Arc::new(
            Db::create_in_with_log(
                file.clone() as Arc<dyn Storage>,
                log.clone() as Arc<dyn Storage>,
                options(),
            )
            .unwrap(),
        );
        db.create_table("t").unwrap();
        let crash_at = file.syncs() + rng.gen_range(20..200);
        file.crash_at_sync(crash_at, CrashMode::Tear { seed: seed ^ round });
        let start = Arc::new(std::sync::Barrier::new(usize::from(threads)));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let db = Arc::clone(&db);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    start.wait();
                    let isolation = if t % 2 == 0 {
                        Isolation::Snapshot
                    } else {
                        Isolation::Serializable
                    };
                    let options = WriteOptions::with_isolation(isolation).max_attempts(10_000);
                    let mut acked = 0u32;
                    for i in 0u32..150 {
                        let key = [vec![b'k', t], i.to_be_bytes().to_vec()].concat();
                        let result = db.transact_with(options.clone(), |txn| {
                            let total = counter(txn.get("t", b"total")?);
                            txn.insert("t", &key, b"x")?;
                            txn.insert("t", b"total", &(total + 1).to_le_bytes())
                        });
                        match result {
                            Ok(()) => {
                                acked = i + 1;
                                // Let the others win the hot key too (optimistic
                                // transactions favour whoever commits fastest).
                                std::thread::sleep(std::time::Duration::from_micros(300));
                            }
                            Err(Error::Conflict { .. }) => panic!("conflict after 10000 attempts"),
                            Err(_) => break,
                        }
                    }
                    acked
                })
            })
            .collect();
        let acked: Vec<u32> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        eprintln!("seed {seed} round {round}: acknowledged per thread {acked:?}");
        drop(db);
        let (file_image, log_image) = (file.durable_image(), log.durable_image());
        let file = Arc::new(CrashStorage::from_image(&file_image).unwrap());
        let log = Arc::new(file.sibling(&log_image).unwrap());
        let reopened =
            Db::open_in_with_log(file as Arc<dyn Storage>, log as Arc<dyn Storage>, options())
                .unwrap_or_else(|error| panic!("seed {seed} round {round}: reopen: {error}"));
        let state = common::dump(&reopened).unwrap();
        let table = &state["t"];
        let mut present_total = 0u64;
        for t in 0..threads {
            let present: Vec<u32> = table
                .keys()
                .filter(|k| k.len() == 6 && k[0] == b'k' && k[1] == t)
                .map(|k| u32::from_be_bytes([k[2], k[3], k[4], k[5]]))
                .collect();
            let prefix: Vec<u32> = (0..present.len() as u32).collect();
            assert_eq!(
                present, prefix,
                "seed {seed} round {round} thread {t}: not a prefix"
            );
            let acked = acked[usize::from(t)];
            assert!(
                present.len() as u32 >= acked && present.len() as u32 <= acked + 1,
                "seed {seed} round {round} thread {t}: {acked} acknowledged, {} present",
                present.len()
            );
            present_total += present.len() as u64;
        }
        assert_eq!(
            counter(table.get(b"total".as_slice()).map(Vec::as_slice)),
            present_total,
            "seed {seed} round {round}: the counter disagrees with the commits present"
        );
        assert!(reopened.verify().unwrap().is_ok());
    }
}
