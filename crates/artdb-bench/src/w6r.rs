//! W6R: a reader in another process beside a writer process (issue "many processes",
//! `shared/BENCHMARKS.md` W6): W6's pairs (24-byte keys, 150-byte values) preloaded, then three
//! phases of `--seconds` each, every process a real one (this binary, `w6r --child ...`):
//! - reader alone: random point reads of preloaded keys, a new snapshot every `SNAPSHOT_READS`
//!   reads (each read checks its value's word);
//! - writer alone: W6's individual writes (one durable transaction of one pair each,
//!   overwriting a random preloaded key with its own value);
//! - both at once;
//! - the lag: the writer commits one marker pair (a key past the preloaded ones, its value's
//!   word the wall-clock time just before the commit began) in a loop, and the reader reads it
//!   at the start of each snapshot: the marker's age is how stale a new snapshot is, from the
//!   start of the newest commit it sees (so it includes that commit's own latency, printed
//!   beside it: the writer's median commit).
//!
//! Prints reads/s and commits/s per phase per system and the ratios the issue names: the
//! reader's rate beside the writer over its rate alone, the writer's rate beside the reader over
//! its rate alone, and each reader's rate beside a writer over the best peer's. Systems: artdb,
//! LMDB (heed) and redb (its `SingleWriter` mode, in both phases of its writer); fjall, sled and
//! RocksDB's transaction database lock their files against a second process, and SQLite is not
//! run (the output's notes say so, from [`System::reader_process_note`]).
//! JSON: `{"workload":"w6r","n":N,"results":[{"system","phase","reads_per_s"|"commits_per_s"|
//! "age_p50_us"|"age_p99_us"|"commit_p50_us"}],
//! "not_run":[{"system","why"}],"peers":{crate:version}}` (peers: [`crate::versions::json`]).

use crate::kv::{Res, System};
use crate::w6::{pair_key, pair_value, value_word};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Options of W6R.
#[derive(clap::Args)]
pub struct Args {
    /// Quick scale (CI smoke): 20,000 pairs, phases of 1 s.
    #[arg(long)]
    quick: bool,
    /// Preloaded pairs (default 1,000,000; quick 20,000).
    #[arg(long)]
    n: Option<u64>,
    /// Length of each phase in seconds (default 5; quick 1).
    #[arg(long)]
    seconds: Option<f64>,
    /// Directory for the databases (each system's is deleted after its run).
    #[arg(long, default_value = "target/w6r-data")]
    dir: PathBuf,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Systems, comma-separated (default: artdb,lmdb,redb; a system that cannot have a reader
    /// process is listed in the notes with the reason).
    #[arg(long)]
    systems: Option<String>,
    /// Internal: run as the reader or writer process of one phase.
    #[arg(long, hide = true)]
    child: Option<String>,
    /// Internal: the system of a child process.
    #[arg(long, hide = true)]
    system: Option<String>,
}

/// Reads per snapshot of the reader process.
const SNAPSHOT_READS: u64 = 1_000;
/// Pairs per transaction of the preload.
const LOAD_BATCH: u64 = 10_000;

/// Runs W6R (or one of its child processes).
pub fn run(args: Args) -> Res<()> {
    let n = args
        .n
        .unwrap_or(if args.quick { 20_000 } else { 1_000_000 });
    let seconds = args.seconds.unwrap_or(if args.quick { 1.0 } else { 5.0 });
    let run_for = Duration::from_secs_f64(seconds);
    if let Some(role) = &args.child {
        let system = System::parse_list(args.system.as_deref().unwrap_or(""))?
            .first()
            .copied()
            .ok_or("--system is required with --child")?;
        return child(role, system, &args.dir, n, run_for);
    }
    let systems = match &args.systems {
        Some(list) => System::parse_list(list)?,
        None => vec![System::Artdb, System::Lmdb, System::Redb],
    };
    crate::versions::print_header(&systems);
    let systems: Vec<System> = systems
        .into_iter()
        .filter(|system| system.has_reader_process())
        .collect();
    let mut rows = Vec::new();
    let mut lags = Vec::new();
    for system in systems {
        let dir = args.dir.join(system.name());
        let _ = std::fs::remove_dir_all(&dir);
        preload(system, &dir, n)?;
        let reads_alone = finish(spawn("reader", system, &dir, n, seconds)?)?;
        let commits_alone = finish(spawn("writer", system, &dir, n, seconds)?)?;
        let reader = spawn("reader", system, &dir, n, seconds)?;
        let writer = spawn("writer", system, &dir, n, seconds)?;
        let reads_beside = finish(reader)?;
        let commits_beside = finish(writer)?;
        let reader = spawn("lag-reader", system, &dir, n, seconds)?;
        let writer = spawn("lag-writer", system, &dir, n, seconds)?;
        let ages = finish_with(reader, &["AGE_P50_US", "AGE_P99_US"])?;
        let commit_p50 = finish_with(writer, &["COMMIT_P50_US"])?;
        let _ = std::fs::remove_dir_all(&dir);
        rows.push((
            system,
            reads_alone,
            reads_beside,
            commits_alone,
            commits_beside,
        ));
        lags.push((system, ages[1], ages[2], commit_p50[1]));
    }
    let best_beside = rows
        .iter()
        .filter(|row| row.0 != System::Artdb)
        .map(|row| row.2)
        .fold(0.0f64, f64::max);
    println!(
        "W6R: a reader process beside a writer process, {n} pairs preloaded, phases of {seconds} s"
    );
    println!(
        "{:<8} {:>14} {:>16} {:>7} {:>15} {:>17} {:>7} {:>12}",
        "system",
        "reads/s alone",
        "reads/s + writer",
        "ratio",
        "commits/s alone",
        "commits/s + reader",
        "ratio",
        "reader/peer"
    );
    let mut results = Vec::new();
    for (system, reads_alone, reads_beside, commits_alone, commits_beside) in &rows {
        let versus = if best_beside > 0.0 {
            format!("{:.2}x", reads_beside / best_beside)
        } else {
            "-".to_string()
        };
        println!(
            "{:<8} {:>14.0} {:>16.0} {:>6.2}x {:>15.0} {:>17.0} {:>6.2}x {:>12}",
            system.name(),
            reads_alone,
            reads_beside,
            reads_beside / reads_alone.max(1.0),
            commits_alone,
            commits_beside,
            commits_beside / commits_alone.max(1.0),
            versus
        );
        for (phase, field, value) in [
            ("reader_alone", "reads_per_s", reads_alone),
            ("reader_beside_writer", "reads_per_s", reads_beside),
            ("writer_alone", "commits_per_s", commits_alone),
            ("writer_beside_reader", "commits_per_s", commits_beside),
        ] {
            results.push(serde_json::json!({
                "system": system.name(), "phase": phase, field: value,
            }));
        }
    }
    println!(
        "lag (a new snapshot's staleness: age of the newest commit it sees, from that commit's \
         start)"
    );
    println!(
        "{:<8} {:>14} {:>14} {:>18}",
        "system", "age p50 us", "age p99 us", "commit p50 us"
    );
    for &(system, age_p50, age_p99, commit_p50) in &lags {
        println!(
            "{:<8} {:>14.0} {:>14.0} {:>18.0}",
            system.name(),
            age_p50,
            age_p99,
            commit_p50
        );
        for (field, value) in [
            ("age_p50_us", age_p50),
            ("age_p99_us", age_p99),
            ("commit_p50_us", commit_p50),
        ] {
            results.push(serde_json::json!({
                "system": system.name(), "phase": "lag", field: value,
            }));
        }
    }
    println!("notes: reader/peer is the reader's rate beside the writer over the best peer's");
    for (system, ..) in &rows {
        println!("  {}", system.reader_process_note());
    }
    let mut not_run = Vec::new();
    for system in [System::Fjall, System::Sled, System::Sqlite, System::Rocksdb] {
        println!("  not run: {}", system.reader_process_note());
        not_run.push(serde_json::json!({
            "system": system.name(), "why": system.reader_process_note(),
        }));
    }
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "workload": "w6r", "n": n, "results": results, "not_run": not_run,
            "peers": crate::versions::json(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    }
    Ok(())
}

/// The user-space cache of the systems that have one (redb), in every process.
const CACHE_BYTES: u64 = 4 << 30;

fn preload(system: System, dir: &Path, n: u64) -> Res<()> {
    let kv = system.open_beside_readers(dir, CACHE_BYTES)?;
    let mut done = 0;
    while done < n {
        let count = LOAD_BATCH.min(n - done);
        let base = done;
        kv.write(count, &mut |i, key, value| {
            pair_key(base + i, key);
            pair_value(base + i, value);
        })?;
        done += count;
    }
    kv.checkpoint()?;
    kv.close()
}

fn spawn(role: &str, system: System, dir: &Path, n: u64, seconds: f64) -> Res<Child> {
    Ok(Command::new(std::env::current_exe()?)
        .arg("w6r")
        .arg("--child")
        .arg(role)
        .arg("--system")
        .arg(system.name())
        .arg("--dir")
        .arg(dir)
        .arg("--n")
        .arg(n.to_string())
        .arg("--seconds")
        .arg(seconds.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?)
}

/// Waits for a child and returns the rate it printed.
fn finish(child: Child) -> Res<f64> {
    Ok(finish_with(child, &[])?[0])
}

/// Waits for a child and returns the rate it printed, then each of `also` (lines `NAME value`).
fn finish_with(mut child: Child, also: &[&str]) -> Res<Vec<f64>> {
    let mut out = String::new();
    let mut error = String::new();
    if let Some(stdout) = child.stdout.as_mut() {
        stdout.read_to_string(&mut out)?;
    }
    if let Some(stderr) = child.stderr.as_mut() {
        stderr.read_to_string(&mut error)?;
    }
    let status = child.wait()?;
    std::iter::once("RATE")
        .chain(also.iter().copied())
        .map(|name| {
            out.lines()
                .find_map(|line| {
                    line.strip_prefix(name)?
                        .strip_prefix(' ')?
                        .trim()
                        .parse()
                        .ok()
                })
                .ok_or_else(|| format!("a W6R child failed ({status}): {out}{error}").into())
        })
        .collect()
}

/// Nanoseconds since the Unix epoch: the one clock both processes of the lag phase share.
fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
}

/// The `q` quantile (0..=1) of `values` in microseconds, sorting them; 0 when empty.
fn quantile_us(values: &mut [u64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_unstable();
    let at = ((values.len() - 1) as f64 * q).round() as usize;
    values[at] as f64 / 1e3
}

fn child(role: &str, system: System, dir: &Path, n: u64, run_for: Duration) -> Res<()> {
    let mut rng = crate::w6r_rng(0x9E37_79B9 ^ u64::from(std::process::id()));
    let mut key = Vec::new();
    let mut value = Vec::new();
    let started = Instant::now();
    let mut done = 0u64;
    match role {
        "writer" => {
            let kv = system.open_beside_readers(dir, CACHE_BYTES)?;
            while started.elapsed() < run_for {
                let i = rng() % n;
                pair_key(i, &mut key);
                pair_value(i, &mut value);
                kv.put(&key, &value)?;
                done += 1;
            }
            kv.close()?;
        }
        "reader" | "lag-reader" => {
            // The lag reader also reads the writer's marker at the start of each snapshot.
            let lag = role == "lag-reader";
            let kv = system.open_reader(dir, CACHE_BYTES)?;
            let mut ages = Vec::new();
            let mut marker = Vec::new();
            pair_key(n, &mut marker);
            while started.elapsed() < run_for {
                kv.read(&mut |snap| {
                    if lag {
                        if let Some(stamp) = snap.get(&marker)? {
                            ages.push(wall_ns().saturating_sub(stamp));
                        }
                    }
                    for _ in 0..SNAPSHOT_READS {
                        let i = rng() % n;
                        pair_key(i, &mut key);
                        if snap.get(&key)? != Some(value_word(i)) {
                            return Err(format!("pair {i} read wrong").into());
                        }
                    }
                    Ok(())
                })?;
                done += SNAPSHOT_READS;
            }
            if lag {
                if ages.is_empty() {
                    return Err("the lag reader never saw the writer's marker".into());
                }
                println!("AGE_P50_US {}", quantile_us(&mut ages, 0.5));
                println!("AGE_P99_US {}", quantile_us(&mut ages, 0.99));
            }
        }
        "lag-writer" => {
            let kv = system.open_beside_readers(dir, CACHE_BYTES)?;
            let mut marker = Vec::new();
            pair_key(n, &mut marker);
            let mut commits = Vec::new();
            while started.elapsed() < run_for {
                let stamp = wall_ns();
                pair_value(n, &mut value);
                value[..8].copy_from_slice(&stamp.to_le_bytes());
                kv.put(&marker, &value)?;
                commits.push(wall_ns().saturating_sub(stamp));
                done += 1;
            }
            kv.close()?;
            println!("COMMIT_P50_US {}", quantile_us(&mut commits, 0.5));
        }
        other => return Err(format!("unknown W6R child role {other:?}").into()),
    }
    println!("RATE {}", done as f64 / started.elapsed().as_secs_f64());
    Ok(())
}
