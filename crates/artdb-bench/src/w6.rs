//! W6: embedded stores head to head in redb's published setup (`shared/BENCHMARKS.md`,
//! W6): keys of 24 random bytes, values of 150 random bytes, every commit durable, one
//! system at a time in one run, each on its own directory under `--dir`.
//!
//! Pair `i` is a pure function of `i` (a splitmix64 stream), so reads regenerate the key and the
//! expected value instead of holding N pairs in memory; every read checks the value's first 8
//! bytes. With E = N + individual + batch pairs written in all, the ops are (seconds unless
//! named otherwise):
//! - `bulk_load`: N pairs in one transaction (random key order);
//! - `individual_writes`: 1,000 (quick 100) transactions of one pair each;
//! - `batch_writes`: 100 (quick 10) transactions of 1,000 pairs;
//! - `random_reads`: min(E, 1M) reads of uniformly chosen written keys in one snapshot;
//! - `random_range_reads`: half as many lower-bound seeks at a written key, then 10 pairs;
//! - `random_reads_t2`: the `random_reads` count split over 2 threads (wall time);
//! - `open`: close, then open again and read one key (median of 5; SQLite opens lazily, so the
//!   first read is part of every system's figure);
//! - `removals`: E/2 keys removed in one transaction;
//! - `file_bytes`: the directory's bytes after the removals; `compacted_bytes`: after each
//!   system's compaction (LMDB: the size of its compacting copy; sled has no compaction call, so
//!   its figure is its size after a flush).
//!
//! Prints redb's layout (a row per op, a column per system) and draws it as a PNG (`--png`).
//! JSON: `{"workload":"w6","n":N,"results":[{"system","op","seconds"|"bytes"}],"notes":[...],
//! "peers":{crate:version}}` (each note opens with its system's version; peers:
//! [`crate::versions::json`]).

use crate::chart::{self, Panel};
use crate::kv::{self, Kv, Res, System};
use crate::layout::{self, Figure};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of the W6 workload.
#[derive(clap::Args)]
pub struct Args {
    /// Run at the quick (CI smoke) scale: N = 100,000, 100 individual writes, 10 batches.
    #[arg(long)]
    quick: bool,
    /// Pairs of the bulk load (default 5,000,000; quick 100,000).
    #[arg(long)]
    n: Option<u64>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the PNG chart here.
    #[arg(long, default_value = "target/w6.png")]
    png: PathBuf,
    /// Directory for the databases (each system's is deleted after its run).
    #[arg(long, default_value = "target/w6-data")]
    dir: PathBuf,
    /// Systems to run, comma-separated (default: artdb,redb,lmdb,sled,fjall,sqlite and rocksdb
    /// when built with the `rocksdb` feature).
    #[arg(long)]
    systems: Option<String>,
}

const KEY_BYTES: usize = 24;
const VALUE_BYTES: usize = 150;
const BATCH: u64 = 1_000;
const RANGE_LEN: usize = 10;
const MAX_READS: u64 = 1_000_000;
const OPENS: usize = 5;
const CACHE_BYTES: u64 = 4 << 30;

/// The ops in redb's table order, and their JSON field.
const OPS: [(&str, &str); 10] = [
    ("bulk_load", "seconds"),
    ("individual_writes", "seconds"),
    ("batch_writes", "seconds"),
    ("random_reads", "seconds"),
    ("random_range_reads", "seconds"),
    ("random_reads_t2", "seconds"),
    ("removals", "seconds"),
    ("file_bytes", "bytes"),
    ("compacted_bytes", "bytes"),
    ("open", "seconds"),
];

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

pub(crate) fn pair_key(i: u64, out: &mut Vec<u8>) {
    out.clear();
    for part in 0..3u64 {
        out.extend_from_slice(&mix(i.wrapping_mul(4).wrapping_add(part)).to_be_bytes());
    }
    debug_assert_eq!(out.len(), KEY_BYTES);
}

pub(crate) fn value_word(i: u64) -> u64 {
    mix(i ^ 0x5555_0000_aaaa_ffff)
}

pub(crate) fn pair_value(i: u64, out: &mut Vec<u8>) {
    out.clear();
    let mut x = value_word(i);
    out.extend_from_slice(&x.to_le_bytes());
    while out.len() < VALUE_BYTES {
        x = mix(x);
        let take = (VALUE_BYTES - out.len()).min(8);
        out.extend_from_slice(&x.to_le_bytes()[..take]);
    }
}

struct Scale {
    n: u64,
    individual: u64,
    batches: u64,
}

impl Scale {
    fn written(&self) -> u64 {
        self.n + self.individual + self.batches * BATCH
    }

    fn reads(&self) -> u64 {
        self.written().min(MAX_READS)
    }
}

/// Runs W6.
pub fn run(args: Args) -> Res<()> {
    let n = args
        .n
        .unwrap_or(if args.quick { 100_000 } else { 5_000_000 });
    let scale = Scale {
        n,
        individual: if args.quick { 100 } else { 1_000 },
        batches: if args.quick { 10 } else { 100 },
    };
    let systems = match &args.systems {
        Some(list) => System::parse_list(list)?,
        None => {
            let mut all = vec![
                System::Artdb,
                System::Redb,
                System::Lmdb,
                System::Sled,
                System::Fjall,
                System::Sqlite,
            ];
            if System::all().contains(&System::Rocksdb) {
                all.push(System::Rocksdb);
            }
            all
        }
    };
    std::fs::create_dir_all(&args.dir)?;
    println!(
        "W6: {n} pairs of {KEY_BYTES}-byte random keys and {VALUE_BYTES}-byte random values; \
         {} individual writes, {} batches of {BATCH}, {} reads; files in {}",
        scale.individual,
        scale.batches,
        scale.reads(),
        args.dir.display()
    );
    crate::versions::print_header(&systems);
    let mut figures = Vec::new();
    let mut notes = Vec::new();
    for system in &systems {
        let dir = args.dir.join(system.name());
        let _ = std::fs::remove_dir_all(&dir);
        let result = run_system(*system, &dir, &scale, &mut figures);
        let _ = std::fs::remove_dir_all(&dir);
        result.map_err(|error| format!("{}: {error}", system.name()))?;
        notes.push(system.note());
    }
    let names: Vec<&str> = systems.iter().map(|s| s.name()).collect();
    layout::print(&figures, &names);
    for note in &notes {
        println!("  note: {note}");
    }
    let panels: Vec<Panel> = OPS
        .iter()
        .map(|(op, _)| Panel {
            title: op.to_string(),
            bars: figures
                .iter()
                .filter(|f| f.op == *op)
                .map(|f| {
                    (
                        f.system.clone(),
                        f.value,
                        layout::format_value(f.value, &f.unit),
                    )
                })
                .collect(),
        })
        .collect();
    let title = format!("W6: {n} pairs, 24-byte keys, 150-byte values (shorter is better)");
    let mut lines = vec![format!(
        "durable commits; {} individual writes, {} batches of {BATCH}, {} reads",
        scale.individual,
        scale.batches,
        scale.reads()
    )];
    lines.extend(notes.iter().flat_map(|note| chart::wrap(note, 150)));
    chart::draw(&args.png, &title, &lines, &panels)?;
    println!("  chart: {}", args.png.display());
    if let Some(path) = &args.json {
        let results: Vec<serde_json::Value> = figures
            .iter()
            .map(|f| {
                let field = OPS
                    .iter()
                    .find(|(op, _)| *op == f.op)
                    .map_or("seconds", |(_, field)| *field);
                let mut row = serde_json::json!({"system": f.system, "op": f.op});
                row[field] = serde_json::json!(f.value);
                row
            })
            .collect();
        let json = serde_json::json!({"workload": "w6", "n": n, "results": results, "notes": notes,
                "peers": crate::versions::json()});
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    }
    Ok(())
}

fn push(figures: &mut Vec<Figure>, system: System, op: &str, value: f64, unit: &str) {
    println!(
        "  {:<8} {op:<22} {:>12}",
        system.name(),
        layout::format_value(value, unit)
    );
    figures.push(Figure::new(system.name(), op, value, unit));
}

/// Writes pairs `first..first + count` in one transaction.
fn write_pairs(db: &dyn Kv, first: u64, count: u64) -> Res<()> {
    db.write(count, &mut |j, k, v| {
        pair_key(first + j, k);
        pair_value(first + j, v);
    })
}

/// `count` random reads of written pairs in one snapshot, each checked.
fn reads(db: &dyn Kv, written: u64, count: u64, seed: u64) -> Res<()> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut key = Vec::with_capacity(KEY_BYTES);
    db.read(&mut |snap| {
        for _ in 0..count {
            let i = rng.gen_range(0..written);
            pair_key(i, &mut key);
            let word = snap.get(&key)?;
            if word != Some(value_word(i)) {
                return Err(
                    format!("pair {i} read {word:x?}, expected {:#x}", value_word(i)).into(),
                );
            }
        }
        Ok(())
    })
}

fn run_system(system: System, dir: &Path, scale: &Scale, figures: &mut Vec<Figure>) -> Res<()> {
    let mut db = system.open(dir, CACHE_BYTES)?;
    let start = Instant::now();
    write_pairs(db.as_ref(), 0, scale.n)?;
    push(
        figures,
        system,
        "bulk_load",
        start.elapsed().as_secs_f64(),
        "s",
    );

    let start = Instant::now();
    let mut key = Vec::new();
    let mut value = Vec::new();
    for i in scale.n..scale.n + scale.individual {
        pair_key(i, &mut key);
        pair_value(i, &mut value);
        db.put(&key, &value)?;
    }
    let seconds = start.elapsed().as_secs_f64();
    push(figures, system, "individual_writes", seconds, "s");

    let start = Instant::now();
    let first = scale.n + scale.individual;
    for b in 0..scale.batches {
        write_pairs(db.as_ref(), first + b * BATCH, BATCH)?;
    }
    push(
        figures,
        system,
        "batch_writes",
        start.elapsed().as_secs_f64(),
        "s",
    );

    let written = scale.written();
    let count = scale.reads();
    let start = Instant::now();
    reads(db.as_ref(), written, count, 1)?;
    push(
        figures,
        system,
        "random_reads",
        start.elapsed().as_secs_f64(),
        "s",
    );

    let scans = count / 2;
    let mut rng = StdRng::seed_from_u64(2);
    let mut seen = 0usize;
    let start = Instant::now();
    db.read(&mut |snap| {
        for _ in 0..scans {
            pair_key(rng.gen_range(0..written), &mut key);
            let (pairs, sum) = snap.scan(&key, RANGE_LEN)?;
            std::hint::black_box(sum);
            seen += pairs;
        }
        Ok(())
    })?;
    push(
        figures,
        system,
        "random_range_reads",
        start.elapsed().as_secs_f64(),
        "s",
    );
    // Every scan starts at a present key; only scans near the end of the key space are short.
    if (seen as u64) < scans * RANGE_LEN as u64 * 9 / 10 {
        return Err(format!("range reads saw {seen} pairs in {scans} scans of {RANGE_LEN}").into());
    }

    let start = Instant::now();
    std::thread::scope(|scope| -> Res<()> {
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let db = db.as_ref();
                scope.spawn(move || reads(db, written, count / 2, 10 + t))
            })
            .collect();
        for handle in handles {
            handle.join().map_err(|_| "a reader thread panicked")??;
        }
        Ok(())
    })?;
    push(
        figures,
        system,
        "random_reads_t2",
        start.elapsed().as_secs_f64(),
        "s",
    );

    // Open of the full database: close, open, read one key; median of OPENS.
    let mut opens = Vec::new();
    for round in 0..OPENS {
        db.close()?;
        let start = Instant::now();
        db = system.open(dir, CACHE_BYTES)?;
        reads(db.as_ref(), written, 1, 100 + round as u64)?;
        opens.push(start.elapsed().as_secs_f64());
    }
    opens.sort_by(f64::total_cmp);
    let open_seconds = opens[OPENS / 2];

    let start = Instant::now();
    db.remove(written / 2, &mut |i, k| pair_key(i, k))?;
    push(
        figures,
        system,
        "removals",
        start.elapsed().as_secs_f64(),
        "s",
    );
    let file_bytes = kv::dir_bytes(dir);
    push(figures, system, "file_bytes", file_bytes as f64, "bytes");
    let compacted = if db.can_compact() {
        match db.compact()? {
            Some(bytes) => bytes,
            None => kv::dir_bytes(dir),
        }
    } else {
        file_bytes
    };
    push(
        figures,
        system,
        "compacted_bytes",
        compacted as f64,
        "bytes",
    );
    push(figures, system, "open", open_seconds, "s");
    db.close()?;
    Ok(())
}
