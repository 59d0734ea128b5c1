//! The shell's multi-line input (issue 43 item 9).
//!
//! Symptom: `put k "first line` followed by `second line"` failed with "unterminated \" quote":
//! a value with a newline could not be typed. Cause: each input line was split into words on
//! its own. Fixed: a line that ends inside a quote continues on the next one (at the prompt with
//! a continuation prompt, as psql and sqlite3 do), the newline kept in the word.

mod common;

use common::*;

#[test]
fn an_open_quote_continues_on_the_next_line() {
    let dir = TempDir::new("shell-multiline");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    let out = artdb_with_input(
        &["shell", file],
        b"put k \"first line\nsecond line\"\nput j 'a\n\nb'\nget k\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "first line\\x0asecond line\n"
    );
    assert_eq!(ok(&["get", file, "j"]), "a\\x0a\\x0ab\n");
    // A quote still open at the end of the script is an error naming the line it began on.
    let out = artdb_with_input(&["shell", file], b"get k\nput x \"never closed\nmore\n");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2") && stderr.contains("unterminated"),
        "{stderr}"
    );
}

/// At a terminal, a line that ends inside a quote is answered with the continuation prompt (not
/// an error), and the value keeps the newline typed there.
#[test]
fn at_a_terminal_an_open_quote_shows_the_continuation_prompt() {
    use expectrl::{ControlCode, Session, WaitStatus};
    use std::time::Duration;

    let dir = TempDir::new("shell-multiline-pty");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_artdb"));
    command
        .args(["shell", file])
        .env("ARTDB_HISTORY", dir.file("history"))
        .env("TERM", "xterm");
    let mut session = Session::spawn(command).expect("spawn the shell in a pty");
    session.set_expect_timeout(Some(Duration::from_secs(20)));
    session.expect("artdb main> ").expect("the first prompt");
    session.send("put k \"first line\r").unwrap();
    session.expect("...> ").expect("the continuation prompt");
    session.send("second line\"\r").unwrap();
    session
        .expect("artdb main> ")
        .expect("the prompt after the command");
    session.send("get k\r").unwrap();
    session
        .expect("first line\\x0asecond line")
        .expect("the value with its newline");
    session
        .expect("artdb main> ")
        .expect("the prompt after get");
    session.send(ControlCode::EndOfTransmission).unwrap();
    let status = session.get_process().wait().expect("wait for the shell");
    assert!(matches!(status, WaitStatus::Exited(_, 0)), "{status:?}");
    assert_eq!(ok(&["get", file, "k"]), "first line\\x0asecond line\n");
}
