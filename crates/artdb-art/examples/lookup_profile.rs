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
//!
//! With `--features probe-ladder` and `LADDER=full,walk,header,window,empty,dep4,exact` (any
//! of them) in the environment, `get` and `missing` time the stages of a hinted pack lookup
//! instead (`artdb_art::ladder`; docs/journal/art.md, "Where a random lookup's time goes").

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
    #[cfg(feature = "probe-ladder")]
    if let Ok(stages) = std::env::var("LADDER") {
        ladder(&mut tree, &mode, probe, &value, &stages);
        return;
    }
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

/// The probe ladder (`--features probe-ladder`; `LADDER` a comma-separated list of `full`,
/// `walk`, `header`, `window`, `empty`, `depN` (N = 0..=10) and `exact`, the stages of
/// `artdb_art::ladder`): the stages alternate in 12 rounds over blocks of up to 1M lookups of
/// the one tree built, and each stage's median rate is printed. Only `full` and `exact` answer
/// correctly; the others time a lookup cut short. Before each block its lookups run once with
/// the whole probe (untimed), which gives `exact` its record addresses.
#[cfg(feature = "probe-ladder")]
fn ladder(tree: &mut Tree, mode: &str, probe: &[[u8; 8]], value: &[u8], stages: &str) {
    use artdb_art::ladder::{clear_record_oracle, set_record_oracle, set_stage, Stage};
    let stages: Vec<(String, Stage)> = stages
        .split(',')
        .map(|name| {
            let name = name.trim();
            let stage = match name {
                "full" => Stage::Full,
                "walk" => Stage::Walk,
                "header" => Stage::Header,
                "window" => Stage::Window,
                "empty" => Stage::EmptyBranch,
                "exact" => Stage::ExactRecord,
                _ => match name.strip_prefix("dep").and_then(|n| n.parse().ok()) {
                    Some(n) => Stage::HeaderDependent(n),
                    None => panic!("unknown ladder stage {name}"),
                },
            };
            (name.to_string(), stage)
        })
        .collect();
    let block = probe.len().min(1_000_000);
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); stages.len()];
    for round in 0..12 {
        let from = (round * block) % (probe.len() - block + 1);
        let part = &probe[from..from + block];
        // Where each lookup's record starts, give or take: 8 bytes before its value, so that
        // two lines from there hold a key part of up to 8 bytes and a value of up to 8.
        set_stage(Stage::Full);
        let records: Vec<usize> = part
            .iter()
            .map(|key| {
                tree.get(key)
                    .unwrap()
                    .map_or(0, |v| (v.as_ptr() as usize).saturating_sub(8))
            })
            .collect();
        for ((_, stage), rates) in stages.iter().zip(&mut rates) {
            set_stage(*stage);
            // SAFETY: `records` outlives the block and is cleared after it; one thread looks up.
            unsafe { set_record_oracle(&records) };
            let start = Instant::now();
            std::hint::black_box(measured(tree, mode, part, value));
            rates.push(block as f64 / start.elapsed().as_secs_f64() / 1e6);
            clear_record_oracle();
        }
    }
    set_stage(Stage::Full);
    for ((name, _), rates) in stages.iter().zip(&mut rates) {
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        println!(
            "{mode} {name}: median {median:.2} Mops/s ({:.1} ns a lookup), rounds {:.2}-{:.2}",
            1e3 / median,
            rates[0],
            rates[rates.len() - 1]
        );
    }
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
