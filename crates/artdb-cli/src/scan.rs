//! `artdb scan|count FILE [--table T] [--from K] [--to K] [--prefix P] [--limit N]`: prints the
//! pairs (or their number) with keys in `[from, to)` and starting with the prefix, in key order.

use crate::dbcommon::{parse_arg, show_bytes, TABLE_DEFAULT};
use crate::outln;
use artdb::Db;
use std::ops::Bound;
use std::path::PathBuf;

/// Options of `artdb scan` and `artdb count`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (must exist: only put, load, restore, import, shell and table create make one).
    file: PathBuf,
    /// The table.
    #[arg(long, default_value = TABLE_DEFAULT)]
    table: String,
    /// Smallest key (inclusive).
    #[arg(long)]
    from: Option<String>,
    /// Key to stop before (exclusive).
    #[arg(long)]
    to: Option<String>,
    /// Only keys starting with this.
    #[arg(long)]
    prefix: Option<String>,
    /// At most this many pairs.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::numbers::any_u64)]
    limit: Option<u64>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `artdb scan` (`count == false`) or `artdb count`.
pub fn run(args: Args, count: bool) -> Result<(), Box<dyn std::error::Error>> {
    let from = args.from.as_deref().map(parse_arg).transpose()?;
    let to = args.to.as_deref().map(parse_arg).transpose()?;
    let prefix = args
        .prefix
        .as_deref()
        .map(parse_arg)
        .transpose()?
        .unwrap_or_default();
    let db = Db::open(&args.file, crate::dbcommon::options_read_only())?;
    let read = db.read();
    let table = read.table(&args.table)?;
    let lower = match &from {
        Some(from) if from.as_slice() > prefix.as_slice() => Bound::Included(from.clone()),
        _ => Bound::Included(prefix.clone()),
    };
    let upper = to.map_or(Bound::Unbounded, Bound::Excluded);
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut seen = 0u64;
    let mut pairs = Vec::new();
    for item in table.range::<Vec<u8>, _>((lower, upper)) {
        let (key, value) = item?;
        if !key.starts_with(&prefix) || seen >= limit {
            break;
        }
        seen += 1;
        if count {
            continue;
        }
        if args.json {
            pairs.push(crate::dbcommon::json_pair(&key, Some(value)));
        } else {
            outln!("{}\t{}", show_bytes(&key), show_bytes(value))?;
        }
    }
    if count {
        if args.json {
            outln!("{}", serde_json::json!({ "count": seen }))?;
        } else {
            outln!("{seen}")?;
        }
    } else if args.json {
        outln!("{}", serde_json::Value::Array(pairs))?;
    }
    Ok(())
}
