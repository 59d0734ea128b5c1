//! W3: bitable vs `fst`, LMDB (`heed`, append mode) and a memory-mapped sorted array, side by side
//! in one run (see `shared/BENCHMARKS.md`, W3).
//!
//! Input: N pairs of a 24-byte key (latitude f64, longitude f64, unix-ms i64, each encoded to be
//! order-preserving and big-endian) and an 8-byte value (the pair's index, little-endian), written
//! sorted to a file before any timing; every build reads that file through a memory map.
//! Latitudes rise strictly with the index, so the generated order is the key order.
//!
//! Ops per structure: `build_nondurable`, `build_durable` (fsync file and directory; both
//! medians of `--reps` rounds), `point_cold`
//! (2,026,127 evenly spaced keys, shuffled, after the files were synced and evicted with
//! `posix_fadvise(DONTNEED)` with every map closed; residency is checked with `mincore` and
//! printed), `point_warm` (median of `--reps` further passes), `scan100` (lower bound then 100
//! `next`, random starts), `merge` (two tables of N/2 interleaved keys into one, non-durable),
//! and sizes `leaf_bytes`, `branch_bytes` (or `file_bytes`) where they apply. Row `floor` is the
//! disk's floor for bitable's build, measured between its two builds: as many bytes as the table
//! file holds, written sequentially with 1 MiB `write` calls (`build_nondurable`), then `fsync`
//! of the file and its directory (`build_durable`). The order of the timed writes, and the
//! untimed write before them, are explained at `build_phase`. Every lookup's value
//! is checked. LMDB has no merge operation, so it has no `merge` row.
//!
//! `--spread uneven` replaces the evenly rising latitudes by ones dense at one end of every run
//! of 256 pairs and sparse at the other (`Spread::Uneven`).
//!
//! JSON: `{"workload":"w3","n":N,"spread":..,"results":[{"structure":..,"op":..,"seconds"|"qps"|"bytes":..}],
//! "peers":{crate:version}}` (peers: [`crate::versions::json`]).

use memmap2::Mmap;
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::fs::{self, File};
use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod structures;

use structures::{file_len, Bitable, FstMap, Lmdb, SortedArray};

type BoxError = Box<dyn std::error::Error>;

const KEY_LEN: usize = 24;
const VALUE_LEN: usize = 8;
const PAIR_LEN: usize = KEY_LEN + VALUE_LEN;
/// Point queries of the published figure.
const POINT_QUERIES: u64 = 2_026_127;

/// Options of the W3 workload.
#[derive(clap::Args)]
pub struct Args {
    /// Run at the quick (CI) scale: N = 1M unless --n is given.
    #[arg(long)]
    quick: bool,
    /// Pairs in the table (default 10M, quick 1M).
    #[arg(long)]
    n: Option<u64>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Directory for the input and the tables (deleted afterwards).
    #[arg(long, default_value = "target/w3-data")]
    dir: PathBuf,
    /// Rounds of the builds and repetitions of the warm passes (medians are reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Structures to run, comma-separated (bitable, fst, lmdb, array).
    #[arg(long, default_value = "bitable,fst,lmdb,array")]
    only: String,
    /// Structures whose merge is measured (fst's takes minutes at 10M pairs).
    #[arg(long, default_value = "bitable,fst,array")]
    merge: String,
    /// How latitudes are spread over the pairs: `even` (the published workload) or `uneven`.
    #[arg(long, value_enum, default_value_t = Spread::Even)]
    spread: Spread,
}

/// How the generated latitudes are spread over the pairs' indexes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Spread {
    /// Evenly: latitude linear in the index (the published W3 workload).
    Even,
    /// Unevenly at the scale of a page: in each run of `UNEVEN_RUN` pairs the gap between
    /// neighbours grows linearly from 1 to about 9 units, so keys are dense at one end of every
    /// leaf and sparse at the other, while runs repeat evenly across the table. Interpolating
    /// between a page's bounds then misses by tens of entries: the case the guided page search
    /// of `artdb-bitable` falls back on (see `docs/bitable-format.md`, Reading).
    Uneven,
}

/// Pairs in one run of `Spread::Uneven`.
const UNEVEN_RUN: u64 = 256;

/// The position of pair `index` on the latitude axis, in units; strictly increasing.
fn uneven_position(index: u64) -> f64 {
    let within = (index % UNEVEN_RUN) as f64;
    let run_len = UNEVEN_RUN as f64 * (1.0 + UNEVEN_RUN as f64 / 64.0);
    (index / UNEVEN_RUN) as f64 * run_len + within * (1.0 + within / 64.0)
}

/// One result row.
struct Row {
    structure: &'static str,
    op: &'static str,
    unit: &'static str,
    value: f64,
}

/// The operations every structure offers to the workload.
trait Structure: Sized {
    const NAME: &'static str;
    /// Whether the structure has a merge operation.
    const MERGES: bool = true;
    /// Whether durability is only an fsync of the finished files (fst, the array): then one build
    /// is timed to the end of writing (`build_nondurable`) and on through the fsync of the files
    /// and the directory (`build_durable`), instead of two builds.
    const DURABLE_IS_SYNC: bool = false;
    /// Builds from sorted input records into `dir` (created empty).
    fn build(input: &[u8], dir: &Path, durable: bool) -> Result<(), BoxError>;
    fn open(dir: &Path) -> Result<Self, BoxError>;
    /// Files to evict for a cold pass.
    fn files(dir: &Path) -> Vec<PathBuf>;
    fn get(&self, key: &[u8]) -> Option<u64>;
    /// Lower bound of `key` then `count` more pairs; returns a checksum of what was read.
    fn scan(&self, key: &[u8], count: usize) -> u64;
    /// Size rows (op, bytes).
    fn sizes(&self, dir: &Path) -> Vec<(&'static str, u64)>;
    /// Merges two built structures into `out`; `None` if the structure has no merge.
    fn merge(a: &Path, b: &Path, out: &Path) -> Option<Result<(), BoxError>>;
    /// Closes every map so that eviction works.
    fn close(self) {}
    /// Whether the run also measures the disk's floor for this structure's build: writing as
    /// many bytes as its files hold, sequentially, with `write` then `fsync` (row `floor`).
    const FLOOR: bool = false;
}

// ---------------------------------------------------------------------------------------------
// Input

fn encode_f64(value: f64) -> [u8; 8] {
    let bits = value.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    };
    ordered.to_be_bytes()
}

fn encode_i64(value: i64) -> [u8; 8] {
    ((value as u64) ^ (1 << 63)).to_be_bytes()
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Key of pair `index` of `n`: latitude rising strictly with the index, longitude and time mixed.
fn key_of(index: u64, n: u64, spread: Spread) -> [u8; KEY_LEN] {
    let position = match spread {
        Spread::Even => index as f64 / n as f64,
        Spread::Uneven => uneven_position(index) / uneven_position(n),
    };
    let latitude = -80.0 + 160.0 * position;
    let hash = mix(index);
    let longitude = -180.0 + 360.0 * ((hash >> 11) as f64 / (1u64 << 53) as f64);
    let unix_ms = 1_500_000_000_000i64 + (hash % 300_000_000_000) as i64;
    let mut key = [0u8; KEY_LEN];
    key[..8].copy_from_slice(&encode_f64(latitude));
    key[8..16].copy_from_slice(&encode_f64(longitude));
    key[16..].copy_from_slice(&encode_i64(unix_ms));
    key
}

fn write_input(
    path: &Path,
    n: u64,
    spread: Spread,
    filter: impl Fn(u64) -> bool,
) -> Result<(), BoxError> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    for index in (0..n).filter(|&index| filter(index)) {
        out.write_all(&key_of(index, n, spread))?;
        out.write_all(&index.to_le_bytes())?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(())
}

fn map_file(path: &Path) -> Result<Mmap, BoxError> {
    let file = File::open(path)?;
    // SAFETY: benchmark files are written before they are mapped and not modified while mapped.
    let map = unsafe { Mmap::map(&file) }?;
    Ok(map)
}

fn value_of(bytes: &[u8]) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(raw)
}

fn sync_directory(dir: &Path) -> Result<(), BoxError> {
    File::open(dir)?.sync_all()?;
    Ok(())
}

fn dir_bytes(dir: &Path) -> u64 {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The disk's floor for writing `len` bytes: sequential 1 MiB `write` calls (of the input's
/// bytes, cycled) into a fresh file under `base`, then `fsync` of the file and its directory.
/// Returns the seconds to the end of the writes and to the end of the syncs; deletes the file.
fn write_floor(plan: &Plan, base: &Path, len: u64) -> Result<(f64, f64), BoxError> {
    let input = plan.input.as_deref().unwrap_or(&[]);
    if input.is_empty() {
        return Err("w3: the write floor needs the input".into());
    }
    let dir = fresh_dir(&base.join("floor"))?;
    let start = Instant::now();
    let mut file = File::create(dir.join("floor.bin"))?;
    let (mut left, mut at) = (len, 0usize);
    while left > 0 {
        let chunk = (1usize << 20).min(input.len() - at).min(left as usize);
        file.write_all(&input[at..at + chunk])?;
        left -= chunk as u64;
        at = (at + chunk) % input.len();
    }
    let written = start.elapsed().as_secs_f64();
    file.sync_all()?;
    sync_directory(&dir)?;
    let synced = start.elapsed().as_secs_f64();
    drop(file);
    fs::remove_dir_all(&dir)?;
    Ok((written, synced))
}

/// Syncs and evicts `files` from the page cache; returns the fraction still resident.
fn evict(files: &[PathBuf]) -> Result<f64, BoxError> {
    let (mut resident, mut total) = (0usize, 0usize);
    for path in files {
        let file = File::open(path)?;
        file.sync_all()?;
        // SAFETY: plain system call on an open descriptor; no memory is passed.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(format!("posix_fadvise failed on {}: {rc}", path.display()).into());
        }
        let len = file.metadata()?.len() as usize;
        if len == 0 {
            continue;
        }
        let map = map_file(path)?;
        let pages = len.div_ceil(4096);
        let mut vector = vec![0u8; pages];
        // SAFETY: `map` is a live mapping of `len` bytes and `vector` has one byte per 4 KiB page.
        let rc =
            unsafe { libc::mincore(map.as_ptr() as *mut libc::c_void, len, vector.as_mut_ptr()) };
        if rc == 0 {
            resident += vector.iter().filter(|&&b| b & 1 == 1).count();
            total += pages;
        }
    }
    Ok(if total == 0 {
        0.0
    } else {
        resident as f64 / total as f64
    })
}

// ---------------------------------------------------------------------------------------------
// Driver

struct Plan {
    n: u64,
    spread: Spread,
    reps: usize,
    root: PathBuf,
    /// The sorted input, unmapped once every structure is built.
    input: Option<Mmap>,
    probes: Vec<([u8; KEY_LEN], u64)>,
    scan_starts: Vec<[u8; KEY_LEN]>,
    merge: String,
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn fresh_dir(path: &Path) -> Result<PathBuf, BoxError> {
    if path.exists() {
        fs::remove_dir_all(path)?;
    }
    fs::create_dir_all(path)?;
    Ok(path.to_path_buf())
}

fn point_pass<S: Structure>(
    structure: &S,
    probes: &[([u8; KEY_LEN], u64)],
) -> Result<f64, BoxError> {
    let start = Instant::now();
    for (key, expected) in probes {
        if structure.get(key) != Some(*expected) {
            return Err(format!("{}: wrong or missing value for a present key", S::NAME).into());
        }
    }
    Ok(probes.len() as f64 / start.elapsed().as_secs_f64())
}

/// Collects the rows of one structure.
struct Recorder<'a> {
    rows: &'a mut Vec<Row>,
    structure: &'static str,
}

impl Recorder<'_> {
    fn push(&mut self, op: &'static str, unit: &'static str, value: f64) {
        self.rows.push(Row {
            structure: self.structure,
            op,
            unit,
            value,
        });
    }
}

/// A built and opened structure, read through one virtual call per pass (the loops inside are
/// monomorphized), so that warm passes of all structures can alternate.
trait Opened {
    fn name(&self) -> &'static str;
    fn point_pass(&self, probes: &[([u8; KEY_LEN], u64)]) -> Result<f64, BoxError>;
    fn scan_pass(&self, starts: &[[u8; KEY_LEN]]) -> f64;
    fn sizes(&self) -> Vec<(&'static str, u64)>;
    fn close(self: Box<Self>) -> Result<(), BoxError>;
}

struct OpenedStructure<S: Structure> {
    structure: S,
    base: PathBuf,
    dir: PathBuf,
}

impl<S: Structure> Opened for OpenedStructure<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn point_pass(&self, probes: &[([u8; KEY_LEN], u64)]) -> Result<f64, BoxError> {
        point_pass(&self.structure, probes)
    }

    fn scan_pass(&self, starts: &[[u8; KEY_LEN]]) -> f64 {
        let start = Instant::now();
        let mut sum = 0u64;
        for key in starts {
            sum = sum.wrapping_add(self.structure.scan(key, 100));
        }
        black_box(sum);
        starts.len() as f64 / start.elapsed().as_secs_f64()
    }

    fn sizes(&self) -> Vec<(&'static str, u64)> {
        self.structure.sizes(&self.dir)
    }

    fn close(self: Box<Self>) -> Result<(), BoxError> {
        let OpenedStructure {
            structure, base, ..
        } = *self;
        structure.close();
        fs::remove_dir_all(&base)?;
        Ok(())
    }
}

/// Builds (timed), merges (timed), then evicts, opens and runs the cold pass.
fn prepare<S: Structure + 'static>(
    plan: &Plan,
    rows: &mut Vec<Row>,
) -> Result<Box<dyn Opened>, BoxError> {
    let mut recorder = Recorder {
        rows,
        structure: S::NAME,
    };
    let base = plan.root.join(S::NAME);
    let dir = build_phase::<S>(plan, &base, &mut recorder)?;
    if S::MERGES && plan.merge.split(',').any(|name| name.trim() == S::NAME) {
        merge_phase::<S>(plan, &base, &mut recorder)?;
    }
    let resident = evict(&S::files(&dir))?;
    let structure = S::open(&dir)?;
    let cold = point_pass(&structure, &plan.probes)?;
    if std::env::var_os("W3_SMAPS").is_some() {
        let smaps = fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        let huge: Vec<_> = smaps.lines().filter(|l| l.contains("Pmd")).collect();
        eprintln!("  {:8} {}", S::NAME, huge.join("; "));
    }
    eprintln!(
        "  {:8} point_cold  {cold:12.0} q/s ({:.1}% of pages resident after eviction)",
        S::NAME,
        resident * 100.0
    );
    recorder.push("point_cold", "qps", cold);
    Ok(Box::new(OpenedStructure {
        structure,
        base,
        dir,
    }))
}

/// Warm lookups and scans, the structures alternating pass by pass (so load drift on a shared
/// machine hits all alike); medians; sizes; then closes everything.
fn warm_phase(
    plan: &Plan,
    opened: Vec<Box<dyn Opened>>,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    let mut warm = vec![Vec::new(); opened.len()];
    let mut scans = vec![Vec::new(); opened.len()];
    for _ in 0..plan.reps {
        for (index, structure) in opened.iter().enumerate() {
            warm[index].push(structure.point_pass(&plan.probes)?);
        }
    }
    for _ in 0..plan.reps {
        for (index, structure) in opened.iter().enumerate() {
            scans[index].push(structure.scan_pass(&plan.scan_starts));
        }
    }
    for (index, structure) in opened.into_iter().enumerate() {
        let name = structure.name();
        let (warm, scan) = (median(warm[index].clone()), median(scans[index].clone()));
        eprintln!("  {name:8} point_warm  {warm:12.0} q/s, scan100 {scan:10.0} scans/s");
        let mut recorder = Recorder {
            rows,
            structure: name,
        };
        recorder.push("point_warm", "qps", warm);
        recorder.push("scan100", "qps", scan);
        for (op, bytes) in structure.sizes() {
            recorder.push(op, "bytes", bytes as f64);
        }
        structure.close()?;
    }
    Ok(())
}

/// Times the builds; returns the directory of the non-durable build, kept for the reads.
///
/// `--reps` rounds, interleaved; the medians are recorded. Order within a round, and why: this
/// VM backs guest memory lazily, so the first write into page-cache memory that the guest had
/// not used recently runs several times slower than a write into memory just freed (a file of
/// 1 MiB `write` calls written once fresh and once right after deleting a file its size).
/// So every timed write reuses the memory of a file of about the same size deleted just before
/// it: an untimed write of the input's size first (deleted), then per round the durable build
/// (deleted), the floor (`S::FLOOR`: as many bytes as the durable build's files, deleted) and
/// the non-durable build (kept; the next round deletes it first). Single runs still vary by up to
/// 2x with the other tenants' I/O, hence the rounds.
fn build_phase<S: Structure>(
    plan: &Plan,
    base: &Path,
    recorder: &mut Recorder<'_>,
) -> Result<PathBuf, BoxError> {
    let input = plan.input.as_deref().unwrap_or(&[]);
    write_floor(plan, base, input.len() as u64)?;
    let kept = base.join("build_nondurable");
    let mut times: Vec<(&'static str, &'static str, Vec<f64>)> = Vec::new();
    let mut record = |structure: &'static str, op: &'static str, seconds: f64| {
        eprintln!("  {structure:8} {op:17} {seconds:8.3} s");
        match times
            .iter_mut()
            .find(|(s, o, _)| *s == structure && *o == op)
        {
            Some((_, _, values)) => values.push(seconds),
            None => times.push((structure, op, vec![seconds])),
        }
    };
    for _ in 0..plan.reps {
        fresh_dir(&kept)?;
        if S::DURABLE_IS_SYNC {
            let start = Instant::now();
            S::build(input, &kept, false)?;
            let written = start.elapsed().as_secs_f64();
            for file in S::files(&kept) {
                File::open(&file)?.sync_all()?;
            }
            sync_directory(&kept)?;
            record(S::NAME, "build_nondurable", written);
            record(S::NAME, "build_durable", start.elapsed().as_secs_f64());
            continue;
        }
        let mut floor_len = 0;
        for (op, durable) in [("build_durable", true), ("build_nondurable", false)] {
            if !durable && S::FLOOR {
                let (written, synced) = write_floor(plan, base, floor_len)?;
                record("floor", "build_nondurable", written);
                record("floor", "build_durable", synced);
            }
            let dir = if durable {
                fresh_dir(&base.join(op))?
            } else {
                kept.clone()
            };
            let start = Instant::now();
            S::build(input, &dir, durable)?;
            record(S::NAME, op, start.elapsed().as_secs_f64());
            if durable {
                floor_len = S::files(&dir).iter().map(|path| file_len(path)).sum();
                fs::remove_dir_all(&dir)?;
            }
        }
    }
    for (structure, op, values) in times {
        let value = median(values);
        if structure == S::NAME {
            recorder.push(op, "seconds", value);
        } else {
            recorder.rows.push(Row {
                structure,
                op,
                unit: "seconds",
                value,
            });
        }
    }
    Ok(kept)
}

/// Builds two half tables (even and odd pairs, untimed) and times their merge.
fn merge_phase<S: Structure>(
    plan: &Plan,
    base: &Path,
    recorder: &mut Recorder<'_>,
) -> Result<(), BoxError> {
    let a = fresh_dir(&base.join("merge_a"))?;
    let b = fresh_dir(&base.join("merge_b"))?;
    let out = fresh_dir(&base.join("merge_out"))?;
    for (dir, parity) in [(&a, 0u64), (&b, 1u64)] {
        let half = plan.root.join("half.bin");
        write_input(&half, plan.n, plan.spread, |index| index % 2 == parity)?;
        S::build(&map_file(&half)?, dir, false)?;
        fs::remove_file(&half)?;
    }
    let start = Instant::now();
    let Some(result) = S::merge(&a, &b, &out) else {
        return Ok(());
    };
    result?;
    let seconds = start.elapsed().as_secs_f64();
    eprintln!("  {:8} merge       {seconds:8.3} s", S::NAME);
    recorder.push("merge", "seconds", seconds);
    let merged = S::open(&out)?;
    for (key, expected) in plan.probes.iter().take(10_000) {
        if merged.get(key) != Some(*expected) {
            return Err(format!("{}: the merged table lost a key", S::NAME).into());
        }
    }
    merged.close();
    Ok(())
}

/// Runs W3.
pub fn run(args: Args) -> Result<(), BoxError> {
    let n = args
        .n
        .unwrap_or(if args.quick { 1_000_000 } else { 10_000_000 });
    if n < 2 {
        return Err("w3 needs --n of at least 2".into());
    }
    crate::versions::print_crates_header(&["fst", "heed", "lmdb-master-sys"]);
    let root = fresh_dir(&args.dir)?;
    let input_path = root.join("input.bin");
    eprintln!("w3: generating {n} sorted pairs of 24-byte keys and 8-byte values (untimed)");
    write_input(&input_path, n, args.spread, |_| true)?;
    let input = map_file(&input_path)?;
    let _ = input.advise(memmap2::Advice::Sequential);
    let mut rng = StdRng::seed_from_u64(0x5733);
    let count = POINT_QUERIES.min(n);
    let mut probes: Vec<_> = (0..count)
        .map(|j| {
            let index = (j as u128 * n as u128 / count as u128) as u64;
            (key_of(index, n, args.spread), index)
        })
        .collect();
    probes.shuffle(&mut rng);
    let scan_starts = (0..(n / 100).clamp(1, 100_000))
        .map(|_| key_of(rng.gen_range(0..n), n, args.spread))
        .collect();
    let mut plan = Plan {
        n,
        spread: args.spread,
        reps: args.reps.max(1),
        root: root.clone(),
        input: Some(input),
        probes,
        scan_starts,
        merge: args.merge,
    };
    let mut rows = Vec::new();
    let mut opened = Vec::new();
    for name in args.only.split(',').map(str::trim) {
        eprintln!("w3: {name}");
        opened.push(match name {
            "bitable" => prepare::<Bitable>(&plan, &mut rows)?,
            "fst" => prepare::<FstMap>(&plan, &mut rows)?,
            "lmdb" => prepare::<Lmdb>(&plan, &mut rows)?,
            "array" => prepare::<SortedArray>(&plan, &mut rows)?,
            other => {
                return Err(
                    format!("unknown structure `{other}` (bitable, fst, lmdb, array)").into(),
                )
            }
        });
    }
    // The input is no longer needed: drop it from the page cache to leave room for the tables.
    plan.input = None;
    let _ = evict(std::slice::from_ref(&input_path));
    eprintln!("w3: warm passes, alternating structures");
    warm_phase(&plan, opened, &mut rows)?;
    drop(plan);
    fs::remove_dir_all(&root)?;
    print_table(n, args.spread, &rows);
    if let Some(path) = args.json {
        let results: Vec<_> = rows
            .iter()
            .map(|row| serde_json::json!({"structure": row.structure, "op": row.op, row.unit: row.value}))
            .collect();
        let document = serde_json::json!({"workload": "w3", "n": n,
            "spread": format!("{:?}", args.spread).to_lowercase(), "results": results,
            "peers": crate::versions::json()});
        fs::write(&path, serde_json::to_string_pretty(&document)?)?;
        eprintln!("w3: wrote {}", path.display());
    }
    Ok(())
}

fn print_table(n: u64, spread: Spread, rows: &[Row]) {
    println!("W3 n={n} (pairs of 24-byte keys and 8-byte values, latitudes spread {spread:?})");
    println!(
        "{:<17} {:<9} {:>16} {:>12}",
        "op", "structure", "value", "bitable/x"
    );
    let ops = [
        "build_nondurable",
        "build_durable",
        "point_cold",
        "point_warm",
        "scan100",
        "merge",
        "leaf_bytes",
        "branch_bytes",
        "file_bytes",
    ];
    for op in ops {
        let bitable = rows
            .iter()
            .find(|r| r.op == op && r.structure == "bitable")
            .map(|r| r.value);
        for row in rows.iter().filter(|r| r.op == op) {
            // Ratio as "bitable is x times better": time and size ratios are inverted.
            let ratio = bitable.map(|b| {
                if row.unit == "qps" {
                    b / row.value
                } else {
                    row.value / b
                }
            });
            let ratio = ratio.map_or(String::from("-"), |r| format!("{r:.2}x"));
            let value = match row.unit {
                "seconds" => format!("{:.3} s", row.value),
                "qps" => format!("{:.0}/s", row.value),
                _ => format!("{:.1} MiB", row.value / (1 << 20) as f64),
            };
            println!(
                "{:<17} {:<9} {:>16} {:>12}",
                row.op, row.structure, value, ratio
            );
        }
    }
}
