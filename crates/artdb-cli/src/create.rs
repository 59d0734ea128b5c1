//! `artdb create FILE`: creates an empty database file.

use crate::outln;
use artdb::{Db, Options};
use std::path::PathBuf;

/// Options of `artdb create`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file to create (must not exist).
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb create`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    Db::create(&args.file, Options::default())?.close()?;
    if args.json {
        outln!(
            "{}",
            serde_json::json!({ "created": args.file.display().to_string() })
        )?;
    } else {
        outln!("created {}", args.file.display())?;
    }
    Ok(())
}
