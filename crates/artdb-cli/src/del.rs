//! `artdb del FILE [--table T] KEY`: removes KEY (exit code 3 if it was absent) in one commit,
//! durable in the write-ahead log when the command returns (no checkpoint).

use crate::dbcommon::{parse_arg, Exit, EXIT_NOT_FOUND, TABLE_DEFAULT};
use artdb::Db;
use std::path::PathBuf;

/// Options of `artdb del`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (must exist: only put, load, restore, import, shell and table create make one).
    file: PathBuf,
    /// The key (text; `\xNN` for any byte, `\\` for a backslash).
    key: String,
    /// The table.
    #[arg(long, default_value = TABLE_DEFAULT)]
    table: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb del`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let key = parse_arg(&args.key)?;
    let db = Db::open(&args.file, crate::dbcommon::options_no_checkpoint_on_drop())?;
    let mut batch = db.write()?;
    let removed = batch.remove(&args.table, &key)?;
    batch.commit()?;
    drop(db);
    if args.json {
        crate::outln!(
            "{}",
            serde_json::json!({ "table": args.table, "key": args.key, "removed": removed.is_some() })
        )?;
    }
    if removed.is_none() {
        return Err(Box::new(Exit {
            code: EXIT_NOT_FOUND,
            message: format!("key {} not found", args.key),
        }));
    }
    Ok(())
}
