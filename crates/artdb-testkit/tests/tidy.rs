//! Tidy: the rules of `shared/STYLE.md` that clippy cannot see, checked as a test over the
//! workspace's sources.
//!
//! - layering: each crate depends only on the artdb crates below it (DESIGN.md's layer diagram);
//!   `artdb-bitable` and `artdb-key` depend on no other artdb crate;
//! - the engine's module layers: `io`, `store`, `wal` and `txn` never name `db` (the public API
//!   above them), nor the items the crate root re-exports from it;
//! - the engine's I/O seam: inside `crates/artdb/src`, only the `io` module opens, syncs or maps
//!   a file;
//! - no `#[ignore]` without a reason string;
//! - ASCII-only Rust sources (so diffs, greps and terminals agree on every byte);
//! - every library source file opens with a `//!` header.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn all_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&workspace_root().join("crates"), &mut files);
    files.sort();
    files
}

/// The artdb crates each crate may depend on (normal dependencies; dev-dependencies are free).
const ALLOWED_LAYERS: &[(&str, &[&str])] = &[
    ("artdb-key", &[]),
    ("artdb-art", &["artdb-key"]),
    ("artdb-bitable", &[]),
    ("artdb-tidstore", &["artdb-art", "artdb-key"]),
    ("artdb", &["artdb-art", "artdb-key", "artdb-bitable"]),
    ("artdb-testkit", &["artdb", "artdb-art", "artdb-key"]),
];

#[test]
fn crates_depend_only_on_lower_layers() {
    let mut problems = Vec::new();
    for (crate_name, allowed) in ALLOWED_LAYERS {
        let manifest = workspace_root()
            .join("crates")
            .join(crate_name)
            .join("Cargo.toml");
        let text = fs::read_to_string(&manifest).unwrap_or_default();
        let mut section = String::new();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line.to_string();
                continue;
            }
            if section != "[dependencies]" {
                continue;
            }
            let dep = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
            if dep.starts_with("artdb") && !allowed.contains(&dep) {
                problems.push(format!(
                    "{crate_name} depends on {dep}, a layer it must not name"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "layering violations:\n{}",
        problems.join("\n")
    );
}

/// The engine's modules below `db` (DESIGN.md: db over txn over wal and store over io).
const ENGINE_LOWER_MODULES: &[&str] = &["io", "store", "wal", "txn"];

/// Paths by which a lower module would name `db` (directly or through the crate root's
/// re-exports of it).
const NAMES_OF_DB: &[&str] = &[
    "crate::db",
    "super::db",
    "crate::Db",
    "crate::ReadTxn",
    "crate::WriteTxn",
    "crate::Options",
    "crate::Table",
    "crate::DbStats",
];

#[test]
fn engine_modules_below_db_never_name_it() {
    let engine = workspace_root().join("crates/artdb/src");
    let mut problems = Vec::new();
    for module in ENGINE_LOWER_MODULES {
        let mut files = Vec::new();
        rust_files(&engine.join(module), &mut files);
        let single = engine.join(format!("{module}.rs"));
        if single.exists() {
            files.push(single);
        }
        for file in files {
            let text = fs::read_to_string(&file).unwrap_or_default();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for name in NAMES_OF_DB {
                    let hit = code.match_indices(name).any(|(at, _)| {
                        // A longer identifier (`crate::Dbx`) is another name.
                        let next = code[at + name.len()..].chars().next();
                        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    });
                    if hit {
                        problems.push(format!(
                            "{}:{}: names `{name}`, a higher layer",
                            file.display(),
                            number + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "engine layering violations:\n{}",
        problems.join("\n")
    );
}

#[test]
fn only_the_io_module_touches_files() {
    let engine = workspace_root().join("crates/artdb/src");
    let mut files = Vec::new();
    rust_files(&engine, &mut files);
    let forbidden = [
        "File::open",
        "File::create",
        "OpenOptions",
        "sync_all",
        "sync_data",
        "Mmap",
    ];
    let mut problems = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&engine)
            .unwrap_or(&file)
            .to_string_lossy()
            .to_string();
        if relative == "io.rs" || relative.starts_with("io/") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap_or_default();
        for word in forbidden {
            if text.contains(word) {
                problems.push(format!(
                    "crates/artdb/src/{relative} uses {word} outside io"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "I/O outside the io seam:\n{}",
        problems.join("\n")
    );
}

#[test]
fn ignored_tests_say_why() {
    let mut problems = Vec::new();
    for file in all_sources() {
        let text = fs::read_to_string(&file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.starts_with("#[ignore]") {
                problems.push(format!(
                    "{}:{}: #[ignore] without a reason",
                    file.display(),
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn sources_are_ascii() {
    let mut problems = Vec::new();
    for file in all_sources() {
        let text = fs::read_to_string(&file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            if !line.is_ascii() {
                problems.push(format!(
                    "{}:{}: non-ASCII character",
                    file.display(),
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn library_files_open_with_a_header() {
    let mut problems = Vec::new();
    for file in all_sources() {
        let path = file.to_string_lossy();
        if !path.contains("/src/") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap_or_default();
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if !first.starts_with("//!") {
            problems.push(format!("{}: no `//!` header", file.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
