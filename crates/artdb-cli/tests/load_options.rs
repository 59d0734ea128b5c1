//! `load` from standard input, with a header row, into the default table (issue 43 item 8).
//!
//! Symptom: `artdb load FILE -` looked for a file named `-`; a CSV's header row was loaded as a
//! pair; `load` alone required `--table`. Cause: the input was always opened as a path (and
//! read twice when unsorted), no option said the first line is a header, and `--table` had no
//! default. Fixed: `-` reads standard input (held in memory, so it can be read twice),
//! `--header` skips the first line (never guessed: a header looks like any pair), and `--table`
//! defaults to `main` as for `put` and `get`.

mod common;

use common::*;

#[test]
fn load_reads_stdin_skips_a_header_and_defaults_the_table() {
    let dir = TempDir::new("load-options");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    // Unsorted input from standard input goes through the write batch (read a second time).
    let out = artdb_with_input(&["load", file, "-"], b"b\t2\na\t1\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ok(&["get", file, "a"]), "1\n");
    assert_eq!(ok(&["get", file, "b"]), "2\n");

    let csv = dir.file("people.csv");
    std::fs::write(&csv, "name,age\nada,36\nalan,41\n").unwrap();
    ok(&[
        "load",
        file,
        "--table",
        "people",
        "--header",
        path_str(&csv),
    ]);
    assert_eq!(
        ok(&["scan", file, "--table", "people"]),
        "ada\t36\nalan\t41\n"
    );
    let out = artdb_with_input(
        &["load", file, "--table", "csv", "--csv", "--header", "-"],
        b"k,v\nx,\"1,2\"\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ok(&["scan", file, "--table", "csv"]), "x\t1,2\n");
    // A bad line is still named by its line in the file, header counted.
    std::fs::write(&csv, "name,age\nada,36\nbad\n").unwrap();
    let stderr = fails(
        &["load", file, "--table", "p2", "--header", path_str(&csv)],
        1,
    );
    assert!(stderr.contains("line 3"), "{stderr}");
}

/// A comma-separated standard input is read as TSV (`-` has no name to tell): the error names
/// the way to read it as CSV.
#[test]
fn csv_on_stdin_read_as_tsv_names_the_csv_option() {
    let dir = TempDir::new("load-csv-hint");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    let out = artdb_with_input(&["load", file, "-", "--header"], b"key,value\na,1\n");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2: expected 2 fields"), "{stderr}");
    assert!(stderr.contains("`--csv` reads CSV"), "{stderr}");
    let out = artdb_with_input(
        &["load", file, "-", "--header", "--csv"],
        b"key,value\na,1\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ok(&["get", file, "a"]), "1\n");
}
