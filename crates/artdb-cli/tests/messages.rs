//! What the CLI's messages say (issue 43 item 7).
//!
//! - Symptom: `artdb get FILE 'bad\q'` said `bad escape in "bad\\q"`, doubling the backslash the
//!   user typed. Cause: the message quoted the argument with `{:?}` (Rust's escaping).
//! - Symptom: `verify` printed `Unreadable { path: [107, 101, ...] }` and ended every problem
//!   with "`artdb verify FILE` lists what is wrong". Cause: it printed each problem's whole
//!   `Error` display (the advice an open gives) around the engine's `Debug` of the tree
//!   violation. Fixed by `dbcommon::describe_problem`. A node that cannot be read still said
//!   "run verify and restore from a backup": the tree's image error, quoted whole inside the
//!   violation; the violation now names the offset and the reason alone.
//! - Symptom: every subcommand's `--help` listed `--salvage`, `--open-without-log` and
//!   `--strict-recovery` among its own options. Cause: clap shows a `global = true` option in
//!   each subcommand. Fixed by hidden copies below the top level; `artdb --help` shows them once.
//! - Symptom: `artdb --help` described the demo as building a tree and querying it. Cause: the
//!   summary predates the demo's transactions, crash and recovery.

mod common;

use common::*;

#[test]
fn escape_errors_quote_the_argument_as_typed() {
    let dir = TempDir::new("msg-escape");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    let stderr = fails(&["get", file, "bad\\q"], 2);
    assert!(stderr.contains("bad escape in \"bad\\q\""), "{stderr}");
    let stderr = fails(&["get", file, "k\\x4"], 2);
    assert!(stderr.contains("bad escape in \"k\\x4\""), "{stderr}");
}

#[test]
fn verify_prints_readable_problems_without_its_own_advice() {
    let dir = TempDir::new("msg-verify");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    let input = dir.file("in.tsv");
    let lines: String = (0..20_000)
        .map(|i| format!("key{i:07}\tvalue {i}\n"))
        .collect();
    std::fs::write(&input, lines).unwrap();
    ok(&["load", file, "--table", "t", path_str(&input)]);
    let clean = std::fs::read(&db).unwrap();
    // A load into a new file links it into place closed, with no log beside it.
    let wal = std::fs::read(artdb_wal(file)).ok();
    let mut checked = 0;
    let mut unreadable = 0;
    for page in 2..clean.len() / 4096 {
        let mut bytes = clean.clone();
        bytes[page * 4096 + 100] ^= 0x5A;
        std::fs::write(&db, &bytes).unwrap();
        if let Some(wal) = &wal {
            std::fs::write(artdb_wal(file), wal).unwrap();
        }
        let output = artdb(&["verify", file]);
        if output.status.code() != Some(4) {
            continue;
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let problems: Vec<&str> = stdout
            .lines()
            .filter(|line| line.starts_with("problem: "))
            .collect();
        if problems.is_empty() {
            continue;
        }
        checked += 1;
        for line in problems {
            assert!(!line.contains("lists what is wrong"), "{line}");
            assert!(!line.contains("restore it from a backup"), "{line}");
            assert!(!line.contains("restore from a backup"), "{line}");
            assert!(!line.contains("run verify"), "{line}");
            assert!(!line.contains("[107, "), "{line}");
            if line.contains("cannot be read") {
                unreadable += 1;
            }
        }
        if stdout.contains("Unreadable") {
            assert!(stdout.contains("path: \""), "{stdout}");
        }
        let output = artdb(&["verify", file, "--json"]);
        let report = json(&String::from_utf8_lossy(&output.stdout));
        for problem in report["problems"].as_array().unwrap() {
            let text = problem.as_str().unwrap();
            assert!(
                !text.contains("[107, ")
                    && !text.contains("lists what")
                    && !text.contains("run verify"),
                "{text}"
            );
        }
    }
    assert!(checked > 0, "no damage found a verify problem");
    // A damaged inner node is reported by the tree walk as a node that cannot be read, whose
    // cause (the persisted image's error) once carried the advice to run verify.
    assert!(unreadable > 0, "no damage made a node unreadable");
}

fn artdb_wal(file: &str) -> String {
    format!("{file}.wal")
}

#[test]
fn global_options_are_shown_once_in_the_top_help() {
    let top = ok(&["--help"]);
    for option in ["--salvage", "--open-without-log", "--strict-recovery"] {
        assert_eq!(top.matches(option).count(), 1, "{option}: {top}");
    }
    for command in [
        vec!["get"],
        vec!["put"],
        vec!["verify"],
        vec!["bitable", "build"],
    ] {
        let mut args = command.clone();
        args.push("--help");
        let help = ok(&args);
        let options = help.split("Options:").nth(1).unwrap_or_default();
        let options = options.split("Example").next().unwrap_or_default();
        assert!(!options.contains("--salvage"), "{command:?}: {help}");
        assert!(
            !options.contains("--open-without-log"),
            "{command:?}: {help}"
        );
        assert!(help.contains("artdb --help"), "{command:?}: {help}");
    }
    // Still accepted after the subcommand's name.
    let dir = TempDir::new("msg-global");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    ok(&["put", file, "k", "v"]);
    assert_eq!(ok(&["get", "--strict-recovery", file, "k"]).trim(), "v");
    let stderr = fails(&["put", "--salvage", file, "k", "w"], 2);
    assert!(stderr.contains("--salvage"), "{stderr}");
}

#[test]
fn top_help_says_what_the_demo_does() {
    let top = ok(&["--help"]);
    let demo = top
        .lines()
        .find(|line| line.trim_start().starts_with("demo "))
        .unwrap_or_default();
    for what in ["transactions", "recover", "verif"] {
        assert!(demo.contains(what), "{demo}");
    }
}

/// Symptom: `artdb get FILE k --salvage` on a healthy database checkpointed once said "the
/// database file is corrupt at byte 32768 ... restore it from a backup". Cause: the salvage
/// open's "no older checkpoint" was shown with a corruption's advice.
#[test]
fn salvage_without_an_older_checkpoint_does_not_call_the_file_corrupt() {
    let dir = TempDir::new("msg-salvage");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    ok(&["put", file, "k", "v"]);
    let stderr = fails(&["get", "--salvage", file, "k"], 4);
    assert!(!stderr.contains("is corrupt"), "{stderr}");
    assert!(stderr.contains("without salvage"), "{stderr}");
    assert_eq!(ok(&["get", file, "k"]), "v\n");
}

/// Symptom: a read of a missing table said "create it first (tables: `artdb stats FILE`)",
/// the engine's words, though the CLI has commands for both. Cause: `main` printed the
/// engine's message as it is. Fixed by `dbcommon::message`.
#[test]
fn a_missing_table_names_the_commands_that_make_and_list_tables() {
    let dir = TempDir::new("msg-table");
    let db = dir.file("db.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    for command in [
        &["get", file, "--table", "orders", "k"][..],
        &["scan", file, "--table", "orders"][..],
    ] {
        let stderr = fails(command, 1);
        assert!(
            stderr.contains(
                "no table named \"orders\"; `artdb table create FILE 'orders'` makes it, \
                 `artdb table list FILE` lists the tables"
            ),
            "{stderr}"
        );
    }
}
