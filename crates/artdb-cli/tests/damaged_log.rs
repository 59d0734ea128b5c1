//! A damaged write-ahead log through the CLI (issue 39 items 1 and 3).
//!
//! Symptom: `create`, `put k v1`, `checkpoint`, `put k2 acked`, one flipped byte (24, the epoch)
//! in the log header slot with the higher epoch, then `get k2` exited 3 ("not found") and
//! `verify` exited 0: every commit since the checkpoint was silently gone. Cause: open took the
//! previous cycle's header, still valid in the other slot, and cut the current cycle's records
//! as a torn tail. Now open refuses (exit 4, naming the header and `--open-without-log`), and
//! `--open-without-log` opens the checkpoint deliberately. `--strict-recovery` refuses a
//! damaged last record that the default cuts.

mod common;

use common::*;

fn epoch_at(log: &[u8], slot: usize) -> u64 {
    let at = slot * 512 + 24;
    u64::from_le_bytes(log[at..at + 8].try_into().unwrap())
}

#[test]
fn a_damaged_log_header_is_refused_and_open_without_log_opens_the_checkpoint() {
    let dir = TempDir::new("damaged-log");
    let db = dir.file("x.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    ok(&["put", file, "k", "v1"]);
    ok(&["checkpoint", file]);
    ok(&["put", file, "k2", "acked"]);
    let mut log_path = db.as_os_str().to_owned();
    log_path.push(".wal");
    let mut log = std::fs::read(&log_path).unwrap();
    let active = usize::from(epoch_at(&log, 1) > epoch_at(&log, 0));
    log[active * 512 + 24] ^= 0x01;
    std::fs::write(&log_path, &log).unwrap();

    let stderr = fails(&["get", file, "k2"], 4);
    assert!(
        stderr.contains("header") && stderr.contains("--open-without-log"),
        "{stderr}"
    );
    fails(&["verify", file], 4);
    fails(&["put", file, "k3", "v3"], 4);
    assert_eq!(
        std::fs::read(&log_path).unwrap(),
        log,
        "a refused open wrote"
    );
    assert_eq!(ok(&["--open-without-log", "get", file, "k"]).trim(), "v1");
    fails(&["--open-without-log", "get", file, "k2"], 3);
    ok(&["--open-without-log", "put", file, "k3", "v3"]);
    let mut aside = log_path.clone();
    aside.push(".damaged");
    assert_eq!(
        std::fs::read(&aside).unwrap(),
        log,
        "the damaged log is kept"
    );
    assert_eq!(ok(&["get", file, "k3"]).trim(), "v3");
    ok(&["verify", file]);
}

#[test]
fn strict_recovery_refuses_a_damaged_last_record_that_the_default_cuts() {
    let dir = TempDir::new("strict-recovery");
    let db = dir.file("x.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    ok(&["put", file, "a", "1"]);
    ok(&["put", file, "b", "2"]);
    let mut log_path = db.as_os_str().to_owned();
    log_path.push(".wal");
    let mut log = std::fs::read(&log_path).unwrap();
    // The last record ends where the zeros begin; flip a byte of its payload's end.
    let end = 4096
        + log[4096..]
            .windows(32)
            .position(|window| window.iter().all(|&byte| byte == 0))
            .unwrap();
    log[end - 1] ^= 0x40;
    std::fs::write(&log_path, &log).unwrap();
    let stderr = fails(&["--strict-recovery", "get", file, "a"], 4);
    assert!(stderr.contains("strict"), "{stderr}");
    // The default cuts the damaged last record (it may be a torn write that never returned).
    assert_eq!(ok(&["get", file, "a"]).trim(), "1");
    fails(&["get", file, "b"], 3);
}
