//! W1-style seek + 100 next and memory of three trees holding the same keys, in one run: built by
//! inserts in random order, by `bulk_build`, and by `bulk_persist` into a `MemoryNodeStore`
//! (the engine's bulk load and compaction rewrite stream through `bulk_persist`).
//!
//! Usage: `cargo run --release -p artdb-art --example bulk_vs_insert -- N VALUE_LEN [dense]`

use std::sync::Arc;
use std::time::Instant;

use artdb_art::{MemoryNodeStore, Tree};

#[path = "common/splitmix.rs"]
mod common;
use common::splitmix;

/// Seeks to each start and reads 100 pairs; returns Mkeys/s.
fn seek_rate(tree: &Tree, starts: &[[u8; 8]]) -> f64 {
    let start = Instant::now();
    let mut cursor = tree.cursor();
    let mut read = 0u64;
    for key in starts {
        let mut valid = cursor.seek(key).unwrap();
        let mut steps = 0;
        while valid && steps < 100 {
            read += cursor.value().len() as u64 + 1;
            steps += 1;
            valid = steps < 100 && cursor.next().unwrap();
        }
    }
    assert!(read > 0);
    starts.len() as f64 * 100.0 / start.elapsed().as_secs_f64() / 1e6
}

/// Looks every key up; returns Mops/s.
fn read_rate(tree: &Tree, keys: &[[u8; 8]]) -> f64 {
    let start = Instant::now();
    let mut found = 0u64;
    for key in keys {
        found += u64::from(tree.get(key).unwrap().is_some());
    }
    assert_eq!(found, keys.len() as u64);
    keys.len() as f64 / start.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let value_len: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
    let dense = args.get(3).is_some_and(|s| s == "dense");
    let mut keys: Vec<[u8; 8]> = (0..n)
        .map(|i| if dense { i } else { splitmix(i) }.to_be_bytes())
        .collect();
    let value = vec![7u8; value_len];
    let mut inserted = Tree::new();
    for key in &keys {
        inserted.insert(key, &value).unwrap();
    }
    let probe: Vec<[u8; 8]> = keys.iter().rev().step_by(7).copied().collect();
    let starts: Vec<[u8; 8]> = probe.iter().take(100_000).copied().collect();
    keys.sort_unstable();
    let bulk = Tree::bulk_build(keys.iter().map(|k| (k, &value))).unwrap();
    let mut store = MemoryNodeStore::new();
    let (root, len) = Tree::bulk_persist(keys.iter().map(|k| (k, &value)), &mut store).unwrap();
    let store = Arc::new(store);
    let persisted = Tree::open(root, len, store).unwrap();
    println!("n={n} value_len={value_len} dense={dense}");
    println!("tree        packs    bytes/key  seek+100 Mkeys/s  readrandom Mops/s");
    for (name, tree) in [
        ("inserted", &inserted),
        ("bulk_build", &bulk),
        ("bulk_persist", &persisted),
    ] {
        let stats = tree.stats();
        // Heap trees: heap image bytes; the persisted one: the bytes of its images (all
        // persisted, walked by stats as `persisted` nodes, so count the store's length).
        let bytes = if stats.persisted > 0 {
            persisted_bytes(tree)
        } else {
            stats.heap_bytes
        };
        println!(
            "{name:<12} {:>8} {:>10.2} {:>17.2} {:>18.2}",
            stats.packs,
            bytes as f64 / n as f64,
            seek_rate(tree, &starts),
            read_rate(tree, &probe)
        );
    }
}

/// Total bytes of the persisted images a tree reaches.
fn persisted_bytes(tree: &Tree) -> u64 {
    let mut offsets = Vec::new();
    tree.for_each_persisted(|offset| offsets.push(offset))
        .unwrap();
    let source = tree.source().unwrap();
    offsets
        .iter()
        .map(|&offset| image_len(source.node_image(offset).unwrap()) as u64)
        .sum()
}

/// Length of the image at the front of `bytes` (a node, leaf or pack), from its header.
fn image_len(bytes: &[u8]) -> usize {
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
    match bytes[0] {
        1 => 72 + tail(u16_at(4)),
        2 => 176 + tail(u16_at(4)),
        3 => 672 + tail(u16_at(4)),
        4 => 2080 + tail(u16_at(4)),
        5 => 8 + u16_at(2) + u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize,
        _ => {
            let (key_width, count, value_width) = (bytes[1] as usize, u16_at(2), bytes[4] as usize);
            let capacity = count + bytes[5] as usize;
            16 + u16_at(6) + capacity + capacity * (key_width - 1 + value_width)
        }
    }
}

fn tail(prefix_len: usize) -> usize {
    if prefix_len <= 8 {
        0
    } else {
        prefix_len.div_ceil(8) * 8
    }
}
