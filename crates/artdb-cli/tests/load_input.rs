//! Errors in the input of `load` and `restore` name the line: in a file of millions of lines,
//! "key of 4097 bytes is longer than the limit" or "bad escape in ..." alone does not say where.

mod common;

use common::*;

#[test]
fn load_errors_name_the_line() {
    let dir = TempDir::new("load-input-lines");
    let file = dir.file("l.artdb");
    let file = path_str(&file);
    let long_key = "b".repeat(4097);
    for (input, line) in [
        (format!("a\t1\n{long_key}\t2\nc\t3\n"), "line 2:"),
        ("a\t1\nb\t2\nc\tv\\t\n".to_string(), "line 3:"),
        ("a\\q\t1\n".to_string(), "line 1:"),
    ] {
        let tsv = dir.file("in.tsv");
        std::fs::write(&tsv, input).unwrap();
        let stderr = fails(&["load", file, "--table", "t", path_str(&tsv)], 1);
        assert!(stderr.contains(line), "want {line:?}: {stderr}");
        assert!(!dir.file("l.artdb").exists());
    }
}

#[test]
fn restore_names_the_line_of_a_key_over_the_limit() {
    let dir = TempDir::new("restore-input-lines");
    let file = dir.file("r.artdb");
    let dump = format!(
        "VERSION=3\nformat=print\nHEADER=END\n a\n 1\n {}\n 2\nDATA=END\n",
        "b".repeat(4097)
    );
    let output = artdb_with_input(&["restore", path_str(&file)], dump.as_bytes());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 6:") && stderr.contains("4097"),
        "{stderr}"
    );
    assert!(!file.exists());
}
