//! `artdb demo` end to end at a small `--keys` (issue 10 item 7): it succeeds, its transaction
//! step reports commits, log syncs and conflicts, its reader saw one unchanged snapshot, and
//! after the child process is killed with SIGKILL every commit it acknowledged is recovered; its
//! three-node cluster loses its leader and keeps every acknowledged write.

mod common;

use common::*;

/// The number right before `marker` in `text` (e.g. "970" in "all 970 acknowledged").
fn number_before(text: &str, marker: &str) -> Option<u64> {
    let at = text.find(marker)?;
    text[..at].split_whitespace().last()?.parse().ok()
}

#[test]
fn demo_commits_concurrently_and_recovers_every_acknowledged_commit_after_sigkill() {
    let dir = TempDir::new("demo");
    let file = dir.file("demo.artdb");
    let out = ok(&[
        "demo",
        "--keys",
        "3000",
        "--quiet",
        "--path",
        path_str(&file),
    ]);

    let line = |marker: &str| -> &str {
        out.lines()
            .find(|line| line.contains(marker))
            .unwrap_or_else(|| panic!("no line with {marker:?} in:\n{out}"))
    };
    // Durable concurrent transfers through the log, with group commit counted.
    let log_line = line("commits through the log took");
    let commits = number_before(log_line, "commits through the log").unwrap();
    let syncs = number_before(log_line, "log syncs").unwrap();
    assert!(commits > 0 && syncs > 0 && syncs <= commits, "{log_line}");
    assert!(line("conflicts retried").contains("Db::transact"), "{out}");
    assert!(
        line("reader:").contains("all saw the opening balances"),
        "{out}"
    );
    assert!(line("after the run:").ends_with("hold 1000000"), "{out}");

    // The child was killed, and what it acknowledged survived.
    assert!(line("the child ended with").contains("SIGKILL"), "{out}");
    let recovery = line("acknowledged commits recovered");
    let acknowledged = number_before(recovery, "acknowledged commits recovered").unwrap();
    let recovered = number_before(recovery, "commits recovered:").unwrap();
    assert!(acknowledged > 0, "{recovery}");
    assert!(
        recovered == acknowledged || recovered == acknowledged + 1,
        "{recovery}"
    );
    assert!(
        line("the 1000 accounts still hold").ends_with("1000000"),
        "{out}"
    );
    assert!(line("verify:").contains("ok"), "{out}");

    // The cluster lost its leader and kept every acknowledged write; its nodes are gone.
    let cluster = line("killed; node");
    assert!(cluster.contains("leads"), "{cluster}");
    assert!(
        line("acknowledged writes read back").contains("all 400 acknowledged writes"),
        "{out}"
    );
    let mut nodes = file.as_os_str().to_os_string();
    nodes.push(".cluster");
    assert!(
        !std::path::Path::new(&nodes).exists(),
        "{nodes:?} left behind"
    );

    // The file it left behind holds the journal the child wrote, and checks clean.
    let count = ok(&["count", path_str(&file), "--table", "journal"]);
    assert_eq!(count.trim().parse::<u64>().ok(), Some(recovered), "{count}");
    ok(&["verify", path_str(&file)]);
}

#[test]
fn demo_child_is_hidden_from_help() {
    let top = ok(&["--help"]);
    assert!(!top.contains("demo-child"), "{top}");
}

/// `artdb demo --path` given an existing database that is not a demo's (or one in use) refuses
/// and leaves it alone: it used to delete the file and its log first, whatever they held.
#[test]
fn demo_does_not_replace_a_database_it_did_not_make() {
    let dir = TempDir::new("demo-refuses");
    let file = dir.file("users.artdb");
    let file = path_str(&file);
    ok(&["create", file]);
    ok(&["put", file, "--table", "users", "alice", "1"]);
    let stderr = fails(&["demo", "--keys", "1000", "--quiet", "--path", file], 1);
    assert!(stderr.contains("users"), "{stderr}");
    assert_eq!(ok(&["get", file, "--table", "users", "alice"]), "1\n");
    let text = dir.file("notes.txt");
    std::fs::write(&text, "my notes").unwrap();
    fails(
        &[
            "demo",
            "--keys",
            "1000",
            "--quiet",
            "--path",
            path_str(&text),
        ],
        1,
    );
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "my notes");
}
