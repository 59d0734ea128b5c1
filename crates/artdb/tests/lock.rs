//! The file lock: a second open of a database file, from another process or from this one,
//! fails at once with `Error::Locked`; once the first handle closes, it succeeds.
//!
//! The other process is this test binary itself, run with `ARTDB_LOCK_CHILD_PATH` set: the
//! `child_open` test then opens that path and prints what happened.

use artdb::{Db, Error, Options};
use std::process::Command;

const CHILD_ENV: &str = "ARTDB_LOCK_CHILD_PATH";

#[test]
fn child_open() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    match Db::open(&path, Options::default()) {
        Ok(db) => {
            let names = db.table_names().join(",");
            println!("CHILD OPENED tables={names}");
        }
        Err(Error::Locked { .. }) => println!("CHILD LOCKED"),
        Err(other) => println!("CHILD ERROR {other}"),
    }
}

fn run_child(path: &std::path::Path) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_open", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).to_string()
}

#[test]
fn second_process_and_second_handle_get_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.artdb");
    let db = Db::create(&path, Options::default()).unwrap();
    db.create_table("t").unwrap();
    db.checkpoint().unwrap();
    let child = run_child(&path);
    assert!(child.contains("CHILD LOCKED"), "child said: {child}");
    match Db::open(&path, Options::default()) {
        Err(error @ Error::Locked { .. }) => {
            assert!(
                error.to_string().contains("open in another process"),
                "{error}"
            );
        }
        other => panic!("a second handle must be refused, got {:?}", other.err()),
    }
    assert!(matches!(
        Db::create(&path, Options::default()),
        Err(Error::AlreadyExists { .. })
    ));
    db.close().unwrap();
    let child = run_child(&path);
    assert!(
        child.contains("CHILD OPENED tables=t"),
        "child said: {child}"
    );
}
