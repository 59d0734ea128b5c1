//! `artdb get FILE [--table T] KEY`: prints the value of KEY (exit code 3 if absent).

use crate::dbcommon::{parse_arg, show_bytes, Exit, EXIT_NOT_FOUND, TABLE_DEFAULT};
use crate::outln;
use artdb::Db;
use std::path::PathBuf;

/// Options of `artdb get`.
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

/// Runs `artdb get`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let key = parse_arg(&args.key)?;
    let db = Db::open(&args.file, crate::dbcommon::options_read_only())?;
    let read = db.read();
    let value = read.get(&args.table, &key)?;
    if args.json {
        let json = crate::dbcommon::json_pair(&key, value);
        outln!("{json}")?;
    } else if let Some(value) = value {
        outln!("{}", show_bytes(value))?;
    }
    if value.is_none() {
        return Err(Box::new(Exit {
            code: EXIT_NOT_FOUND,
            message: format!("key {} not found", args.key),
        }));
    }
    Ok(())
}
