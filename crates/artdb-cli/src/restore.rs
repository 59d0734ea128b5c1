//! `artdb restore FILE [--input DUMP]`: loads a dump in the `mdb_dump`/`db_dump` text format
//! (see `dumpfmt`; from standard input by default) into FILE, creating it if missing. Each
//! section goes to the table named by its `database=` (`main` without one), which must be new
//! or empty. All or nothing: any error (a malformed line, a truncated dump, a table with keys)
//! leaves the database as it was (`fill`).
//!
//! Sections in bytewise key order (every `mdb_dump` of a default LMDB database) stream into a
//! bulk load; sections marked `reversekey=1`/`integerkey=1` go through one write batch.

use crate::dumpfmt::{DumpError, DumpReader};
use crate::fill::Target;
use crate::outln;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

type BoxError = Box<dyn std::error::Error>;

/// Options of `artdb restore`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (created if missing).
    file: PathBuf,
    /// Read the dump from this file instead of standard input.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb restore`.
pub fn run(args: Args) -> Result<(), BoxError> {
    let (reader, len): (Box<dyn BufRead>, Option<u64>) = match &args.input {
        Some(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let len = file.metadata().ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 20, file)), len)
        }
        None => {
            let len = std::fs::metadata("/dev/stdin")
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            (
                Box::new(BufReader::with_capacity(1 << 20, std::io::stdin().lock())),
                len,
            )
        }
    };
    let bar = len.map_or_else(indicatif::ProgressBar::hidden, crate::progress::bytes);
    let mut reader = DumpReader::new(reader);
    let started = std::time::Instant::now();
    let mut target = Target::open(&args.file, "restore")?;
    let result = restore(&mut target, &mut reader, &bar);
    bar.finish_and_clear();
    let tables = match result {
        Ok(tables) => {
            target.close()?;
            tables
        }
        Err(error) => {
            return Err(target.abandon(&error).into());
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        let tables: Vec<_> = tables
            .iter()
            .map(|(name, pairs)| serde_json::json!({ "table": name, "pairs": pairs }))
            .collect();
        outln!(
            "{}",
            serde_json::json!({ "tables": tables, "seconds": seconds })
        )?;
    } else {
        for (name, pairs) in &tables {
            outln!("restored {pairs} pairs into table {name:?}")?;
        }
        outln!("{} sections in {seconds:.3} s", tables.len())?;
    }
    Ok(())
}

fn restore<R: BufRead>(
    target: &mut Target,
    reader: &mut DumpReader<R>,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<(String, u64)>, BoxError> {
    let mut tables = Vec::new();
    while let Some(header) = reader.next_section()? {
        let name = header
            .database
            .clone()
            .unwrap_or_else(|| crate::dbcommon::TABLE_DEFAULT.to_string());
        target
            .prepare(&name)
            .map_err(|e| format!("line {}: {e}", header.line))?;
        let pairs = std::iter::from_fn(|| {
            bar.set_position(reader.bytes_read);
            reader
                .next_pair()
                .map_err(|e: DumpError| -> BoxError { e.into() })
                .transpose()
        });
        let count = if header.unordered {
            target.load_unsorted(&name, pairs)?
        } else {
            target.load_sorted(
                &name,
                pairs,
                "is not in bytewise key order (artdb tables are ordered bytewise; a dump of \
                 an LMDB database with a custom comparator cannot be bulk-loaded)",
            )?
        };
        tables.push((name, count));
    }
    if tables.is_empty() {
        return Err("the input holds no dump section (it is empty)".into());
    }
    Ok(tables)
}
