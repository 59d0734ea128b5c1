//! The `artdb` command-line tool: one module per subcommand.

mod bitable;
mod demo;

use clap::{Parser, Subcommand};
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Bitable(command) => bitable::run(command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("artdb: {error}");
            ExitCode::from(1)
        }
    }
}
