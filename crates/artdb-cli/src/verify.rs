//! `artdb verify FILE`: checks every checksum and invariant; exit code 4 if anything is wrong.

use crate::dbcommon::{Exit, EXIT_CORRUPT};
use crate::outln;
use artdb::Db;
use std::path::PathBuf;

/// Options of `artdb verify`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (must exist: only put, load, restore, import, shell and table create make one).
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb verify`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    // Open scans the write-ahead log: every record's checksum, LSN and payload (a damaged one
    // that valid records follow fails the open with a corruption error, exit code 4).
    let db = Db::open(&args.file, crate::dbcommon::options_read_only())?;
    let log = db.stats()?.log;
    let bar = crate::progress::spinner("verifying every page and tree");
    let report = db.verify()?;
    bar.finish_and_clear();
    let problems: Vec<String> = report
        .problems
        .iter()
        .map(crate::dbcommon::describe_problem)
        .collect();
    if args.json {
        let json = serde_json::json!({
            "ok": report.is_ok(),
            "tables": report.tables_checked,
            "keys": report.keys_checked,
            "log_records": log.records,
            "log_last_lsn": log.last_lsn,
            "problems": problems,
            "notes": report.notes,
        });
        outln!("{json}")?;
    } else {
        for problem in &problems {
            outln!("problem: {problem}")?;
        }
        for note in &report.notes {
            outln!("note: {note}")?;
        }
        outln!(
            "{}: {} tables, {} keys, {} log records (last LSN {}), {} problems",
            args.file.display(),
            report.tables_checked,
            report.keys_checked,
            log.records,
            log.last_lsn,
            problems.len()
        )?;
    }
    if !report.is_ok() {
        return Err(Box::new(Exit {
            code: EXIT_CORRUPT,
            message: format!("{} problems found", problems.len()),
        }));
    }
    Ok(())
}
