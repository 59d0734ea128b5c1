//! `artdb export FILE --table T OUT.bt` and `artdb import FILE --table T IN.bt`: a table to and
//! from a bitable file (the immutable sorted table of `artdb-bitable`).
//!
//! Export streams the table's pairs in key order from one snapshot into a bitable `Builder`,
//! which writes under a temporary name and renames into place durably (fsync, rename, fsync of
//! the directory), so OUT.bt is either absent or complete. An existing OUT.bt is refused.
//! Import streams a bitable's pairs (already sorted, checksummed as they are read) into a bulk
//! load of a new or empty table, all or nothing (`fill`). The round trip is exact: both sides
//! hold raw bytes.

use crate::bitable::open_table;
use crate::fill::Target;
use crate::outln;
use artdb::Db;
use artdb_bitable::{Builder, Durability};
use std::path::PathBuf;

type BoxError = Box<dyn std::error::Error>;

/// Options of `artdb export`.
#[derive(clap::Args)]
pub struct ExportArgs {
    /// The database file (must exist: only put, load, restore, import, shell and table create make one).
    file: PathBuf,
    /// The bitable file to write (must not exist).
    out: PathBuf,
    /// The table to export.
    #[arg(long, default_value = crate::dbcommon::TABLE_DEFAULT)]
    table: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `artdb import`.
#[derive(clap::Args)]
pub struct ImportArgs {
    /// The database file (created if missing).
    file: PathBuf,
    /// The bitable file to read.
    input: PathBuf,
    /// The table to fill (created if missing; must be empty).
    #[arg(long, default_value = crate::dbcommon::TABLE_DEFAULT)]
    table: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb export`.
pub fn export(args: ExportArgs) -> Result<(), BoxError> {
    if args.out.exists() || args.out.is_symlink() {
        return Err(format!(
            "{} already exists; remove it or choose another name (export never overwrites)",
            args.out.display()
        )
        .into());
    }
    let started = std::time::Instant::now();
    let db = Db::open(&args.file, crate::dbcommon::options_read_only())?;
    let read = db.read();
    let table = read.table(&args.table)?;
    let bar = crate::progress::items(table.len(), "pairs");
    let mut builder = Builder::create(&args.out)
        .map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    let key_len_max = builder.key_len_max();
    for item in table.iter() {
        let (key, value) = item?;
        if key.len() > key_len_max {
            return Err(format!(
                "a key of {} bytes ({}) is longer than a bitable holds ({key_len_max}); {} was \
                 not written",
                key.len(),
                crate::dbcommon::show_bytes(&key[..key.len().min(32)]),
                args.out.display()
            )
            .into());
        }
        builder.append(&key, value)?;
        bar.inc(1);
    }
    let summary = builder.finish(Durability::Durable)?;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        outln!(
            "{}",
            serde_json::json!({
                "table": args.table,
                "file": args.out.display().to_string(),
                "pairs": summary.pairs,
                "file_bytes": summary.file_bytes,
                "seconds": seconds,
            })
        )?;
    } else {
        outln!(
            "exported {} pairs of table {:?} to {} ({} bytes) in {seconds:.3} s",
            summary.pairs,
            args.table,
            args.out.display(),
            summary.file_bytes
        )?;
    }
    Ok(())
}

/// Runs `artdb import`.
pub fn import(args: ImportArgs) -> Result<(), BoxError> {
    let started = std::time::Instant::now();
    let input = open_table(&args.input)?;
    let bar = crate::progress::items(input.len(), "pairs");
    let mut target = Target::open(&args.file, "import")?;
    let result = (|| -> Result<u64, BoxError> {
        target.prepare(&args.table)?;
        let pairs = input.iter().map(|item| -> Result<_, BoxError> {
            let (key, value) = item.map_err(|e| format!("{}: {e}", args.input.display()))?;
            bar.inc(1);
            Ok((key.to_vec(), value.to_vec()))
        });
        target.load_sorted(
            &args.table,
            pairs,
            "is out of order in the bitable (damaged?)",
        )
    })();
    bar.finish_and_clear();
    let count = match result {
        Ok(count) => {
            target.close()?;
            count
        }
        Err(error) => {
            return Err(target.abandon(&error).into());
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        outln!(
            "{}",
            serde_json::json!({ "table": args.table, "pairs": count, "seconds": seconds })
        )?;
    } else {
        outln!(
            "imported {count} pairs from {} into table {:?} in {seconds:.3} s",
            args.input.display(),
            args.table
        )?;
    }
    Ok(())
}
