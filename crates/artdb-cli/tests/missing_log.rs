//! A deleted write-ahead log through the CLI (issue 9 item 6, the missing-log part): a command
//! on a database that was not closed cleanly refuses to open without its log and names the way
//! out, `artdb --open-without-log`, which opens the last checkpoint.

mod common;

use common::*;

#[test]
fn a_missing_log_is_refused_and_open_without_log_opens_the_last_checkpoint() {
    let dir = TempDir::new("missing-log");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    {
        let options = artdb::Options {
            checkpoint_on_drop: false,
            ..artdb::Options::default()
        };
        let engine = artdb::Db::create(&db, options).unwrap();
        engine.create_table("t").unwrap();
        let mut batch = engine.write().unwrap();
        batch.insert("t", b"checkpointed", b"1").unwrap();
        batch.commit().unwrap();
        engine.checkpoint().unwrap();
        let mut batch = engine.write().unwrap();
        batch.insert("t", b"logged", b"2").unwrap();
        batch.commit().unwrap();
        // Dropped without a checkpoint, as a killed process: "logged" is only in the log.
    }
    let mut log = db.as_os_str().to_owned();
    log.push(".wal");
    std::fs::remove_file(&log).unwrap();
    let stderr = fails(&["get", file, "--table", "t", "checkpointed"], 1);
    assert!(stderr.contains("--open-without-log"), "{stderr}");
    let stderr = fails(&["put", file, "--table", "t", "k", "v"], 1);
    assert!(stderr.contains("missing"), "{stderr}");
    assert_eq!(
        ok(&[
            "--open-without-log",
            "get",
            file,
            "--table",
            "t",
            "checkpointed"
        ])
        .trim(),
        "1"
    );
    fails(
        &["--open-without-log", "get", file, "--table", "t", "logged"],
        3,
    );
    // A read-write command with the flag makes a new log; then the database opens as usual.
    ok(&["--open-without-log", "put", file, "--table", "t", "k", "v"]);
    assert_eq!(ok(&["get", file, "--table", "t", "k"]).trim(), "v");
    ok(&["verify", file]);
}
