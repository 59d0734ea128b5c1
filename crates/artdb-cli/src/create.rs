//! `artdb create FILE`: creates an empty database file.

use crate::outln;
use artdb::{Db, Options};
use std::path::PathBuf;

/// Options of `artdb create`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file to create (must not exist, or be an empty file).
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb create`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let empty = args.file.exists() && crate::dbcommon::is_missing_or_empty(&args.file);
    let db = if empty && !args.file.is_symlink() {
        // An empty file (`touch`, Python's `tempfile`) holds nothing to lose: it becomes the
        // new database, as sqlite3 and LMDB make one of it.
        Db::open_or_create(&args.file, Options::default())?
    } else {
        Db::create(&args.file, Options::default())?
    };
    db.close()?;
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
