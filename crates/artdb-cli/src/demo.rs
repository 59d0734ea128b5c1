//! `artdb demo`: artdb's main job on a default database, end to end, with timings.
//!
//! Creates a database file, writes a few million generated orders (composite keys encoded with
//! `artdb-key`, as an index would store them) in one write batch with a progress bar,
//! checkpoints, closes and reopens it (open reads two superblocks and maps the file: nothing is
//! loaded), queries it every way a reader can (point gets checked against what was written,
//! batched gets, a prefix scan, seeks with 100 next), changes 1% of the keys behind a live
//! snapshot and checkpoints again (incremental: only changed paths are written), bulk-loads a
//! second table from sorted input, then shows transactions: 8 threads moving money between bank
//! accounts through `Db::transact` with `Durability::Sync` (a few hot accounts, so some commits
//! conflict and are retried; group commit shares log syncs among them) while a reader scans one
//! snapshot throughout and checks it never changes and that fresh snapshots always sum to the
//! same total, and a reader *process* (this binary, `demo-child --reader-ms`, a read-only open
//! beside the writer) does the same from outside while the writers commit and a checkpoint and
//! a compaction run; then a child process (this binary, hidden subcommand `demo-child`) commits
//! numbered durable transactions and prints each number once its commit returned, the demo kills
//! it with SIGKILL mid-stream, reopens the file (recovery from the log), times that, and checks
//! that every acknowledged commit is there (plus at most the one in flight). Last, it verifies
//! every checksum and invariant and prints what each step did and how long it took, and runs a
//! three-node cluster that loses its leader (`demo_cluster.rs`). Keys come from a fixed seed, so
//! runs are comparable.
//!
//! The demo owns its file: it replaces `--path` (default `artdb-demo.artdb`) if it exists and is
//! an earlier demo's database (its tables are all the demo's; anything else is refused) and
//! leaves it behind (with its log, `<path>.wal`) for `artdb stats` / `artdb scan` to look at.

use crate::outln;
use artdb::{Db, Durability, Error, Options, WriteOptions};
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Options of `artdb demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Number of generated orders, from 1 to 100,000,000 (the demo holds every key in memory,
    /// about 50 bytes each).
    #[arg(
        long,
        default_value_t = 3_000_000,
        allow_negative_numbers = true,
        value_parser = crate::numbers::demo_keys
    )]
    keys: u64,
    /// Seed of the key generator.
    #[arg(
        long,
        default_value_t = 42,
        allow_negative_numbers = true,
        value_parser = crate::numbers::any_u64
    )]
    seed: u64,
    /// The demo's database file (replaced if it exists).
    #[arg(long, default_value = "artdb-demo.artdb")]
    path: PathBuf,
    /// Hide the progress bar (for scripts and CI logs).
    #[arg(long)]
    quiet: bool,
}

/// Options of the hidden `artdb demo-child` (the process the demo kills mid-commit).
#[derive(clap::Args)]
pub struct ChildArgs {
    /// The demo's database file (its accounts and journal tables exist).
    #[arg(long)]
    path: PathBuf,
    /// Be the reader process instead: open read-only beside the demo's writer and check
    /// snapshots for this many milliseconds, then print what it saw.
    #[arg(long)]
    reader_ms: Option<u64>,
}

pub(crate) type DemoResult = Result<(), Box<dyn std::error::Error>>;

const ORDERS: &str = "orders";
const CUSTOMERS: &str = "customers";
const ACCOUNTS: &str = "accounts";
const JOURNAL: &str = "journal";
/// Bank accounts of the transaction steps, each opened with `BALANCE`.
const ACCOUNT_COUNT: u32 = 1_000;
const BALANCE: u64 = 1_000;
/// Accounts that one transfer in four pays into (so commits conflict).
const HOT_ACCOUNTS: u32 = 4;
const WRITER_THREADS: usize = 8;
/// How long the writer threads run.
const WRITERS_RUN: Duration = Duration::from_secs(2);
/// How long the reader process reads after the writers stop (while a checkpoint and a
/// compaction run).
const READER_EXTRA_RUN: Duration = Duration::from_millis(1500);
/// How long the child commits before it is killed.
const CHILD_RUN: Duration = Duration::from_secs(1);
/// The child stops by itself after this long (if nobody kills it).
const CHILD_MAX_RUN: Duration = Duration::from_secs(60);

/// An order's key: (region u16, customer u32, order u64), order-preserving.
fn order_key(region: u16, customer: u32, order: u64) -> Vec<u8> {
    artdb_key::KeyBuilder::new()
        .u16(region)
        .u32(customer)
        .u64(order)
        .finish()
}

/// Whether the demo may replace the file at `path`: only a database whose tables are all the
/// demo's own (an earlier demo's file). Another database, one in use, or a file that does not
/// open is left alone (`--path` given the name of a real database must not delete it).
fn check_replaceable(path: &Path) -> DemoResult {
    let refuse = |why: String| -> DemoResult {
        Err(format!(
            "{} exists and {why}; the demo replaces only its own earlier file: choose another \
             --path, or remove the file yourself",
            path.display()
        )
        .into())
    };
    let db = match Db::open(path, crate::dbcommon::options_read_only()) {
        Ok(db) => db,
        Err(artdb::Error::Locked { .. }) => return refuse("is open in another process".into()),
        Err(error) => return refuse(format!("does not open as a demo database ({error})")),
    };
    let foreign: Vec<String> = db
        .table_names()
        .into_iter()
        .filter(|name| ![ORDERS, CUSTOMERS, ACCOUNTS, JOURNAL].contains(&name.as_str()))
        .collect();
    if !foreign.is_empty() {
        return refuse(format!(
            "holds tables the demo does not make ({})",
            foreign.join(", ")
        ));
    }
    Ok(())
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
    if args.path.exists() || args.path.is_symlink() {
        check_replaceable(&args.path)?;
        std::fs::remove_file(&args.path)?;
    }
    let log = artdb::db::log_path(&args.path);
    if log.exists() {
        std::fs::remove_file(&log)?;
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
    open_accounts(&db)?;
    concurrent_transfers(&db, &args.path)?;
    let started = Instant::now();
    db.close()?;
    step("close (checkpoint)", started.elapsed(), 1)?;

    let db = kill_child_and_recover(&args.path)?;

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
    crate::demo_cluster::run(&args.path)
}

/// Writes every order in one batch (random order), commits (past the bypass threshold: the
/// commit checkpoints) and closes.
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

    // Bigger than `Options::wal_bypass_threshold_bytes`: the commit wrote the tree straight
    // into the file through a checkpoint, and the log got a reference, not the 3M pairs.
    let stats = db.stats()?;
    if stats.txn.commits_bypassing_log > 0 {
        outln!(
            "  the batch bypassed the log: its commit wrote the tree into the file once \
             (checkpoint generation {}, {} bytes); the log holds {} bytes of records",
            stats.store.generation,
            stats.store.file_bytes,
            stats.log.bytes
        )?;
    } else {
        outln!(
            "  the batch went through the log: {} bytes of records",
            stats.log.bytes
        )?;
    }
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
    // The snapshot still holds the first key (which the batch removed, at 100 keys or more).
    let first_held = match keys.first() {
        Some(first) => old.get(first)?.is_some(),
        None => true,
    };
    if old.len() != n || now_len != n - changed as u64 || !first_held {
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

fn account_key(account: u32) -> [u8; 4] {
    account.to_be_bytes()
}

fn balance_of(value: &[u8]) -> Result<u64, String> {
    let bytes: [u8; 8] = value
        .try_into()
        .map_err(|_| format!("a balance of {} bytes (expected 8)", value.len()))?;
    Ok(u64::from_le_bytes(bytes))
}

/// Creates the accounts table (every account holds `BALANCE`) and the journal table.
fn open_accounts(db: &Db) -> DemoResult {
    let mut batch = db.write()?;
    batch.create_table(ACCOUNTS)?;
    batch.create_table(JOURNAL)?;
    for account in 0..ACCOUNT_COUNT {
        batch.insert(ACCOUNTS, &account_key(account), &BALANCE.to_le_bytes())?;
    }
    batch.commit()?;
    Ok(())
}

/// Moves `amount` from one account to another in a transaction: `Ok(Ok(false))` if the
/// source holds too little, `Ok(Err(_))` if an account is missing or malformed (nothing is
/// written in either case).
fn transfer(
    txn: &mut artdb::Transaction,
    from: u32,
    to: u32,
    amount: u64,
) -> artdb::Result<Result<bool, String>> {
    let balance = |value: Option<&[u8]>| -> Result<u64, String> {
        balance_of(value.ok_or("an account of the demo is missing")?)
    };
    let from_balance = match balance(txn.get(ACCOUNTS, &account_key(from))?) {
        Ok(balance) => balance,
        Err(problem) => return Ok(Err(problem)),
    };
    if from_balance < amount || from == to {
        return Ok(Ok(false));
    }
    let to_balance = match balance(txn.get(ACCOUNTS, &account_key(to))?) {
        Ok(balance) => balance,
        Err(problem) => return Ok(Err(problem)),
    };
    txn.insert(
        ACCOUNTS,
        &account_key(from),
        &(from_balance - amount).to_le_bytes(),
    )?;
    txn.insert(
        ACCOUNTS,
        &account_key(to),
        &(to_balance + amount).to_le_bytes(),
    )?;
    Ok(Ok(true))
}

/// A random transfer: one in four pays into a hot account.
fn random_transfer(rng: &mut StdRng) -> (u32, u32, u64) {
    let to = if rng.gen_range(0..4) == 0 {
        rng.gen_range(0..HOT_ACCOUNTS)
    } else {
        rng.gen_range(0..ACCOUNT_COUNT)
    };
    (rng.gen_range(0..ACCOUNT_COUNT), to, rng.gen_range(1..=10))
}

/// Sum and count of the balances a snapshot holds; with `initial`, also checks every balance
/// is still the opening one.
fn scan_accounts(read: &artdb::ReadTxn, initial: bool) -> Result<(u64, u32), String> {
    let table = read.table(ACCOUNTS).map_err(|error| error.to_string())?;
    let (mut sum, mut count) = (0u64, 0u32);
    for pair in table.iter() {
        let (_, value) = pair.map_err(|error| error.to_string())?;
        let balance = balance_of(value)?;
        if initial && balance != BALANCE {
            return Err(format!(
                "the held snapshot changed: a balance of {balance}, opened with {BALANCE}"
            ));
        }
        sum += balance;
        count += 1;
    }
    if sum != u64::from(ACCOUNT_COUNT) * BALANCE || count != ACCOUNT_COUNT {
        return Err(format!(
            "a snapshot shows {count} accounts holding {sum} (expected {ACCOUNT_COUNT} holding {})",
            u64::from(ACCOUNT_COUNT) * BALANCE
        ));
    }
    Ok((sum, count))
}

/// What one writer thread did.
#[derive(Default)]
struct WriterTally {
    /// Transfers committed.
    commits: u64,
    /// Transactions that found nothing to move (committed without writes).
    empty: u64,
    attempts: u64,
    gave_up: u64,
    latencies: Vec<Duration>,
}

/// `WRITER_THREADS` threads commit transfers durably at once while a reader scans one snapshot.
fn concurrent_transfers(db: &Db, db_path: &Path) -> DemoResult {
    let total = u64::from(ACCOUNT_COUNT) * BALANCE;
    outln!(
        "\ntransactions: {WRITER_THREADS} threads move money between {ACCOUNT_COUNT} accounts \
         (Db::transact, Durability::Sync, one transfer in four to {HOT_ACCOUNTS} hot accounts) \
         for {} s;\n  a reader holds one snapshot from the start and scans it throughout",
        WRITERS_RUN.as_secs()
    )?;
    let reader_process = spawn_reader_process(db_path)?;
    let before = db.stats()?.log;
    let stop = AtomicBool::new(false);
    let held = db.read();
    let started = Instant::now();
    let (tallies, reader) = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITER_THREADS)
            .map(|thread| {
                let stop = &stop;
                scope.spawn(move || -> Result<WriterTally, String> {
                    let mut rng = StdRng::seed_from_u64(thread as u64 + 1);
                    let mut tally = WriterTally::default();
                    let options = WriteOptions::default().durability(Durability::Sync);
                    while started.elapsed() < WRITERS_RUN && !stop.load(Ordering::Relaxed) {
                        let (from, to, amount) = random_transfer(&mut rng);
                        let began = Instant::now();
                        let mut attempts = 0u64;
                        let outcome = db.transact_with(options.clone(), |txn| {
                            attempts += 1;
                            transfer(txn, from, to, amount)
                        });
                        tally.attempts += attempts;
                        match outcome {
                            Ok(Err(problem)) => {
                                stop.store(true, Ordering::Relaxed);
                                return Err(problem);
                            }
                            Ok(Ok(false)) => tally.empty += 1,
                            Ok(Ok(true)) => {
                                tally.commits += 1;
                                tally.latencies.push(began.elapsed());
                            }
                            Err(Error::Conflict { .. }) => tally.gave_up += 1,
                            Err(error) => {
                                stop.store(true, Ordering::Relaxed);
                                return Err(error.to_string());
                            }
                        }
                    }
                    Ok(tally)
                })
            })
            .collect();
        let held = &held;
        let stop_reader = &stop;
        let reader = scope.spawn(move || -> Result<(u64, u64), String> {
            let (mut held_scans, mut fresh_scans) = (0u64, 0u64);
            loop {
                let done = started.elapsed() >= WRITERS_RUN || stop_reader.load(Ordering::Relaxed);
                scan_accounts(held, true)?;
                held_scans += 1;
                scan_accounts(&db.read(), false)?;
                fresh_scans += 1;
                if done {
                    return Ok((held_scans, fresh_scans));
                }
            }
        });
        let tallies: Vec<_> = writers
            .into_iter()
            .map(|writer| {
                writer
                    .join()
                    .unwrap_or_else(|_| Err("a writer thread panicked".into()))
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        let reader = reader
            .join()
            .unwrap_or_else(|_| Err("the reader thread panicked".into()));
        (tallies, reader)
    });
    let took = started.elapsed();
    let mut all = WriterTally::default();
    for tally in tallies {
        let tally = tally?;
        all.commits += tally.commits;
        all.empty += tally.empty;
        all.attempts += tally.attempts;
        all.gave_up += tally.gave_up;
        all.latencies.extend(tally.latencies);
    }
    let (held_scans, fresh_scans) = reader?;
    let after = db.stats()?.log;
    let syncs = after.syncs - before.syncs;
    let logged = after.commits - before.commits;
    all.latencies.sort_unstable();
    let percentile = |p: usize| {
        all.latencies
            .get((all.latencies.len().saturating_sub(1)) * p / 100)
            .map_or(0.0, |latency| latency.as_secs_f64() * 1e3)
    };
    step("durable transfers (8 threads)", took, all.commits)?;
    outln!(
        "  {:.0} commits/s; {logged} commits through the log took {syncs} log syncs ({:.1} \
         commits per sync: group commit)",
        all.commits as f64 / took.as_secs_f64(),
        logged as f64 / syncs.max(1) as f64
    )?;
    outln!(
        "  {} conflicts retried by Db::transact (transfers that gave up after 16 attempts: {}); \
         commit latency p50 {:.1} ms, p99 {:.1} ms",
        all.attempts - all.commits - all.empty - all.gave_up,
        all.gave_up,
        percentile(50),
        percentile(99)
    )?;
    outln!(
        "  reader: {held_scans} scans of the held snapshot all saw the opening balances; \
         {fresh_scans} fresh snapshots all summed to {total}"
    )?;
    drop(held);
    let now = scan_accounts(&db.read(), false)?;
    outln!("  after the run: {} accounts hold {}", now.1, now.0)?;
    // The reader process is still reading: a checkpoint and a compaction run under it.
    let started = Instant::now();
    db.checkpoint()?;
    let compacted = db.compact()?;
    step(
        "checkpoint + compact beside the reader",
        started.elapsed(),
        1,
    )?;
    if compacted.compaction == artdb::Compaction::SnapshotHeld {
        outln!("  (compact kept the file as it is: the reader process holds an older checkpoint)")?;
    }
    let (pid, saw) = finish_reader_process(reader_process)?;
    outln!(
        "  reader process (pid {pid}, a read-only open beside this writer): {} snapshots, {} \
         distinct committed states,\n    every one summed to {total}; its held first snapshot \
         kept the opening balances through the commits, the checkpoint and the compaction",
        saw.0,
        saw.1
    )?;
    Ok(())
}

/// Starts the reader process (`artdb demo-child --reader-ms`) and waits until it holds its first
/// snapshot.
fn spawn_reader_process(path: &Path) -> Result<KillOnDrop, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let run_ms = (WRITERS_RUN + READER_EXTRA_RUN).as_millis() as u64;
    let mut child = KillOnDrop(
        Command::new(exe)
            .arg("demo-child")
            .arg("--path")
            .arg(path)
            .arg("--reader-ms")
            .arg(run_ms.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?,
    );
    let stdout = child
        .0
        .stdout
        .as_mut()
        .ok_or("the reader process has no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    if line.trim() != "READY" {
        let mut error = String::new();
        if let Some(stderr) = child.0.stderr.as_mut() {
            let _ = stderr.read_to_string(&mut error);
        }
        return Err(format!("the reader process did not start: {line}{error}").into());
    }
    Ok(child)
}

/// Waits for the reader process; returns its pid and (snapshots, distinct states).
fn finish_reader_process(
    mut child: KillOnDrop,
) -> Result<(u32, (u64, u64)), Box<dyn std::error::Error>> {
    let pid = child.0.id();
    let mut out = String::new();
    if let Some(stdout) = child.0.stdout.as_mut() {
        stdout.read_to_string(&mut out)?;
    }
    let status = child.0.wait()?;
    let mut error = String::new();
    if let Some(stderr) = child.0.stderr.as_mut() {
        let _ = stderr.read_to_string(&mut error);
    }
    let saw = out
        .lines()
        .find_map(|line| {
            let mut words = line.strip_prefix("SAW ")?.split_whitespace();
            Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
        })
        .ok_or_else(|| format!("the reader process failed ({status}): {out}{error}"))?;
    Ok((pid, saw))
}

/// Kills the child process on drop (on every error path of the parent).
pub(crate) struct KillOnDrop(pub(crate) Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `artdb demo-child` on the file, kills it with SIGKILL after `CHILD_RUN` of commits,
/// reopens the file and checks that every commit it acknowledged is there.
fn kill_child_and_recover(path: &Path) -> Result<Db, Box<dyn std::error::Error>> {
    outln!(
        "\ncrash: a child process commits numbered durable transactions (a journal entry + a \
         transfer each)\n  and prints each number once commit returned; it is killed with \
         SIGKILL after {} s",
        CHILD_RUN.as_secs()
    )?;
    let exe = std::env::current_exe()?;
    let child = Command::new(exe)
        .arg("demo-child")
        .arg("--path")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut child = KillOnDrop(child);
    let stdout = child
        .0
        .stdout
        .take()
        .ok_or("the child's output is not piped")?;
    let lines = std::io::BufReader::new(stdout).lines();
    let mut acknowledged = 0u64;
    let mut first_commit: Option<Instant> = None;
    let mut killed_at = None;
    // Reads until the kill, then drains what the child printed before it died.
    for line in lines {
        let line = line?;
        let number: u64 = line
            .trim()
            .parse()
            .map_err(|_| format!("the child printed {line:?}, not a commit number"))?;
        if number != acknowledged + 1 {
            return Err(format!("the child acknowledged {number} after {acknowledged}").into());
        }
        acknowledged = number;
        let first = *first_commit.get_or_insert_with(Instant::now);
        if killed_at.is_none() && first.elapsed() >= CHILD_RUN {
            child.0.kill()?;
            killed_at = Some(first.elapsed());
        }
    }
    let status = child.0.wait()?;
    if killed_at.is_none() {
        return Err(format!("the child ended by itself ({status}) before it was killed").into());
    }
    step(
        "child: durable commits, then SIGKILL",
        killed_at.unwrap_or_default(),
        acknowledged,
    )?;
    outln!("  the child ended with {status}; it had acknowledged {acknowledged} commits")?;

    let started = Instant::now();
    let db = Db::open(path, Options::default())?;
    let took = started.elapsed();
    step("reopen (replay the log + checkpoint)", took, 1)?;
    let read = db.read();
    let journal = read.table(JOURNAL)?;
    let recovered = journal.len();
    for (expected, pair) in (1u64..).zip(journal.iter()) {
        let (key, _) = pair?;
        let number = u64::from_be_bytes(
            key.as_slice()
                .try_into()
                .map_err(|_| "a journal key is not 8 bytes")?,
        );
        if number != expected {
            return Err(format!("commit {expected} is missing after recovery").into());
        }
    }
    if recovered < acknowledged || recovered > acknowledged + 1 {
        return Err(format!(
            "after SIGKILL: {acknowledged} commits acknowledged, but {recovered} recovered"
        )
        .into());
    }
    outln!(
        "  {recovered} commits recovered: all {acknowledged} acknowledged commits recovered{}",
        if recovered > acknowledged {
            " (+1 that was in flight when the child died)"
        } else {
            ", none in flight"
        }
    )?;
    let (sum, count) = scan_accounts(&read, false)?;
    outln!("  the {count} accounts still hold {sum}")?;
    drop(read);
    Ok(db)
}

/// `artdb demo-child`: commits journal entries 1, 2, ... durably, each with a transfer, and
/// prints each number after its commit returned, until killed (or `CHILD_MAX_RUN`).
pub fn child(args: ChildArgs) -> DemoResult {
    if let Some(ms) = args.reader_ms {
        return reader_child(&args.path, Duration::from_millis(ms));
    }
    let db = Db::open(&args.path, Options::default())?;
    let mut rng = StdRng::seed_from_u64(7);
    let options = WriteOptions::default().durability(Durability::Sync);
    let started = Instant::now();
    let mut number = 0u64;
    while started.elapsed() < CHILD_MAX_RUN {
        number += 1;
        let (from, to, amount) = random_transfer(&mut rng);
        db.transact_with(options.clone(), |txn| {
            txn.insert(JOURNAL, &number.to_be_bytes(), &amount.to_le_bytes())?;
            transfer(txn, from, to, amount)
        })??;
        outln!("{number}")?;
    }
    db.close()?;
    Ok(())
}

/// The reader process: a read-only open beside the writer. It holds its first snapshot
/// throughout (rescanned each round: the opening balances, whatever the writer's checkpoints and
/// compaction do) and takes fresh ones, each of which must sum to the total; prints one line.
fn reader_child(path: &Path, run: Duration) -> DemoResult {
    let options = Options {
        read_only: true,
        ..Options::default()
    };
    let db = Db::open(path, options)?;
    let held = db.read();
    scan_accounts(&held, true)?;
    outln!("READY")?;
    let started = Instant::now();
    let (mut snapshots, mut states) = (0u64, std::collections::HashSet::new());
    while started.elapsed() < run {
        scan_accounts(&held, true)?;
        let fresh = db.read();
        scan_accounts(&fresh, false)?;
        let table = fresh.table(ACCOUNTS)?;
        let mut state = std::collections::hash_map::DefaultHasher::new();
        for pair in table.iter() {
            let (_, value) = pair?;
            std::hash::Hash::hash(value, &mut state);
        }
        states.insert(std::hash::Hasher::finish(&state));
        snapshots += 1;
    }
    outln!("SAW {snapshots} {}", states.len())?;
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
            "  table {:<10} {:>9} keys  node4 {} node16 {} node48 {} node256 {} leaves {} inline {} packs {} (dense {}, wide {}) persisted {}",
            table.name,
            table.keys,
            tree.node4,
            tree.node16,
            tree.node48,
            tree.node256,
            tree.leaves,
            tree.inline_values,
            tree.packs,
            tree.dense_packs,
            tree.wide_packs,
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

pub(crate) fn step(what: &str, took: Duration, items: u64) -> std::io::Result<()> {
    let seconds = took.as_secs_f64();
    let per_second = if seconds > 0.0 {
        items as f64 / seconds
    } else {
        0.0
    };
    let rate = if per_second >= 100_000.0 {
        format!("{:>7.2} M/s", per_second / 1e6)
    } else {
        format!("{:>7.1} k/s", per_second / 1e3)
    };
    outln!("  {what:<36} {items:>10} items  {seconds:>8.3} s  {rate}")
}
