//! `artdb demo`: artdb's main job on a default database, end to end, with timings.
//!
//! Creates a database file, writes a few million generated orders (composite keys encoded with
//! `artdb-key`, as an index would store them) in one write batch with a progress bar,
//! checkpoints, closes and reopens it (open reads two superblocks and maps the file: nothing is
//! loaded), queries it every way a reader can (point gets checked against what was written,
//! batched gets, a prefix scan, seeks with 100 next), changes 1% of the keys behind a live
//! snapshot and checkpoints again (incremental: only changed paths are written), bulk-loads a
//! second table from sorted input, verifies every checksum and invariant, and prints what each
//! step did and how long it took. Keys come from a fixed seed, so runs are comparable.
//!
//! The demo owns its file: it replaces `--path` (default `artdb-demo.artdb`) if it exists and
//! leaves it behind for `artdb stats` / `artdb scan` to look at.

use crate::outln;
use artdb::{Db, Options};
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Options of `artdb demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of generated orders.
    #[arg(long, default_value_t = 3_000_000)]
    keys: u64,
    /// Seed of the key generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// The demo's database file (replaced if it exists).
    #[arg(long, default_value = "artdb-demo.artdb")]
    path: PathBuf,
    /// Hide the progress bar (for scripts and CI logs).
    #[arg(long)]
    quiet: bool,
}

type DemoResult = Result<(), Box<dyn std::error::Error>>;

const ORDERS: &str = "orders";
const CUSTOMERS: &str = "customers";

/// An order's key: (region u16, customer u32, order u64), order-preserving.
fn order_key(region: u16, customer: u32, order: u64) -> Vec<u8> {
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
    outln!(
        "artdb demo: {n} orders keyed by (region u16, customer u32, order u64) -> 8-byte values, \
         in {}",
        args.path.display()
    )?;
    if args.path.exists() {
        std::fs::remove_file(&args.path)?;
    }

    let started = Instant::now();
    let mut keys: Vec<Vec<u8>> = (0..n)
        .map(|order| order_key(rng.gen_range(0..16), rng.gen_range(0..100_000), order))
        .collect();
    keys.shuffle(&mut rng);
    step("generate keys", started.elapsed(), n)?;

    write_orders(&args, &keys)?;

    let started = Instant::now();
    let db = Db::open(&args.path, Options::default())?;
    step("open (superblocks + map)", started.elapsed(), 1)?;

    read_orders(&db, &keys, &mut rng)?;
    change_one_percent(&db, &keys)?;
    bulk_load_customers(&db)?;

    let started = Instant::now();
    let report = db.verify()?;
    step(
        "verify checksums + invariants",
        started.elapsed(),
        report.keys_checked,
    )?;
    if !report.is_ok() {
        return Err(format!("verify found problems: {:?}", report.problems).into());
    }
    outln!("  verify: ok ({} tables)", report.tables_checked)?;
    print_stats(&db)?;
    let started = Instant::now();
    db.close()?;
    step("close (checkpoint)", started.elapsed(), 1)?;
    Ok(())
}

/// Writes every order in one batch (random order), commits, checkpoints and closes.
fn write_orders(args: &Args, keys: &[Vec<u8>]) -> DemoResult {
    let n = keys.len() as u64;
    let started = Instant::now();
    let db = Db::create(&args.path, Options::default())?;
    step("create database file", started.elapsed(), 1)?;

    let bar = progress(n, args.quiet);
    let started = Instant::now();
    let mut batch = db.write()?;
    batch.create_table(ORDERS)?;
    for (index, key) in keys.iter().enumerate() {
        batch.insert(ORDERS, key, &(index as u64).to_le_bytes())?;
        if index % 65_536 == 0 {
            bar.set_position(index as u64);
        }
    }
    batch.commit()?;
    bar.finish_and_clear();
    step("insert + commit (random order)", started.elapsed(), n)?;

    let started = Instant::now();
    let checkpoint = db.checkpoint()?;
    step(
        "checkpoint (write + 2 fsyncs)",
        started.elapsed(),
        checkpoint.images_written,
    )?;
    outln!("  checkpoint wrote {} bytes", checkpoint.bytes_written)?;
    let started = Instant::now();
    db.close()?;
    step("close", started.elapsed(), 1)?;
    Ok(())
}

/// Point, batched, prefix and seek reads from a snapshot of the reopened file.
fn read_orders(db: &Db, keys: &[Vec<u8>], rng: &mut StdRng) -> DemoResult {
    let n = keys.len() as u64;
    let read = db.read();
    let orders = read.table(ORDERS)?;
    let started = Instant::now();
    for (index, key) in keys.iter().enumerate() {
        let value = orders.get(key)?.ok_or("a committed key is missing")?;
        if value != (index as u64).to_le_bytes() {
            return Err("a key returned the wrong value".into());
        }
    }
    step("get every key (checked; cold start)", started.elapsed(), n)?;

    let started = Instant::now();
    let mut out = Vec::new();
    let mut found = 0u64;
    for chunk in keys.chunks(32) {
        let refs: Vec<&[u8]> = chunk.iter().map(|k| k.as_slice()).collect();
        orders.get_many(&refs, &mut out)?;
        found += out.iter().filter(|v| v.is_some()).count() as u64;
    }
    if found != n {
        return Err("get_many missed keys".into());
    }
    step("get_many, batches of 32", started.elapsed(), n)?;

    let started = Instant::now();
    let region = order_key(7, 0, 0);
    let in_region = orders.prefix(&region[..2]).count();
    step(
        "prefix scan of one region",
        started.elapsed(),
        in_region as u64,
    )?;

    let started = Instant::now();
    let mut cursor = orders.cursor();
    let mut scanned = 0u64;
    for _ in 0..10_000 {
        let probe = order_key(rng.gen_range(0..16), rng.gen_range(0..100_000), 0);
        let mut valid = cursor.seek(&probe)?;
        for _ in 0..100 {
            if !valid {
                break;
            }
            scanned += 1;
            valid = cursor.next()?;
        }
    }
    step("10,000 seeks + 100 next", started.elapsed(), scanned)?;
    Ok(())
}

/// Removes 1% of the orders behind a live snapshot, checkpoints, and checks the snapshot.
fn change_one_percent(db: &Db, keys: &[Vec<u8>]) -> DemoResult {
    let n = keys.len() as u64;
    let before = db.read();
    let changed = keys.len() / 100;
    let started = Instant::now();
    let mut batch = db.write()?;
    for key in &keys[..changed] {
        batch.remove(ORDERS, key)?;
    }
    batch.commit()?;
    step(
        "remove 1% behind a snapshot",
        started.elapsed(),
        changed as u64,
    )?;
    let started = Instant::now();
    let checkpoint = db.checkpoint()?;
    step(
        "incremental checkpoint",
        started.elapsed(),
        checkpoint.images_written,
    )?;
    let file_bytes = db.stats()?.store.file_bytes;
    outln!(
        "  it wrote {} bytes: {:.1}% of the {} byte file",
        checkpoint.bytes_written,
        100.0 * checkpoint.bytes_written as f64 / file_bytes.max(1) as f64,
        file_bytes
    )?;
    let old = before.table(ORDERS)?;
    let now_len = db.read().table(ORDERS)?.len();
    outln!(
        "  the snapshot still holds {} orders; the database now {now_len}",
        old.len()
    )?;
    if old.len() != n || now_len != n - changed as u64 || old.get(&keys[0])?.is_none() {
        return Err("snapshot isolation broken".into());
    }
    Ok(())
}

/// Streams a sorted table straight to the file.
fn bulk_load_customers(db: &Db) -> DemoResult {
    let customers = 1_000_000u32;
    let mut batch = db.write()?;
    batch.create_table(CUSTOMERS)?;
    batch.commit()?;
    let started = Instant::now();
    let pairs = (0..customers).map(|id| (id.to_be_bytes(), u64::from(id).to_le_bytes()));
    let loaded = db.bulk_load(CUSTOMERS, pairs)?;
    step("bulk load 1M sorted customers", started.elapsed(), loaded)?;
    Ok(())
}

fn print_stats(db: &Db) -> DemoResult {
    let stats = db.stats()?;
    outln!(
        "\ndatabase: {} bytes, checkpoint generation {}",
        stats.store.file_bytes,
        stats.store.generation
    )?;
    for table in &stats.tables {
        let tree = db.table_tree_stats(&table.name)?;
        outln!(
            "  table {:<10} {:>9} keys  node4 {} node16 {} node48 {} node256 {} leaves {} inline {} persisted {}",
            table.name,
            table.keys,
            tree.node4,
            tree.node16,
            tree.node48,
            tree.node256,
            tree.leaves,
            tree.inline_values,
            tree.persisted
        )?;
    }
    Ok(())
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

fn step(what: &str, took: Duration, items: u64) -> std::io::Result<()> {
    let seconds = took.as_secs_f64();
    let rate = if seconds > 0.0 {
        items as f64 / seconds / 1e6
    } else {
        0.0
    };
    outln!("  {what:<36} {items:>10} items  {seconds:>8.3} s  {rate:>7.2} M/s")
}
