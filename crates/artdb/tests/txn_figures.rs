//! Figures about write transactions, printed, not asserted (timings depend on the machine):
//! commits per second of read-modify-write transactions from 1, 2 and 4 threads against the
//! one-at-a-time write batch, and the memory a large transaction's write set holds per key.
//! Run by hand, in release:
//!
//! ```sh
//! cargo test --release -p artdb --test txn_figures -- --ignored --nocapture
//! ```

mod common;

use artdb::{Isolation, WriteOptions};
use std::time::Instant;

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

#[test]
#[ignore = "prints timings; run by hand in release (see the file header)"]
fn commit_rates_and_write_set_memory() {
    let keys = 100_000u64;
    let per_thread = 20_000u64;
    for isolation in [Isolation::Snapshot, Isolation::Serializable] {
        for threads in [1u64, 2, 4] {
            let (_, db) = common::memory_db();
            db.create_table("t").unwrap();
            db.transact(|txn| {
                for i in 0..keys {
                    txn.insert("t", &i.to_be_bytes(), &0u64.to_le_bytes())?;
                }
                Ok(())
            })
            .unwrap();
            let started = Instant::now();
            let retries = std::sync::atomic::AtomicU64::new(0);
            std::thread::scope(|scope| {
                for thread in 0..threads {
                    let (db, retries) = (&db, &retries);
                    scope.spawn(move || {
                        let mut x = thread.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                        for _ in 0..per_thread {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let (a, b) = (x % keys, (x >> 32) % keys);
                            let mut attempts = 0;
                            let options = WriteOptions::with_isolation(isolation).max_attempts(100);
                            db.transact_with(options, |txn| {
                                attempts += 1;
                                let value = txn.get("t", &a.to_be_bytes())?.map_or(0, |v| {
                                    u64::from_le_bytes(v.try_into().unwrap_or([0; 8]))
                                });
                                txn.insert("t", &a.to_be_bytes(), &(value + 1).to_le_bytes())?;
                                txn.insert("t", &b.to_be_bytes(), &(value + 1).to_le_bytes())
                            })
                            .unwrap();
                            retries.fetch_add(attempts - 1, std::sync::atomic::Ordering::Relaxed);
                        }
                    });
                }
            });
            let seconds = started.elapsed().as_secs_f64();
            let commits = threads * per_thread;
            println!(
                "rmw {isolation:?} threads {threads}: {:.0} commits/s, {} retries",
                commits as f64 / seconds,
                retries.into_inner()
            );
        }
    }
    // The same work as one-at-a-time write batches.
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    let started = Instant::now();
    for i in 0..per_thread {
        let mut batch = db.write().unwrap();
        let a = i % keys;
        let value = batch
            .get("t", &a.to_be_bytes())
            .unwrap()
            .map_or(0, |v| v.len() as u64);
        batch
            .insert("t", &a.to_be_bytes(), &(value + 1).to_le_bytes())
            .unwrap();
        batch
            .insert("t", &(a + 1).to_be_bytes(), &(value + 1).to_le_bytes())
            .unwrap();
        batch.commit().unwrap();
    }
    println!(
        "rmw write batch, 1 thread: {:.0} commits/s",
        per_thread as f64 / started.elapsed().as_secs_f64()
    );
    // Memory of a large write set: 2M puts of 8-byte keys and values.
    let n = 2_000_000u64;
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    db.transact(|txn| txn.insert("t", b"seed", b"1")).unwrap();
    let before = rss_bytes();
    let mut txn = db.begin_write(WriteOptions::default()).unwrap();
    let started = Instant::now();
    for i in 0..n {
        txn.insert("t", &(i * 7919).to_be_bytes(), &i.to_le_bytes())
            .unwrap();
    }
    let built = started.elapsed();
    let held = rss_bytes().saturating_sub(before);
    let started = Instant::now();
    txn.commit().unwrap();
    println!(
        "write set of {n} puts: {:.1} bytes/key held, built in {:.2} s, commit (apply to a \
         non-empty table) {:.2} s",
        held as f64 / n as f64,
        built.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "for profiling one thread's commit path (perf, callgrind); prints timings"]
fn rmw_one_thread() {
    let keys = 100_000u64;
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    db.transact(|txn| {
        for i in 0..keys {
            txn.insert("t", &i.to_be_bytes(), &0u64.to_le_bytes())?;
        }
        Ok(())
    })
    .unwrap();
    let count = 20_000u64;
    let started = Instant::now();
    for i in 0..count {
        let (a, b) = ((i * 7919) % keys, (i * 104_729) % keys);
        db.transact(|txn| {
            let value = txn
                .get("t", &a.to_be_bytes())?
                .map_or(0, |v| v.len() as u64);
            txn.insert("t", &a.to_be_bytes(), &(value + 1).to_le_bytes())?;
            txn.insert("t", &b.to_be_bytes(), &(value + 1).to_le_bytes())
        })
        .unwrap();
    }
    let txn_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    for i in 0..count {
        let (a, b) = ((i * 7919) % keys, (i * 104_729) % keys);
        let mut batch = db.write().unwrap();
        let value = batch
            .get("t", &a.to_be_bytes())
            .unwrap()
            .map_or(0, |v| v.len() as u64);
        batch
            .insert("t", &a.to_be_bytes(), &(value + 1).to_le_bytes())
            .unwrap();
        batch
            .insert("t", &b.to_be_bytes(), &(value + 1).to_le_bytes())
            .unwrap();
        batch.commit().unwrap();
    }
    let batch_seconds = started.elapsed().as_secs_f64();
    println!(
        "one thread: transactions {:.0}/s, write batches {:.0}/s",
        count as f64 / txn_seconds,
        count as f64 / batch_seconds
    );
}

#[test]
#[ignore = "prints timings of the commit path (single-put and 1,000-put transactions); run by hand in release"]
fn commit_path_figures() {
    // W6's shapes without the fsync: 24-byte keys, 150-byte values, a 200k-pair table, a log in
    // memory; transactions of one pair (individual_writes) and of 1,000 (batch_writes).
    let pair = |i: u64| {
        let mut state = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        let mut next = || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let key: Vec<u8> = (0..3).flat_map(|_| next().to_le_bytes()).collect();
        let value: Vec<u8> = (0..19)
            .flat_map(|_| next().to_le_bytes())
            .take(150)
            .collect();
        (key, value)
    };
    let (_, db) = common::memory_db();
    db.create_table("t").unwrap();
    // ARTDB_FIGURES_SMALL=1: a quarter of the sizes (for callgrind).
    let small = std::env::var_os("ARTDB_FIGURES_SMALL").is_some();
    let shrink = if small { 4 } else { 1 };
    let n = 200_000u64 / shrink;
    db.transact(|txn| {
        for i in 0..n {
            let (k, v) = pair(i);
            txn.insert("t", &k, &v)?;
        }
        Ok(())
    })
    .unwrap();
    db.checkpoint().unwrap();
    let singles = 20_000u64 / shrink;
    let started = Instant::now();
    for i in n..n + singles {
        let (k, v) = pair(i);
        db.transact(|txn| txn.insert("t", &k, &v)).unwrap();
    }
    let single_us = started.elapsed().as_secs_f64() * 1e6 / singles as f64;
    let batches = 100u64 / shrink;
    let first = n + singles;
    let started = Instant::now();
    for b in 0..batches {
        db.transact(|txn| {
            for i in first + b * 1000..first + (b + 1) * 1000 {
                let (k, v) = pair(i);
                txn.insert("t", &k, &v)?;
            }
            Ok(())
        })
        .unwrap();
    }
    let batch_us = started.elapsed().as_secs_f64() * 1e6 / batches as f64;
    // One large transaction rewriting half the table: the commit alone is timed (issue 10
    // item 4: installed in O(1) when nobody overlapped, instead of every change applied again).
    // After a checkpoint, so that its 13 MiB of log records start no automatic checkpoint
    // inside the timed commit.
    db.checkpoint().unwrap();
    let mut big = db.begin_write(WriteOptions::default()).unwrap();
    for i in 0..n / 2 {
        let (k, v) = pair(i * 2);
        big.insert("t", &k, &v[..100]).unwrap();
    }
    let started = Instant::now();
    big.commit().unwrap();
    let big_commit_ms = started.elapsed().as_secs_f64() * 1e3;
    println!(
        "commit of a {}-pair transaction: {big_commit_ms:.1} ms",
        n / 2
    );
    let stats = db.stats().unwrap().txn;
    println!(
        "commit path: 1-pair transaction {single_us:.1} us, 1,000-pair transaction {batch_us:.0} us \
         (tables installed {}, reapplied {})",
        stats.tables_installed_at_commit, stats.tables_reapplied_at_commit
    );
}
