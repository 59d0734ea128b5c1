//! A profiling harness for point operations (for callgrind; the official benchmark is
//! `artdb-bench w1`). Only the phase under study runs inside `measured`, so
//! `valgrind --tool=callgrind --toggle-collect='*measured*'` counts exactly its instructions (and,
//! with `--cache-sim=yes`, its simulated cache misses).
//!
//! Usage: `cargo run --release -p artdb-art --example lookup_profile -- N MODE KEYS VALUE_LEN`
//! with MODE one of `get`, `get_many`, `missing`, `fill`, `seek` (seek + 100 next, W1's scan), `seekprev` (seek + 100 prev), KEYS `random`, `dense` or `narrow`
//! (random u64s with the top 2 bits clear: ~610 keys under each 2-byte prefix at 10M, the
//! shape of W1's composite keys under one column value) or `narrowB` (the top B bits clear),
//! and an
//! optional fifth argument LOOKUPS (default N): how many of the keys the measured phase looks
//! up, so that a large tree (10M keys: packs of ~150 entries, as in W1) can be profiled with a
//! short measured phase.

use std::time::Instant;

use artdb_art::Tree;

#[path = "common/splitmix.rs"]
mod common;
use common::splitmix;

/// The phase under study: returns a checksum so nothing is optimized away.
#[inline(never)]
fn measured(tree: &mut Tree, mode: &str, keys: &[[u8; 8]], value: &[u8]) -> u64 {
    let mut sum = 0u64;
    match mode {
        "fill" => {
            for key in keys {
                tree.insert(key, value).unwrap();
            }
        }
        "get" | "missing" => {
            for key in keys {
                sum += tree.get(key).unwrap().map_or(0, |v| v.len() as u64 + 1);
            }
        }
        "get_many" => {
            let mut out = Vec::new();
            for chunk in keys.chunks(32) {
                let refs: Vec<&[u8]> = chunk.iter().map(|k| &k[..]).collect();
                tree.get_many(&refs, &mut out).unwrap();
                sum += out
                    .iter()
                    .map(|v| v.map_or(0, |v| v.len() as u64 + 1))
                    .sum::<u64>();
            }
        }
        "seek" | "seekprev" => {
            // W1's scan: seek to a present key, then read 100 pairs in order, forwards (`seek`)
            // or backwards (`seekprev`); the rate printed is per seek.
            let forward = mode == "seek";
            let mut cursor = tree.cursor();
            for key in keys {
                let mut valid = cursor.seek(key).unwrap();
                let mut read = 0;
                while valid && read < 100 {
                    sum += cursor.value()[0] as u64;
                    read += 1;
                    valid = read < 100
                        && if forward {
                            cursor.next().unwrap()
                        } else {
                            cursor.prev().unwrap()
                        };
                }
            }
        }
        _ => panic!("unknown mode {mode}"),
    }
    sum
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mode = args.get(2).map_or("get", String::as_str).to_string();
    let dense = args.get(3).is_some_and(|s| s == "dense");
    // `narrow`: random u64s with the top 2 bits clear, so 10M keys put ~610 under each of the
    // 16,384 two-byte prefixes (the shape of W1's composite keys under a column value).
    let narrow = args.get(3).is_some_and(|s| s == "narrow");
    // `narrowB`: random u64s with the top B bits clear (e.g. `narrow4` at 600,000 keys: ~146
    // under each of the 4,096 two-byte prefixes, the pack shape of 10M random keys, at a scale
    // callgrind can run).
    let clear_bits: u32 = args
        .get(3)
        .and_then(|s| s.strip_prefix("narrow"))
        .and_then(|b| b.parse().ok())
        .unwrap_or(if narrow { 2 } else { 0 });
    // `spacedS`: every S-th integer from 0 (`spaced2`: 128 one-byte suffixes in each run of
    // 256, so ordinary packs of one-byte suffixes where `dense` makes dense packs).
    let spacing: u64 = args
        .get(3)
        .and_then(|s| s.strip_prefix("spaced"))
        .and_then(|b| b.parse().ok())
        .unwrap_or(1);
    let value_len: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(8);
    let lookups: usize = args
        .get(5)
        .and_then(|s| s.parse().ok())
        .unwrap_or(n as usize);
    let key = |i: u64| {
        if dense {
            i.to_be_bytes()
        } else if spacing > 1 {
            (i * spacing).to_be_bytes()
        } else if clear_bits > 0 {
            (splitmix(i) >> clear_bits).to_be_bytes()
        } else {
            splitmix(i).to_be_bytes()
        }
    };
    let mut order: Vec<u64> = (0..n).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, splitmix(i as u64 ^ 77) as usize % (i + 1));
    }
    let keys: Vec<[u8; 8]> = order.iter().map(|&i| key(i)).collect();
    let value = vec![7u8; value_len];
    let mut tree = Tree::new();
    if mode != "fill" {
        for k in &keys {
            tree.insert(k, &value).unwrap();
        }
    }
    let probe: Vec<[u8; 8]> = if mode == "missing" {
        (0..n)
            .map(|i| {
                if dense {
                    (n + i).to_be_bytes()
                } else if spacing > 1 {
                    (i * spacing + 1).to_be_bytes()
                } else if clear_bits > 0 {
                    (splitmix(i ^ 0x5555_0000_0000) >> clear_bits).to_be_bytes()
                } else {
                    splitmix(i ^ 0x5555_0000_0000).to_be_bytes()
                }
            })
            .collect()
    } else {
        let mut p = keys.clone();
        p.reverse();
        p
    };
    let probe = &probe[..lookups.min(probe.len())];
    let start = Instant::now();
    let cpu_start = thread_cpu_ticks();
    let sum = measured(&mut tree, &mode, probe, &value);
    let cpu = thread_cpu_ticks()
        .zip(cpu_start)
        .map(|(end, start)| end - start);
    let elapsed = start.elapsed();
    // CPU time (10 ms ticks) is the steadier figure on a shared machine: waiting for a core
    // does not count in it.
    let cpu_rate = cpu
        .filter(|&ticks| ticks > 0)
        .map_or(String::from("-"), |ticks| {
            format!("{:.2}", probe.len() as f64 / (ticks as f64 / 100.0) / 1e6)
        });
    println!(
        "{mode} n={n} dense={dense} value_len={value_len}: {:.2} Mops/s (sum {sum}), \
         {cpu_rate} Mops per CPU second",
        probe.len() as f64 / elapsed.as_secs_f64() / 1e6
    );
    // Resident memory now, and its peak (VmHWM: the whole run's, key arrays included).
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    for field in ["VmRSS", "VmHWM"] {
        if let Some(line) = status.lines().find(|l| l.starts_with(field)) {
            println!("{line}");
        }
    }
    let arena = artdb_art::arena_stats();
    let held = arena.held_bytes;
    println!(
        "image arena: {} chunks ({:.1} MiB), {:.1} MiB live in {} images ({:.1}% of the chunks)",
        arena.chunks,
        held as f64 / (1 << 20) as f64,
        arena.live_bytes as f64 / (1 << 20) as f64,
        arena.live_images,
        100.0 * arena.live_bytes as f64 / held.max(1) as f64
    );
}

/// User + system CPU time of this thread in clock ticks (Linux `/proc`; `None` elsewhere).
fn thread_cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}
