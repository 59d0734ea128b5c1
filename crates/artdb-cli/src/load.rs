//! `artdb load FILE --table T INPUT`: loads key/value pairs from a TSV or CSV file (by its
//! extension; one pair per line, fields in the text form of `dbcommon`, CSV fields may be quoted
//! with `"` and `""` inside). Into an empty table, input sorted by key streams straight to the
//! file (bulk load); unsorted input, or a table with keys, is loaded in one write batch. Shows a
//! progress bar; checkpoints at the end.

use crate::dbcommon::{parse_bytes, show_bytes};
use artdb::{Db, Error, Options};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Options of `artdb load`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (created if missing).
    file: PathBuf,
    /// The input: `.csv` or `.tsv` (anything else is read as TSV).
    input: PathBuf,
    /// The table (created if missing).
    #[arg(long)]
    table: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

type Pair = (Vec<u8>, Vec<u8>);

fn split_csv(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', false) if field.is_empty() => quoted = true,
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    fields.push(field);
    Ok(fields)
}

fn parse_line(line: &str, csv: bool, number: u64) -> Result<Pair, Box<dyn std::error::Error>> {
    let fields = if csv {
        split_csv(line).map_err(|e| format!("line {number}: {e}"))?
    } else {
        line.split('\t').map(str::to_string).collect()
    };
    if fields.len() != 2 {
        return Err(format!(
            "line {number}: expected 2 fields (key, value), found {}",
            fields.len()
        )
        .into());
    }
    Ok((parse_bytes(&fields[0])?, parse_bytes(&fields[1])?))
}

/// Reads the pairs of `input`, advancing `progress` by bytes read; stops at the first bad line
/// and leaves its error in `failure`.
fn pairs<'a>(
    input: &Path,
    progress: &'a ProgressBar,
    failure: &'a mut Option<Box<dyn std::error::Error>>,
) -> Result<impl Iterator<Item = Pair> + 'a, Box<dyn std::error::Error>> {
    let csv = input
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("csv"));
    let reader = BufReader::new(std::fs::File::open(input)?);
    let mut number = 0u64;
    Ok(reader.lines().map_while(move |line| {
        number += 1;
        let parsed = line.map_err(Into::into).and_then(|line| {
            progress.inc(line.len() as u64 + 1);
            parse_line(line.trim_end_matches('\r'), csv, number)
        });
        match parsed {
            Ok(pair) => Some(pair),
            Err(error) => {
                *failure = Some(error);
                None
            }
        }
    }))
}

fn progress_bar(input: &Path) -> Result<ProgressBar, Box<dyn std::error::Error>> {
    let bar = ProgressBar::new(std::fs::metadata(input)?.len());
    bar.set_style(ProgressStyle::with_template(
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )?);
    Ok(bar)
}

/// Runs `artdb load`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let db = if args.file.exists() {
        Db::open(&args.file, Options::default())?
    } else {
        Db::create(&args.file, Options::default())?
    };
    if !db.table_names().contains(&args.table) {
        db.create_table(&args.table)?;
    }
    let start = std::time::Instant::now();
    let empty = db.read().table(&args.table)?.is_empty();
    let mut method = "bulk load";
    let mut loaded = None;
    if empty {
        let bar = progress_bar(&args.input)?;
        let mut failure = None;
        let result = db.bulk_load(&args.table, pairs(&args.input, &bar, &mut failure)?);
        bar.finish_and_clear();
        if let Some(error) = failure {
            return Err(error);
        }
        match result {
            Ok(count) => loaded = Some(count),
            Err(Error::Unsorted { .. } | Error::Duplicate { .. }) => {}
            Err(error) => return Err(error.into()),
        }
    }
    let count = match loaded {
        Some(count) => count,
        None => {
            method = "write batch";
            let bar = progress_bar(&args.input)?;
            let mut failure = None;
            let mut batch = db.write()?;
            let mut count = 0u64;
            for (key, value) in pairs(&args.input, &bar, &mut failure)? {
                batch
                    .insert(&args.table, &key, &value)
                    .map_err(|e| format!("key {}: {e}", show_bytes(&key)))?;
                count += 1;
            }
            bar.finish_and_clear();
            if let Some(error) = failure {
                return Err(error);
            }
            batch.commit()?;
            db.checkpoint()?;
            count
        }
    };
    let keys = db.read().table(&args.table)?.len();
    db.close()?;
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let json = serde_json::json!({ "pairs": count, "method": method, "table_keys": keys, "seconds": seconds });
        println!("{json}");
    } else {
        println!(
            "loaded {count} pairs into {:?} by {method} in {seconds:.3} s; it now has {keys} keys",
            args.table
        );
    }
    Ok(())
}
