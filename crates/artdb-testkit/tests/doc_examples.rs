//! Every type the engine's crate root exports has an example in its documentation, which
//! `cargo test` runs as a doctest (issue 43 item 1): a user reading the docs of `Table` or
//! `Transaction` sees it used, and an example that stops compiling fails the suite.
//!
//! Exempt, with the reason: types that are only figures or parts of an error, read through
//! the example of the type that holds them.

use std::fs;
use std::path::{Path, PathBuf};

const EXEMPT: &[(&str, &str)] = &[
    ("Result", "an alias of std's Result with artdb::Error"),
    (
        "CheckpointStats",
        "figures; read like DbStats, whose example shows it",
    ),
    (
        "Compaction",
        "figures; read like DbStats, whose example shows it",
    ),
    ("TableStats", "a part of DbStats, whose example reads it"),
    ("LogStats", "a part of DbStats, whose example reads it"),
    ("TxnStats", "a part of DbStats, whose example reads it"),
    (
        "FileRole",
        "a field of Error variants; Error's example matches on them",
    ),
    (
        "PoisonCause",
        "a field of Error::Poisoned; Error's example matches on errors",
    ),
];

fn engine_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            engine_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names of the types `lib.rs` re-exports (`pub use a::{B, C};`, `pub use a::B;`).
fn exported_names(lib: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = lib;
    while let Some(start) = rest.find("\npub use ") {
        let statement = &rest[start + "\npub use ".len()..];
        let end = statement.find(';').expect("a pub use ends with ;");
        let list = &statement[..end];
        let list = match list.find('{') {
            Some(open) => &list[open + 1..list.rfind('}').expect("a closed brace")],
            None => list.rsplit("::").next().unwrap_or(list),
        };
        for name in list.split(',') {
            let name = name.trim();
            if name.chars().next().is_some_and(char::is_uppercase) {
                names.push(name.to_string());
            }
        }
        rest = &statement[end..];
    }
    names
}

/// The doc comment above `pub struct|enum|trait|type NAME` in `text`, if it is defined there.
fn doc_of(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|line| {
        ["pub struct ", "pub enum ", "pub trait ", "pub type "]
            .iter()
            .any(|kind| {
                line.strip_prefix(kind).is_some_and(|rest| {
                    rest.starts_with(name)
                        && !rest[name.len()..]
                            .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
    })?;
    let mut doc = Vec::new();
    for line in lines[..at].iter().rev() {
        let line = line.trim_start();
        if line.starts_with("#[") {
            continue;
        }
        match line.strip_prefix("///") {
            Some(text) => doc.push(text),
            None => break,
        }
    }
    doc.reverse();
    Some(doc.join("\n"))
}

#[test]
fn every_exported_type_has_an_example() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../artdb/src");
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let names = exported_names(&lib);
    assert!(names.len() > 20, "{names:?}");
    let mut files = Vec::new();
    engine_sources(&src, &mut files);
    let texts: Vec<String> = files
        .iter()
        .map(|f| fs::read_to_string(f).unwrap())
        .collect();
    let mut missing = Vec::new();
    for name in &names {
        if EXEMPT.iter().any(|(exempt, _)| exempt == name) {
            continue;
        }
        let doc = texts
            .iter()
            .find_map(|text| doc_of(text, name))
            .unwrap_or_else(|| panic!("{name}: exported but defined nowhere in crates/artdb/src"));
        if !doc.contains("```") {
            missing.push(name.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "exported types without an example in their docs: {missing:?}"
    );
    for (exempt, _) in EXEMPT {
        assert!(
            names.iter().any(|name| name == exempt),
            "{exempt} is no longer exported"
        );
    }
}
