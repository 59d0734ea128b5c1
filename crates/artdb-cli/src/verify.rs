//! `artdb verify FILE`: checks every checksum and invariant; exit code 4 if anything is wrong.

use crate::dbcommon::{Exit, EXIT_CORRUPT};
use crate::outln;
use artdb::Db;
use std::path::PathBuf;

/// Options of `artdb verify`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file.
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb verify`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let db = Db::open(&args.file, crate::dbcommon::options_no_checkpoint_on_drop())?;
    let bar = crate::progress::spinner("verifying every page and tree");
    let report = db.verify()?;
    bar.finish_and_clear();
    let problems: Vec<String> = report.problems.iter().map(ToString::to_string).collect();
    if args.json {
        let json = serde_json::json!({
            "ok": report.is_ok(),
            "tables": report.tables_checked,
            "keys": report.keys_checked,
            "problems": problems,
        });
        outln!("{json}")?;
    } else {
        for problem in &problems {
            outln!("problem: {problem}")?;
        }
        outln!(
            "{}: {} tables, {} keys, {} problems",
            args.file.display(),
            report.tables_checked,
            report.keys_checked,
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
