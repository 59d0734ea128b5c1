//! SIGKILL loop: a real child process (this test binary run again, entry `sigkill_child`)
//! commits numbered transactions to a database on disk and prints each number after its commit
//! returns; the parent kills it with SIGKILL at a random moment (sometimes while it is still
//! opening, i.e. during its recovery), reopens the database and checks that every printed
//! commit is there, at most one more (the one in flight), in order, and never part of one.
//!
//! Each commit `n` puts key `n` into `main`; every tenth also puts 200 keys into `big` (a
//! larger record), and every twentieth 2,000 (a transaction past the bypass threshold: its nodes
//! go to the database file through a checkpoint, the log gets a reference); every third is followed by a `NoSync` commit into `side` (not checked: it
//! may be lost, but it must not break the order of `main`). Cycles: 50 by default, times
//! `ARTDB_TEST_SCALE`, or `ARTDB_SIGKILL_CYCLES`; `scripts/sigkill-loop.sh` runs 1,000+.
//! A kill keeps the page cache, so this tests the process side (torn appends, recovery
//! interrupted, the log reused across cycles); power loss is `wal_crash.rs`'s job.

use artdb::{Db, Durability, Options};
use rand::{Rng, SeedableRng};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CHILD_DIR_ENV: &str = "ARTDB_SIGKILL_CHILD_DIR";
const BIG_KEYS: u64 = 200;
/// Keys of every twentieth commit: past `BYPASS_THRESHOLD_BYTES`.
const BYPASS_KEYS: u64 = 2_000;
const BYPASS_THRESHOLD_BYTES: u64 = 32 << 10;

/// Keys commit `n` puts into `big`.
fn big_keys(n: u64) -> u64 {
    match (n % 10, n % 20) {
        (_, 0) => BYPASS_KEYS,
        (0, _) => BIG_KEYS,
        _ => 0,
    }
}

fn options() -> Options {
    Options {
        checkpoint_on_drop: false,
        // Small, so the child's commits cross automatic checkpoints and log recycling too.
        checkpoint_threshold_bytes: 64 << 10,
        wal_bypass_threshold_bytes: BYPASS_THRESHOLD_BYTES,
        ..Options::default()
    }
}

/// The child's entry point: does nothing unless run by `sigkill_loop` (which sets the
/// environment variable naming the database's directory).
#[test]
fn sigkill_child() {
    let Ok(dir) = std::env::var(CHILD_DIR_ENV) else {
        return;
    };
    let path = Path::new(&dir).join("db");
    let db = if path.exists() {
        Db::open(&path, options()).expect("child open")
    } else {
        Db::create(&path, options()).expect("child create")
    };
    // Also after a reopen: an earlier child may have been killed between two of these.
    for table in ["main", "big", "side"] {
        if !db.table_names().iter().any(|name| name == table) {
            db.create_table(table).expect("create table");
        }
    }
    let start = db.read().table("main").expect("main").len();
    let mut out = std::io::stdout();
    for n in start.. {
        let mut txn = db.write().expect("write");
        txn.insert("main", &n.to_be_bytes(), &n.to_le_bytes())
            .expect("put");
        for i in 0..big_keys(n) {
            txn.insert(
                "big",
                &[n.to_be_bytes(), i.to_be_bytes()].concat(),
                &[7; 40],
            )
            .expect("put big");
        }
        txn.commit().expect("commit");
        // On a line of its own: libtest may have printed "test sigkill_child ... " before.
        writeln!(out, "\ncommitted {n}").expect("print");
        out.flush().expect("flush");
        if n % 3 == 0 {
            let mut side = db.write().expect("write side");
            side.set_durability(Durability::NoSync);
            side.insert("side", &n.to_be_bytes(), b"s")
                .expect("put side");
            side.commit().expect("commit side");
        }
    }
}

#[test]
fn sigkill_loop() {
    let cycles: u64 = std::env::var("ARTDB_SIGKILL_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50 * artdb_testkit::scale());
    let seed = artdb_testkit::seed();
    println!("sigkill loop: {cycles} cycles, seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut present = 0u64;
    let mut printed_total = 0u64;
    for cycle in 0..cycles {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "sigkill_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let last_printed: Arc<Mutex<Option<u64>>> = Arc::new(Mutex::new(None));
        let reader = {
            let stdout = child.stdout.take().unwrap();
            let last_printed = Arc::clone(&last_printed);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let number = line.trim().strip_prefix("committed ");
                    if let Some(Ok(n)) = number.map(str::parse::<u64>) {
                        *last_printed.lock().unwrap() = Some(n);
                    }
                }
            })
        };
        // 0-60 ms: short waits kill the child while it opens (recovery), longer ones mid-run.
        std::thread::sleep(Duration::from_micros(rng.gen_range(0..60_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        let printed = *last_printed.lock().unwrap();
        let context = format!("cycle {cycle} (seed {seed}): printed {printed:?}, before {present}");
        if !dir.path().join("db").exists() {
            assert!(printed.is_none(), "{context}");
            continue;
        }
        let db = match Db::open(dir.path().join("db"), options()) {
            Ok(db) => db,
            // Killed inside create, before its first superblock: no database yet.
            Err(artdb::Error::Corruption { .. }) if present == 0 && printed.is_none() => {
                std::fs::remove_file(dir.path().join("db")).unwrap();
                continue;
            }
            Err(error) => panic!("{context}: reopen: {error}"),
        };
        let read = db.read();
        let Ok(main) = read.table("main") else {
            assert!(printed.is_none() && present == 0, "{context}: no table");
            continue;
        };
        let now = main.len();
        for (i, item) in main.iter().enumerate() {
            let (key, value) = item.unwrap();
            assert_eq!(
                key,
                (i as u64).to_be_bytes(),
                "{context}: main is not 0..{now}"
            );
            assert_eq!(value, (i as u64).to_le_bytes(), "{context}");
        }
        // Killed between creating the tables (before any commit): the next child makes them.
        let Ok(big) = read.table("big").map(|big| big.len()) else {
            assert!(printed.is_none() && now == 0, "{context}: no table big");
            continue;
        };
        assert_eq!(
            big,
            (0..now).map(big_keys).sum::<u64>(),
            "{context}: a big commit was split"
        );
        assert!(
            now >= present,
            "{context}: {now} commits, fewer than before"
        );
        if let Some(printed) = printed {
            assert!(
                now > printed,
                "{context}: commit {printed} was printed but is lost"
            );
            assert!(
                now <= printed + 2,
                "{context}: {now} commits: more than one in flight"
            );
            printed_total += 1;
        } else {
            assert!(now <= present + 1, "{context}: {now}");
        }
        assert!(db.verify().unwrap().is_ok(), "{context}");
        present = now;
    }
    println!(
        "sigkill loop: {cycles} cycles, {present} commits survive, {printed_total} cycles printed"
    );
    assert!(present > 0, "no commit in {cycles} cycles");
}
