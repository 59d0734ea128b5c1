//! W1, the in-memory index workload of `shared/BENCHMARKS.md`: artdb's ART against `BTreeMap`,
//! crossbeam's `SkipMap`, `HashMap` (point operations), `congee` (8-byte keys) and `blart`, side
//! by side in one process.
//!
//! ```text
//! cargo run --release -p artdb-bench -- w1 --n N --key-len K --value-len V --keys random|dense \
//!     [--threads T] [--json PATH] [--runs R] [--structures artdb,btreemap,...] \
//!     [--rounds R --block B --round-threads T]
//! cargo run --release -p artdb-bench -- w1 --quick        # CI scale: 1M keys
//! ```
//!
//! One run, per structure (one structure alive at a time; each is dropped before the next is
//! built): `fillrandom` (N inserts in random order; memory = allocator bytes after minus before,
//! per key; artdb's packs and large nodes live in its image arena's own mapped chunks, which
//! the counting allocator does not see, so the bytes those images asked for are added, as the
//! counting allocator counts every other allocation by the size asked for, without the system
//! allocator's headers and free space; `memory held` adds the arena's chunks whole instead),
//! `readrandom` (N present keys in another random order), `readmissing` (N/10 absent
//! keys), `readbatch` (the readrandom keys through a batched lookup: artdb's `get_many`, 32 keys
//! per call; peers have none), `seekrandom` (seek to a random present key, read 100 pairs;
//! reported in Mkeys/s, pairs read per second), `deleterandom` (remove every key, random order).
//! With `--threads T` the four reads run on T threads over disjoint slices of the keys, sharing
//! one view (artdb: a `Snapshot`; every peer is `Sync` and is shared by reference); fill and
//! delete stay single-threaded.
//!
//! Every read's count of found keys and sum of value digests is checked against the expected
//! figures computed from the key set (scans: from a sorted copy), so a structure that returned
//! wrong answers fails the run. The runs are interleaved (run 1 of every structure, then run 2,
//! ...) so that load from other processes spreads across structures; the median is reported.
//!
//! With `--rounds R` the reads are then also timed side by side (`rounds.rs`): every named
//! structure built and held at once, R rounds of short blocks of each read on each structure,
//! and the median of the rounds' ratios (artdb against each peer; `readbatch` and
//! `readrandom xT`, T = `--round-threads`, against the structure's own `readrandom`), for ratios
//! that compare the same seconds of a machine whose speed drifts (on one machine they swung as
//! much as the runs' did: docs/journal/benchmarks.md, "W1's reads side by side in rounds").

mod artdb;
mod keys;
mod peers;
mod report;
mod rounds;

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use crossbeam_skiplist::SkipMap;

use self::artdb::Artdb;
use self::keys::{value_digest, value_for, KeyOrder, KeySet};
use self::peers::{BenchError, Blart, Congee, Reader, Structure, Tally};
use self::report::{Op, RunHeader, StructureFigures};

/// Pairs read after each seek.
const SCAN_PAIRS: usize = 100;
/// Keys at the quick (CI) scale.
const QUICK_N: usize = 1_000_000;
/// Keys at the full scale when `--n` is not given.
const FULL_N: usize = 10_000_000;
/// Upper bound on epoch flushes before a memory reading.
const FLUSHES_MAX: usize = 1_000_000;
/// Consecutive flushes without a change in live bytes that end the flushing.
const FLUSHES_UNCHANGED: usize = 256;
/// Every structure, in table order.
const STRUCTURES: [&str; 6] = ["artdb", "btreemap", "skipmap", "hashmap", "congee", "blart"];

/// Options of the W1 workload.
#[derive(clap::Args)]
pub struct Args {
    /// Run at the quick (CI) scale: 1M keys unless --n says otherwise.
    #[arg(long)]
    quick: bool,
    /// Number of keys (default 10M, or 1M with --quick).
    #[arg(long)]
    n: Option<usize>,
    /// Key length in bytes: 8 (a big-endian u64) or 16, 32, 64 (composite index keys).
    #[arg(long, default_value_t = 8)]
    key_len: usize,
    /// Value length in bytes: 7, 8 or 128.
    #[arg(long, default_value_t = 8)]
    value_len: usize,
    /// How the keys' u64 part is chosen.
    #[arg(long, value_enum, default_value_t = KeyOrder::Random)]
    keys: KeyOrder,
    /// Threads for the read operations.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Repetitions whose median is reported (default 3 up to 2M keys, else 1; 1 with --quick).
    #[arg(long)]
    runs: Option<usize>,
    /// Seeks in seekrandom (default N/50, between 1,000 and 100,000).
    #[arg(long)]
    seeks: Option<usize>,
    /// Comma-separated subset of: artdb,btreemap,skipmap,hashmap,congee,blart.
    #[arg(long, value_delimiter = ',')]
    structures: Option<Vec<String>>,
    /// Seed of the key generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Side-by-side rounds of the reads after the ordinary runs (0: none); see `rounds.rs`.
    #[arg(long, default_value_t = 0)]
    rounds: usize,
    /// Keys per block of the side-by-side rounds.
    #[arg(long, default_value_t = 1_000_000)]
    block: usize,
    /// Threads of the side-by-side rounds' threaded readrandom block (1: no such block).
    #[arg(long, default_value_t = 2)]
    round_threads: usize,
}

/// The resolved parameters of a run.
struct Plan {
    n: usize,
    order: KeyOrder,
    threads: usize,
    runs: usize,
    seeks: usize,
    structures: Vec<&'static str>,
    notes: Vec<String>,
    seed: u64,
    rounds: usize,
    block: usize,
    round_threads: usize,
}

/// Runs W1.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    run_checked(args).map_err(|error| error as Box<dyn std::error::Error>)
}

fn run_checked(args: Args) -> Result<(), BenchError> {
    let plan = plan(&args)?;
    crate::versions::print_crates_header(&["blart", "congee", "crossbeam-skiplist"]);
    let (header, (figures, side_by_side)) = dispatch(&args, &plan)?;
    print!("{}", report::table(&header, &figures));
    for line in &side_by_side {
        println!("{line}");
    }
    for note in &plan.notes {
        println!("note: {note}");
    }
    println!(
        "note: memory = allocator bytes after the fill minus before, per key (plus, for artdb, \
         the bytes its image arena's images asked for); memory held = the same with the arena's \
         chunks counted whole, free space included; a/<peer> = artdb's figure / the peer's \
         (readbatch: artdb's get_many vs the peer's readrandom)"
    );
    if let Some(path) = &args.json {
        std::fs::write(path, report::json(&header, &figures)?)
            .map_err(|error| format!("cannot write the JSON to {}: {error}", path.display()))?;
    }
    Ok(())
}

fn plan(args: &Args) -> Result<Plan, BenchError> {
    let n = args.n.unwrap_or(if args.quick { QUICK_N } else { FULL_N });
    if n == 0 {
        return Err("--n must be at least 1".into());
    }
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let mut notes = Vec::new();
    let mut structures = Vec::new();
    let wanted = args.structures.clone().unwrap_or_default();
    for name in &wanted {
        if !STRUCTURES.contains(&name.as_str()) {
            return Err(format!("unknown structure {name:?}; choose from {STRUCTURES:?}").into());
        }
    }
    for name in STRUCTURES {
        if !wanted.is_empty() && !wanted.iter().any(|wanted| wanted == name) {
            continue;
        }
        if name == "congee" && args.key_len != 8 {
            notes.push("congee skipped: it takes 8-byte keys only".to_string());
            continue;
        }
        structures.push(name);
    }
    if structures.contains(&"congee") && args.value_len > 8 {
        notes.push(format!(
            "congee stores {}-byte values as Arc<[u8; {}]> in a CongeeArc, which has no range \
             scan: no seekrandom figure",
            args.value_len, args.value_len
        ));
    }
    if structures.contains(&"hashmap") {
        notes.push("hashmap: std HashMap with its default SipHash hasher; no scans".to_string());
    }
    let default_runs = if args.quick || n > 2_000_000 { 1 } else { 3 };
    let runs = args.runs.unwrap_or(default_runs).max(1);
    let seeks = args.seeks.unwrap_or((n / 50).clamp(1_000, 100_000));
    Ok(Plan {
        n,
        order: args.keys,
        threads: args.threads,
        runs,
        seeks,
        structures,
        notes,
        seed: args.seed,
        rounds: args.rounds,
        block: args.block.max(10),
        round_threads: args.round_threads.max(1),
    })
}

/// Picks the monomorphised run for the key and value lengths.
/// The figures of every structure, and the side-by-side rounds' lines.
type Figures = (Vec<StructureFigures>, Vec<String>);

fn dispatch(args: &Args, plan: &Plan) -> Result<(RunHeader, Figures), BenchError> {
    macro_rules! lengths {
        ($(($k:literal, $v:literal)),*) => {
            match (args.key_len, args.value_len) {
                $(($k, $v) => run_typed::<$k, $v>(plan),)*
                (key_len, value_len) => Err(format!(
                    "unsupported lengths: --key-len {key_len} --value-len {value_len}; \
                     key lengths are 8, 16, 32, 64 and value lengths 7, 8, 128"
                ).into()),
            }
        };
    }
    let figures = lengths!(
        (8, 7),
        (8, 8),
        (8, 128),
        (16, 7),
        (16, 8),
        (16, 128),
        (32, 7),
        (32, 8),
        (32, 128),
        (64, 7),
        (64, 8),
        (64, 128)
    )?;
    let header = RunHeader {
        n: plan.n,
        key_len: args.key_len,
        value_len: args.value_len,
        keys: plan.order.name(),
        threads: plan.threads,
        runs: plan.runs,
    };
    Ok((header, figures))
}

/// What each op must return, computed from the key set.
struct Expected {
    read: Tally,
    scan: Tally,
}

/// The measurements of one structure in one run.
struct Measurement {
    rates: Vec<(Op, Option<f64>)>,
    bytes_per_key: f64,
    held_bytes_per_key: f64,
}

fn run_typed<const K: usize, const V: usize>(plan: &Plan) -> Result<Figures, BenchError> {
    let started = Instant::now();
    let keys = KeySet::<K>::generate(plan.n, plan.seeks, plan.order, plan.seed);
    let expected = expected::<K, V>(&keys);
    eprintln!(
        "w1: generated {} keys in {:.1}s",
        plan.n,
        started.elapsed().as_secs_f64()
    );
    let mut all: Vec<Vec<Measurement>> = plan.structures.iter().map(|_| Vec::new()).collect();
    for run in 0..plan.runs {
        for (index, &name) in plan.structures.iter().enumerate() {
            let started = Instant::now();
            let measurement = match name {
                "artdb" => measure::<Artdb, K, V>(&keys, &expected, plan.threads),
                "btreemap" => {
                    measure::<BTreeMap<[u8; K], [u8; V]>, K, V>(&keys, &expected, plan.threads)
                }
                "skipmap" => {
                    measure::<SkipMap<[u8; K], [u8; V]>, K, V>(&keys, &expected, plan.threads)
                }
                "hashmap" => {
                    measure::<HashMap<[u8; K], [u8; V]>, K, V>(&keys, &expected, plan.threads)
                }
                "congee" => measure::<Congee<V>, K, V>(&keys, &expected, plan.threads),
                _ => measure::<Blart<K, V>, K, V>(&keys, &expected, plan.threads),
            }
            .map_err(|error| format!("{name}: {error}"))?;
            eprintln!(
                "w1: run {}/{} {name} done in {:.1}s",
                run + 1,
                plan.runs,
                started.elapsed().as_secs_f64()
            );
            all[index].push(measurement);
        }
    }
    let figures = plan
        .structures
        .iter()
        .zip(all)
        .map(|(&name, runs)| medians(name, &runs))
        .collect();
    let side_by_side = if plan.rounds == 0 {
        Vec::new()
    } else {
        side_by_side::<K, V>(plan, &keys)?
    };
    Ok((figures, side_by_side))
}

/// Builds every named structure, holds them all, and runs the side-by-side rounds.
fn side_by_side<const K: usize, const V: usize>(
    plan: &Plan,
    keys: &KeySet<K>,
) -> Result<Vec<String>, BenchError> {
    let mut held: Vec<Box<dyn rounds::Held<K>>> = Vec::new();
    for &name in &plan.structures {
        let fill = &keys.fill;
        let built: Box<dyn rounds::Held<K>> = match name {
            "artdb" => Box::new(rounds::Built::<Artdb, V>::new(name, fill)?),
            "btreemap" => Box::new(rounds::Built::<BTreeMap<[u8; K], [u8; V]>, V>::new(
                name, fill,
            )?),
            "skipmap" => Box::new(rounds::Built::<SkipMap<[u8; K], [u8; V]>, V>::new(
                name, fill,
            )?),
            "hashmap" => Box::new(rounds::Built::<HashMap<[u8; K], [u8; V]>, V>::new(
                name, fill,
            )?),
            "congee" => Box::new(rounds::Built::<Congee<V>, V>::new(name, fill)?),
            _ => Box::new(rounds::Built::<Blart<K, V>, V>::new(name, fill)?),
        };
        held.push(built);
    }
    eprintln!("w1: side by side, {} structures built", held.len());
    rounds::run::<K, V>(
        &mut held,
        &keys.read,
        &keys.missing,
        plan.block,
        plan.rounds,
        plan.round_threads,
    )
}

fn expected<const K: usize, const V: usize>(keys: &KeySet<K>) -> Expected {
    let mut read = Tally::default();
    for key in &keys.fill {
        read.add(&value_for::<K, V>(key));
    }
    let mut sorted = keys.fill.clone();
    sorted.sort_unstable();
    let mut scan = Tally::default();
    for start in &keys.seek {
        let first = sorted.partition_point(|key| key < start);
        for key in sorted[first..].iter().take(SCAN_PAIRS) {
            scan.add_digest(value_digest(&value_for::<K, V>(key)));
        }
    }
    Expected { read, scan }
}

/// Builds one structure, runs every op on it, checks the answers, and drops it.
fn measure<S, const K: usize, const V: usize>(
    keys: &KeySet<K>,
    expected: &Expected,
    threads: usize,
) -> Result<Measurement, BenchError>
where
    S: Structure<K, V>,
{
    let n = keys.fill.len() as f64;
    let mut rates = Vec::new();
    flush_deferred_frees();
    let arena_before = artdb_art::arena_stats();
    let before = crate::alloc::live_bytes();
    let mut structure = S::new();
    let started = Instant::now();
    structure.fill(&keys.fill)?;
    rates.push((Op::Fill, Some(n / started.elapsed().as_secs_f64() / 1e6)));
    flush_deferred_frees();
    let global = crate::alloc::live_bytes() - before;
    let arena = artdb_art::arena_stats();
    let arena_images = arena.image_bytes as isize - arena_before.image_bytes as isize;
    let arena_held = arena.held_bytes as isize - arena_before.held_bytes as isize;
    let bytes_per_key = (global + arena_images) as f64 / n;
    let held_bytes_per_key = (global + arena_held) as f64 / n;
    {
        let reader = structure.reader();
        let read = timed(threads, &keys.read, |chunk| reader.read(chunk))?;
        rates.push((
            Op::Read,
            Some(checked(Op::Read, read, expected.read, keys.read.len())?),
        ));
        let missing = timed(threads, &keys.missing, |chunk| reader.read(chunk))?;
        let missing = checked(Op::Missing, missing, Tally::default(), keys.missing.len())?;
        rates.push((Op::Missing, Some(missing)));
        let batch = match reader.read_batched(&[]) {
            None => None,
            Some(_) => {
                let batch = timed(threads, &keys.read, |chunk| {
                    reader
                        .read_batched(chunk)
                        .unwrap_or_else(|| Err("no batched read".into()))
                })?;
                Some(checked(Op::Batch, batch, expected.read, keys.read.len())?)
            }
        };
        rates.push((Op::Batch, batch));
        let seek = match reader.scan(&[], SCAN_PAIRS) {
            None => None,
            Some(_) => {
                let scan = timed(threads, &keys.seek, |chunk| {
                    reader
                        .scan(chunk, SCAN_PAIRS)
                        .unwrap_or_else(|| Err("no scan".into()))
                })?;
                Some(checked(
                    Op::Seek,
                    scan,
                    expected.scan,
                    expected.scan.hits as usize,
                )?)
            }
        };
        rates.push((Op::Seek, seek));
    }
    let started = Instant::now();
    let deleted = structure.delete(&keys.read)?;
    let seconds = started.elapsed().as_secs_f64();
    let delete = checked(
        Op::Delete,
        (deleted, seconds),
        expected.read,
        keys.read.len(),
    )?;
    rates.push((Op::Delete, Some(delete)));
    drop(structure);
    Ok(Measurement {
        rates,
        bytes_per_key,
        held_bytes_per_key,
    })
}

/// Runs `work` over `keys` split across `threads` threads; returns the summed tally and the
/// wall-clock seconds.
fn timed<const K: usize, F>(
    threads: usize,
    keys: &[[u8; K]],
    work: F,
) -> Result<(Tally, f64), BenchError>
where
    F: Fn(&[[u8; K]]) -> Result<Tally, BenchError> + Sync,
{
    let started = Instant::now();
    let mut total = Tally::default();
    if threads <= 1 {
        total = work(keys)?;
    } else {
        let chunk_len = keys.len().div_ceil(threads).max(1);
        let results: Vec<Result<Tally, BenchError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = keys
                .chunks(chunk_len)
                .map(|chunk| scope.spawn(|| work(chunk)))
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|_| Err("a reader thread panicked".into()))
                })
                .collect()
        });
        for result in results {
            total += result?;
        }
    }
    Ok((total, started.elapsed().as_secs_f64()))
}

/// The rate in millions of `operations` per second (pairs read, for scans), after checking
/// that the op saw exactly what it should have.
fn checked(
    op: Op,
    (tally, seconds): (Tally, f64),
    expected: Tally,
    operations: usize,
) -> Result<f64, BenchError> {
    if tally != expected {
        return Err(format!(
            "{} returned wrong results: {} hits with digest {:#x}, expected {} with {:#x}",
            op.name(),
            tally.hits,
            tally.digest,
            expected.hits,
            expected.digest
        )
        .into());
    }
    Ok(operations as f64 / seconds / 1e6)
}

/// Lets the epoch-based structures (congee, SkipMap) free what they deferred, so that the
/// memory figure counts live data, not garbage awaiting reclamation (nor garbage of an earlier
/// structure freed during this one's fill, which once made SkipMap's figure negative). Each
/// flush frees only a few bags of garbage, so flush until the live bytes stop changing.
fn flush_deferred_frees() {
    let mut last = crate::alloc::live_bytes();
    let mut unchanged = 0;
    for _ in 0..FLUSHES_MAX {
        congee::epoch::pin().flush();
        let now = crate::alloc::live_bytes();
        unchanged = if now == last { unchanged + 1 } else { 0 };
        if unchanged >= FLUSHES_UNCHANGED {
            break;
        }
        last = now;
    }
}

fn medians(name: &'static str, runs: &[Measurement]) -> StructureFigures {
    let rates = Op::ALL
        .iter()
        .map(|&op| {
            let mut values: Vec<f64> = runs
                .iter()
                .filter_map(|run| {
                    run.rates
                        .iter()
                        .find(|(o, _)| *o == op)
                        .and_then(|(_, r)| *r)
                })
                .collect();
            (op, median(&mut values))
        })
        .collect();
    let mut memory: Vec<f64> = runs.iter().map(|run| run.bytes_per_key).collect();
    let mut held: Vec<f64> = runs.iter().map(|run| run.held_bytes_per_key).collect();
    StructureFigures {
        name,
        rates,
        bytes_per_key: median(&mut memory).unwrap_or(0.0),
        held_bytes_per_key: median(&mut held).unwrap_or(0.0),
    }
}

fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}
