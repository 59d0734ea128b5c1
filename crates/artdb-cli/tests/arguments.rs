//! Command lines the user gets wrong: exit code 2 (bad command line) with a message, the
//! database untouched.

mod common;

use common::*;

/// A key or value argument with a bad escape is a bad command line (exit 2, as the README's
/// exit codes say), not an error of the database (it was exit 1).
#[test]
fn a_bad_escape_in_an_argument_is_exit_code_2() {
    let dir = TempDir::new("bad-escape");
    let file = dir.file("e.artdb");
    let file = path_str(&file);
    ok(&["create", file]);
    for args in [
        vec!["get", file, "a\\x"],
        vec!["put", file, "a\\xzz", "v"],
        vec!["put", file, "k", "v\\q"],
        vec!["del", file, "\\x4"],
        vec!["scan", file, "--from", "\\"],
        vec!["count", file, "--prefix", "\\xg0"],
    ] {
        let stderr = fails(&args, 2);
        assert!(stderr.contains("escape"), "{args:?}: {stderr}");
    }
    assert!(ok(&["verify", file]).contains("0 tables"));
}
