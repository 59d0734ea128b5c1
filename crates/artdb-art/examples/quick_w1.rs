//! A quick in-crate micro-check of W1-style figures while developing (the official benchmark is
//! `artdb-bench w1`). Usage: `cargo run --release -p artdb-art --example quick_w1 -- N VALUE_LEN [dense]`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

use artdb_art::Tree;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;

#[path = "common/splitmix.rs"]
mod common;
use common::splitmix;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let value_len: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
    let dense = args.get(3).is_some_and(|s| s == "dense");
    // `composite:K`: K-byte keys shaped like W1's composite index keys.
    let composite: Option<usize> = args
        .get(3)
        .and_then(|s| s.strip_prefix("composite:"))
        .and_then(|k| k.parse().ok());
    let profile_reads = args.get(4).is_some_and(|s| s == "profile-reads");
    let keys: Vec<Vec<u8>> = (0..n)
        .map(|i| match composite {
            Some(len) => {
                let r = splitmix(i);
                let mut key = ((r % 16) as u16).to_be_bytes().to_vec();
                let column = format!("{:0width$}", (r >> 8) % 1000, width = len - 10);
                key.extend_from_slice(column.as_bytes());
                key.extend_from_slice(&splitmix(i ^ 0xABCD).to_be_bytes());
                key
            }
            None if dense => i.to_be_bytes().to_vec(),
            None => splitmix(i).to_be_bytes().to_vec(),
        })
        .collect();
    let mut order: Vec<usize> = (0..n as usize).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, splitmix(i as u64 ^ 77) as usize % (i + 1));
    }
    let value = vec![7u8; value_len];

    let before = LIVE.load(Ordering::Relaxed);
    let start = Instant::now();
    let mut tree = Tree::new();
    for &i in &order {
        tree.insert(&keys[i], &value).unwrap();
    }
    let fill = start.elapsed();
    let bytes = LIVE.load(Ordering::Relaxed) - before;
    let start = Instant::now();
    let mut found = 0u64;
    for &i in &order {
        found += tree.get(&keys[i]).unwrap().map_or(0, |v| v.len() as u64);
    }
    let read = start.elapsed();
    assert_eq!(found, n * value_len as u64);
    if profile_reads {
        // Only reads from here on, for `perf record`.
        let start = Instant::now();
        for _ in 0..5 {
            for &i in &order {
                found += tree.get(&keys[i]).unwrap().map_or(0, |v| v.len() as u64);
            }
        }
        let rate = 5.0 * n as f64 / start.elapsed().as_secs_f64() / 1e6;
        println!("reads {rate:.2} Mops ({found})");
        return;
    }
    let refs: Vec<&[u8]> = order.iter().map(|&i| &keys[i][..]).collect();
    let start = Instant::now();
    let mut out = Vec::new();
    for chunk in refs.chunks(1024) {
        tree.get_many(chunk, &mut out).unwrap();
    }
    let batch = start.elapsed();
    let seeks = (n / 10).max(1);
    let start = Instant::now();
    let mut cursor = tree.cursor();
    let mut steps = 0u64;
    for i in 0..seeks {
        cursor.seek(&keys[order[i as usize]]).unwrap();
        for _ in 0..100 {
            if !cursor.next().unwrap() {
                break;
            }
            steps += 1;
        }
    }
    let seek = start.elapsed();

    // BTreeMap with its most favourable key type: [u8; 8] for 8-byte keys, Vec<u8> otherwise.
    let (map_fill, map_read, map_seek, map_bytes) = if composite.is_none() {
        let fixed: Vec<[u8; 8]> = keys
            .iter()
            .map(|k| k.as_slice().try_into().expect("8-byte keys"))
            .collect();
        map_figures(&fixed, &order, &value, seeks)
    } else {
        map_figures(&keys, &order, &value, seeks)
    };

    let mops = |d: std::time::Duration, ops: u64| ops as f64 / d.as_secs_f64() / 1e6;
    println!("n={n} value_len={value_len} dense={dense} composite={composite:?}");
    println!("artdb   fill {:.2} Mops  read {:.2} Mops  get_many {:.2} Mops  seek+100 {:.2} Mkeys/s  {:.1} bytes/key",
        mops(fill, n), mops(read, n), mops(batch, n), mops(seek, steps + seeks), bytes as f64 / n as f64);
    println!(
        "btree   fill {:.2} Mops  read {:.2} Mops  seek+100 {:.2} Mkeys/s  {:.1} bytes/key",
        mops(map_fill, n),
        mops(map_read, n),
        mops(map_seek, seeks * 101),
        map_bytes as f64 / n as f64
    );
    println!("{:?}", tree.stats());
}

fn map_figures<K: Ord + Clone>(
    keys: &[K],
    order: &[usize],
    value: &[u8],
    seeks: u64,
) -> (
    std::time::Duration,
    std::time::Duration,
    std::time::Duration,
    isize,
) {
    let mut map = BTreeMap::new();
    let before = LIVE.load(Ordering::Relaxed);
    let start = Instant::now();
    for &i in order {
        map.insert(keys[i].clone(), value.to_vec());
    }
    let fill = start.elapsed();
    let bytes = LIVE.load(Ordering::Relaxed) - before;
    let start = Instant::now();
    let mut found = 0u64;
    for &i in order {
        found += map.get(&keys[i]).map_or(0, |v| v.len() as u64);
    }
    let read = start.elapsed();
    assert_eq!(found, (order.len() * value.len()) as u64);
    let start = Instant::now();
    for i in 0..seeks {
        for _ in map.range(keys[order[i as usize]].clone()..).take(101) {}
    }
    (fill, read, start.elapsed(), bytes)
}
