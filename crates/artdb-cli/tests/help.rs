//! Every command's `--help` says what it does and shows an example (issue 12 item 7).

mod common;

use common::*;

#[test]
fn every_command_has_a_one_line_summary_and_an_example() {
    let top = ok(&["--help"]);
    assert!(
        top.contains("Examples:") && top.contains("Exit codes"),
        "{top}"
    );
    let commands = [
        "demo",
        "create",
        "stats",
        "verify",
        "checkpoint",
        "get",
        "put",
        "del",
        "scan",
        "count",
        "load",
        "dump",
        "restore",
        "export",
        "import",
        "backup",
        "compact",
        "shell",
        "bitable",
    ];
    for command in commands {
        assert!(
            top.contains(&format!("  {command} ")),
            "{command} missing from --help"
        );
        let help = ok(&[command, "--help"]);
        assert!(
            help.contains("Example: artdb") || help.contains("Example: mdb_dump"),
            "{command}: {help}"
        );
        assert!(
            !help.lines().next().unwrap_or_default().is_empty(),
            "{command}"
        );
    }
    for command in ["build", "get", "scan", "merge", "verify", "stats"] {
        let help = ok(&["bitable", command, "--help"]);
        assert!(
            help.contains("Example: artdb bitable"),
            "bitable {command}: {help}"
        );
    }
}
