//! `artdb demo`: artdb's main job on a default data set, end to end, with timings.
//!
//! Builds a tree of a few million generated keys (composite keys encoded with `artdb-key`, as
//! an index would store them) with a progress bar, then queries it every way the tree offers,
//! takes a snapshot and writes behind it, checks every invariant, and prints what each step did
//! and how long it took. The keys are generated from a fixed seed, so runs are comparable.

use artdb_art::Tree;
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

/// Options of `artdb demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of generated keys.
    #[arg(long, default_value_t = 3_000_000)]
    keys: u64,
    /// Seed of the key generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Hide the progress bar (for scripts and CI logs).
    #[arg(long)]
    quiet: bool,
}

type DemoResult = Result<(), Box<dyn std::error::Error>>;

/// One generated record: an order-preserving composite key and an 8-byte value.
fn record_key(region: u16, customer: u32, order: u64) -> Vec<u8> {
    artdb_key::KeyBuilder::new()
        .u16(region)
        .u32(customer)
        .u64(order)
        .finish()
}

/// Runs the demo.
pub fn run(args: Args) -> DemoResult {
    let n = args.keys;
    let mut rng = StdRng::seed_from_u64(args.seed);
    println!(
        "artdb demo: {n} orders keyed by (region u16, customer u32, order u64), 8-byte values"
    );

    let started = Instant::now();
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|order| record_key(rng.gen_range(0..16), rng.gen_range(0..100_000), order))
        .collect();
    keys.shuffle(&mut rng);
    step("generate keys", started.elapsed(), n);

    let bar = progress(n, args.quiet);
    let started = Instant::now();
    let mut tree = Tree::new();
    for (index, key) in keys.iter().enumerate() {
        tree.insert(key, &(index as u64).to_le_bytes())?;
        if index % 65_536 == 0 {
            bar.set_position(index as u64);
        }
    }
    bar.finish_and_clear();
    step("insert (random order)", started.elapsed(), n);

    let started = Instant::now();
    for (index, key) in keys.iter().enumerate() {
        let value = tree.get(key)?.ok_or("a key just inserted is missing")?;
        if value != (index as u64).to_le_bytes() {
            return Err("a key returned the wrong value".into());
        }
    }
    step("get every key (checked)", started.elapsed(), n);

    let started = Instant::now();
    let mut batch_out = Vec::new();
    let mut found = 0u64;
    for chunk in keys.chunks(32) {
        let refs: Vec<&[u8]> = chunk.iter().map(|k| k.as_slice()).collect();
        tree.get_many(&refs, &mut batch_out)?;
        found += batch_out.iter().filter(|v| v.is_some()).count() as u64;
    }
    if found != n {
        return Err("get_many missed keys".into());
    }
    step("get_many, batches of 32", started.elapsed(), n);

    let started = Instant::now();
    let region = record_key(7, 0, 0);
    let region_prefix = &region[..3];
    let in_region = tree.prefix(region_prefix).count();
    step(
        "prefix scan of one region",
        started.elapsed(),
        in_region as u64,
    );

    let started = Instant::now();
    let mut cursor = tree.cursor();
    let mut scanned = 0u64;
    for _ in 0..10_000 {
        let probe = record_key(rng.gen_range(0..16), rng.gen_range(0..100_000), 0);
        let mut valid = cursor.seek(&probe)?;
        for _ in 0..100 {
            if !valid {
                break;
            }
            scanned += 1;
            valid = cursor.next()?;
        }
    }
    step("10,000 seeks + 100 next", started.elapsed(), scanned);

    let started = Instant::now();
    let snapshot = tree.snapshot();
    let removed = keys.len() / 2;
    for key in &keys[..removed] {
        tree.remove(key)?;
    }
    step(
        "snapshot, then remove half",
        started.elapsed(),
        removed as u64,
    );
    println!(
        "  the snapshot still holds {} keys; the tree now holds {}",
        snapshot.len(),
        tree.len()
    );
    if snapshot.len() != n || tree.len() != n - removed as u64 {
        return Err("snapshot isolation broken".into());
    }
    drop(snapshot);

    let started = Instant::now();
    let verdict = tree.verify();
    step("verify every invariant", started.elapsed(), tree.len());
    match verdict {
        Ok(()) => println!("  verify: ok"),
        Err(violations) => return Err(format!("verify found {violations:?}").into()),
    }
    print_stats(&tree.stats());
    Ok(())
}

fn print_stats(stats: &artdb_art::Stats) {
    println!("\ntree stats:");
    println!("  keys            {:>12}", stats.keys);
    println!("  node4           {:>12}", stats.node4);
    println!("  node16          {:>12}", stats.node16);
    println!("  node48          {:>12}", stats.node48);
    println!("  node256         {:>12}", stats.node256);
    println!("  leaves          {:>12}", stats.leaves);
    println!("  inline values   {:>12}", stats.inline_values);
    let per_key = stats.heap_bytes as f64 / stats.keys.max(1) as f64;
    println!(
        "  heap bytes      {:>12}  ({per_key:.1} bytes/key)",
        stats.heap_bytes
    );
    let depths: Vec<String> = stats
        .depth_histogram
        .iter()
        .enumerate()
        .filter(|(_, count)| **count > 0)
        .map(|(depth, count)| format!("{depth}:{count}"))
        .collect();
    println!("  depth histogram {}", depths.join(" "));
}

fn progress(total: u64, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("  inserting {bar:40} {pos}/{len} {per_sec}") {
        bar.set_style(style);
    }
    bar
}

fn step(what: &str, took: Duration, items: u64) {
    let seconds = took.as_secs_f64();
    let rate = if seconds > 0.0 {
        items as f64 / seconds / 1e6
    } else {
        0.0
    };
    println!("  {what:<32} {items:>10} items  {seconds:>8.3} s  {rate:>7.2} M/s");
}
