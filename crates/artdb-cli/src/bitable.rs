//! `artdb bitable ...`: build, query, merge and check bitable files. (Being built by its issue.)

/// The `bitable` subcommands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Check every page and the key order of a table.
    Verify {
        /// The table file.
        file: std::path::PathBuf,
    },
}

/// Runs a `bitable` subcommand.
pub fn run(command: Command) -> Result<(), Box<dyn std::error::Error>> {
    match command {
        Command::Verify { file } => {
            Err(format!("{}: bitable is not built yet", file.display()).into())
        }
    }
}
