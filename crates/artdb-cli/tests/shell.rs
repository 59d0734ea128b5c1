//! `artdb shell` (issue 12 item 1) through a real pseudo-terminal (expectrl): the prompt, a
//! command and its output, tab completion of a command and of a table name, history recalled
//! with the Up arrow and saved to `$ARTDB_HISTORY`, `scan` paging (a page, Enter for the next,
//! `q` to stop), a transaction that rolls back and one that commits, Ctrl-D. And script mode
//! (standard input not a terminal): no prompt, the first failing command stops the script with
//! its exit code and a message naming its line.

mod common;

use common::*;
use expectrl::{ControlCode, Session, WaitStatus};
use std::process::Command;
use std::time::Duration;

const PROMPT: &str = "artdb main> ";

fn setup(dir: &TempDir) -> String {
    let file = dir.file("shell.artdb");
    let file_str = path_str(&file).to_string();
    let input = dir.file("in.tsv");
    let lines: String = (1..=45).map(|i| format!("k{i:02}\tv{i:02}\n")).collect();
    std::fs::write(&input, lines).unwrap();
    ok(&["load", &file_str, "--table", "main", path_str(&input)]);
    ok(&["put", &file_str, "--table", "orders", "o1", "first order"]);
    file_str
}

/// Waits for `needle`, returning what came before it.
fn expect(session: &mut Session, needle: &str) -> String {
    match session.expect(needle) {
        Ok(found) => String::from_utf8_lossy(found.before()).into_owned(),
        Err(error) => panic!("waiting for {needle:?}: {error}"),
    }
}

/// Sends `keys` as typed.
fn keys(session: &mut Session, keys: &str) {
    session.send(keys).unwrap();
    std::thread::sleep(Duration::from_millis(150));
}

/// Lets the shell print its next prompt before typing on (it reads the terminal when a prompt
/// starts, and typed-ahead keys could be taken for its answer).
fn settle(session: &mut Session) {
    std::thread::sleep(Duration::from_millis(200));
    let _ = session.try_read(&mut [0u8; 4096]);
}

/// Types `text` and Enter, waits for `output` if given, then for the next prompt to settle.
fn line(session: &mut Session, text: &str, output: Option<&str>) {
    keys(session, &format!("{text}\r"));
    if let Some(output) = output {
        expect(session, output);
    }
    settle(session);
}

#[test]
fn interactive_shell_in_a_pseudo_terminal() {
    let dir = TempDir::new("shell-pty");
    let file = setup(&dir);
    let history = dir.file("history");
    let mut command = Command::new(env!("CARGO_BIN_EXE_artdb"));
    command
        .args(["shell", &file, "--page", "20"])
        .env("ARTDB_HISTORY", &history)
        .env("TERM", "xterm");
    let mut session = Session::spawn(command).expect("spawn the shell in a pty");
    session.set_expect_timeout(Some(Duration::from_secs(20)));
    expect(&mut session, PROMPT);

    // A command and its output.
    line(&mut session, "get k07", Some("v07"));
    // Quoting and escapes.
    line(&mut session, "put \"two words\" \"a b\\x21\"", None);
    line(&mut session, "get 'two words'", Some("a b!"));

    // Completion of a command ("tab" -> "tables") and of a table name ("use or" -> orders).
    keys(&mut session, "tab\t");
    keys(&mut session, "\r");
    expect(&mut session, "orders\t1 keys");
    settle(&mut session);
    keys(&mut session, "use or\t");
    keys(&mut session, "\r");
    expect(&mut session, "artdb orders> ");
    settle(&mut session);
    line(&mut session, "use main", None);

    // History: the Up arrow recalls the previous line.
    line(&mut session, "get k12", Some("v12"));
    keys(&mut session, "\x1b[A");
    keys(&mut session, "\r");
    expect(&mut session, "v12");
    settle(&mut session);

    // Paging: 45 pairs, 20 a page.
    keys(&mut session, "scan k\r");
    let first = expect(&mut session, "-- more");
    assert!(
        first.contains("k01\tv01") && first.contains("k20\tv20"),
        "{first}"
    );
    assert!(!first.contains("k21"), "{first}");
    keys(&mut session, "\r");
    let second = expect(&mut session, "-- more");
    assert!(
        second.contains("k21\tv21") && second.contains("k40\tv40"),
        "{second}"
    );
    assert!(!second.contains("k41"), "{second}");
    keys(&mut session, "q\r");
    settle(&mut session);
    line(&mut session, "count k4", Some("6"));

    // A transaction that rolls back, then one that commits.
    line(&mut session, "begin", None);
    line(&mut session, "put t1 one", None);
    line(&mut session, "get t1", Some("one"));
    line(&mut session, "count", Some("47"));
    line(&mut session, "rollback", None);
    line(&mut session, "get t1", Some("not found"));
    line(&mut session, "begin", None);
    line(&mut session, "put t2 two", None);
    line(&mut session, "commit", None);
    line(&mut session, "get t2", Some("two"));

    // An error keeps the shell going; Ctrl-D leaves.
    line(&mut session, "frobnicate", Some("unknown command"));
    session.send(ControlCode::EndOfTransmission).unwrap();
    let status = session.get_process().wait().expect("wait for the shell");
    assert!(matches!(status, WaitStatus::Exited(_, 0)), "{status:?}");

    // The committed transaction is durable, the rolled-back one left nothing.
    assert_eq!(ok(&["get", &file, "t2"]), "two\n");
    fails(&["get", &file, "t1"], 3);
    let saved = std::fs::read_to_string(&history).expect("history file");
    assert!(
        saved.contains("scan k") && saved.contains("get k12"),
        "{saved}"
    );
}

#[test]
fn script_mode_stops_at_the_first_failing_line() {
    let dir = TempDir::new("shell-script");
    let file = setup(&dir);
    let output = artdb_with_input(
        &["shell", &file],
        b"# a comment\nput s1 one\nget s1\nscan k0 --limit 3\n\nbogus command\nput s2 two\n",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 6") && stderr.contains("bogus"),
        "{stderr}"
    );
    assert!(
        !stdout.contains("artdb main>"),
        "no prompt in script mode: {stdout}"
    );
    assert_eq!(stdout, "one\nk01\tv01\nk02\tv02\nk03\tv03\n");
    assert_eq!(ok(&["get", &file, "s1"]), "one\n");
    fails(&["get", &file, "s2"], 3);

    // A missing key fails with `get`'s exit code; a transaction left open is rolled back.
    let output = artdb_with_input(&["shell", &file], b"begin\nput s3 x\nget nope\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("line 3"), "{stderr}");
    fails(&["get", &file, "s3"], 3);

    // A whole script that succeeds exits 0.
    let output = artdb_with_input(
        &["shell", &file],
        b"begin\nput s4 y\ncommit\nget s4\nquit\nbogus\n",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "y\n");
}

/// `put` creates its table inside `begin` ... `commit` too, as `use` says ("put creates it"):
/// it used to fail with "no table named ...; create it first", which the shell has no command
/// for.
#[test]
fn put_in_a_transaction_creates_the_table() {
    let dir = TempDir::new("shell-txn-create");
    let file = dir.file("new.artdb");
    let file = path_str(&file);
    ok(&["create", file]);
    let output = artdb_with_input(
        &["shell", file],
        b"use fresh\nbegin\nput k1 v1\nput k2 v2\ncommit\nuse rolled\nbegin\nput k v\nrollback\n",
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(ok(&["get", file, "--table", "fresh", "k2"]), "v2\n");
    let stats = ok(&["stats", file]);
    assert!(stats.contains("\"fresh\": 2 keys"), "{stats}");
    assert!(!stats.contains("rolled"), "{stats}");
}

/// `shell --read-only` reads a database it may not (or need not) write: gets, scans and stats
/// work, a put is refused with the read-only message, and the file is unchanged. There was no
/// way to open the shell on a read-only file (the open failed with "permission denied ...
/// open it read-only", which the shell could not).
#[test]
fn read_only_shell_reads_and_refuses_writes() {
    let dir = TempDir::new("shell-read-only");
    let file = setup(&dir);
    let before = std::fs::read(&file).unwrap();
    let output = artdb_with_input(&["shell", &file, "--read-only"], b"get k07\ncount\nstats\n");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("v07") && stdout.contains("45"), "{stdout}");
    let output = artdb_with_input(&["shell", &file, "--read-only"], b"put k99 v\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("read-only"), "{stderr}");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    // A missing file is not created read-only.
    let missing = dir.file("missing.artdb");
    let output = artdb_with_input(&["shell", path_str(&missing), "--read-only"], b"");
    assert_eq!(output.status.code(), Some(1));
    assert!(!missing.exists());
}
