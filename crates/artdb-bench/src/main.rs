//! artdb-bench: the workloads of `shared/BENCHMARKS.md`, run against artdb and its peers side by
//! side in one process, so that ratios hold on a shared, noisy machine.
//!
//! Every workload prints a table for people and, with `--json PATH`, writes the machine-readable
//! result described in its issue. Memory figures come from the counting global allocator in
//! [`alloc`], so they are what each structure asked the allocator for, not RSS.

mod alloc;
mod chart;
mod kv;
mod layout;
mod versions;
mod w1;
mod w2;
mod w3;
mod w4;
mod w5;
mod w6;
mod w6r;
mod w8;

use clap::{Parser, Subcommand};

#[global_allocator]
static GLOBAL: alloc::CountingAllocator = alloc::CountingAllocator;

/// Command line of the benchmark harness.
#[derive(Parser)]
#[command(name = "artdb-bench", about = "artdb and its peers, side by side")]
struct Cli {
    #[command(subcommand)]
    workload: Workload,
}

#[derive(Subcommand)]
enum Workload {
    /// W1: in-memory index (artdb's ART vs BTreeMap, SkipMap, HashMap, congee, blart).
    W1(w1::Args),
    /// W2: persisted index vs DuckDB.
    W2(w2::Args),
    /// W3: bitable vs fst, LMDB (heed) and a memory-mapped sorted array.
    W3(w3::Args),
    /// W4: TidStore vs a sorted array of 6-byte TIDs, roaring and HashSet.
    W4(w4::Args),
    /// W5: transactions (durable commits, group commit, bulk updates, recovery, concurrency)
    /// against redb, LMDB, SQLite, fjall (and RocksDB with the `rocksdb` feature).
    W5(w5::Args),
    /// W6: redb's published comparison (bulk load, writes, reads, removals, sizes, open)
    /// against redb, LMDB, sled, fjall, SQLite (and RocksDB with the `rocksdb` feature).
    W6(w6::Args),
    /// W6R: a reader process beside a writer process (artdb, LMDB and redb), reads/s and
    /// commits/s alone and together.
    W6r(w6r::Args),
    /// W8: a 3-node artdb cluster on loopback beside a 3-member etcd cluster and one artdb
    /// node alone (durable writes, linearizable and stale reads, a killed node, a new node).
    W8(w8::Args),
    /// Internal to W8: one artdb node (`artdb serve`).
    #[command(hide = true)]
    W8Node(artdb_raft::cli::ServeArgs),
    /// The version of every peer built into this binary (from Cargo.lock and the bundled C
    /// libraries), as every workload's header line and JSON `peers` give them.
    Versions,
    /// Internal to W5: commit, then die by SIGKILL (the abandoned process of recovery_open_s).
    #[command(hide = true)]
    W5Abandon(w5::AbandonArgs),
}

/// A xorshift stream for W6R's child processes (seeded per process).
pub(crate) fn w6r_rng(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.workload {
        Workload::W1(args) => w1::run(args),
        Workload::W2(args) => w2::run(args),
        Workload::W3(args) => w3::run(args),
        Workload::W4(args) => w4::run(args),
        Workload::W5(args) => w5::run(args).map_err(|e| e as Box<dyn std::error::Error>),
        Workload::W6(args) => w6::run(args).map_err(|e| e as Box<dyn std::error::Error>),
        Workload::W6r(args) => w6r::run(args).map_err(|e| e as Box<dyn std::error::Error>),
        Workload::W8(args) => w8::run(args).map_err(|e| e as Box<dyn std::error::Error>),
        Workload::W8Node(args) => w8::node(args).map_err(|e| e as Box<dyn std::error::Error>),
        Workload::Versions => {
            versions::print_all();
            Ok(())
        }
        Workload::W5Abandon(args) => w5::abandon(args).map_err(|e| e as Box<dyn std::error::Error>),
    };
    if let Err(error) = result {
        eprintln!("artdb-bench: {error}");
        std::process::exit(1);
    }
}
