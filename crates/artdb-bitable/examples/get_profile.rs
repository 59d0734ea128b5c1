//! A profiling harness for `Table::get` (for callgrind and for timing two builds against each
//! other; the official benchmark is `artdb-bench w3`). Only the lookups run inside `measured`, so
//! `valgrind --tool=callgrind --toggle-collect='*measured*'` counts exactly their instructions.
//!
//! Usage: `cargo run --release -p artdb-bitable --example get_profile -- N DIR [PASSES [LOOKUPS]]`
//! builds (or reuses) `DIR/get_profile-N.bt`: N pairs of 24-byte keys (a big-endian u64 spread
//! evenly over the u64 range, then 16 bytes derived from it, W3's key shape) and 8-byte values,
//! 4 KiB pages. Then PASSES passes (default 3) look up LOOKUPS (default 2,026,127, W3's count)
//! of its keys, spaced evenly and shuffled, and check every value; each pass prints its rate.
//! The first pass validates the pages it touches (their first use in the process).

use std::path::PathBuf;
use std::time::Instant;

use artdb_bitable::{Builder, Durability, Table};

const KEY_LEN: usize = 24;

#[path = "../../artdb-art/examples/common/splitmix.rs"]
mod common;
use common::splitmix;

fn key(i: u64, n: u64) -> [u8; KEY_LEN] {
    let spread = u64::MAX / n.max(1);
    let head = i * spread;
    let mut key = [0u8; KEY_LEN];
    key[..8].copy_from_slice(&head.to_be_bytes());
    key[8..16].copy_from_slice(&splitmix(i).to_be_bytes());
    key[16..].copy_from_slice(&i.to_be_bytes());
    key
}

fn value(i: u64) -> [u8; 8] {
    (i ^ 0x5A5A).to_le_bytes()
}

/// The phase under study: looks every probe up and checks its value.
#[inline(never)]
fn measured(table: &Table, probes: &[([u8; KEY_LEN], u64)]) -> u64 {
    let mut found = 0;
    for (key, i) in probes {
        let got = table.get(key).expect("lookup");
        assert_eq!(got, Some(&value(*i)[..]), "key {i}");
        found += 1;
    }
    found
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let dir = PathBuf::from(args.get(2).map_or("/tmp", String::as_str));
    let passes: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let lookups: u64 = args
        .get(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_026_127)
        .min(n);
    let path = dir.join(format!("get_profile-{n}.bt"));
    if Table::open(&path).map(|t| t.len()).ok() != Some(n) {
        let start = Instant::now();
        let mut builder = Builder::create(&path).expect("create");
        for i in 0..n {
            builder.append(&key(i, n), &value(i)).expect("append");
        }
        builder.finish(Durability::NonDurable).expect("finish");
        eprintln!("built {} in {:.2?}", path.display(), start.elapsed());
    }
    let table = Table::open(&path).expect("open");
    let step = (n / lookups.max(1)).max(1);
    let mut probes: Vec<([u8; KEY_LEN], u64)> = (0..lookups)
        .map(|j| {
            let i = (j * step).min(n - 1);
            (key(i, n), i)
        })
        .collect();
    for i in (1..probes.len()).rev() {
        probes.swap(i, splitmix(i as u64 ^ 77) as usize % (i + 1));
    }
    for pass in 0..passes {
        let start = Instant::now();
        let found = measured(&table, &probes);
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "pass {pass}: {found} lookups, {:.0} ns each, {:.0} per second",
            seconds * 1e9 / found as f64,
            found as f64 / seconds
        );
    }
}
