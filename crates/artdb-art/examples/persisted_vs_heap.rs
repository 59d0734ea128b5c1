//! Point lookups in a tree read from its persisted images against the same tree in the heap,
//! side by side in one process: `bulk_build` (heap) and `bulk_persist` into a `MemoryNodeStore`
//! of the same sorted keys, then rounds that alternate a pass of each (the order swapped every
//! round), each pass looking up the same random sample of present keys and checking every
//! value. Prints each round's ns per lookup and the median of the rounds' ratios.
//!
//! Usage: `cargo run --release -p artdb-art --example persisted_vs_heap -- N [dense] [ROUNDS]`

use std::sync::Arc;
use std::time::Instant;

use artdb_art::{MemoryNodeStore, Tree};

#[path = "common/splitmix.rs"]
mod common;
use common::splitmix;

/// One pass: ns per lookup (not inlined: `--toggle-collect=*pass*` counts it).
#[inline(never)]
fn pass(tree: &Tree, probe: &[[u8; 8]], value: &[u8]) -> f64 {
    let start = Instant::now();
    let mut found = 0usize;
    for key in probe {
        if tree.get(key).expect("lookup") == Some(value) {
            found += 1;
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / probe.len() as f64;
    assert_eq!(found, probe.len(), "every value found and equal");
    ns
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let dense = args.get(2).is_some_and(|s| s == "dense");
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(9);
    let value = [7u8; 8];
    let mut keys: Vec<[u8; 8]> = (0..n)
        .map(|i| if dense { i } else { splitmix(i) }.to_be_bytes())
        .collect();
    // A sample of the keys, shuffled.
    let mut probe: Vec<[u8; 8]> = keys.iter().step_by(7).copied().collect();
    for i in (1..probe.len()).rev() {
        let j = (splitmix(i as u64 ^ 0x5555) % (i as u64 + 1)) as usize;
        probe.swap(i, j);
    }
    keys.sort_unstable();
    let heap = Tree::bulk_build(keys.iter().map(|k| (k, &value[..]))).expect("bulk_build");
    let mut store = MemoryNodeStore::new();
    let (root, len) =
        Tree::bulk_persist(keys.iter().map(|k| (k, &value[..])), &mut store).expect("persist");
    let persisted = Tree::open(root, len, Arc::new(store)).expect("open");
    drop(keys);
    println!("n={n} dense={dense} lookups per pass={}", probe.len());
    // Warm both.
    pass(&heap, &probe, &value);
    pass(&persisted, &probe, &value);
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let (p, h) = if round % 2 == 0 {
            let p = pass(&persisted, &probe, &value);
            (p, pass(&heap, &probe, &value))
        } else {
            let h = pass(&heap, &probe, &value);
            (pass(&persisted, &probe, &value), h)
        };
        println!(
            "round {}: persisted {p:.1} ns, heap {h:.1} ns, ratio {:.2}",
            round + 1,
            p / h
        );
        ratios.push(p / h);
    }
    println!("median persisted / heap: {:.2}x", median(&mut ratios));
}
