//! W5: transactions (`shared/BENCHMARKS.md`, W5: durability and concurrency): artdb and its peers side by side in one run, one system at a time, each on its own
//! directory under `--dir` (same file system as the fsync probe).
//!
//! Table: N 8-byte big-endian keys `0..N`, 8-byte values whose little-endian word is
//! `i | version << 56`, loaded sorted (not timed). Then, per system and in this order:
//! - `bulk_update_1pct_s`, `bulk_update_10pct_s`, `bulk_update_100pct_s`: one durable
//!   transaction rewriting every 100th / 10th / every key, in key order;
//! - `reader_ratio_during_update`: during the 100% update, a reader thread's point-lookup rate
//!   (uniform keys, one snapshot taken before the update, every value checked against that
//!   snapshot's version) over its rate in the same snapshot just before the update;
//! - `checkpoint_1pct_s`, `checkpoint_1pct_bytes`: after a checkpoint, 1% of the keys are
//!   rewritten in one commit, then the system's checkpoint is timed and the bytes the process
//!   wrote meanwhile (`/proc/self/io` `write_bytes`) counted; systems without such a step
//!   (redb, LMDB: every commit writes its pages in place) have no row;
//! - `commit_max_ms_idle`, `commit_max_ms_during_checkpoint`: the longest single-key durable
//!   commit of one committing thread in 0.3 s alone, and the longest that overlapped a
//!   checkpoint (after 1% of the keys changed) run beside it: how long commits wait for a
//!   checkpoint (systems with a checkpoint step only);
//! - `commit_t1`, `commit_t2`, `commit_t8`, `commit_t32`: that many threads each committing
//!   single-key durable updates of uniform keys for `--secs`: total commits per second;
//! - `rmw_t32_uniform`, `rmw_t32_hot` with `abort_rate_uniform`, `abort_rate_hot`: 32 threads of
//!   read-modify-write transactions (read a key, write it and one other key, durable) over all
//!   keys or over 1,000 hot keys; aborted attempts (conflicts) over all attempts;
//! - `commit_t1_over_fsync_limit` (with `commit_t1_interleaved`, `fsync_limit_interleaved`):
//!   one committing thread and the bare append + fdatasync loop in 16 alternating slices, so
//!   that the ratio compares the two under the same disk and load;
//! - `recovery_open_s`: a child process (`w5-abandon`) opens the database, makes durable
//!   commits of 1,024 pairs until its log holds nearly `--log-bytes` (artdb, which reports its
//!   log) or that many key/value bytes were committed (peers), and kills itself with SIGKILL;
//!   the time to open the database again and read the last commit's marker key.
//!
//! Once per run: `fsync_limit` (system `machine`): a bare loop appending one 64-byte record (the
//! size of a one-pair commit record) and `fdatasync`, in a preallocated file, as logs do;
//! `fsync_limit_extending` the same appending past the end of the file.
//!
//! JSON: `{"workload":"w5","n":N,"results":[{"system","op","value","unit"}],"notes":[...],
//! "peers":{crate:version}}` (each note opens with its system's version; peers:
//! [`crate::versions::json`]).

use crate::kv::{self, Kv, Outcome, Res, System};
use crate::layout::{self, Figure};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Options of the W5 workload.
#[derive(clap::Args)]
pub struct Args {
    /// Run at the quick (CI smoke) scale: N = 100,000, 0.3 s runs, a 1 MiB abandoned log.
    #[arg(long)]
    quick: bool,
    /// Keys in the table (default 10,000,000; quick 100,000).
    #[arg(long)]
    n: Option<u64>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Directory for the databases (each system's is deleted after its run).
    #[arg(long, default_value = "target/w5-data")]
    dir: PathBuf,
    /// Systems to run, comma-separated (default: artdb,redb,lmdb,sqlite,fjall and rocksdb when
    /// built with the `rocksdb` feature).
    #[arg(long)]
    systems: Option<String>,
    /// Seconds of each timed commit run (fsync probe, commit_tK, rmw); default 3, quick 0.3.
    #[arg(long)]
    secs: Option<f64>,
    /// Log bytes the abandoned process leaves (artdb) or key/value bytes it commits (peers)
    /// before it is killed (default 16 MiB, quick 1 MiB).
    #[arg(long)]
    log_bytes: Option<u64>,
    /// Only the load and the read-modify-write figures (`rmw_t32_*`, `abort_rate_*`): for a
    /// large `--n` within a short run.
    #[arg(long)]
    rmw_only: bool,
}

/// Options of the hidden `w5-abandon` child (see `recovery_open_s` in the module docs).
#[derive(clap::Args)]
pub struct AbandonArgs {
    /// System name.
    #[arg(long)]
    system: String,
    /// Its directory.
    #[arg(long)]
    dir: PathBuf,
    /// Keys in its table.
    #[arg(long)]
    n: u64,
    /// Log bytes to leave (systems that report their log) or key/value payload bytes to
    /// commit (the others).
    #[arg(long)]
    log_bytes: u64,
}

const RECORD_BYTES: usize = 64;
const PROBE_FILE_BYTES: u64 = 4 << 20;
const HOT_KEYS: u64 = 1_000;
const ABANDON_BATCH: u64 = 1_024;
const CACHE_BYTES: u64 = 4 << 30;
const MARKER: u64 = 0xAB << 56;

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn value(i: u64, version: u64) -> [u8; 8] {
    (i | version << 56).to_le_bytes()
}

/// Version of key `i` after the 1% and 10% updates.
fn version_before_full_update(i: u64) -> u64 {
    u64::from(i.is_multiple_of(100)) + u64::from(i.is_multiple_of(10))
}

/// Runs W5.
pub fn run(args: Args) -> Res<()> {
    let n = args
        .n
        .unwrap_or(if args.quick { 100_000 } else { 10_000_000 });
    if n < 1_000 {
        return Err("W5 needs --n of at least 1000 (the hot set is 1,000 keys)".into());
    }
    let secs = args.secs.unwrap_or(if args.quick { 0.3 } else { 3.0 });
    let log_bytes = args
        .log_bytes
        .unwrap_or(if args.quick { 1 << 20 } else { 16 << 20 });
    let systems = match &args.systems {
        Some(list) => System::parse_list(list)?,
        None => System::all()
            .into_iter()
            .filter(|s| *s != System::Sled)
            .collect(),
    };
    std::fs::create_dir_all(&args.dir)?;
    println!(
        "W5: {n} keys, 8-byte keys and values; {secs} s runs; abandoned log {log_bytes} bytes; \
         files in {}",
        args.dir.display()
    );
    crate::versions::print_header(&systems);
    let mut figures = Vec::new();
    let limit = fsync_limit(&args.dir, secs, false)?;
    println!("  machine fsync_limit {limit:.0} appends+fdatasync/s (preallocated file)");
    figures.push(Figure::new("machine", "fsync_limit", limit, "commits/s"));
    let extending = fsync_limit(&args.dir, secs, true)?;
    println!("  machine fsync_limit_extending {extending:.0} appends+fdatasync/s");
    figures.push(Figure::new(
        "machine",
        "fsync_limit_extending",
        extending,
        "commits/s",
    ));
    let mut notes = vec![format!(
        "fsync_limit: {RECORD_BYTES}-byte append + fdatasync loop on the file system of {}",
        args.dir.display()
    )];
    for system in &systems {
        let dir = args.dir.join(system.name());
        let _ = std::fs::remove_dir_all(&dir);
        let result = run_system(
            *system,
            &dir,
            n,
            secs,
            log_bytes,
            args.rmw_only,
            &mut figures,
        );
        let _ = std::fs::remove_dir_all(&dir);
        result.map_err(|error| format!("{}: {error}", system.name()))?;
        notes.push(system.note());
    }
    let mut names = vec!["machine"];
    names.extend(systems.iter().map(|s| s.name()));
    layout::print(&figures, &names);
    for note in &notes {
        println!("  note: {note}");
    }
    if let Some(path) = &args.json {
        let results: Vec<serde_json::Value> = figures
            .iter()
            .map(|f| {
                serde_json::json!({"system": f.system, "op": f.op, "value": f.value, "unit": f.unit})
            })
            .collect();
        let json = serde_json::json!({"workload": "w5", "n": n, "results": results, "notes": notes,
                "peers": crate::versions::json()});
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    }
    Ok(())
}

/// Appends + fdatasyncs per second for `secs`.
fn fsync_limit(dir: &Path, secs: f64, extending: bool) -> Res<f64> {
    let path = dir.join("fsync-probe");
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)?;
    if !extending {
        let zeros = vec![0u8; 1 << 20];
        for i in 0..PROBE_FILE_BYTES >> 20 {
            file.write_all_at(&zeros, i << 20)?;
        }
        file.sync_all()?;
    }
    kv::sync_dir(dir)?;
    let record = [0x5au8; RECORD_BYTES];
    let mut offset = 0u64;
    let mut count = 0u64;
    let start = Instant::now();
    let length = Duration::from_secs_f64(secs);
    while start.elapsed() < length {
        file.write_all_at(&record, offset)?;
        file.sync_data()?;
        count += 1;
        offset += RECORD_BYTES as u64;
        if !extending && offset + RECORD_BYTES as u64 > PROBE_FILE_BYTES {
            offset = 0;
        }
    }
    let rate = count as f64 / start.elapsed().as_secs_f64();
    drop(file);
    std::fs::remove_file(&path)?;
    Ok(rate)
}

fn push(figures: &mut Vec<Figure>, system: System, op: &str, value: f64, unit: &str) {
    println!(
        "  {:<8} {op:<28} {:>14}",
        system.name(),
        layout::format_value(value, unit)
    );
    figures.push(Figure::new(system.name(), op, value, unit));
}

fn run_system(
    system: System,
    dir: &Path,
    n: u64,
    secs: f64,
    log_bytes: u64,
    rmw_only: bool,
    figures: &mut Vec<Figure>,
) -> Res<()> {
    let db = system.open(dir, CACHE_BYTES)?;
    let start = Instant::now();
    db.load_sorted(n, &mut |i, k, v| {
        k.clear();
        k.extend_from_slice(&key(i));
        v.clear();
        v.extend_from_slice(&value(i, 0));
    })?;
    println!(
        "  {:<8} (load of {n} sorted keys, not a W5 figure: {:.2} s)",
        system.name(),
        start.elapsed().as_secs_f64()
    );
    if !rmw_only {
        updates_checkpoint_and_commits(system, db.as_ref(), n, secs, figures)?;
        commit_t1_interleaved(system, db.as_ref(), dir, n, secs, figures)?;
    }
    rmw(system, db.as_ref(), n, secs, figures)?;
    if rmw_only {
        db.close()?;
        return Ok(());
    }
    // Close, then an abandoned process and the recovering open.
    db.close()?;
    let seconds = recovery_open(system, dir, n, log_bytes)?;
    push(figures, system, "recovery_open_s", seconds, "s");
    Ok(())
}

/// `commit_t1_over_fsync_limit`: `commit_t1` and the bare append + fdatasync loop of
/// `fsync_limit` measured in 16 alternating slices of `secs / 8` each, on a probe file in the
/// system's directory, so both see the same disk and load (on a shared machine the sync rate
/// swings several-fold within seconds, which makes the ratio of the separately timed figures
/// meaningless). Also pushes both interleaved rates.
fn commit_t1_interleaved(
    system: System,
    db: &dyn Kv,
    dir: &Path,
    n: u64,
    secs: f64,
    figures: &mut Vec<Figure>,
) -> Res<()> {
    let path = dir.join("fsync-probe-interleaved");
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)?;
    let zeros = vec![0u8; 1 << 20];
    for i in 0..PROBE_FILE_BYTES >> 20 {
        file.write_all_at(&zeros, i << 20)?;
    }
    file.sync_all()?;
    kv::sync_dir(dir)?;
    let record = [0x5au8; RECORD_BYTES];
    let slice = Duration::from_secs_f64(secs / 8.0);
    let mut rng = StdRng::seed_from_u64(9);
    let (mut probes, mut probe_time) = (0u64, Duration::ZERO);
    let (mut commits, mut commit_time) = (0u64, Duration::ZERO);
    let mut offset = 0u64;
    for _ in 0..8 {
        let start = Instant::now();
        while start.elapsed() < slice {
            file.write_all_at(&record, offset)?;
            file.sync_data()?;
            probes += 1;
            offset += RECORD_BYTES as u64;
            if offset + RECORD_BYTES as u64 > PROBE_FILE_BYTES {
                offset = 0;
            }
        }
        probe_time += start.elapsed();
        let start = Instant::now();
        while start.elapsed() < slice {
            let i = rng.gen_range(0..n);
            db.put(&key(i), &value(i, 8))?;
            commits += 1;
        }
        commit_time += start.elapsed();
    }
    drop(file);
    std::fs::remove_file(&path)?;
    let limit = probes as f64 / probe_time.as_secs_f64();
    let rate = commits as f64 / commit_time.as_secs_f64();
    push(
        figures,
        system,
        "fsync_limit_interleaved",
        limit,
        "commits/s",
    );
    push(figures, system, "commit_t1_interleaved", rate, "commits/s");
    push(
        figures,
        system,
        "commit_t1_over_fsync_limit",
        rate / limit,
        "ratio",
    );
    Ok(())
}

/// The bulk updates, the checkpoint after 1% and the single-key commits (module docs).
fn updates_checkpoint_and_commits(
    system: System,
    db: &dyn Kv,
    n: u64,
    secs: f64,
    figures: &mut Vec<Figure>,
) -> Res<()> {
    // Bulk updates: every 100th key, every 10th key, then every key (with the reader).
    for (op, stride) in [("bulk_update_1pct_s", 100), ("bulk_update_10pct_s", 10)] {
        let count = n.div_ceil(stride);
        let start = Instant::now();
        db.write(count, &mut |j, k, v| {
            let i = j * stride;
            k.clear();
            k.extend_from_slice(&key(i));
            v.clear();
            v.extend_from_slice(&value(i, version_before_full_update(i)));
        })?;
        push(figures, system, op, start.elapsed().as_secs_f64(), "s");
    }
    let (update_s, ratio) = full_update_with_reader(db, n, secs)?;
    push(figures, system, "bulk_update_100pct_s", update_s, "s");
    push(
        figures,
        system,
        "reader_ratio_during_update",
        ratio,
        "ratio",
    );
    // Checkpoint after 1% of the keys changed.
    db.checkpoint()?;
    db.write_before_checkpoint(n.div_ceil(100), &mut |j, k, v| {
        let i = (j * 100 + 1).min(n - 1);
        k.clear();
        k.extend_from_slice(&key(i));
        v.clear();
        v.extend_from_slice(&value(i, 5));
    })?;
    let bytes_before = kv::process_write_bytes()?;
    let start = Instant::now();
    if db.checkpoint()? {
        let seconds = start.elapsed().as_secs_f64();
        let bytes = kv::process_write_bytes()?.saturating_sub(bytes_before);
        push(figures, system, "checkpoint_1pct_s", seconds, "s");
        push(
            figures,
            system,
            "checkpoint_1pct_bytes",
            bytes as f64,
            "bytes",
        );
    }
    // How long single commits wait while a checkpoint (of 1% changed keys) runs beside them.
    if let Some((idle_ms, during_ms, checkpoint_ms)) = commit_wait_during_checkpoint(db, n)? {
        push(figures, system, "commit_max_ms_idle", idle_ms, "ms");
        push(
            figures,
            system,
            "commit_max_ms_during_checkpoint",
            during_ms,
            "ms",
        );
        println!(
            "           commit latency: max {idle_ms:.2} ms idle, max {during_ms:.2} ms during a \
             {checkpoint_ms:.1} ms checkpoint"
        );
    }
    // Single-key durable commits.
    for threads in [1usize, 2, 8, 32] {
        let (commits, _, elapsed) = timed_threads(threads, secs, |rng| {
            let i = rng.gen_range(0..n);
            db.put(&key(i), &value(i, 6))
        })?;
        push(
            figures,
            system,
            &format!("commit_t{threads}"),
            commits as f64 / elapsed,
            "commits/s",
        );
    }
    Ok(())
}

/// Read-modify-write transactions, 32 threads, uniform then hot keys (module docs).
fn rmw(system: System, db: &dyn Kv, n: u64, secs: f64, figures: &mut Vec<Figure>) -> Res<()> {
    let stride = n / HOT_KEYS;
    for (label, space) in [("uniform", n), ("hot", HOT_KEYS)] {
        let scale = if space == n { 1 } else { stride };
        let (commits, aborts, elapsed) = timed_threads(32, secs, |rng| {
            let a = rng.gen_range(0..space);
            let mut b = rng.gen_range(0..space - 1);
            if b >= a {
                b += 1;
            }
            db.rmw(&key(a * scale), &key(b * scale))
        })?;
        push(
            figures,
            system,
            &format!("rmw_t32_{label}"),
            commits as f64 / elapsed,
            "commits/s",
        );
        let attempts = (commits + aborts).max(1);
        push(
            figures,
            system,
            &format!("abort_rate_{label}"),
            aborts as f64 / attempts as f64,
            "ratio",
        );
    }
    Ok(())
}

/// `commit_max_ms_idle` and `commit_max_ms_during_checkpoint`: one thread commits single keys
/// durably in a loop, timing each; for 0.3 s nothing else runs (idle), then 1% of the keys are
/// rewritten and a checkpoint runs beside the committer. Returns the longest commit of the idle
/// window, the longest commit that overlapped the checkpoint, and the checkpoint's length
/// (`None` for systems without a checkpoint step).
fn commit_wait_during_checkpoint(db: &dyn Kv, n: u64) -> Res<Option<(f64, f64, f64)>> {
    let done = AtomicBool::new(false);
    let origin = Instant::now();
    let (commits, window) = std::thread::scope(|scope| -> Res<_> {
        let committer = scope.spawn(|| -> Res<Vec<(Duration, Duration)>> {
            let mut rng = StdRng::seed_from_u64(5);
            let mut spans = Vec::new();
            while !done.load(Ordering::Acquire) {
                let i = rng.gen_range(0..n);
                let start = origin.elapsed();
                db.put(&key(i), &value(i, 7))?;
                spans.push((start, origin.elapsed()));
            }
            Ok(spans)
        });
        let run = || -> Res<Option<(Duration, Duration, Duration)>> {
            std::thread::sleep(Duration::from_millis(300));
            let idle_end = origin.elapsed();
            db.write_before_checkpoint(n.div_ceil(100), &mut |j, k, v| {
                let i = (j * 100 + 2).min(n - 1);
                k.clear();
                k.extend_from_slice(&key(i));
                v.clear();
                v.extend_from_slice(&value(i, 7));
            })?;
            let start = origin.elapsed();
            let ran = db.checkpoint()?;
            let end = origin.elapsed();
            std::thread::sleep(Duration::from_millis(50));
            Ok(ran.then_some((idle_end, start, end)))
        };
        let window = run();
        done.store(true, Ordering::Release);
        let commits = committer
            .join()
            .map_err(|_| "the committer thread panicked")??;
        Ok((commits, window?))
    })?;
    let Some((idle_end, start, end)) = window else {
        return Ok(None);
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let longest = |keep: &dyn Fn(&(Duration, Duration)) -> bool| {
        commits
            .iter()
            .filter(|span| keep(span))
            .map(|&(a, b)| ms(b - a))
            .fold(0.0f64, f64::max)
    };
    let idle = longest(&|&(_, b)| b <= idle_end);
    let during = longest(&|&(a, b)| a < end && b > start);
    Ok(Some((idle, during, ms(end - start))))
}

/// The 100% update timed, with a reader on one snapshot before and during it.
fn full_update_with_reader(db: &dyn Kv, n: u64, secs: f64) -> Res<(f64, f64)> {
    let ready = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let idle = Duration::from_secs_f64(secs.min(1.0));
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| -> Res<(f64, f64)> {
            let mut rng = StdRng::seed_from_u64(55);
            let mut rates = (0.0, 0.0);
            db.read(&mut |snap| {
                let mut lookups = |rng: &mut StdRng| -> Res<()> {
                    for _ in 0..64 {
                        let i = rng.gen_range(0..n);
                        let expected = u64::from_le_bytes(value(i, version_before_full_update(i)));
                        match snap.get(&key(i))? {
                            Some(word) if word == expected => {}
                            other => {
                                return Err(format!(
                                    "reader: key {i} read {other:x?}, its snapshot has \
                                     {expected:#x} (not one snapshot)"
                                )
                                .into())
                            }
                        }
                    }
                    Ok(())
                };
                let start = Instant::now();
                let mut count = 0u64;
                while start.elapsed() < idle {
                    lookups(&mut rng)?;
                    count += 64;
                }
                rates.0 = count as f64 / start.elapsed().as_secs_f64();
                ready.store(true, Ordering::Release);
                let start = Instant::now();
                let mut count = 0u64;
                while !done.load(Ordering::Acquire) {
                    lookups(&mut rng)?;
                    count += 64;
                }
                rates.1 = count as f64 / start.elapsed().as_secs_f64();
                Ok(())
            })?;
            Ok(rates)
        });
        while !ready.load(Ordering::Acquire) && !reader.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let start = Instant::now();
        let update = if reader.is_finished() {
            Err("the reader stopped before the update".into())
        } else {
            db.write(n, &mut |i, k, v| {
                k.clear();
                k.extend_from_slice(&key(i));
                v.clear();
                v.extend_from_slice(&value(i, version_before_full_update(i) + 1));
            })
        };
        let seconds = start.elapsed().as_secs_f64();
        done.store(true, Ordering::Release);
        let rates = reader.join().map_err(|_| "the reader thread panicked")?;
        update?;
        let (idle_rate, during_rate) = rates?;
        println!(
            "           reader: {idle_rate:.0} lookups/s idle, {during_rate:.0} during the update"
        );
        Ok((seconds, during_rate / idle_rate.max(1.0)))
    })
}

/// Runs `op` on `threads` threads for `secs`; returns the committed and conflicted attempts in
/// total and the seconds from the start until the last thread finished its last attempt.
fn timed_threads(
    threads: usize,
    secs: f64,
    op: impl Fn(&mut StdRng) -> Res<Outcome> + Sync,
) -> Res<(u64, u64, f64)> {
    let length = Duration::from_secs_f64(secs);
    let barrier = std::sync::Barrier::new(threads);
    let start = Instant::now();
    let (committed, conflicts) = std::thread::scope(|scope| -> Res<(u64, u64)> {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (op, barrier) = (&op, &barrier);
                scope.spawn(move || -> Res<(u64, u64)> {
                    let mut rng = StdRng::seed_from_u64(1000 + t as u64);
                    let (mut committed, mut conflicts) = (0u64, 0u64);
                    barrier.wait();
                    let start = Instant::now();
                    while start.elapsed() < length {
                        match op(&mut rng)? {
                            Outcome::Committed => committed += 1,
                            Outcome::Conflict => conflicts += 1,
                        }
                    }
                    Ok((committed, conflicts))
                })
            })
            .collect();
        let mut total = (0, 0);
        for handle in handles {
            let (c, a) = handle.join().map_err(|_| "a worker thread panicked")??;
            total.0 += c;
            total.1 += a;
        }
        Ok(total)
    })?;
    Ok((committed, conflicts, start.elapsed().as_secs_f64()))
}

/// Where the `w5-abandon` child leaves the number of its last commit.
fn abandon_report(dir: &Path) -> PathBuf {
    dir.with_extension("abandoned")
}

/// `recovery_open_s`: the child commits and is killed; then open + read the marker.
fn recovery_open(system: System, dir: &Path, n: u64, log_bytes: u64) -> Res<f64> {
    use std::os::unix::process::ExitStatusExt;
    let report = abandon_report(dir);
    let _ = std::fs::remove_file(&report);
    let status = std::process::Command::new(std::env::current_exe()?)
        .arg("w5-abandon")
        .args(["--system", system.name(), "--n", &n.to_string()])
        .args(["--log-bytes", &log_bytes.to_string(), "--dir"])
        .arg(dir)
        .status()?;
    if status.signal() != Some(libc::SIGKILL) {
        return Err(format!("the w5-abandon child ended with {status}, not SIGKILL").into());
    }
    let commits: u64 = std::fs::read_to_string(&report)?.trim().parse()?;
    std::fs::remove_file(&report)?;
    let start = Instant::now();
    let db = system.open(dir, CACHE_BYTES)?;
    let mut marker = None;
    db.read(&mut |snap| {
        marker = snap.get(&key(n - 1))?;
        Ok(())
    })?;
    let seconds = start.elapsed().as_secs_f64();
    db.close()?;
    let expected = MARKER | commits;
    if marker != Some(expected) {
        return Err(format!(
            "after recovery the marker key reads {marker:x?}, the last durable commit wrote \
             {expected:#x}"
        )
        .into());
    }
    Ok(seconds)
}

/// The `w5-abandon` child: durable commits of 1,024 random updates, each also writing the
/// marker key with its commit number, until the log holds nearly `--log-bytes` (systems that
/// report their log: the next commit would pass it, and with it artdb's checkpoint threshold)
/// or that many key/value bytes were committed (the others); then SIGKILL (no close, no
/// checkpoint, no destructor).
pub fn abandon(args: AbandonArgs) -> Res<()> {
    let system = System::parse_list(&args.system)?
        .into_iter()
        .next()
        .ok_or("no system named")?;
    let db = system.open(&args.dir, CACHE_BYTES)?;
    let before = kv::dir_bytes(&args.dir);
    let mut rng = StdRng::seed_from_u64(77);
    let mut payload = 0u64;
    let mut log = db.log_bytes()?.unwrap_or(0);
    let mut commit = 0u64;
    loop {
        commit += 1;
        db.write(ABANDON_BATCH, &mut |j, k, v| {
            let i = if j == 0 {
                args.n - 1
            } else {
                rng.gen_range(0..args.n - 1)
            };
            k.clear();
            k.extend_from_slice(&key(i));
            v.clear();
            v.extend_from_slice(&(MARKER | commit).to_le_bytes());
        })?;
        payload += ABANDON_BATCH * 16;
        let full = match db.log_bytes()? {
            Some(now) => {
                let growth = now.saturating_sub(log);
                log = now;
                now + growth > args.log_bytes
            }
            None => payload >= args.log_bytes,
        };
        if full {
            break;
        }
    }
    let log_note = match db.log_bytes()? {
        Some(bytes) => format!("log holds {bytes} bytes of records"),
        None => format!("{payload} bytes of pairs committed"),
    };
    eprintln!(
        "           w5-abandon {}: {commit} durable commits of {ABANDON_BATCH} pairs, {log_note}, \
         files grew by {} bytes; SIGKILL",
        system.name(),
        kv::dir_bytes(&args.dir).saturating_sub(before)
    );
    let report = abandon_report(&args.dir);
    std::fs::write(&report, commit.to_string())?;
    // SAFETY: kill(2) on this process's own id; no memory is passed.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    Err("SIGKILL did not end the process".into())
}
