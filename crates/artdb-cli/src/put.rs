//! `artdb put FILE [--table T] KEY VALUE`: sets KEY to VALUE (creating the table if needed) in
//! one commit, durable in the write-ahead log when the command returns (no checkpoint: one log
//! record and one sync; a checkpoint runs when the log passes its threshold).

use crate::dbcommon::{parse_arg, TABLE_DEFAULT};
use std::path::PathBuf;

/// Options of `artdb put`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (created if missing).
    file: PathBuf,
    /// The key (text; `\xNN` for any byte, `\\` for a backslash).
    key: String,
    /// The value (same text form).
    value: String,
    /// The table (created if missing).
    #[arg(long, default_value = TABLE_DEFAULT)]
    table: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb put`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let key = parse_arg(&args.key)?;
    let value = parse_arg(&args.value)?;
    let db = crate::dbcommon::open_or_create(&args.file)?;
    let mut batch = db.write()?;
    if !batch.table_names().contains(&args.table) {
        batch.create_table(&args.table)?;
    }
    batch.insert(&args.table, &key, &value)?;
    batch.commit()?;
    drop(db);
    if args.json {
        crate::outln!(
            "{}",
            serde_json::json!({ "table": args.table, "key": args.key, "value": args.value })
        )?;
    }
    Ok(())
}
