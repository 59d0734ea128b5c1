//! `artdb load` killed midway (SIGKILL, and SIGINT as Ctrl-C sends it) by a real signal to a
//! real process: a file that was missing before stays missing (no empty or partial database
//! under its name) unless the load completed, and into an existing file no empty table is left.
//!
//! Regression. Symptom: an interrupted `load` into a new file left an empty database behind.
//! Cause: the file was created in place before the pairs were read. Now a new file is built as
//! `.NAME.load-PID` and linked into place only when complete; the next load removes the
//! temporary file of a process that is gone.

mod common;

use common::{ok, path_str, TempDir};
use std::path::Path;
use std::process::{Command, Stdio};

/// Pairs in the input: enough that some of the kills below land inside the load.
const PAIRS: u32 = 150_000;
const _: () = assert!(!PAIRS.is_multiple_of(7919));

/// A TSV input of `PAIRS` pairs, in key order or (a multiplicative permutation) not.
fn write_input(path: &Path, sorted: bool) {
    let mut text = String::with_capacity(PAIRS as usize * 24);
    for index in 0..PAIRS {
        let key = if sorted {
            index
        } else {
            // 7919 is prime and does not divide PAIRS: a permutation of 0..PAIRS.
            (u64::from(index) * 7919 % u64::from(PAIRS)) as u32
        };
        text.push_str(&format!("key{key:08}\tvalue {key}\n"));
    }
    std::fs::write(path, text).expect("write the input");
}

/// Runs `artdb load FILE INPUT --table T`, sends `signal` after `delay_ms` (if it still runs),
/// and returns whether it ran to the end by itself.
fn load_and_signal(file: &Path, input: &Path, table: &str, signal: &str, delay_ms: u64) -> bool {
    let mut child = Command::new(env!("CARGO_BIN_EXE_artdb"))
        .args(["load", path_str(file), path_str(input), "--table", table])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run artdb load");
    std::thread::sleep(std::time::Duration::from_millis(delay_ms));
    if signal == "KILL" {
        let _ = child.kill();
    } else {
        let _ = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status();
    }
    let status = child.wait().expect("wait for artdb load");
    status.success()
}

/// The number of keys `table` has in `file`, or `None` if it has no such table.
fn keys_of(file: &Path, table: &str) -> Option<u64> {
    let out = ok(&["table", "list", path_str(file), "--json"]);
    let json = common::json(&out);
    let tables = json.as_array().expect("a list of tables");
    tables
        .iter()
        .find(|entry| entry["name"] == table)
        .map(|entry| entry["keys"].as_u64().expect("a key count"))
}

/// The files of `dir` whose names contain `part`.
fn files_containing(dir: &Path, part: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read the directory")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.contains(part))
        .collect()
}

#[test]
fn a_load_into_a_new_file_killed_midway_leaves_no_database() {
    let dir = TempDir::new("load-killed-new");
    let sorted = dir.file("sorted.tsv");
    let unsorted = dir.file("unsorted.tsv");
    write_input(&sorted, true);
    write_input(&unsorted, false);
    let file = dir.file("new.artdb");
    let mut killed_inside = 0;
    let runs = [
        (&sorted, "KILL", 10u64),
        (&sorted, "INT", 60),
        (&sorted, "KILL", 150),
        (&unsorted, "KILL", 10),
        (&unsorted, "INT", 80),
        (&unsorted, "KILL", 200),
        (&unsorted, "INT", 400),
    ];
    for (input, signal, delay_ms) in runs {
        let completed = load_and_signal(&file, input, "main", signal, delay_ms);
        if file.exists() {
            // Linked into place only when complete.
            assert_eq!(
                keys_of(&file, "main"),
                Some(u64::from(PAIRS)),
                "{signal} {delay_ms}"
            );
            std::fs::remove_file(&file).expect("remove the database");
            let _ = std::fs::remove_file(dir.file("new.artdb.wal"));
        } else {
            assert!(
                !completed,
                "a load that succeeded left no file ({signal} {delay_ms})"
            );
            killed_inside += 1;
        }
        assert!(!dir.file("new.artdb.wal").exists() || file.exists());
    }
    assert!(killed_inside > 0, "no signal landed inside a load");
    // A complete load now; the killed loads' temporary files are removed by it.
    ok(&["load", path_str(&file), path_str(&unsorted)]);
    assert_eq!(keys_of(&file, "main"), Some(u64::from(PAIRS)));
    assert_eq!(files_containing(dir.path(), ".load-"), Vec::<String>::new());
}

#[test]
fn a_load_into_an_existing_file_killed_midway_leaves_no_empty_table() {
    let dir = TempDir::new("load-killed-existing");
    let unsorted = dir.file("unsorted.tsv");
    write_input(&unsorted, false);
    let file = dir.file("old.artdb");
    ok(&["put", path_str(&file), "--table", "kept", "k", "v"]);
    let mut killed_inside = 0;
    for (signal, delay_ms) in [("KILL", 10u64), ("INT", 60), ("KILL", 200)] {
        load_and_signal(&file, &unsorted, "new", signal, delay_ms);
        match keys_of(&file, "new") {
            None => killed_inside += 1,
            Some(keys) => {
                assert_eq!(keys, u64::from(PAIRS), "{signal} {delay_ms}");
                ok(&["table", "drop", path_str(&file), "new"]);
            }
        }
        assert_eq!(keys_of(&file, "kept"), Some(1));
        ok(&["verify", path_str(&file)]);
    }
    assert!(killed_inside > 0, "no signal landed inside a load");
    assert_eq!(files_containing(dir.path(), ".load-"), Vec::<String>::new());
}
