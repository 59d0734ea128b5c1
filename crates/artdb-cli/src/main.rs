//! The `artdb` command-line tool: one module per subcommand.

mod backup;
mod bitable;
mod checkpoint;
mod create;
mod dbcommon;
mod del;
mod demo;
mod dump;
mod dumpfmt;
mod export;
mod fill;
mod get;
mod load;
mod progress;
mod put;
mod restore;
mod scan;
mod shell;
mod stats;
mod verify;

use clap::{Parser, Subcommand};

/// `println!` that returns the write's `io::Result` instead of panicking, so a closed pipe
/// (`artdb scan FILE | head -1`) ends the command normally (see `main`).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout(), $($arg)*)
    }};
}
use std::process::ExitCode;

/// Command line of `artdb`.
#[derive(Parser)]
#[command(
    name = "artdb",
    version,
    about = "artdb: an embedded ordered key-value store on an adaptive radix tree"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a tree of generated keys, query it, and print what it did and how long it took.
    Demo(demo::Args),
    /// Build, query, merge and check bitable files (immutable sorted tables).
    #[command(subcommand)]
    Bitable(bitable::Command),
    /// Create an empty database file.
    Create(create::Args),
    /// Tables, keys, node kinds, depth and file space of a database file.
    Stats(stats::Args),
    /// Check every checksum and invariant of a database file (exit code 4 on problems).
    Verify(verify::Args),
    /// Run a checkpoint (or a compaction) of a database file.
    Checkpoint(checkpoint::Args),
    /// Print the value of a key (exit code 3 if absent).
    Get(get::Args),
    /// Set a key to a value (durable when the command returns).
    Put(put::Args),
    /// Remove a key (exit code 3 if absent).
    Del(del::Args),
    /// Print the pairs in a key range or with a prefix, in key order.
    Scan(scan::Args),
    /// Count the pairs in a key range or with a prefix.
    Count(scan::Args),
    /// Load key/value pairs from a TSV or CSV file (sorted input streams to the file).
    Load(load::Args),
    /// Write tables as text in the mdb_dump/db_dump format.
    Dump(dump::Args),
    /// Load a text dump (from artdb dump, mdb_dump or db_dump) into new or empty tables.
    Restore(restore::Args),
    /// Write a table to a new bitable file, in key order, durably.
    Export(export::ExportArgs),
    /// Load a bitable file into a new or empty table.
    Import(export::ImportArgs),
    /// Copy one committed state of a database to a new, verified file.
    Backup(backup::BackupArgs),
    /// Rewrite every table densely and report the file size before and after.
    Compact(backup::CompactArgs),
    /// An interactive prompt (or a script runner, when stdin is not a terminal).
    Shell(shell::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Bitable(command) => bitable::run(command),
        Command::Create(args) => create::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Checkpoint(args) => checkpoint::run(args),
        Command::Get(args) => get::run(args),
        Command::Put(args) => put::run(args),
        Command::Del(args) => del::run(args),
        Command::Scan(args) => scan::run(args, false),
        Command::Count(args) => scan::run(args, true),
        Command::Load(args) => load::run(args),
        Command::Dump(args) => dump::run(args),
        Command::Restore(args) => restore::run(args),
        Command::Export(args) => export::export(args),
        Command::Import(args) => export::import(args),
        Command::Backup(args) => backup::backup(args),
        Command::Compact(args) => backup::compact(args),
        Command::Shell(args) => shell::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of standard output went away (`| head`): a normal end, as for `cat`.
        Err(error) if dbcommon::is_broken_pipe(&*error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("artdb: {error}");
            ExitCode::from(dbcommon::exit_code(&*error))
        }
    }
}
