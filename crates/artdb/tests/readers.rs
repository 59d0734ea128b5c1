//! Readers in other processes beside a writer (docs/recovery.md#readers-in-other-processes):
//! real processes (this test binary run again with `ARTDB_READERS_ROLE` set), a writer that
//! commits, checkpoints and compacts, readers that hold snapshots for random lengths of time and
//! check every value, readers and the writer killed with SIGKILL at random and restarted.
//!
//! Every commit `i` of the writer sets all `KEYS` keys to a value naming `i`, so a snapshot is
//! right only if every key holds the same `i` (a page reused under a reader would show another
//! commit's value, a torn mix, or fail its checksum), and a reader's successive snapshots never
//! go back. `ARTDB_TEST_SCALE` multiplies the run's length (a soak).

use artdb::{Db, Durability, Options, ReadTxn};
use artdb_testkit::scale;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ROLE_ENV: &str = "ARTDB_READERS_ROLE";
const PATH_ENV: &str = "ARTDB_READERS_PATH";
const SEED_ENV: &str = "ARTDB_READERS_SEED";
const KEYS: u32 = 400;

fn key(k: u32) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

fn value(i: u64, k: u32) -> Vec<u8> {
    let mut value = format!("{i:012}:{k:06}:").into_bytes();
    value.resize(96, b'x');
    value
}

/// The commit number every key of `read` names, or what is wrong.
fn check_snapshot(read: &ReadTxn) -> Result<u64, String> {
    let table = read.table("t").map_err(|error| format!("table: {error}"))?;
    let mut seen = None;
    for k in 0..KEYS {
        let got = table
            .get(&key(k))
            .map_err(|error| format!("get {k}: {error}"))?
            .ok_or_else(|| format!("key {k} missing"))?;
        let i: u64 = std::str::from_utf8(&got[..12])
            .ok()
            .and_then(|text| text.parse().ok())
            .ok_or_else(|| format!("key {k}: unreadable value {got:?}"))?;
        if got != value(i, k).as_slice() {
            return Err(format!("key {k}: damaged value {got:?}"));
        }
        match seen {
            None => seen = Some(i),
            Some(first) if first != i => {
                return Err(format!("key {k} is at commit {i}, key 0 at {first}"))
            }
            Some(_) => {}
        }
    }
    seen.ok_or_else(|| "no keys".to_string())
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn writer_role(path: &Path, seed: u64) {
    let options = Options {
        durability: Durability::Sync,
        checkpoint_on_drop: false,
        ..Options::default()
    };
    let db = Db::open_or_create(path, options).unwrap();
    db.create_table_if_missing("t").unwrap();
    let mut rng = Rng(seed | 1);
    let mut i = {
        let read = db.read();
        check_snapshot(&read).unwrap_or_default()
    };
    loop {
        i += 1;
        let mut batch = db.write().unwrap();
        for k in 0..KEYS {
            batch.insert("t", &key(k), &value(i, k)).unwrap();
        }
        batch.commit().unwrap();
        println!("ACK {i}");
        match rng.below(20) {
            0 => {
                db.checkpoint().unwrap();
            }
            1 => {
                db.compact().unwrap();
            }
            _ => {}
        }
    }
}

fn reader_role(path: &Path, seed: u64) {
    let options = Options {
        read_only: true,
        ..Options::default()
    };
    let db = match Db::open(path, options) {
        Ok(db) => db,
        Err(error) => {
            println!("BAD open: {error}");
            return;
        }
    };
    let mut rng = Rng(seed | 1);
    let mut last = 0;
    let mut snapshots = 0u64;
    loop {
        let read = db.read();
        let i = match check_snapshot(&read) {
            Ok(i) => i,
            Err(problem) => {
                println!("BAD {problem}");
                return;
            }
        };
        if i < last {
            println!("BAD went back from commit {last} to {i}");
            return;
        }
        last = i;
        snapshots += 1;
        println!("SAW {i} {snapshots}");
        // Holds the snapshot a while, reading it again: it must not change under the writer's
        // checkpoints and compactions.
        let hold = Instant::now() + Duration::from_millis(rng.below(300));
        while Instant::now() < hold {
            match check_snapshot(&read) {
                Ok(again) if again == i => {}
                Ok(again) => {
                    println!("BAD a held snapshot changed from {i} to {again}");
                    return;
                }
                Err(problem) => {
                    println!("BAD held snapshot: {problem}");
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[test]
fn child_role() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let path = PathBuf::from(std::env::var(PATH_ENV).unwrap());
    let seed = std::env::var(SEED_ENV)
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(1);
    match role.as_str() {
        "writer" => writer_role(&path, seed),
        "reader" => reader_role(&path, seed),
        other => panic!("unknown role {other}"),
    }
}

fn spawn(role: &str, path: &Path, seed: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(ROLE_ENV, role)
        .env(PATH_ENV, path)
        .env(SEED_ENV, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Kills `child` and returns what it printed.
fn kill(mut child: Child) -> String {
    let _ = child.kill();
    let _ = child.wait();
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    out
}

fn last_number(out: &str, tag: &str) -> Option<u64> {
    out.lines()
        .filter_map(|line| line.strip_prefix(tag))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .next_back()
}

/// Waits until the writer has acknowledged a commit (so the database exists); returns the rest
/// of its output and the number of that commit.
fn wait_for_ack(child: &mut Child) -> (BufReader<std::process::ChildStdout>, u64) {
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            panic!("the writer ended before its first commit");
        }
        if let Some(number) = last_number(&line, "ACK ") {
            return (reader, number);
        }
    }
    panic!("no commit from the writer");
}

#[test]
fn readers_in_other_processes_see_only_whole_commits_through_kills() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.artdb");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let run = Duration::from_secs(6 * scale());
    let mut writer = spawn("writer", &path, 11);
    let (mut writer_out, mut acked) = wait_for_ack(&mut writer);
    let mut readers: Vec<Child> = (0..3).map(|n| spawn("reader", &path, 100 + n)).collect();
    let mut outputs = Vec::new();
    let mut writer_kills = 0;
    let mut reader_kills = 0;
    // `acked`: the newest commit a writer acknowledged; one more may be durable, not printed.
    let start = Instant::now();
    while start.elapsed() < run {
        std::thread::sleep(Duration::from_millis(100 + rng.below(400)));
        if rng.below(5) == 0 {
            // The writer: killed and restarted beside live readers.
            let _ = writer.kill();
            let _ = writer.wait();
            let mut rest = String::new();
            let _ = writer_out.read_to_string(&mut rest);
            acked = acked.max(last_number(&rest, "ACK ").unwrap_or(0));
            writer_kills += 1;
            writer = spawn("writer", &path, 11 + writer_kills);
            let (out, first) = wait_for_ack(&mut writer);
            writer_out = out;
            acked = acked.max(first);
        } else {
            let victim = rng.below(readers.len() as u64) as usize;
            let child = readers.swap_remove(victim);
            outputs.push(kill(child));
            reader_kills += 1;
            readers.push(spawn("reader", &path, 200 + reader_kills));
        }
    }
    // Give the last readers time to open and read before they are stopped.
    std::thread::sleep(Duration::from_millis(500));
    for child in readers {
        outputs.push(kill(child));
    }
    let _ = writer.kill();
    let _ = writer.wait();
    let mut rest = String::new();
    let _ = writer_out.read_to_string(&mut rest);
    acked = acked.max(last_number(&rest, "ACK ").unwrap_or(0));
    let mut snapshots = 0;
    let mut newest = 0;
    for out in &outputs {
        for line in out.lines() {
            assert!(!line.starts_with("BAD"), "a reader saw: {line}\n{out}");
        }
        snapshots += out.lines().filter(|line| line.starts_with("SAW")).count();
        newest = newest.max(last_number(out, "SAW ").unwrap_or(0));
    }
    assert!(snapshots > 10, "readers took only {snapshots} snapshots");
    assert!(newest > 1, "readers never saw a commit after the first");
    assert!(
        newest <= acked + 1,
        "a reader saw commit {newest}, but the writers acknowledged only up to {acked}"
    );
    assert!(reader_kills > 0);
    // Every reader is gone: their slots are dead, and the next writer reuses pages again.
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.stats().unwrap().txn.other_process_readers, 0);
    db.close().unwrap();
}

#[test]
fn a_reader_process_opens_beside_a_writer_and_sees_its_later_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh.artdb");
    let options = Options {
        durability: Durability::Sync,
        ..Options::default()
    };
    let db = Db::create(&path, options).unwrap();
    db.create_table("t").unwrap();
    let mut batch = db.write().unwrap();
    for k in 0..KEYS {
        batch.insert("t", &key(k), &value(1, k)).unwrap();
    }
    batch.commit().unwrap();
    // A reader handle of this process beside the writer: the same path as another process's.
    let reader = Db::open(
        &path,
        Options {
            read_only: true,
            ..Options::default()
        },
    )
    .unwrap();
    let first = reader.read();
    assert_eq!(check_snapshot(&first), Ok(1));
    let mut batch = db.write().unwrap();
    for k in 0..KEYS {
        batch.insert("t", &key(k), &value(2, k)).unwrap();
    }
    batch.commit().unwrap();
    // Only in the log so far: a new snapshot replays its durable tail.
    assert_eq!(check_snapshot(&reader.read()), Ok(2));
    db.checkpoint().unwrap();
    let mut batch = db.write().unwrap();
    for k in 0..KEYS {
        batch.insert("t", &key(k), &value(3, k)).unwrap();
    }
    batch.commit().unwrap();
    db.compact().unwrap();
    assert_eq!(check_snapshot(&reader.read()), Ok(3));
    // The first snapshot still reads its commit: its pages were kept from reuse.
    assert_eq!(check_snapshot(&first), Ok(1));
    let stats = db.stats().unwrap();
    assert!(stats.txn.other_process_readers >= 1, "{:?}", stats.txn);
    drop(first);
    drop(reader);
    assert_eq!(db.stats().unwrap().txn.other_process_readers, 0);
    db.close().unwrap();
}

/// Every pair of table `t` in a new snapshot of `db`.
fn contents(db: &Db) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    db.read()
        .table("t")
        .unwrap()
        .iter()
        .map(|pair| {
            let (k, v) = pair.unwrap();
            (k, v.to_vec())
        })
        .collect()
}

/// A reader handle follows a writer commit by commit (the log's new records replayed onto its
/// view) and across checkpoints (a new view), matching a model after each durable commit; a
/// `NoSync` commit shows only once a sync covers it. Some values are large, so that the new
/// records run past the first piece of the log a refresh copies.
#[test]
fn a_reader_follows_every_durable_commit_and_no_unsynced_one() {
    use std::collections::BTreeMap;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("follow.artdb");
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    let reader = Db::open(
        &path,
        Options {
            read_only: true,
            ..Options::default()
        },
    )
    .unwrap();
    let mut model = BTreeMap::new();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let rounds = 150 * scale();
    for round in 0..rounds {
        let mut batch = db.write().unwrap();
        let sync = rng.below(4) != 0;
        batch.set_durability(if sync {
            Durability::Sync
        } else {
            Durability::NoSync
        });
        let mut pending = model.clone();
        for _ in 0..1 + rng.below(20) {
            let k = rng.below(300) as u32;
            if rng.below(3) == 0 {
                batch.remove("t", &key(k)).unwrap();
                pending.remove(&key(k));
            } else {
                let mut v = format!("{round}:{k}").into_bytes();
                if rng.below(12) == 0 {
                    // Larger than the piece of the log a refresh copies first.
                    v.resize(70_000 + rng.below(130_000) as usize, b'x');
                }
                batch.insert("t", &key(k), &v).unwrap();
                pending.insert(key(k), v);
            }
        }
        batch.commit().unwrap();
        if sync {
            model = pending;
        } else if rng.below(2) == 0 {
            db.sync().unwrap();
            model = pending;
        } else {
            // Not durable yet: the reader shows the state before it (or, had an automatic
            // checkpoint covered it, after it; none runs at this size).
            let seen = contents(&reader);
            assert_eq!(seen, model, "round {round}: an unsynced commit showed");
            db.sync().unwrap();
            model = pending;
        }
        if rng.below(30) == 0 {
            db.checkpoint().unwrap();
        }
        let seen = contents(&reader);
        assert_eq!(seen, model, "round {round}");
    }
    drop(reader);
    db.close().unwrap();
}
