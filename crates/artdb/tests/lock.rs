//! The file lock: a second open of a database file, from another process or from this one,
//! waits up to `Options::lock_wait_max` and then fails with `Error::Locked`, naming the holder's
//! pid when it is another process; once the first handle closes, it succeeds (issue 45 item 2:
//! before, a second open failed at once, so a shell loop of `artdb put` beside a short-lived
//! writer failed instead of taking its turn).
//!
//! The other process is this test binary itself, run with `ARTDB_LOCK_CHILD_PATH` set: the
//! `child_open` test then opens that path and prints what happened (and, with
//! `ARTDB_LOCK_CHILD_HOLD_MS`, holds it open that long).

use artdb::{Db, Error, Options};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "ARTDB_LOCK_CHILD_PATH";
const HOLD_ENV: &str = "ARTDB_LOCK_CHILD_HOLD_MS";

fn no_wait() -> Options {
    Options {
        lock_wait_max: Duration::ZERO,
        ..Options::default()
    }
}

#[test]
fn child_open() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    match Db::open(&path, no_wait()) {
        Ok(db) => {
            let names = db.table_names().join(",");
            println!("CHILD OPENED tables={names}");
            if let Some(hold) = std::env::var(HOLD_ENV).ok().and_then(|ms| ms.parse().ok()) {
                std::thread::sleep(Duration::from_millis(hold));
                db.close().unwrap();
                println!("CHILD CLOSED");
            }
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
    let db = Db::create(&path, no_wait()).unwrap();
    db.create_table("t").unwrap();
    db.checkpoint().unwrap();
    let child = run_child(&path);
    assert!(child.contains("CHILD LOCKED"), "child said: {child}");
    match Db::open(&path, no_wait()) {
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

#[test]
fn a_second_open_waits_for_the_holder_and_names_its_pid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("turns.artdb");
    let db = Db::create(&path, no_wait()).unwrap();
    db.create_table("t").unwrap();
    db.close().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_open", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &path)
        .env(HOLD_ENV, "1500")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let opened = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|line| line.contains("CHILD OPENED") || line.contains("CHILD ERROR"));
    assert!(
        opened
            .as_deref()
            .is_some_and(|line| line.contains("OPENED")),
        "child said {opened:?}"
    );
    match Db::open(&path, no_wait()) {
        Err(error @ Error::Locked { .. }) => {
            let Error::Locked { holder_pid, .. } = &error else {
                unreachable!()
            };
            assert_eq!(*holder_pid, Some(child.id()), "{error}");
            assert!(
                error.to_string().contains(&format!("pid {}", child.id())),
                "{error}"
            );
        }
        other => panic!("expected Locked at once, got {:?}", other.err()),
    }
    let short = Options {
        lock_wait_max: Duration::from_millis(100),
        ..Options::default()
    };
    let started = Instant::now();
    match Db::open(&path, short) {
        Err(Error::Locked { waited_ms, .. }) => assert!(waited_ms >= 100, "{waited_ms}"),
        other => panic!("expected Locked after 100 ms, got {:?}", other.err()),
    }
    assert!(started.elapsed() >= Duration::from_millis(100));
    let patient = Options {
        lock_wait_max: Duration::from_secs(60),
        ..Options::default()
    };
    let db = Db::open(&path, patient).expect("the open takes its turn once the child closes");
    assert_eq!(db.table_names(), ["t"]);
    drop(db);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_second_handle_in_this_process_waits_then_is_refused_without_a_pid() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("same.artdb");
    let db = Db::create(&path, no_wait()).unwrap();
    let short = Options {
        lock_wait_max: Duration::from_millis(30),
        ..Options::default()
    };
    match Db::open(&path, short) {
        Err(Error::Locked {
            holder_pid: None,
            waited_ms,
            ..
        }) => assert!(waited_ms >= 30),
        other => panic!("expected Locked without a pid, got {:?}", other.err()),
    }
    drop(db);
}
