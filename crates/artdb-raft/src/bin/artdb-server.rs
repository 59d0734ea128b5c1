//! artdb-server: one node of a replicated artdb cluster (`serve`), and the commands that talk
//! to a cluster over TCP (`init`, `status`, `put`, `get`, `delete`, `scan`, `add-learner`,
//! `change-membership`); the same as `artdb serve` and `artdb cluster ...` (`src/cli.rs`).

use artdb_raft::cli::{ClusterCommand, ServeArgs};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "artdb-server",
    about = "A node of a replicated artdb cluster, and its client"
)]
struct Cli {
    #[command(subcommand)]
    command: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Runs one node until it is stopped.
    Serve(ServeArgs),
    #[command(flatten)]
    Cluster(ClusterCommand),
}

fn main() -> ExitCode {
    let result = artdb_raft::cli::block_on(async {
        match Cli::parse().command {
            Action::Serve(args) => artdb_raft::cli::serve(args).await,
            Action::Cluster(command) => artdb_raft::cli::run(command).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("artdb-server: {message}");
            ExitCode::FAILURE
        }
    }
}
