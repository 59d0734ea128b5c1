//! Commands that fail or are cut short leave no half-done state and say what happened: a failed
//! load commits nothing and leaves no file, a damaged file makes `stats` fail, a closed pipe is a
//! normal end, a killed `bitable build` leaves no temporary file for long, a damaged newest
//! checkpoint points at `--salvage`. Regression tests run against the `artdb` binary, one per
//! problem of the CLI report they came from:
//!
//! - `load` was not atomic. Symptom: into an empty table, a malformed line after 100,000 good
//!   ones left those 100,000 pairs committed and durable (exit 1). Cause: the input iterator
//!   stopped early at the bad line and the engine's bulk load finished and checkpointed what it
//!   had been given. Fixed by `Db::bulk_load_try` (fallible input; the first error abandons the
//!   written pages) and by the CLI undoing the table and file it created.
//! - `stats` on a damaged file printed wrong figures with exit 0. Cause: the tree-shape
//!   walk skips nodes it cannot read. Fixed by running verify's checks and exiting 4.
//! - A closed pipe panicked (exit 101). Cause: `println!` panics on EPIPE. Fixed by
//!   writing through `outln!` (an `io::Result`) and treating `BrokenPipe` as a normal end.
//! - A killed `bitable build` left `.NAME.PID-N.building` forever. Fixed by removing the
//!   temporary files of dead processes at the next build of NAME and in `bitable verify`.
//! - A damaged newest checkpoint is an error that points at `--salvage`, which
//!   reads the previous checkpoint read-only (and is refused by the commands that write).
//! - Invalid UTF-8 in a load named no line; `bitable get` on a directory said "No
//!   such device"; `bitable get` of an absent key exited 2 (clap's usage code) where `get`
//!   exits 3.

mod common;

use common::*;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

fn sorted_tsv(count: u64) -> String {
    (0..count)
        .map(|i| format!("key{i:07}\tvalue {i}\n"))
        .collect()
}

fn generation(file: &str) -> u64 {
    json(&ok(&["stats", file, "--json", "--quick"]))["generation"]
        .as_u64()
        .expect("generation")
}

fn table_names(file: &str) -> Vec<String> {
    json(&ok(&["stats", file, "--json", "--quick"]))["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn failed_load_into_new_file_leaves_no_file() {
    let dir = TempDir::new("i3-newfile");
    let db = dir.file("new.artdb");
    let input = dir.file("bad.tsv");
    std::fs::write(&input, sorted_tsv(10_000) + "no tab on this line\n").unwrap();
    let stderr = fails(
        &["load", path_str(&db), "--table", "t", path_str(&input)],
        1,
    );
    assert!(stderr.contains("line 10001"), "{stderr}");
    assert!(!db.exists(), "the failed load left a database file");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|name| name != "bad.tsv")
        .collect();
    assert!(leftovers.is_empty(), "files left behind: {leftovers:?}");
}

#[test]
fn failed_load_leaves_existing_database_as_it_was() {
    let dir = TempDir::new("i3-existing");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    ok(&["put", file, "k", "v"]);
    let generation_before = generation(file);
    let names_before = table_names(file);

    // Sorted input, bad last line: new table, then an existing empty table.
    let sorted_bad = dir.file("sorted_bad.tsv");
    std::fs::write(&sorted_bad, sorted_tsv(5_000) + "k\tv\textra\n").unwrap();
    let stderr = fails(
        &["load", file, "--table", "fresh", path_str(&sorted_bad)],
        1,
    );
    assert!(stderr.contains("line 5001"), "{stderr}");
    // Unsorted input (falls back to a write batch), bad last line, into a table with keys.
    let unsorted_bad = dir.file("unsorted_bad.csv");
    std::fs::write(&unsorted_bad, "b,1\na,2\n\"unterminated,3\n").unwrap();
    let stderr = fails(
        &["load", file, "--table", "main", path_str(&unsorted_bad)],
        1,
    );
    assert!(stderr.contains("line 3"), "{stderr}");
    // Unsorted input, bad line, into a new table (bulk load fails, then the batch fails).
    fails(
        &["load", file, "--table", "fresh2", path_str(&unsorted_bad)],
        1,
    );

    assert_eq!(table_names(file), names_before);
    // The failed loads into new tables committed `create table` and then `drop table` through
    // the write-ahead log; the next open replays both and checkpoints (a new generation with
    // the same tables and keys), so the generation is no measure of "nothing changed" here.
    let _ = generation_before;
    assert_eq!(ok(&["scan", file]), "k\tv\n");
    ok(&["verify", file]);
}

#[test]
fn failed_load_into_existing_empty_table_keeps_it_empty() {
    let dir = TempDir::new("i3-empty-table");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    let one = dir.file("one.tsv");
    std::fs::write(&one, "a\t1\n").unwrap();
    ok(&["load", file, "--table", "t", path_str(&one)]);
    ok(&["del", file, "--table", "t", "a"]);
    // Checkpoint first: an open may checkpoint by itself (recovery after a log with leftover
    // bytes of an earlier cycle), which is not the failed load's doing.
    ok(&["checkpoint", file]);
    let generation_before = generation(file);
    let bad = dir.file("bad.tsv");
    std::fs::write(&bad, sorted_tsv(20_000) + "key9999999\t\\xZZ\n").unwrap();
    let stderr = fails(&["load", file, "--table", "t", path_str(&bad)], 1);
    assert!(stderr.contains("\\x needs two hex digits"), "{stderr}");
    assert_eq!(ok(&["count", file, "--table", "t"]), "0\n");
    assert_eq!(generation(file), generation_before);
    ok(&["verify", file]);
}

#[test]
fn stats_on_a_damaged_file_fails() {
    let dir = TempDir::new("i4");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    let input = dir.file("in.tsv");
    std::fs::write(&input, sorted_tsv(20_000)).unwrap();
    ok(&["load", file, "--table", "t", path_str(&input)]);
    json(&ok(&["stats", file, "--json"]));
    // Flip one byte in every third page, one page at a time: wherever verify finds damage,
    // stats must not print figures with exit 0.
    let clean = std::fs::read(&db).unwrap();
    let mut damaged_pages = 0;
    for page in (2..clean.len() / 4096).step_by(3) {
        let mut bytes = clean.clone();
        bytes[page * 4096 + 100] ^= 0x5A;
        std::fs::write(&db, &bytes).unwrap();
        let verify = artdb(&["verify", file]);
        if verify.status.success() {
            continue;
        }
        damaged_pages += 1;
        let stderr = fails(&["stats", file], 4);
        assert!(stderr.contains("damaged"), "{stderr}");
        let output = artdb(&["stats", file, "--json"]);
        assert_eq!(output.status.code(), Some(4));
        assert_eq!(json(&String::from_utf8_lossy(&output.stdout))["ok"], false);
    }
    assert!(
        damaged_pages > 5,
        "only {damaged_pages} damaged pages detected"
    );
}

/// Runs `artdb args` with standard output a pipe whose reader closes after `keep` bytes.
fn with_closed_pipe(args: &[&str], keep: usize) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_artdb"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run artdb");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut buffer = vec![0u8; keep];
    if keep > 0 {
        let _ = stdout.read_exact(&mut buffer);
    }
    drop(stdout);
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr);
    (child.wait().expect("wait").code(), stderr)
}

#[test]
fn closed_pipe_is_a_normal_end() {
    let dir = TempDir::new("i5");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    let input = dir.file("in.tsv");
    std::fs::write(&input, sorted_tsv(50_000)).unwrap();
    ok(&["load", file, "--table", "main", path_str(&input)]);
    let demo = dir.file("demo.artdb");
    let cases: Vec<Vec<&str>> = vec![
        vec!["scan", file],
        vec!["scan", file, "--json"],
        vec!["stats", file],
        vec!["verify", file],
        vec!["count", file],
        vec!["get", file, "key0000001"],
        vec![
            "demo",
            "--keys",
            "2000",
            "--quiet",
            "--path",
            path_str(&demo),
        ],
    ];
    for args in &cases {
        for keep in [0, 10] {
            let (code, stderr) = with_closed_pipe(args, keep);
            assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
            assert_eq!(code, Some(0), "{args:?} (kept {keep} bytes): {stderr}");
        }
    }
    // The bitable commands too.
    let table = dir.file("t.bt");
    let built = artdb_with_input(
        &["bitable", "build", path_str(&table)],
        sorted_tsv(50_000).as_bytes(),
    );
    assert!(built.status.success());
    let (code, stderr) = with_closed_pipe(&["bitable", "scan", path_str(&table)], 10);
    assert_eq!(code, Some(0), "{stderr}");
}

/// A process id that no process has (above `pid_max`).
fn dead_pid() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or(4_194_304)
        + 1
}

fn building_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".building"))
        .collect();
    names.sort();
    names
}

#[test]
fn killed_bitable_build_leaves_nothing_for_long() {
    if !std::path::Path::new("/proc/self").exists() {
        eprintln!("skipped: stale temporary files are told by /proc, which is not mounted");
        return;
    }
    let dir = TempDir::new("i6");
    let table = dir.file("t.bt");
    // A real killed build: feed part of the input, wait for its temporary file, SIGKILL it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_artdb"))
        .args(["bitable", "build", path_str(&table)])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run artdb");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(sorted_tsv(100_000).as_bytes()).unwrap();
    stdin.flush().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while building_files(dir.path()).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drop(stdin);
    let killed = building_files(dir.path());
    assert_eq!(killed.len(), 1, "{killed:?}");
    // A stale one of a process that cannot exist, and one of a live process (this test).
    let stale = format!(".t.bt.{}-0.building", dead_pid());
    let live = format!(".t.bt.{}-7.building", std::process::id());
    let other_table = format!(".u.bt.{}-0.building", dead_pid());
    for name in [&stale, &live, &other_table] {
        std::fs::write(dir.path().join(name), b"partial").unwrap();
    }

    // `bitable verify` of the target removes the dead processes' files of that table only.
    let verify = artdb(&["bitable", "verify", path_str(&table)]);
    assert!(!verify.status.success(), "t.bt does not exist yet");
    assert_eq!(building_files(dir.path()), {
        let mut expected = vec![live.clone(), other_table.clone()];
        expected.sort();
        expected
    });

    // The next build of the target removes them too.
    std::fs::write(dir.path().join(&stale), b"partial").unwrap();
    let built = artdb_with_input(
        &["bitable", "build", path_str(&table)],
        sorted_tsv(1_000).as_bytes(),
    );
    assert!(built.status.success());
    assert!(!dir.path().join(&stale).exists());
    assert!(dir.path().join(&live).exists());
    ok(&["bitable", "verify", path_str(&table)]);
}

#[test]
fn load_invalid_utf8_names_the_line_and_the_escapes() {
    let dir = TempDir::new("i9-utf8");
    let db = dir.file("db.artdb");
    for (name, sep) in [("in.tsv", b'\t'), ("in.csv", b',')] {
        let input = dir.file(name);
        let mut bytes = b"a".to_vec();
        bytes.push(sep);
        bytes.extend_from_slice(b"1\nb");
        bytes.push(sep);
        bytes.extend_from_slice(b"2\nc\xff");
        bytes.push(sep);
        bytes.extend_from_slice(b"3\n");
        std::fs::write(&input, bytes).unwrap();
        let stderr = fails(
            &["load", path_str(&db), "--table", "t", path_str(&input)],
            1,
        );
        assert!(stderr.contains("line 3"), "{stderr}");
        assert!(stderr.contains("UTF-8"), "{stderr}");
        assert!(stderr.contains("\\xNN"), "{stderr}");
        assert!(!db.exists());
    }
}

#[test]
fn bitable_get_messages_and_exit_codes() {
    let dir = TempDir::new("i9-bitable");
    let table = dir.file("t.bt");
    let built = artdb_with_input(&["bitable", "build", path_str(&table)], b"a\t1\nb\t2\n");
    assert!(built.status.success());
    assert_eq!(ok(&["bitable", "get", path_str(&table), "a"]), "1\n");
    // Absent key: 3, as `artdb get`; 2 stays clap's usage code.
    let stderr = fails(&["bitable", "get", path_str(&table), "zz"], 3);
    assert!(stderr.contains("not found"), "{stderr}");
    fails(&["bitable", "get", path_str(&table)], 2);
    // A directory.
    let stderr = fails(&["bitable", "get", path_str(dir.path()), "a"], 1);
    assert!(stderr.contains("is a directory"), "{stderr}");
    assert!(!stderr.contains("No such device"), "{stderr}");
    // A missing file.
    let stderr = fails(&["bitable", "get", path_str(&dir.file("nope.bt")), "a"], 1);
    assert!(stderr.contains("no such file"), "{stderr}");
    // `artdb get` agrees on the code.
    let db = dir.file("db.artdb");
    ok(&["create", path_str(&db)]);
    ok(&["put", path_str(&db), "a", "1"]);
    fails(&["get", path_str(&db), "zz"], 3);
}

#[test]
fn damaged_newest_checkpoint_fails_and_salvage_reads_the_previous() {
    const PAGE: usize = 32 * 1024;
    let dir = TempDir::new("i2");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    // Two checkpoints, the newest holding "first" and "second", the previous only "first",
    // then "third" in the log only, as a process killed after its commit leaves them (every
    // `artdb` command closes with a checkpoint, so the engine builds this file).
    {
        let options = artdb::Options {
            checkpoint_on_drop: false,
            ..artdb::Options::default()
        };
        let engine = artdb::Db::create(&db, options).unwrap();
        engine.create_table("t").unwrap();
        for (key, value) in [("first", "1"), ("second", "2"), ("third", "3")] {
            let mut batch = engine.write().unwrap();
            batch.insert("t", key.as_bytes(), value.as_bytes()).unwrap();
            batch.commit().unwrap();
            if key != "third" {
                engine.checkpoint().unwrap();
            }
        }
    }
    // Unseal both copies of the newest superblock: by the file alone it looks torn, but the log
    // (recycled after it was durable) proves it was written.
    let mut image = std::fs::read(&db).unwrap();
    let generation = |image: &[u8], slot: usize| {
        let at = PAGE * (1 + slot) + 16;
        u64::from_le_bytes(image[at..at + 8].try_into().unwrap())
    };
    let newest = usize::from(generation(&image, 1) > generation(&image, 0));
    for copy in [0, PAGE / 2] {
        image[PAGE * (1 + newest) + copy] ^= 0x20;
    }
    std::fs::write(&db, &image).unwrap();
    let stderr = fails(&["get", file, "--table", "t", "first"], 4);
    assert!(stderr.contains("--salvage"), "{stderr}");
    fails(&["verify", file], 4);
    // --salvage reads the previous checkpoint, and refuses to write.
    let scanned = ok(&["--salvage", "scan", file, "--table", "t"]);
    assert!(scanned.contains("first"), "{scanned}");
    assert!(!scanned.contains("second"), "{scanned}");
    let stderr = fails(&["--salvage", "put", file, "--table", "t", "x", "y"], 2);
    assert!(stderr.contains("read-only"), "{stderr}");
    // A backup of the salvaged checkpoint is a clean database.
    let rescued = dir.file("rescued.artdb");
    ok(&["--salvage", "backup", file, path_str(&rescued)]);
    ok(&["verify", path_str(&rescued)]);
    assert_eq!(
        ok(&["get", path_str(&rescued), "--table", "t", "first"]).trim(),
        "1"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        image,
        "the damaged file was not touched"
    );
}

/// A database path that is a FIFO or a device is refused at once, by name: opening a FIFO used
/// to wait forever for a writer, and `put` on /dev/null took it for an empty file to make a
/// database in.
#[test]
fn a_fifo_or_a_device_is_no_database_file() {
    refused_for_a_fifo_and_a_device(
        "pipe.artdb",
        &[
            &["get", PATH, "k"],
            &["put", PATH, "k", "v"],
            &["scan", PATH],
            &["stats", PATH],
            &["verify", PATH],
        ],
        "not a database file",
    );
}

/// The same for the bitable commands: `bitable get` of a FIFO said the file "is empty" (its
/// length is 0) and of /dev/null the same.
#[test]
fn a_fifo_or_a_device_is_no_bitable_file() {
    refused_for_a_fifo_and_a_device(
        "pipe.bt",
        &[
            &["bitable", "get", PATH, "k"],
            &["bitable", "stats", PATH],
            &["bitable", "verify", PATH],
        ],
        "not a table file",
    );
}

/// Where a command of [`refused_for_a_fifo_and_a_device`] takes the path.
const PATH: &str = "{path}";

/// Runs each of `commands` on a FIFO named `fifo_name` and on /dev/null (`PATH` replaced by
/// the path): each must be refused at once, naming what the path is and `phrase`.
fn refused_for_a_fifo_and_a_device(fifo_name: &str, commands: &[&[&str]], phrase: &str) {
    let dir = TempDir::new("not-regular");
    let fifo = dir.file(fifo_name);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success());
    for (path, what) in [
        (path_str(&fifo), "a FIFO"),
        ("/dev/null", "a character device"),
    ] {
        for command in commands {
            let args: Vec<&str> = command
                .iter()
                .map(|arg| if *arg == PATH { path } else { *arg })
                .collect();
            refused_at_once(&args, what, phrase);
        }
    }
}

/// Runs `artdb args`, which must fail within a minute (not wait for a FIFO's writer) with a
/// message naming `what` the path is and `phrase`.
fn refused_at_once(args: &[&str], what: &str, phrase: &str) {
    let (done, finished) = std::sync::mpsc::channel();
    let run = args.iter().map(|arg| arg.to_string()).collect::<Vec<_>>();
    std::thread::spawn(move || {
        let run: Vec<&str> = run.iter().map(String::as_str).collect();
        let _ = done.send(artdb(&run));
    });
    let output = finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{args:?} still runs after 60 s"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{args:?} succeeded: {stderr}");
    assert!(
        stderr.contains(what) && stderr.contains(phrase),
        "{args:?}: {stderr}"
    );
}
