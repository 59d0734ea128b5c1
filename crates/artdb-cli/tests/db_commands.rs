//! The database subcommands end to end: create, put, get, del, scan, count, load (sorted TSV by
//! bulk load, unsorted CSV by a write batch), stats, verify, checkpoint; byte escapes, `--json`
//! and exit codes (3 = not found, 4 = corrupt).

use std::path::Path;
use std::process::{Command, Output};

fn artdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_artdb"))
        .args(args)
        .output()
        .expect("run artdb")
}

fn ok(args: &[&str]) -> String {
    let output = artdb(args);
    assert!(
        output.status.success(),
        "artdb {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// A directory removed on drop (the CLI crate has no tempfile dev-dependency).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("artdb-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn create_put_get_del_scan_count_load_stats_verify() {
    let dir = TempDir::new("db-commands");
    let db = dir.path().join("cli.artdb");
    let file = path_str(&db);
    ok(&["create", file]);
    ok(&["put", file, "k1", "v1"]);
    ok(&["put", file, "--table", "bytes", "a\\x00b", "\\xff\\\\"]);
    assert_eq!(ok(&["get", file, "k1"]), "v1\n");
    assert_eq!(
        ok(&["get", file, "--table", "bytes", "a\\x00b"]),
        "\\xff\\\\\n"
    );
    assert_eq!(artdb(&["get", file, "missing"]).status.code(), Some(3));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["get", file, "k1", "--json"])).unwrap();
    assert_eq!(json["value"], "v1");

    let sorted = dir.path().join("sorted.tsv");
    let lines: String = (0..1000)
        .map(|i| format!("key{i:05}\tvalue {i}\n"))
        .collect();
    std::fs::write(&sorted, lines).unwrap();
    let loaded = ok(&["load", file, "--table", "t", path_str(&sorted), "--json"]);
    let loaded: serde_json::Value = serde_json::from_str(&loaded).unwrap();
    assert_eq!(loaded["method"], "bulk load");
    assert_eq!(loaded["table_keys"], 1000);

    let unsorted = dir.path().join("unsorted.csv");
    std::fs::write(&unsorted, "\"b,1\",x\na,\"say \"\"hi\"\"\"\n").unwrap();
    let loaded = ok(&["load", file, "--table", "c", path_str(&unsorted), "--json"]);
    let loaded: serde_json::Value = serde_json::from_str(&loaded).unwrap();
    assert_eq!(loaded["method"], "write batch");
    assert_eq!(ok(&["get", file, "--table", "c", "b,1"]), "x\n");
    assert_eq!(ok(&["get", file, "--table", "c", "a"]), "say \"hi\"\n");

    assert_eq!(ok(&["count", file, "--table", "t"]), "1000\n");
    assert_eq!(
        ok(&["count", file, "--table", "t", "--prefix", "key0010"]),
        "10\n"
    );
    let scan = ok(&[
        "scan", file, "--table", "t", "--from", "key00100", "--to", "key00103",
    ]);
    assert_eq!(
        scan,
        "key00100\tvalue 100\nkey00101\tvalue 101\nkey00102\tvalue 102\n"
    );
    let scan = ok(&["scan", file, "--table", "t", "--limit", "2", "--json"]);
    let scan: serde_json::Value = serde_json::from_str(&scan).unwrap();
    assert_eq!(scan.as_array().map(Vec::len), Some(2));

    ok(&["del", file, "k1"]);
    assert_eq!(artdb(&["del", file, "k1"]).status.code(), Some(3));
    assert_eq!(artdb(&["get", file, "k1"]).status.code(), Some(3));

    let stats: serde_json::Value = serde_json::from_str(&ok(&["stats", file, "--json"])).unwrap();
    assert_eq!(stats["tables"].as_array().map(Vec::len), Some(4));
    ok(&["checkpoint", file, "--compact"]);
    let verify: serde_json::Value = serde_json::from_str(&ok(&["verify", file, "--json"])).unwrap();
    assert_eq!(verify["ok"], true);

    // A flipped byte in a superblock and the header: open fails as corrupt (exit code 4).
    let mut bytes = std::fs::read(&db).unwrap();
    bytes[20] ^= 0xFF;
    std::fs::write(&db, &bytes).unwrap();
    assert_eq!(artdb(&["verify", file]).status.code(), Some(4));
}

/// `stats` shows the leaf packs (session 13's user trial: a table of 10,240 keys in dense packs
/// printed "1 Node48, 0 leaves, 0 inline values", as if its keys were nowhere).
#[test]
fn stats_shows_packs() {
    let dir = TempDir::new("stats-packs");
    let db = dir.path().join("packs.artdb");
    let file = path_str(&db);
    let sorted = dir.path().join("dense.tsv");
    // Ten runs of 256 one-byte suffixes with 7-byte values: a bulk load builds dense packs.
    let lines: String = (0..2560u32)
        .map(|i| format!("\\xd0\\x{:02x}\\x{:02x}\tv{i:06}\n", i / 256, i % 256))
        .collect();
    std::fs::write(&sorted, lines).unwrap();
    ok(&["load", file, "--table", "d", path_str(&sorted)]);
    let stats: serde_json::Value = serde_json::from_str(&ok(&["stats", file, "--json"])).unwrap();
    let table = &stats["tables"][0];
    assert_eq!(table["keys"], 2560, "{stats}");
    assert_eq!(table["packs"], 10, "{stats}");
    assert_eq!(table["dense_packs"], 10, "{stats}");
    assert_eq!(table["wide_packs"], 0, "{stats}");
    let text = ok(&["stats", file]);
    assert!(text.contains("10 packs (10 dense, 0 wide)"), "{text}");
}
