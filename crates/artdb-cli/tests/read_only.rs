//! Read commands open the database read-only (issue 8 item 7).
//!
//! Regression. Symptom: every command opened read-write and took the exclusive lock, so two
//! reads could not run at once and nothing could read while another reader held the file.
//! Cause: the CLI had no read-only opening to use. Now `get`, `scan`, `count`, `stats`,
//! `verify`, `dump` and `export` open read-only: they run while another read-only handle is
//! open, and a write command runs beside them all (readers in other processes,
//! docs/recovery.md), which the held handle's next snapshot sees.

use std::process::{Command, Output};

fn artdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_artdb"))
        .args(args)
        .output()
        .expect("run artdb")
}

#[test]
fn read_commands_share_the_file_with_a_read_only_handle() {
    let dir = std::env::temp_dir().join(format!("artdb-cli-read-only-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("db.artdb");
    let file = path.to_str().unwrap();
    assert!(artdb(&["create", file]).status.success());
    assert!(artdb(&["put", file, "--table", "t", "k", "v"])
        .status
        .success());

    // A read-only handle held by this process.
    let options = artdb::Options {
        read_only: true,
        checkpoint_on_drop: false,
        ..artdb::Options::default()
    };
    let held = artdb::Db::open(&path, options).unwrap();
    for args in [
        vec!["get", file, "--table", "t", "k"],
        vec!["scan", file, "--table", "t"],
        vec!["count", file, "--table", "t"],
        vec!["stats", file],
        vec!["verify", file],
        vec!["dump", file],
    ] {
        let output = artdb(&args);
        assert!(
            output.status.success(),
            "artdb {args:?} beside a read-only handle: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let got = artdb(&["get", file, "--table", "t", "k"]);
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "v");
    // A write beside it runs too (readers never keep the writer out), and the held handle's
    // next snapshot sees it once it is durable; its first snapshot does not change.
    let first = held.read();
    let put = artdb(&["put", file, "--table", "t", "k", "w"]);
    assert!(
        put.status.success(),
        "put beside a reader: {}",
        String::from_utf8_lossy(&put.stderr)
    );
    assert_eq!(held.read().get("t", b"k").unwrap(), Some(&b"w"[..]));
    assert_eq!(first.get("t", b"k").unwrap(), Some(&b"v"[..]));
    drop(first);
    drop(held);
    let got = artdb(&["get", file, "--table", "t", "k"]);
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "w");
    let _ = std::fs::remove_dir_all(&dir);
}
