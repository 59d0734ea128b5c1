//! The `artdb` command-line tool: one module per subcommand.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
mod backup;
mod bitable;
mod checkpoint;
mod create;
mod dbcommon;
mod del;
mod demo;
mod demo_cluster;
mod dump;
mod dumpfmt;
mod export;
mod fill;
mod get;
mod load;
mod numbers;
mod progress;
mod put;
mod readers;
mod restore;
mod scan;
mod shell;
mod stats;
mod table;
mod verify;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

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
    about = "artdb: an embedded ordered key-value store on an adaptive radix tree",
    after_help = "Examples:\n  artdb put my.artdb alice 1 && artdb get my.artdb alice\n  artdb shell my.artdb\n  \
                  mdb_dump -n -a data.mdb | artdb restore my.artdb\n\nExit codes: 0 success, 1 error, \
                  2 bad command line, 3 key not found, 4 corruption (or verify found problems).\n\n\
                  Files: the commands that write (put, load, restore, import, shell, table create) \
                  create a missing database file, or make one of an empty (0-byte) file; the \
                  others never do. A failed load, restore or import removes the file it created \
                  (and leaves an empty one empty)."
)]
struct Cli {
    /// Open the checkpoint before the newest, read-only, to copy out what it holds when the
    /// newest is damaged (open fails with "the newest checkpoint ... is missing or damaged").
    /// Only with the commands that read: get, scan, count, stats, verify, dump, export, backup.
    #[arg(long, global = true)]
    salvage: bool,
    /// Open a database whose write-ahead log (FILE.wal) is missing although it was not closed
    /// cleanly, or is refused as damaged (a damaged header, an older copy, a truncated log):
    /// the last checkpoint opens, and commits only that log held are lost. A command that
    /// writes first renames a damaged log to FILE.wal.damaged.
    #[arg(long, global = true)]
    open_without_log: bool,
    /// Refuse to open a database whose log ends in a damaged or cut-short record, instead of
    /// cutting that tail (the default, which is what a torn final write of a commit that never
    /// returned leaves): for disks whose writes are not trusted. Exit 4 when refused.
    #[arg(long, global = true)]
    strict_recovery: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Tour the engine on a new demo file: bulk-write 3M orders, read them every way, run
    /// concurrent transactions beside a reader process, kill a committing process and recover,
    /// verify, run a 3-node cluster that loses its leader, and time each step.
    #[command(after_help = "Example: artdb demo --keys 1000000")]
    Demo(demo::Args),
    /// The demo's child process (commits until killed); not for direct use.
    #[command(hide = true)]
    DemoChild(demo::ChildArgs),
    /// Build, query, merge and check bitable files (immutable sorted tables).
    #[command(
        after_help = "Example: artdb bitable build t.bt --from pairs.tsv && artdb bitable get t.bt somekey"
    )]
    #[command(subcommand)]
    Bitable(bitable::Command),
    /// Create an empty database file.
    #[command(after_help = "Example: artdb create my.artdb")]
    Create(create::Args),
    /// Create, drop or list the tables of a database file.
    #[command(
        after_help = "Example: artdb table create my.artdb users && artdb table list my.artdb"
    )]
    #[command(subcommand)]
    Table(table::Command),
    /// Tables, keys, node kinds, depth and file space of a database file.
    #[command(after_help = "Example: artdb stats my.artdb --json")]
    Stats(stats::Args),
    /// Check every checksum and invariant of a database file (exit code 4 on problems).
    #[command(after_help = "Example: artdb verify my.artdb")]
    Verify(verify::Args),
    /// Run a checkpoint (or a compaction) of a database file.
    #[command(after_help = "Example: artdb checkpoint my.artdb --compact")]
    Checkpoint(checkpoint::Args),
    /// Print the value of a key (exit code 3 if absent).
    #[command(after_help = "Example: artdb get my.artdb --table users alice")]
    Get(get::Args),
    /// Set a key to a value (durable when the command returns).
    #[command(after_help = "Example: artdb put my.artdb --table users alice 'likes \\x00 bytes'")]
    Put(put::Args),
    /// Remove a key (exit code 3 if absent).
    #[command(after_help = "Example: artdb del my.artdb --table users alice")]
    Del(del::Args),
    /// Print the pairs in a key range or with a prefix, in key order.
    #[command(after_help = "Example: artdb scan my.artdb --table users --prefix al --limit 10")]
    Scan(scan::Args),
    /// Count the pairs in a key range or with a prefix.
    #[command(after_help = "Example: artdb count my.artdb --table users --prefix al")]
    Count(scan::Args),
    /// Load key/value pairs from a TSV, CSV or JSON lines file (sorted input streams to the file).
    #[command(
        after_help = "Keys already in the table are overwritten, and a key given twice keeps its \
                      last value (as with put); the report says how many keys the table has \
                      after the load. All or nothing: an error leaves the database as it was.\n\n\
                      Example: artdb load my.artdb --table users pairs.tsv"
    )]
    Load(load::Args),
    /// Write tables as text in the mdb_dump/db_dump format.
    #[command(after_help = "Example: artdb dump my.artdb --table users -p > users.txt")]
    Dump(dump::Args),
    /// Load a text dump (from artdb dump, mdb_dump or db_dump) into new or empty tables.
    #[command(after_help = "Example: mdb_dump -n -a data.mdb | artdb restore my.artdb")]
    Restore(restore::Args),
    /// Write a table to a new bitable file, in key order, durably.
    #[command(after_help = "Example: artdb export my.artdb users.bt --table users")]
    Export(export::ExportArgs),
    /// Load a bitable file into a new or empty table.
    #[command(after_help = "Example: artdb import my.artdb users.bt --table users")]
    Import(export::ImportArgs),
    /// Copy one committed state of a database to a new, verified file.
    #[command(after_help = "Example: artdb backup my.artdb /backups/my-monday.artdb")]
    Backup(backup::BackupArgs),
    /// Rewrite every table densely and report the file size before and after.
    #[command(after_help = "Example: artdb compact my.artdb")]
    Compact(backup::CompactArgs),
    /// List the readers of a database in other processes (and clear dead ones).
    #[command(after_help = "Example: artdb readers my.artdb --clear")]
    Readers(readers::Args),
    /// Run one node of a replicated cluster (raft over TCP; its data in one artdb file) until
    /// SIGINT.
    #[command(
        after_help = "Start every node, then `artdb cluster init` one of them once.\n\n\
                      Example: artdb serve --id 1 --listen 127.0.0.1:7001 --dir node-1"
    )]
    Serve(artdb_raft::cli::ServeArgs),
    /// Talk to a replicated cluster: init, status, put, get, delete, scan, add-learner,
    /// change-membership.
    #[command(
        after_help = "Example: artdb cluster put --nodes 127.0.0.1:7001,127.0.0.1:7002 greeting hello"
    )]
    #[command(subcommand)]
    Cluster(artdb_raft::cli::ClusterCommand),
    /// An interactive prompt (or a script runner, when stdin is not a terminal).
    #[command(
        after_help = "Example: artdb shell my.artdb   (or: artdb shell my.artdb < script.txt)"
    )]
    Shell(shell::Args),
}

/// Gives each subcommand of `command`, at every level, a hidden copy of the global options
/// `globals`: clap would otherwise copy them, shown, among each subcommand's own options, where
/// three open-mode options crowd out what the command itself takes. A subcommand that already
/// has an option of that id is skipped by clap's copying, so they still parse (before or after
/// the subcommand's name) and `artdb --help` shows them once; each subcommand's help says where.
fn hide_global_options_below(command: &mut clap::Command, globals: &[clap::Arg]) {
    for subcommand in command.get_subcommands_mut() {
        let mut taken = std::mem::take(subcommand);
        for global in globals {
            taken = taken.arg(global.clone().hide(true));
        }
        let note = "Global options (--salvage, --open-without-log, --strict-recovery): see \
                    `artdb --help`.";
        let after = match taken.get_after_help() {
            Some(text) => format!("{text}\n\n{note}"),
            None => note.to_string(),
        };
        taken = taken.after_help(after);
        hide_global_options_below(&mut taken, globals);
        *subcommand = taken;
    }
}

/// Parses the command line (clap exits on a bad one, code 2, or on `--help`).
fn parse_command_line() -> Cli {
    let mut command = Cli::command();
    let globals: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|arg| arg.is_global_set())
        .cloned()
        .collect();
    hide_global_options_below(&mut command, &globals);
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

fn main() -> ExitCode {
    let cli = parse_command_line();
    if cli.open_without_log {
        dbcommon::set_open_without_log();
    }
    if cli.strict_recovery {
        dbcommon::set_strict_recovery();
    }
    if cli.salvage {
        let reads = matches!(
            cli.command,
            Command::Get(_)
                | Command::Scan(_)
                | Command::Count(_)
                | Command::Stats(_)
                | Command::Verify(_)
                | Command::Dump(_)
                | Command::Export(_)
                | Command::Backup(_)
        );
        if !reads {
            eprintln!(
                "artdb: --salvage opens the previous checkpoint read-only: use it with get, scan, \
                 count, stats, verify, dump, export or backup (e.g. `artdb backup --salvage \
                 damaged.artdb rescued.artdb`)"
            );
            return ExitCode::from(2);
        }
        dbcommon::set_salvage();
    }
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::DemoChild(args) => demo::child(args),
        Command::Bitable(command) => bitable::run(command),
        Command::Create(args) => create::run(args),
        Command::Table(command) => table::run(command),
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
        Command::Readers(args) => readers::run(args),
        Command::Serve(args) => {
            artdb_raft::cli::block_on(artdb_raft::cli::serve(args)).map_err(Into::into)
        }
        Command::Cluster(command) => {
            artdb_raft::cli::block_on(artdb_raft::cli::run(command)).map_err(Into::into)
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of standard output went away (`| head`): a normal end, as for `cat`.
        Err(error) if dbcommon::is_broken_pipe(&*error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("artdb: {}", dbcommon::message(&*error));
            ExitCode::from(dbcommon::exit_code(&*error))
        }
    }
}
