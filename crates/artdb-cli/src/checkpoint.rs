//! `artdb checkpoint FILE`: runs a checkpoint (compacting with `--compact`) and reports it.

use crate::outln;
use artdb::Db;
use std::path::PathBuf;

/// Options of `artdb checkpoint`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (must exist: only put, load, restore, import, shell and table create make one).
    file: PathBuf,
    /// Rewrite every table densely, so the file shrinks to about the size of its data.
    #[arg(long)]
    compact: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb checkpoint`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let db = Db::open(&args.file, crate::dbcommon::options())?;
    let stats = if args.compact {
        db.compact()?
    } else {
        db.checkpoint()?
    };
    db.close()?;
    let file_bytes = std::fs::metadata(&args.file)?.len();
    if args.json {
        let json = serde_json::json!({
            "generation": stats.generation,
            "images_written": stats.images_written,
            "pages_written": stats.pages_written,
            "bytes_written": stats.bytes_written,
            "file_bytes": file_bytes,
        });
        outln!("{json}")?;
    } else {
        outln!(
            "checkpoint {}: {} node images in {} pages, {} bytes written; file {} bytes",
            stats.generation,
            stats.images_written,
            stats.pages_written,
            stats.bytes_written,
            file_bytes
        )?;
    }
    Ok(())
}
