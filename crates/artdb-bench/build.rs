//! Build script: the versions of the peers that this build links, read from the workspace's
//! `Cargo.lock`, written as constants for `src/versions.rs`. Reading the lock file (rather than
//! keeping constants by hand beside `Cargo.toml`) means a peer's upgrade changes what every
//! workload prints without anyone remembering to: the figures and the version they were measured
//! with cannot drift apart. A peer missing from the lock file stops the build.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The crates whose versions the workloads report, each with the crate that depends on it (whose
/// entry in the lock file names the version when several are locked).
const PEERS: &[(&str, &str)] = &[
    ("redb", "artdb-bench"),
    ("heed", "artdb-bench"),
    ("lmdb-master-sys", "heed"),
    ("rusqlite", "artdb-bench"),
    ("libsqlite3-sys", "rusqlite"),
    ("fjall", "artdb-bench"),
    ("lsm-tree", "fjall"),
    ("sled", "artdb-bench"),
    ("rocksdb", "artdb-bench"),
    ("openraft", "artdb-raft"),
    ("blart", "artdb-bench"),
    ("congee", "artdb-bench"),
    ("crossbeam-skiplist", "artdb-bench"),
    ("fst", "artdb-bench"),
    ("roaring", "artdb-bench"),
];

/// One `[[package]]` entry of the lock file.
struct Package {
    name: String,
    version: String,
    /// Entries of its `dependencies` list: `name` or `name version` when several are locked.
    dependencies: Vec<String>,
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let lock = manifest.join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(&lock).unwrap_or_else(|error| {
        panic!(
            "artdb-bench reads its peers' versions from {}: {error}",
            lock.display()
        )
    });
    let packages = parse(&text);
    let mut resolved: BTreeMap<&str, String> = BTreeMap::new();
    for (name, parent) in PEERS {
        let version = resolve(&packages, name, parent, &resolved);
        resolved.insert(name, version);
    }
    let mut out = String::from(
        "/// `(crate, version)` of every peer, as locked in the workspace's `Cargo.lock`.\n\
         pub const LOCKED: &[(&str, &str)] = &[\n",
    );
    for (name, version) in &resolved {
        writeln!(out, "    ({name:?}, {version:?}),").expect("writing to a String");
    }
    out.push_str("];\n");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let rustc_version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map_or_else(|| "rustc (unknown)".to_string(), |s| s.trim().to_string());
    writeln!(
        out,
        "/// The compiler that built this binary (its standard library is the W1 baseline).\n\
         pub const RUSTC: &str = {rustc_version:?};"
    )
    .expect("writing to a String");
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    std::fs::write(dest.join("locked_versions.rs"), out).expect("writing OUT_DIR");
}

fn parse(text: &str) -> Vec<Package> {
    let mut packages = Vec::new();
    for block in text.split("[[package]]").skip(1) {
        let mut package = Package {
            name: String::new(),
            version: String::new(),
            dependencies: Vec::new(),
        };
        let mut in_dependencies = false;
        for line in block.lines().map(str::trim) {
            if in_dependencies {
                if line.starts_with(']') {
                    in_dependencies = false;
                } else if let Some(entry) = quoted(line) {
                    package.dependencies.push(entry.to_string());
                }
            } else if let Some(rest) = line.strip_prefix("name = ") {
                package.name = quoted(rest).unwrap_or_default().to_string();
            } else if let Some(rest) = line.strip_prefix("version = ") {
                package.version = quoted(rest).unwrap_or_default().to_string();
            } else if line.starts_with("dependencies = [") {
                in_dependencies = true;
            }
        }
        packages.push(package);
    }
    packages
}

/// The text between the first pair of double quotes of `line`.
fn quoted(line: &str) -> Option<&str> {
    let start = line.find('"')? + 1;
    let end = start + line[start..].find('"')?;
    Some(&line[start..end])
}

/// The locked version of `name` as `parent` depends on it.
fn resolve(
    packages: &[Package],
    name: &str,
    parent: &str,
    resolved: &BTreeMap<&str, String>,
) -> String {
    let versions: Vec<&str> = packages
        .iter()
        .filter(|p| p.name == name)
        .map(|p| p.version.as_str())
        .collect();
    if versions.is_empty() {
        panic!("Cargo.lock has no package {name:?}: update PEERS in crates/artdb-bench/build.rs");
    }
    if let [only] = versions.as_slice() {
        return only.to_string();
    }
    let parent_package = packages
        .iter()
        .find(|p| p.name == parent && resolved.get(parent).is_none_or(|v| *v == p.version))
        .unwrap_or_else(|| panic!("Cargo.lock has no package {parent:?} (the parent of {name})"));
    parent_package
        .dependencies
        .iter()
        .find_map(|entry| {
            let (dep, version) = entry.split_once(' ')?;
            (dep == name).then(|| version.to_string())
        })
        .unwrap_or_else(|| {
            panic!(
                "Cargo.lock locks {name} at {versions:?}, and {parent} names none of them: \
                 update PEERS in crates/artdb-bench/build.rs"
            )
        })
}
