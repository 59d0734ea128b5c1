//! versions: the one place that says which release of each peer a run measured.
//!
//! The crate versions come from the workspace's `Cargo.lock`, read by `build.rs` at build time
//! (so they cannot go stale: upgrading a peer changes them); the versions of the C libraries
//! that two peers bundle (LMDB, SQLite) are asked of the libraries themselves at run time. Every
//! workload prints [`print_header`] first and puts [`json`] in its JSON as `"peers"`; the
//! `versions` subcommand prints them all.

use crate::kv::System;

include!(concat!(env!("OUT_DIR"), "/locked_versions.rs"));

/// The locked version of the crate `name` (one of build.rs's `PEERS`).
pub fn locked(name: &str) -> &'static str {
    let found = LOCKED.iter().find(|(crate_name, _)| *crate_name == name);
    debug_assert!(found.is_some(), "{name} is not in build.rs's PEERS");
    found.map_or("?", |(_, version)| version)
}

/// The SQLite library that rusqlite bundles (its own version string).
fn sqlite_library() -> &'static str {
    rusqlite::version()
}

/// The LMDB library that heed bundles (its own version string, e.g. `LMDB 0.9.90: (...)`).
fn lmdb_library() -> String {
    let version = heed::lmdb_version();
    format!("{}.{}.{}", version.major, version.minor, version.patch)
}

/// One system of W5, W6 and W6R with its version (and the library beneath the crate, if any).
pub fn system(system: System) -> String {
    match system {
        System::Artdb => format!("artdb {} (this workspace)", env!("CARGO_PKG_VERSION")),
        System::Redb => format!("redb {}", locked("redb")),
        System::Lmdb => format!(
            "lmdb {} (heed {}, lmdb-master-sys {})",
            lmdb_library(),
            locked("heed"),
            locked("lmdb-master-sys")
        ),
        System::Sqlite => format!(
            "sqlite {} (rusqlite {}, bundled)",
            sqlite_library(),
            locked("rusqlite")
        ),
        System::Fjall => format!(
            "fjall {} (lsm-tree {})",
            locked("fjall"),
            locked("lsm-tree")
        ),
        System::Sled => format!("sled {}", locked("sled")),
        System::Rocksdb => format!("rocksdb crate {}", locked("rocksdb")),
    }
}

/// Prints the header line of a workload over the systems of [`crate::kv`].
pub fn print_header(systems: &[System]) {
    let list: Vec<String> = systems.iter().map(|s| system(*s)).collect();
    println!("versions: {}", list.join("; "));
}

/// Prints the header line of a workload over in-memory structures and files (W1, W3, W4):
/// the named crates' versions and the compiler whose standard library is the baseline.
pub fn print_crates_header(crates: &[&str]) {
    let mut list: Vec<String> = crates
        .iter()
        .map(|name| format!("{name} {}", locked(name)))
        .collect();
    list.push(RUSTC.to_string());
    println!("versions: {}", list.join("; "));
}

/// Every peer's version, for the JSON of any workload.
pub fn json() -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for (name, version) in LOCKED {
        map.insert((*name).to_string(), serde_json::json!(version));
    }
    map.insert("lmdb_library".into(), serde_json::json!(lmdb_library()));
    map.insert("sqlite_library".into(), serde_json::json!(sqlite_library()));
    map.insert("rustc".into(), serde_json::json!(RUSTC));
    serde_json::Value::Object(map)
}

/// The `versions` subcommand: every peer, one a line.
pub fn print_all() {
    for system in System::all() {
        println!("{}", self::system(system));
    }
    if !System::all().contains(&System::Rocksdb) {
        println!(
            "{} (not built: feature `rocksdb`)",
            self::system(System::Rocksdb)
        );
    }
    for name in ["blart", "congee", "crossbeam-skiplist", "fst", "roaring"] {
        println!("{name} {}", locked(name));
    }
    println!("{RUSTC}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_has_a_locked_version() {
        for name in [
            "redb",
            "heed",
            "lmdb-master-sys",
            "rusqlite",
            "libsqlite3-sys",
            "fjall",
            "lsm-tree",
            "sled",
            "rocksdb",
            "blart",
            "congee",
            "crossbeam-skiplist",
            "fst",
            "roaring",
        ] {
            let version = locked(name);
            assert!(
                version.split('.').count() >= 3 && version.chars().next().unwrap().is_ascii_digit(),
                "{name}: {version:?}"
            );
        }
    }

    #[test]
    fn the_bundled_libraries_report_their_versions() {
        assert!(sqlite_library().starts_with('3'), "{}", sqlite_library());
        assert!(lmdb_library().starts_with("0."), "{}", lmdb_library());
    }
}
