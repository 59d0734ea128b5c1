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

/// Every numeric option of every command, with values out of its range (zero where zero makes
/// no sense, negative, past the documented maximum, past `u64::MAX`): exit code 2 with a
/// message naming the option, never a panic and never exit 1. Regression of issue 39 item 7:
/// `artdb demo --keys 0` panicked (exit 101) on an index out of bounds, because `--keys` took
/// any `u64` and the demo's snapshot check read the first generated key; `bitable build
/// --page-size 1000` was an error of the build (exit 1) and `shell --page 0` was silently 1.
#[test]
fn every_numeric_option_out_of_range_is_exit_code_2_naming_it() {
    let dir = TempDir::new("numeric-options");
    let db = dir.file("n.artdb");
    let db = path_str(&db);
    let table = dir.file("n.bt");
    let table = path_str(&table);
    let demo = dir.file("demo.artdb");
    let demo = path_str(&demo);
    let node = dir.file("node");
    let node = path_str(&node);
    ok(&["create", db]);
    ok(&["put", db, "k", "v"]);
    let output = artdb_with_input(&["bitable", "build", table], b"k\tv\n");
    assert!(output.status.success(), "{output:?}");
    let past_u64 = "18446744073709551616";
    let negative = "-1";
    let any_u64 = "from 0 to 18446744073709551615";
    // (option, the command line before its value, values refused, the range the message states)
    let cases: &[(&str, &[&str], &[&str], &str)] = &[
        (
            "--keys",
            &["demo", "--quiet", "--path", demo, "--keys"],
            &["0", negative, "100000001", past_u64, "1e6", "2.5"],
            "from 1 to 100000000",
        ),
        (
            "--seed",
            &["demo", "--quiet", "--path", demo, "--seed"],
            &[negative, past_u64],
            any_u64,
        ),
        (
            "--page-size",
            &["bitable", "build", table, "--page-size"],
            &["0", negative, "256", "1000", "131072", past_u64],
            "power of two from 512 to 65536",
        ),
        (
            "--limit",
            &["bitable", "scan", table, "--limit"],
            &[negative, past_u64],
            any_u64,
        ),
        (
            "--limit",
            &["scan", db, "--limit"],
            &[negative, past_u64],
            any_u64,
        ),
        (
            "--limit",
            &["count", db, "--limit"],
            &[negative, past_u64],
            any_u64,
        ),
        (
            "--page",
            &["shell", db, "--page"],
            &["0", negative, past_u64],
            "from 1 to",
        ),
        (
            "--id",
            &["serve", "--listen", "127.0.0.1:9", "--dir", node, "--id"],
            &["0", negative, past_u64, "x"],
            "from 1 to 18446744073709551615",
        ),
        (
            "--heartbeat-ms",
            &[
                "serve",
                "--id",
                "1",
                "--listen",
                "127.0.0.1:9",
                "--dir",
                node,
                "--heartbeat-ms",
            ],
            &["0", "9", "10001", negative, past_u64],
            "from 10 to 10000",
        ),
        (
            "--id",
            &[
                "cluster",
                "add-learner",
                "--nodes",
                "127.0.0.1:9",
                "--address",
                "a:1",
                "--id",
            ],
            &["0", negative, past_u64],
            "from 1 to 18446744073709551615",
        ),
        (
            "--voters",
            &[
                "cluster",
                "change-membership",
                "--nodes",
                "127.0.0.1:9",
                "--voters",
            ],
            &["0", "1,0", negative, past_u64],
            "from 1 to 18446744073709551615",
        ),
        (
            "--limit",
            &["cluster", "scan", "--nodes", "127.0.0.1:9", "--limit"],
            &[negative, past_u64],
            any_u64,
        ),
    ];
    for (option, command, values, range) in cases {
        for value in *values {
            let mut args = command.to_vec();
            args.push(value);
            let stderr = fails(&args, 2);
            assert!(stderr.contains(option), "{args:?}: {stderr}");
            assert!(stderr.contains(range), "{args:?}: {stderr}");
        }
    }
    // Nothing was written: the demo made no file, the table and the database are as they were.
    assert!(!std::path::Path::new(demo).exists());
    assert!(!std::path::Path::new(node).exists());
    assert_eq!(ok(&["bitable", "scan", table]), "k\tv\n");
    assert_eq!(ok(&["get", db, "k"]), "v\n");
}

/// The edges of each numeric option's range work: a limit of 0 prints nothing, the largest
/// limit everything, the smallest and largest page sizes build, the demo runs with one order,
/// a shell page of 1 and of `u64::MAX` pages (or does not).
#[test]
fn every_numeric_option_at_the_edges_of_its_range_works() {
    let dir = TempDir::new("numeric-edges");
    let db = dir.file("e.artdb");
    let db = path_str(&db);
    ok(&["create", db]);
    ok(&["put", db, "k", "v"]);
    let u64_max = "18446744073709551615";
    assert_eq!(ok(&["scan", db, "--limit", "0"]), "");
    assert_eq!(ok(&["scan", db, "--limit", u64_max]), "k\tv\n");
    assert_eq!(ok(&["count", db, "--limit", "0"]), "0\n");
    assert_eq!(ok(&["count", db, "--limit", u64_max]), "1\n");
    for page_size in ["512", "65536"] {
        let table = dir.file(&format!("e-{page_size}.bt"));
        let table = path_str(&table);
        let args = ["bitable", "build", table, "--page-size", page_size];
        let output = artdb_with_input(&args, b"k\tv\n");
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert_eq!(ok(&["bitable", "scan", table, "--limit", "0"]), "");
        assert_eq!(
            ok(&["bitable", "scan", table, "--limit", u64_max]),
            "k\tv\n"
        );
    }
    // The fewest orders the demo takes runs it whole (it panicked at 0).
    let demo = dir.file("demo.artdb");
    let out = ok(&["demo", "--keys", "1", "--quiet", "--path", path_str(&demo)]);
    assert!(out.contains("verify: ok"), "{out}");
    for page in ["1", u64_max] {
        let output = artdb_with_input(&["shell", db, "--page", page], b"scan\n");
        assert!(output.status.success(), "--page {page}: {output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "k\tv\n");
    }
}
