//! W4: the TidStore against a sorted array of 6-byte TIDs (PostgreSQL 16's dead-tuple layout),
//! a roaring bitmap and a `HashSet`, side by side in one process (`shared/BENCHMARKS.md`, W4).
//!
//! The table: `tuples` tuples (100M; 5M with `--quick`) in blocks of exactly 291 tuples
//! (PostgreSQL's `MaxHeapTuplesPerPage` for 8 KiB pages), the last block holding the remainder.
//! Offsets run from 1 to 291. Dead-tuple patterns, all drawn from a fixed seed:
//! - `sparse`: in every 20th block (block % 20 == 0) one dead tuple at a uniform offset;
//! - `dense`: every tuple of every 10th block (block % 10 == 0);
//! - `random`: every tuple dead with probability 1%, independently.
//!
//! Per pattern and structure:
//! - `bytes`: live heap bytes the structure holds (counting allocator: after build minus before);
//! - `build_mops`: dead ids inserted per second, in table order. The TidStore (insert-only
//!   mode, as PostgreSQL 17's vacuum uses it) takes the ids at once with `insert_many` (its
//!   counterpart of roaring's `from_sorted_iter`: ascending ids take the append path), then
//!   `flush_appends` builds the tree; `tid_per_block` is the same store fed a block at a time
//!   (each block's offsets gathered, then one `set_block_offsets`, PostgreSQL's
//!   `TidStoreSetBlockOffsets`), then flushed; the sorted array pushes; roaring uses
//!   `from_sorted_iter`; the hash set inserts;
//! - `lookup_ordered_mops`: every tuple of the table checked for membership in table order (what
//!   an index vacuum does); the TidStore through its in-order lookup cursor, the sorted array by
//!   binary search (PostgreSQL 16's `bsearch`), roaring and the hash set by `contains`;
//! - `lookup_random_mops`: membership of uniform random tuples of the table (1M; 10M at full
//!   scale), drawn before timing.
//!
//! Rates are per second of the benchmark thread's CPU time (see `Stopwatch`), and each pattern
//! prints how its CPU time compares with the wall time, which shows how loaded the machine was.
//!
//! Every pass counts its hits and the run fails unless they equal the exact answer (taken from a
//! plain bit per tuple of the table), so a structure cannot be fast by being wrong and no loop
//! can be optimised away. Repetitions are interleaved across structures (each repetition runs all
//! four, one after another) and each figure is the median.

use std::collections::HashSet;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use artdb_tidstore::{TidStore, TidStoreOptions};
use rand::{Rng, SeedableRng};
use roaring::RoaringBitmap;

use crate::alloc::live_bytes;

/// Tuples per block: PostgreSQL's `MaxHeapTuplesPerPage` for 8 KiB pages.
const TUPLES_PER_BLOCK: u32 = 291;
const TUPLES_FULL: u64 = 100_000_000;
const TUPLES_QUICK: u64 = 5_000_000;
const RANDOM_PROBES_FULL: usize = 10_000_000;
const RANDOM_PROBES_QUICK: usize = 1_000_000;
/// Bits of the offset in the roaring encoding `block << 11 | offset` (offsets up to 2047).
const ROARING_OFFSET_BITS: u32 = 11;
const SEED: u64 = 0x5714_D0E5;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Options of the W4 workload.
#[derive(clap::Args)]
pub struct Args {
    /// Run at the quick (CI) scale: 5M tuples, 1M random probes.
    #[arg(long)]
    quick: bool,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Tuples in the table (overrides the scale's default).
    #[arg(long)]
    tuples: Option<u64>,
    /// Repetitions of each measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Run only this pattern (sparse, dense or random).
    #[arg(long)]
    pattern: Option<String>,
    /// Time the builds only (no lookup passes): for profiling and quick A/B runs of the build.
    #[arg(long)]
    build_only: bool,
}

/// The dead-tuple patterns.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    Sparse,
    Dense,
    Random,
}

impl Pattern {
    const ALL: [Pattern; 3] = [Pattern::Sparse, Pattern::Dense, Pattern::Random];

    fn named(name: &str) -> Option<Pattern> {
        Pattern::ALL
            .into_iter()
            .find(|pattern| pattern.name() == name)
    }

    fn name(self) -> &'static str {
        match self {
            Pattern::Sparse => "sparse",
            Pattern::Dense => "dense",
            Pattern::Random => "random",
        }
    }
}

/// The heap table: only its shape matters.
#[derive(Clone, Copy)]
struct Table {
    tuples: u64,
}

impl Table {
    fn blocks(self) -> u32 {
        self.tuples.div_ceil(u64::from(TUPLES_PER_BLOCK)) as u32
    }

    fn tuples_in(self, block: u32) -> u16 {
        let before = u64::from(block) * u64::from(TUPLES_PER_BLOCK);
        (self.tuples - before).min(u64::from(TUPLES_PER_BLOCK)) as u16
    }

    /// Position of a tuple in table order (0-based), for the reference bit vector.
    fn position(block: u32, offset: u16) -> usize {
        block as usize * TUPLES_PER_BLOCK as usize + usize::from(offset) - 1
    }
}

/// The dead ids of one pattern, in table order, and the exact answers.
struct DeadSet {
    ids: Vec<(u32, u16)>,
    /// One bit per tuple of the table: the reference every pass is checked against.
    reference: Vec<u64>,
}

impl DeadSet {
    fn generate(table: Table, pattern: Pattern) -> DeadSet {
        let mut rng = rand::rngs::StdRng::seed_from_u64(SEED ^ pattern as u64);
        let mut ids = Vec::new();
        for block in 0..table.blocks() {
            let tuples = table.tuples_in(block);
            match pattern {
                Pattern::Sparse if block % 20 == 0 => ids.push((block, rng.gen_range(1..=tuples))),
                Pattern::Dense if block % 10 == 0 => ids.extend((1..=tuples).map(|o| (block, o))),
                Pattern::Random => ids.extend(
                    (1..=tuples)
                        .filter(|_| rng.gen_bool(0.01))
                        .map(|o| (block, o)),
                ),
                _ => {}
            }
        }
        let mut reference = vec![0u64; (table.tuples as usize).div_ceil(64)];
        for &(block, offset) in &ids {
            let position = Table::position(block, offset);
            reference[position / 64] |= 1 << (position % 64);
        }
        DeadSet { ids, reference }
    }

    fn contains(&self, block: u32, offset: u16) -> bool {
        let position = Table::position(block, offset);
        self.reference[position / 64] >> (position % 64) & 1 == 1
    }
}

/// A structure under test: built from the dead ids in table order, then queried.
trait Structure: Sized {
    const NAME: &'static str;
    fn build(ids: &[(u32, u16)]) -> BenchResult<Self>;
    /// Checks every tuple of the table in table order; returns the number of hits.
    fn lookup_ordered(&self, table: Table) -> BenchResult<u64>;
    /// Checks each probe; returns the number of hits.
    fn lookup_probes(&self, probes: &[(u32, u16)]) -> BenchResult<u64>;
}

struct Tid(TidStore);

/// The TidStore options of every W4 build: insert-only, as PostgreSQL 17's vacuum uses it.
fn tid_options() -> TidStoreOptions {
    TidStoreOptions {
        insert_only: true,
        ..TidStoreOptions::default()
    }
}

impl Structure for Tid {
    const NAME: &'static str = "tidstore";

    // Not inlined, so that a profiler can name each structure's build (one call per build).
    #[inline(never)]
    fn build(ids: &[(u32, u16)]) -> BenchResult<Self> {
        let mut store = TidStore::with_options(tid_options())?;
        // The ids in table order, at once (the TidStore's counterpart of roaring's
        // `from_sorted_iter`); they ascend, so they take the append path.
        store.insert_many(ids)?;
        // The appended blocks are built into the tree inside the timed build, as vacuum would
        // before its lookups.
        store.flush_appends()?;
        Ok(Tid(store))
    }

    fn lookup_ordered(&self, table: Table) -> BenchResult<u64> {
        let mut cursor = self.0.lookup_cursor();
        let mut hits = 0u64;
        for block in 0..table.blocks() {
            for offset in 1..=table.tuples_in(block) {
                hits += u64::from(cursor.contains(block, offset)?);
            }
        }
        Ok(hits)
    }

    fn lookup_probes(&self, probes: &[(u32, u16)]) -> BenchResult<u64> {
        let mut hits = 0u64;
        for &(block, offset) in probes {
            hits += u64::from(self.0.contains(block, offset)?);
        }
        Ok(hits)
    }
}

/// The TidStore fed a block at a time (`set_block_offsets`, PostgreSQL's
/// `TidStoreSetBlockOffsets`), each block's offsets gathered from the ids first.
struct TidPerBlock(Tid);

impl Structure for TidPerBlock {
    const NAME: &'static str = "tid_per_block";

    // Not inlined, so that a profiler can name each structure's build (one call per build).
    #[inline(never)]
    fn build(ids: &[(u32, u16)]) -> BenchResult<Self> {
        let mut store = TidStore::with_options(tid_options())?;
        // Each block's offsets gathered (what vacuum's heap scan hands over per page), then set
        // at once. The ids are sorted, so if the id 8 ahead is in the block so are those
        // between: long runs (dense) are copied 8 at a time, short ones (random, sparse) id by
        // id, one pass either way.
        let mut offsets: Vec<u16> = Vec::with_capacity(TUPLES_PER_BLOCK as usize);
        let mut rest = ids;
        while let Some(&(block, _)) = rest.first() {
            offsets.clear();
            let mut run = 0;
            while rest.get(run + 7).is_some_and(|&(b, _)| b == block) {
                offsets.extend(rest[run..run + 8].iter().map(|&(_, offset)| offset));
                run += 8;
            }
            while let Some(&(_, offset)) = rest.get(run).filter(|&&(b, _)| b == block) {
                offsets.push(offset);
                run += 1;
            }
            store.set_block_offsets(block, &offsets)?;
            rest = &rest[run..];
        }
        store.flush_appends()?;
        Ok(TidPerBlock(Tid(store)))
    }

    fn lookup_ordered(&self, table: Table) -> BenchResult<u64> {
        Structure::lookup_ordered(&self.0, table)
    }

    fn lookup_probes(&self, probes: &[(u32, u16)]) -> BenchResult<u64> {
        Structure::lookup_probes(&self.0, probes)
    }
}

/// PostgreSQL 16's `ItemPointerData`: block number as two `u16` halves, then the offset; 6 bytes,
/// and the derived order is (block, offset) order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct ItemPointer([u16; 3]);

const _: () = assert!(std::mem::size_of::<ItemPointer>() == 6);

impl ItemPointer {
    fn new(block: u32, offset: u16) -> Self {
        ItemPointer([(block >> 16) as u16, block as u16, offset])
    }
}

struct SortedArray(Vec<ItemPointer>);

impl Structure for SortedArray {
    const NAME: &'static str = "sorted_array";

    // Not inlined, so that a profiler can name each structure's build (one call per build).
    #[inline(never)]
    fn build(ids: &[(u32, u16)]) -> BenchResult<Self> {
        let mut array = Vec::with_capacity(ids.len());
        array.extend(
            ids.iter()
                .map(|&(block, offset)| ItemPointer::new(block, offset)),
        );
        Ok(SortedArray(array))
    }

    fn lookup_ordered(&self, table: Table) -> BenchResult<u64> {
        let mut hits = 0u64;
        for block in 0..table.blocks() {
            for offset in 1..=table.tuples_in(block) {
                hits += u64::from(
                    self.0
                        .binary_search(&ItemPointer::new(block, offset))
                        .is_ok(),
                );
            }
        }
        Ok(hits)
    }

    fn lookup_probes(&self, probes: &[(u32, u16)]) -> BenchResult<u64> {
        let mut hits = 0u64;
        for &(block, offset) in probes {
            hits += u64::from(
                self.0
                    .binary_search(&ItemPointer::new(block, offset))
                    .is_ok(),
            );
        }
        Ok(hits)
    }
}

struct Roaring(RoaringBitmap);

fn roaring_id(block: u32, offset: u16) -> u32 {
    block << ROARING_OFFSET_BITS | u32::from(offset)
}

impl Structure for Roaring {
    const NAME: &'static str = "roaring";

    // Not inlined, so that a profiler can name each structure's build (one call per build).
    #[inline(never)]
    fn build(ids: &[(u32, u16)]) -> BenchResult<Self> {
        let sorted = ids.iter().map(|&(block, offset)| roaring_id(block, offset));
        Ok(Roaring(RoaringBitmap::from_sorted_iter(sorted)?))
    }

    fn lookup_ordered(&self, table: Table) -> BenchResult<u64> {
        let mut hits = 0u64;
        for block in 0..table.blocks() {
            for offset in 1..=table.tuples_in(block) {
                hits += u64::from(self.0.contains(roaring_id(block, offset)));
            }
        }
        Ok(hits)
    }

    fn lookup_probes(&self, probes: &[(u32, u16)]) -> BenchResult<u64> {
        let hits = probes
            .iter()
            .filter(|&&(b, o)| self.0.contains(roaring_id(b, o)))
            .count();
        Ok(hits as u64)
    }
}

struct Hash(HashSet<u64>);

fn hash_id(block: u32, offset: u16) -> u64 {
    u64::from(block) << 16 | u64::from(offset)
}

impl Structure for Hash {
    const NAME: &'static str = "hashset";

    // Not inlined, so that a profiler can name each structure's build (one call per build).
    #[inline(never)]
    fn build(ids: &[(u32, u16)]) -> BenchResult<Self> {
        let mut set = HashSet::new();
        for &(block, offset) in ids {
            set.insert(hash_id(block, offset));
        }
        Ok(Hash(set))
    }

    fn lookup_ordered(&self, table: Table) -> BenchResult<u64> {
        let mut hits = 0u64;
        for block in 0..table.blocks() {
            for offset in 1..=table.tuples_in(block) {
                hits += u64::from(self.0.contains(&hash_id(block, offset)));
            }
        }
        Ok(hits)
    }

    fn lookup_probes(&self, probes: &[(u32, u16)]) -> BenchResult<u64> {
        let hits = probes
            .iter()
            .filter(|&&(b, o)| self.0.contains(&hash_id(b, o)))
            .count();
        Ok(hits as u64)
    }
}

/// The figures of one structure on one pattern.
struct Figures {
    structure: &'static str,
    pattern: Pattern,
    bytes: usize,
    lookup_ordered_mops: f64,
    lookup_random_mops: f64,
    build_mops: f64,
}

/// Everything one pattern needs, generated before any timing.
struct Workload<'a> {
    table: Table,
    dead: &'a DeadSet,
    probes: &'a [(u32, u16)],
    probe_hits: u64,
    reps: usize,
    build_only: bool,
}

/// A start point on two clocks: the wall clock and this thread's CPU clock.
///
/// Rates are computed from the thread's CPU time. The benchmark is single-threaded and the
/// machine it is run on is shared (2 cores, several jobs): wall time there counts the moments the
/// thread waits for a core, which inflates whichever structure happened to run during a busy
/// spell. CPU time still includes every cache and TLB miss the structure causes.
#[derive(Clone, Copy)]
struct Stopwatch {
    wall: Instant,
    cpu_seconds: f64,
}

impl Stopwatch {
    fn start() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu_seconds: thread_cpu_seconds(),
        }
    }

    /// CPU seconds since the start (wall seconds if the CPU clock is unavailable).
    fn seconds(self) -> f64 {
        let cpu = thread_cpu_seconds() - self.cpu_seconds;
        let seconds = if cpu > 0.0 {
            cpu
        } else {
            self.wall.elapsed().as_secs_f64()
        };
        seconds.max(1e-9)
    }

    fn wall_seconds(self) -> f64 {
        self.wall.elapsed().as_secs_f64()
    }
}

/// CPU time of the calling thread in seconds; 0 if the clock cannot be read.
fn thread_cpu_seconds() -> f64 {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid, writable `timespec` for the duration of the call, and
    // CLOCK_THREAD_CPUTIME_ID is a clock id every Linux and macOS kernel accepts.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    if status != 0 {
        return 0.0;
    }
    time.tv_sec as f64 + time.tv_nsec as f64 * 1e-9
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(0.0)
}

/// Builds every structure `reps` times (timed; the last build is kept and its bytes counted),
/// then runs both lookup passes `reps` times; each repetition visits every structure in turn.
fn measure_all(w: &Workload<'_>, pattern: Pattern) -> BenchResult<Vec<Figures>> {
    let ids = &w.dead.ids;
    let contenders = contenders();
    let mut built: Vec<Option<Box<dyn Contender>>> = contenders.iter().map(|_| None).collect();
    let mut bytes = vec![0usize; contenders.len()];
    let mut build_rates = vec![Vec::new(); contenders.len()];
    for _ in 0..w.reps {
        for (i, (_, build)) in contenders.iter().enumerate() {
            drop(built[i].take());
            let before = live_bytes();
            let start = Stopwatch::start();
            let structure = black_box(build(ids)?);
            build_rates[i].push(ids.len() as f64 / start.seconds() / 1e6);
            bytes[i] = (live_bytes() - before).max(0) as usize;
            built[i] = Some(structure);
        }
    }
    let mut ordered_rates = vec![Vec::new(); contenders.len()];
    let mut random_rates = vec![Vec::new(); contenders.len()];
    let lookup_reps = if w.build_only { 0 } else { w.reps };
    for _ in 0..lookup_reps {
        for (i, (name, _)) in contenders.iter().enumerate() {
            let structure = built[i].as_deref().ok_or("w4 needs --reps of at least 1")?;
            let start = Stopwatch::start();
            let hits = black_box(structure).lookup_ordered(w.table)?;
            ordered_rates[i].push(w.table.tuples as f64 / start.seconds() / 1e6);
            check(name, "ordered lookups", hits, ids.len() as u64)?;
            let start = Stopwatch::start();
            let hits = black_box(structure).lookup_probes(w.probes)?;
            random_rates[i].push(w.probes.len() as f64 / start.seconds() / 1e6);
            check(name, "random lookups", hits, w.probe_hits)?;
        }
    }
    let mut figures = Vec::new();
    for (i, (name, _)) in contenders.iter().enumerate() {
        figures.push(Figures {
            structure: name,
            pattern,
            bytes: bytes[i],
            lookup_ordered_mops: median(std::mem::take(&mut ordered_rates[i])),
            lookup_random_mops: median(std::mem::take(&mut random_rates[i])),
            build_mops: median(std::mem::take(&mut build_rates[i])),
        });
    }
    Ok(figures)
}

/// A structure's name and its build function.
type Entry = (
    &'static str,
    fn(&[(u32, u16)]) -> BenchResult<Box<dyn Contender>>,
);

fn contenders() -> [Entry; 5] {
    fn build<S: Structure + 'static>(ids: &[(u32, u16)]) -> BenchResult<Box<dyn Contender>> {
        Ok(Box::new(S::build(ids)?))
    }
    [
        (Tid::NAME, build::<Tid>),
        (TidPerBlock::NAME, build::<TidPerBlock>),
        (SortedArray::NAME, build::<SortedArray>),
        (Roaring::NAME, build::<Roaring>),
        (Hash::NAME, build::<Hash>),
    ]
}

/// The lookup passes of a built structure, callable through a `Box<dyn>` (one virtual call per
/// pass; the loops inside are monomorphised).
trait Contender {
    fn lookup_ordered(&self, table: Table) -> BenchResult<u64>;
    fn lookup_probes(&self, probes: &[(u32, u16)]) -> BenchResult<u64>;
}

impl<S: Structure> Contender for S {
    fn lookup_ordered(&self, table: Table) -> BenchResult<u64> {
        Structure::lookup_ordered(self, table)
    }

    fn lookup_probes(&self, probes: &[(u32, u16)]) -> BenchResult<u64> {
        Structure::lookup_probes(self, probes)
    }
}

fn check(structure: &str, pass: &str, hits: u64, expected: u64) -> BenchResult<()> {
    if hits == expected {
        return Ok(());
    }
    Err(format!("{structure}: {pass} found {hits} dead tuples, expected {expected}").into())
}

/// Runs W4.
pub fn run(args: Args) -> BenchResult<()> {
    let default_tuples = if args.quick {
        TUPLES_QUICK
    } else {
        TUPLES_FULL
    };
    let table = Table {
        tuples: args.tuples.unwrap_or(default_tuples),
    };
    let probe_count = if args.build_only {
        0
    } else if args.quick {
        RANDOM_PROBES_QUICK
    } else {
        RANDOM_PROBES_FULL
    };
    if table.tuples == 0 || u64::from(table.blocks()) >= 1 << (32 - ROARING_OFFSET_BITS) {
        return Err(
            "w4 needs 1 to 610 billion tuples (roaring ids are block << 11 | offset)".into(),
        );
    }
    println!(
        "W4: {} tuples in {} blocks of {} tuples, {} random probes, median of {} reps",
        table.tuples,
        table.blocks(),
        TUPLES_PER_BLOCK,
        probe_count,
        args.reps
    );
    crate::versions::print_crates_header(&["roaring"]);
    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED);
    let probes: Vec<(u32, u16)> = (0..probe_count)
        .map(|_| {
            let block = rng.gen_range(0..table.blocks());
            (block, rng.gen_range(1..=table.tuples_in(block)))
        })
        .collect();
    let patterns = match args.pattern.as_deref() {
        None => Pattern::ALL.to_vec(),
        Some(name) => vec![Pattern::named(name).ok_or("--pattern is sparse, dense or random")?],
    };
    let mut results = Vec::new();
    for pattern in patterns {
        let dead = DeadSet::generate(table, pattern);
        let probe_hits = probes.iter().filter(|&&(b, o)| dead.contains(b, o)).count() as u64;
        let workload = Workload {
            table,
            dead: &dead,
            probes: &probes,
            probe_hits,
            reps: args.reps,
            build_only: args.build_only,
        };
        println!("\n{} ({} dead ids)", pattern.name(), dead.ids.len());
        print_header();
        let start = Stopwatch::start();
        let measured = measure_all(&workload, pattern)?;
        let (wall, cpu) = (start.wall_seconds(), start.seconds());
        for figures in measured {
            print_row(&figures, dead.ids.len());
            results.push(figures);
        }
        println!("  ({cpu:.1} s of CPU in {wall:.1} s of wall time: rates are per CPU second)");
    }
    print_targets(&results);
    if let Some(path) = &args.json {
        write_json(path, &results)?;
    }
    Ok(())
}

fn print_header() {
    println!(
        "  {:<13} {:>12} {:>8} {:>14} {:>14} {:>10}",
        "structure", "bytes", "B/id", "ordered Mops", "random Mops", "build Mops"
    );
}

fn print_row(f: &Figures, dead: usize) {
    println!(
        "  {:<13} {:>12} {:>8.2} {:>14.1} {:>14.1} {:>10.1}",
        f.structure,
        f.bytes,
        f.bytes as f64 / dead.max(1) as f64,
        f.lookup_ordered_mops,
        f.lookup_random_mops,
        f.build_mops
    );
}

/// Prints the targets as ratios of the TidStore's figures to its peers'.
fn print_targets(results: &[Figures]) {
    let find = |structure: &str, pattern: Pattern| {
        results
            .iter()
            .find(|f| f.structure == structure && f.pattern.name() == pattern.name())
    };
    println!("\ntargets (tidstore vs peer):");
    for pattern in Pattern::ALL {
        let (Some(tid), Some(array), Some(roaring)) = (
            find("tidstore", pattern),
            find("sorted_array", pattern),
            find("roaring", pattern),
        ) else {
            continue;
        };
        println!(
            "  {:<7} memory {:.3} of sorted_array (target <= 0.1 sparse/dense), {:.3} of roaring \
             (target <= 1 dense); ordered lookups {:.2}x sorted_array (>= 5), {:.2}x roaring \
             (>= 1); random lookups {:.2}x sorted_array (>= 2); build {:.2}x roaring (>= 1)",
            pattern.name(),
            tid.bytes as f64 / array.bytes.max(1) as f64,
            tid.bytes as f64 / roaring.bytes.max(1) as f64,
            tid.lookup_ordered_mops / array.lookup_ordered_mops,
            tid.lookup_ordered_mops / roaring.lookup_ordered_mops,
            tid.lookup_random_mops / array.lookup_random_mops,
            tid.build_mops / roaring.build_mops,
        );
        if let Some(per_block) = find(TidPerBlock::NAME, pattern) {
            println!(
                "  {:<7} tid_per_block: build {:.2}x roaring",
                pattern.name(),
                per_block.build_mops / roaring.build_mops
            );
        }
    }
}

fn write_json(path: &std::path::Path, results: &[Figures]) -> BenchResult<()> {
    let rows: Vec<serde_json::Value> = results
        .iter()
        .map(|f| {
            serde_json::json!({
                "structure": f.structure,
                "pattern": f.pattern.name(),
                "bytes": f.bytes,
                "lookup_ordered_mops": f.lookup_ordered_mops,
                "lookup_random_mops": f.lookup_random_mops,
                "build_mops": f.build_mops,
            })
        })
        .collect();
    let document = serde_json::json!({
        "workload": "w4", "results": rows, "peers": crate::versions::json(),
    });
    std::fs::write(path, serde_json::to_string_pretty(&document)?)?;
    println!("wrote {}", path.display());
    Ok(())
}
