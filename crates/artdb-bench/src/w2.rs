//! W2: the persisted index against DuckDB (`shared/BENCHMARKS.md`, W2).
//!
//! One table of N sequential 32-bit integer keys (big-endian, so byte order is numeric order),
//! each mapping to its row id (7 bytes little-endian: row ids below 2^56, stored inline in the
//! tree's child word). artdb's figures are measured here, natively; DuckDB's by
//! `scripts/w2_duckdb.py` run as a child process in the same run when `--duckdb PYTHON` names a
//! Python with the `duckdb` package (`scripts/w2.sh` installs it into a virtual environment).
//!
//! Ops (seconds unless the name says otherwise): `bulk_load` (sorted stream to the file,
//! including its publishing checkpoint), `insert_txn` (one write batch of N inserts, committed),
//! `store` (checkpoint + close after `insert_txn`), `open` (median of 11), `cold_total` / `cold_median_us` /
//! `cold_p99_us` (5,000 lookups spaced N/5,000 apart, right after open with the file evicted
//! from the page cache by `posix_fadvise(DONTNEED)` on the closed file), `hot_*` (the same
//! lookups again), `heap_hot_median_us` (the same lookups on the same tree built in heap
//! memory), `hot_pass_ns` / `heap_hot_pass_ns` / `hot_pass_ratio` (the same 5,000 lookups
//! without a timer around each, per lookup, the two trees measured side by side in alternating
//! blocks of passes: see `side_by_side_pass_ns`; a clock read costs about as much as a hot
//! lookup, so these are the figures to compare the two trees by), `hot_file_resident_bytes` /
//! `hot_file_pmd_mapped_bytes` (how much of the file's map was resident, and mapped by 2 MiB
//! entries, after those passes), `heap_anon_huge_bytes` (this process's anonymous memory mapped
//! by 2 MiB entries then: mostly the heap tree's arena), `file_bytes`, `peak_rss_bytes` (VmHWM
//! of this process; it counts the heap tree built for the hot comparison, which is held while
//! the file is mapped, and the file's resident pages), `heap_bytes_after_checkpoint`
//! (allocator-measured heap held by the open database after a checkpoint),
//! `checkpoint_range_1pct_bytes` and `checkpoint_random_0_1pct_bytes` (bytes a checkpoint writes
//! after 1% of the keys changed in one contiguous range / 0.1% at random).

use crate::alloc;
use artdb::{Db, Options};
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of the W2 workload.
#[derive(clap::Args)]
pub struct Args {
    /// Number of keys.
    #[arg(long, default_value_t = 1_000_000)]
    n: u64,
    /// Run at the quick (CI) scale (100,000 keys).
    #[arg(long)]
    quick: bool,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Directory for the database files (default: a new directory under the system temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// A Python interpreter with the `duckdb` package: run DuckDB's side in the same run.
    #[arg(long)]
    duckdb: Option<PathBuf>,
    /// Skip artdb's one-batch insert of N keys (`insert_txn`, `store`).
    #[arg(long)]
    no_insert_txn: bool,
}

const LOOKUPS: u64 = 5_000;
const TABLE: &str = "integers";

#[derive(serde::Serialize, serde::Deserialize, Clone)]
struct Figure {
    system: String,
    op: String,
    value: f64,
    unit: String,
}

fn figure(system: &str, op: &str, value: f64, unit: &str) -> Figure {
    Figure {
        system: system.into(),
        op: op.into(),
        value,
        unit: unit.into(),
    }
}

fn key(i: u64) -> [u8; 4] {
    (i as u32).to_be_bytes()
}

fn row_id(i: u64) -> [u8; 7] {
    let mut bytes = [0u8; 7];
    bytes.copy_from_slice(&i.to_le_bytes()[..7]);
    bytes
}

fn lookup_keys(n: u64) -> Vec<u64> {
    let stride = (n / LOOKUPS).max(1);
    (0..LOOKUPS)
        .map(|i| (i * stride).min(n.saturating_sub(1)))
        .collect()
}

fn median_and_p99(mut micros: Vec<f64>) -> (f64, f64) {
    micros.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| micros[((micros.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

/// Times each lookup; checks every value.
fn timed_lookups(db: &Db, keys: &[u64]) -> Result<(f64, Vec<f64>), Box<dyn std::error::Error>> {
    let read = db.read();
    let table = read.table(TABLE)?;
    let mut micros = Vec::with_capacity(keys.len());
    let start = Instant::now();
    for &k in keys {
        let t = Instant::now();
        let value = table.get(&key(k))?;
        micros.push(t.elapsed().as_secs_f64() * 1e6);
        if value != Some(&row_id(k)[..]) {
            return Err(format!("lookup of key {k} returned {value:?}").into());
        }
    }
    Ok((start.elapsed().as_secs_f64(), micros))
}

/// Rounds of [`side_by_side_pass_ns`]: each runs a block of passes of each tree.
const ROUNDS: usize = 7;
/// Passes timed per tree per round.
const BLOCK_PASSES: usize = 11;
/// Passes a block runs before it times any, and the least time they take.
const WARM_PASSES: usize = 20;
const WARM_MILLIS: u128 = 10;

/// Hot passes of two trees over the same keys, measured side by side.
struct SideBySide {
    /// Nanoseconds per lookup of the first tree: the median of its rounds' medians.
    first: f64,
    /// The same for the second tree.
    second: f64,
    /// The median over the rounds of first / second, each round's two medians taken within
    /// a few milliseconds of each other.
    ratio: f64,
}

/// Nanoseconds per lookup of `keys` through `first` and through `second` (the persisted tree
/// and the same tree in the heap), with no clock read inside a pass, side by side:
/// [`ROUNDS`] rounds, each a block of passes of one tree and then a block of the other (the
/// order swapped every round). A block runs at least [`WARM_PASSES`] passes and
/// [`WARM_MILLIS`] untimed, then times [`BLOCK_PASSES`] and keeps their median. Checks every
/// value.
///
/// Why side by side: on this project's VMs the same passes over the same tree run at one
/// speed for a while and then at another (the heap tree at 50M keys has run nearly twice as
/// slow in some runs as in others, for a whole run), so two trees timed seconds apart, one
/// after the other, compared the machine's states as much as the trees. Why blocks, and the
/// warm-up in each: a pass of one tree evicts the other's lines and TLB entries, and the first
/// two or three passes after a switch are slow, the first several times the steady pace.
fn side_by_side_pass_ns(
    keys: &[u64],
    first: &impl HotGet,
    second: &impl HotGet,
) -> Result<SideBySide, Box<dyn std::error::Error>> {
    let (mut firsts, mut seconds, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (a, b) = if round % 2 == 0 {
            let a = block_pass_ns(keys, first)?;
            (a, block_pass_ns(keys, second)?)
        } else {
            let b = block_pass_ns(keys, second)?;
            (block_pass_ns(keys, first)?, b)
        };
        firsts.push(a);
        seconds.push(b);
        ratios.push(a / b);
    }
    let rounds: Vec<String> = firsts
        .iter()
        .zip(&seconds)
        .map(|(a, b)| format!("{a:.1}/{b:.1}"))
        .collect();
    println!(
        "  (hot passes side by side, ns per lookup by round: {})",
        rounds.join(" ")
    );
    Ok(SideBySide {
        first: median_and_p99(firsts).0,
        second: median_and_p99(seconds).0,
        ratio: median_and_p99(ratios).0,
    })
}

/// A tree W2's hot passes read: the persisted table, or the same tree in the heap. A trait
/// with `#[inline(always)]` methods, not closures: once one function ran passes of two trees,
/// the compiler called each closure out of line (`perf`: the lookups sat in
/// `artdb_figures::{{closure}}`), which is not how an application calls `get`.
trait HotGet {
    /// The value of `key`.
    fn hot_get(&self, key: &[u8]) -> Result<Option<&[u8]>, Box<dyn std::error::Error>>;
}

impl HotGet for artdb::Table<'_> {
    #[inline(always)]
    fn hot_get(&self, key: &[u8]) -> Result<Option<&[u8]>, Box<dyn std::error::Error>> {
        Ok(self.get(key)?)
    }
}

impl HotGet for artdb_art::Tree {
    #[inline(always)]
    fn hot_get(&self, key: &[u8]) -> Result<Option<&[u8]>, Box<dyn std::error::Error>> {
        Ok(self.get(key)?)
    }
}

/// One block of [`side_by_side_pass_ns`]: the median nanoseconds per lookup of its timed
/// passes.
#[inline(always)]
fn block_pass_ns(keys: &[u64], tree: &impl HotGet) -> Result<f64, Box<dyn std::error::Error>> {
    // One loop for the warm-up and the timed passes (the first ones are not kept): with two
    // loops the compiler called `get` out of line, which cost the persisted side a large share
    // of each lookup.
    let warm_start = Instant::now();
    let mut warm = 0;
    let mut passes = Vec::with_capacity(BLOCK_PASSES);
    while passes.len() < BLOCK_PASSES {
        let start = Instant::now();
        let mut wrong = None;
        for &k in keys {
            if tree.hot_get(&key(k))? != Some(&row_id(k)[..]) {
                wrong = Some(k);
            }
        }
        let ns = start.elapsed().as_secs_f64() * 1e9 / keys.len().max(1) as f64;
        if let Some(k) = wrong {
            return Err(format!("lookup of key {k} returned a wrong value").into());
        }
        if warm < WARM_PASSES || warm_start.elapsed().as_millis() < WARM_MILLIS {
            warm += 1;
        } else {
            passes.push(ns);
        }
    }
    Ok(median_and_p99(passes).0)
}

/// The resident and the PMD-mapped (2 MiB entries) bytes of this process's maps of `path`,
/// from `/proc/self/smaps` (Linux); `None` where it cannot be read or no map of it is found.
fn file_map_bytes(path: &Path) -> Option<(f64, f64)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let name = path.canonicalize().ok()?;
    let name = name.to_str()?;
    let (mut rss, mut pmd, mut inside, mut found) = (0u64, 0u64, false, false);
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or_default();
        if first.contains('-') && !first.ends_with(':') {
            // A map's first line: "start-end perms offset dev inode [path]".
            inside = line.ends_with(name);
            found |= inside;
            continue;
        }
        if !inside {
            continue;
        }
        let kb = fields
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        match first {
            "Rss:" => rss += kb * 1024,
            "FilePmdMapped:" => pmd += kb * 1024,
            _ => {}
        }
    }
    found.then_some((rss as f64, pmd as f64))
}

/// `AnonHugePages` of `/proc/self/smaps_rollup` (Linux): this process's anonymous memory mapped
/// by 2 MiB entries; `None` where it cannot be read.
fn anon_huge_bytes() -> Option<f64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = rollup.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

fn peak_rss_bytes() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<f64>().ok())
        .map_or(0.0, |kib| kib * 1024.0)
}

fn artdb_figures(
    n: u64,
    dir: &Path,
    insert_txn: bool,
) -> Result<Vec<Figure>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    let f = |out: &mut Vec<Figure>, op: &str, value: f64, unit: &str| {
        println!("  artdb {op:<34} {value:>14.3} {unit}");
        out.push(figure("artdb", op, value, unit));
    };
    // Bulk load: a sorted stream straight to the file, published by one superblock write.
    let bulk_path = dir.join("w2-bulk.artdb");
    let _ = std::fs::remove_file(&bulk_path);
    let db = Db::create(&bulk_path, Options::default())?;
    db.create_table(TABLE)?;
    let start = Instant::now();
    db.bulk_load(TABLE, (0..n).map(|i| (key(i), row_id(i))))?;
    f(&mut out, "bulk_load", start.elapsed().as_secs_f64(), "s");
    db.close()?;
    // One write batch of N inserts, then checkpoint + close.
    if insert_txn {
        insert_txn_figures(n, dir, &mut out)?;
    }
    // Open, cold and hot lookups on the bulk-loaded file.
    // Open: the median of 11 opens of the evicted file (one open is a few syscalls, so a single
    // measurement on a busy machine is mostly scheduling noise).
    let mut opens = Vec::new();
    for _ in 0..11 {
        artdb::io::evict_from_page_cache(&bulk_path)?;
        let start = Instant::now();
        let db = Db::open(&bulk_path, Options::default())?;
        opens.push(start.elapsed().as_secs_f64());
        db.close()?;
    }
    f(&mut out, "open", median_and_p99(opens).0, "s");
    artdb::io::evict_from_page_cache(&bulk_path)?;
    // The incremental-checkpoint figures below measure what `checkpoint` writes after a batch;
    // at 50M the 1% batch (about 10 MB of changes) would bypass the log by default, and its
    // commit, not the checkpoint, would write the same pages. Logged here, so the checkpoint
    // does. Lookups do not depend on it.
    let options = Options {
        wal_bypass_threshold_bytes: u64::MAX,
        checkpoint_threshold_bytes: u64::MAX,
        ..Options::default()
    };
    let db = Db::open(&bulk_path, options)?;
    let keys = lookup_keys(n);
    let (total, micros) = timed_lookups(&db, &keys)?;
    let (median, p99) = median_and_p99(micros);
    f(&mut out, "cold_total", total, "s");
    f(&mut out, "cold_median_us", median, "us");
    f(&mut out, "cold_p99_us", p99, "us");
    let (total, micros) = timed_lookups(&db, &keys)?;
    let (median, p99) = median_and_p99(micros);
    f(&mut out, "hot_total", total, "s");
    f(&mut out, "hot_median_us", median, "us");
    f(&mut out, "hot_p99_us", p99, "us");
    {
        // The same lookups on the same tree held in heap memory, built now so that the two
        // trees' passes can alternate (`side_by_side_pass_ns`).
        let tree = artdb_art::Tree::bulk_build((0..n).map(|i| (key(i), row_id(i))))?;
        let mut micros = Vec::with_capacity(keys.len());
        for _ in 0..2 {
            micros.clear();
            for &k in &keys {
                let t = Instant::now();
                let value = tree.get(&key(k))?;
                micros.push(t.elapsed().as_secs_f64() * 1e6);
                std::hint::black_box(value);
            }
        }
        f(
            &mut out,
            "heap_hot_median_us",
            median_and_p99(micros).0,
            "us",
        );
        let read = db.read();
        let table = read.table(TABLE)?;
        let passes = side_by_side_pass_ns(&keys, &table, &tree)?;
        f(&mut out, "hot_pass_ns", passes.first, "ns");
        f(&mut out, "heap_hot_pass_ns", passes.second, "ns");
        f(&mut out, "hot_pass_ratio", passes.ratio, "x");
        // How the file's map stood during those passes: bytes resident, and bytes mapped by
        // 2 MiB entries (the engine advises huge pages for a file that fits in a quarter of
        // memory; whether the kernel could give them decides how many TLB misses a hot pass
        // takes).
        if let Some((rss, pmd)) = file_map_bytes(&bulk_path) {
            f(&mut out, "hot_file_resident_bytes", rss, "bytes");
            f(&mut out, "hot_file_pmd_mapped_bytes", pmd, "bytes");
        }
        // And the heap tree's: anonymous memory mapped by 2 MiB entries (its arena asks for
        // huge pages; the rest of this process's heap is small beside the tree).
        if let Some(huge) = anon_huge_bytes() {
            f(&mut out, "heap_anon_huge_bytes", huge, "bytes");
        }
    }
    f(
        &mut out,
        "file_bytes",
        std::fs::metadata(&bulk_path)?.len() as f64,
        "bytes",
    );
    // Incremental checkpoints: 1% in one contiguous range, then 0.1% at random.
    let heap_before = alloc::live_bytes();
    let range_len = (n / 100).max(1);
    let first = n / 3;
    let mut batch = db.write()?;
    for i in first..(first + range_len).min(n) {
        batch.insert(TABLE, &key(i), &row_id(i + 1))?;
    }
    batch.commit()?;
    let stats = db.checkpoint()?;
    f(
        &mut out,
        "checkpoint_range_1pct_bytes",
        stats.bytes_written as f64,
        "bytes",
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let mut batch = db.write()?;
    for _ in 0..(n / 1000).max(1) {
        let i = rng.gen_range(0..n);
        batch.insert(TABLE, &key(i), &row_id(i + 2))?;
    }
    batch.commit()?;
    let stats = db.checkpoint()?;
    f(
        &mut out,
        "checkpoint_random_0_1pct_bytes",
        stats.bytes_written as f64,
        "bytes",
    );
    let heap_after = alloc::live_bytes();
    f(
        &mut out,
        "heap_bytes_after_checkpoint",
        (heap_after - heap_before).max(0) as f64,
        "bytes",
    );
    db.close()?;
    let _ = std::fs::remove_file(&bulk_path);
    f(&mut out, "peak_rss_bytes", peak_rss_bytes(), "bytes");
    Ok(out)
}

fn insert_txn_figures(
    n: u64,
    dir: &Path,
    out: &mut Vec<Figure>,
) -> Result<(), Box<dyn std::error::Error>> {
    let f = |out: &mut Vec<Figure>, op: &str, value: f64, unit: &str| {
        println!("  artdb {op:<34} {value:>14.3} {unit}");
        out.push(figure("artdb", op, value, unit));
    };
    let txn_path = dir.join("w2-txn.artdb");
    let _ = std::fs::remove_file(&txn_path);
    let db = Db::create(&txn_path, Options::default())?;
    db.create_table(TABLE)?;
    let start = Instant::now();
    let mut batch = db.write()?;
    for i in 0..n {
        batch.insert(TABLE, &key(i), &row_id(i))?;
    }
    batch.commit()?;
    f(out, "insert_txn", start.elapsed().as_secs_f64(), "s");
    let start = Instant::now();
    db.checkpoint()?;
    db.close()?;
    f(out, "store", start.elapsed().as_secs_f64(), "s");
    let _ = std::fs::remove_file(&txn_path);
    Ok(())
}

fn duckdb_figures(
    python: &Path,
    n: u64,
    dir: &Path,
) -> Result<Vec<Figure>, Box<dyn std::error::Error>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/w2_duckdb.py");
    let out_path = dir.join("w2-duckdb.json");
    let status = std::process::Command::new(python)
        .arg(&script)
        .args(["--n", &n.to_string(), "--dir"])
        .arg(dir)
        .arg("--json")
        .arg(&out_path)
        .status()?;
    if !status.success() {
        return Err(format!("{} failed: {status}", script.display()).into());
    }
    let text = std::fs::read_to_string(&out_path)?;
    let figures: Vec<Figure> = serde_json::from_str(&text)?;
    Ok(figures)
}

/// Runs W2.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let n = if args.quick { 100_000 } else { args.n };
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("artdb-w2-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    println!(
        "W2: {n} sequential 32-bit keys -> row ids; files in {}",
        dir.display()
    );
    let mut results = artdb_figures(n, &dir, !args.no_insert_txn)?;
    if let Some(python) = &args.duckdb {
        results.extend(duckdb_figures(python, n, &dir)?);
    }
    print_table(&results);
    if let Some(path) = &args.json {
        let json = serde_json::json!({ "workload": "w2", "n": n, "results": results });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    }
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(())
}

fn print_table(results: &[Figure]) {
    let mut ops: Vec<&str> = Vec::new();
    for figure in results {
        if !ops.contains(&figure.op.as_str()) {
            ops.push(&figure.op);
        }
    }
    let get = |system: &str, op: &str| {
        results
            .iter()
            .find(|f| f.system == system && f.op == op)
            .map(|f| (f.value, f.unit.as_str()))
    };
    println!(
        "\n{:<34} {:>16} {:>16} {:>10}  unit",
        "op", "artdb", "duckdb", "artdb/duckdb"
    );
    for op in ops {
        let artdb = get("artdb", op);
        let duckdb = get("duckdb", op);
        let cell =
            |value: Option<(f64, &str)>| value.map_or("-".to_string(), |(v, _)| format!("{v:.4}"));
        let ratio = match (artdb, duckdb) {
            (Some((a, _)), Some((d, _))) if d > 0.0 => format!("{:.3}", a / d),
            _ => "-".to_string(),
        };
        let unit = artdb.or(duckdb).map_or("", |(_, unit)| unit);
        println!(
            "{op:<34} {:>16} {:>16} {ratio:>10}  {unit}",
            cell(artdb),
            cell(duckdb)
        );
    }
}
