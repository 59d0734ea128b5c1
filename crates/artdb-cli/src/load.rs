//! `artdb load FILE [--table T] [--header] INPUT|-`: loads key/value pairs from a TSV, CSV or
//! JSON lines file (by its extension; one pair per line; TSV and CSV fields in the text form of
//! `dbcommon`, CSV fields may be quoted with `"` and `""` inside; a JSON line is one object as
//! `scan --json` prints each pair: `"key"` or `"key_hex"`, `"value"` or `"value_hex"`). Into an empty table, input sorted by key streams straight to the
//! file (bulk load); unsorted input, or a table with keys, is loaded in one write batch. Shows a
//! progress bar. A bulk load writes its nodes straight to the file; a write batch is one commit
//! through the write-ahead log; the command ends in a checkpoint either way (so a new file can be
//! linked into place with no log: see `run`).

use crate::dbcommon::{parse_bytes, show_bytes};
use crate::fill::Target;
use crate::outln;
use artdb::{Db, Error};
use indicatif::ProgressBar;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

/// Options of `artdb load`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (created if missing, and only if the load completes).
    file: PathBuf,
    /// The input: `.csv`, `.jsonl` or `.ndjson` (JSON lines), or `.tsv` (anything else is read
    /// as TSV); `-` for standard input (TSV unless `--csv` or `--jsonl`; held in memory, since
    /// an unsorted input is read twice).
    input: PathBuf,
    /// The table (created if missing).
    #[arg(long, default_value = crate::dbcommon::TABLE_DEFAULT)]
    table: String,
    /// The first line is a header (column names), not a pair: skip it. Never guessed, since a
    /// header looks like any pair.
    #[arg(long)]
    header: bool,
    /// Read the input as CSV whatever its name (for `-`).
    #[arg(long, conflicts_with = "jsonl")]
    csv: bool,
    /// Read the input as JSON lines whatever its name (for `-`): one object per line,
    /// `{"key": "text", "value": "text"}`, with `"key_hex"`/`"value_hex"` (hex digits) for
    /// bytes that are not UTF-8, as `scan --json` prints each pair.
    #[arg(long)]
    jsonl: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

type Pair = (Vec<u8>, Vec<u8>);
type BoxError = Box<dyn std::error::Error>;

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

/// How `load` reads a line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Tsv,
    Csv,
    JsonLines,
}

/// The bytes of one side (`name` is "key" or "value") of a JSON line's object: `name` as a
/// string of the bytes themselves, or `name_hex` as hex digits; exactly one of the two.
fn json_side(
    object: &serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Result<Vec<u8>, String> {
    let hex_name = format!("{name}_hex");
    match (object.get(name), object.get(&hex_name)) {
        (Some(_), Some(_)) => Err(format!("both \"{name}\" and \"{hex_name}\"; give one")),
        (None, None) => Err(format!("no \"{name}\" (or \"{hex_name}\")")),
        (Some(serde_json::Value::String(text)), None) => Ok(text.as_bytes().to_vec()),
        (None, Some(serde_json::Value::String(hex))) => {
            let digits = hex.as_bytes();
            if digits.len() % 2 != 0 {
                return Err(format!(
                    "\"{hex_name}\" has an odd number of hex digits ({})",
                    digits.len()
                ));
            }
            digits
                .chunks(2)
                .map(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                        .ok_or_else(|| {
                            format!(
                                "\"{hex_name}\" holds {pair:?}, not two hex digits",
                                pair = String::from_utf8_lossy(pair)
                            )
                        })
                })
                .collect()
        }
        (Some(other), None) | (None, Some(other)) => Err(format!(
            "\"{}\" is {}, not a string",
            if object.contains_key(name) {
                name
            } else {
                &hex_name
            },
            match other {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "a boolean",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::Array(_) => "an array",
                serde_json::Value::Object(_) => "an object",
                serde_json::Value::String(_) => "a string",
            }
        )),
    }
}

/// One JSON line: an object with a key and a value (`json_side`) and nothing else.
fn parse_json_line(line: &str) -> Result<Pair, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
    let serde_json::Value::Object(object) = value else {
        return Err("not a JSON object: each line is {\"key\": ..., \"value\": ...}".into());
    };
    if let Some(extra) = object
        .keys()
        .find(|name| !["key", "key_hex", "value", "value_hex"].contains(&name.as_str()))
    {
        return Err(format!(
            "unknown field \"{extra}\" (a line has \"key\" or \"key_hex\" and \"value\" or \
             \"value_hex\")"
        ));
    }
    Ok((json_side(&object, "key")?, json_side(&object, "value")?))
}

fn parse_line(line: &str, format: Format, number: u64) -> Result<Pair, BoxError> {
    let (key, value) = match format {
        Format::JsonLines => parse_json_line(line).map_err(|e| format!("line {number}: {e}"))?,
        Format::Csv | Format::Tsv => parse_text_line(line, format == Format::Csv, number)?,
    };
    if key.len() > artdb_art::KEY_LEN_MAX {
        return Err(format!(
            "line {number}: key of {} bytes is longer than the limit of {} bytes",
            key.len(),
            artdb_art::KEY_LEN_MAX
        )
        .into());
    }
    Ok((key, value))
}

fn parse_text_line(line: &str, csv: bool, number: u64) -> Result<Pair, BoxError> {
    let fields = if csv {
        split_csv(line).map_err(|e| format!("line {number}: {e}"))?
    } else {
        line.split('\t').map(str::to_string).collect()
    };
    if fields.len() != 2 {
        // A comma-separated file read as TSV is the likely cause of one field: say how to
        // read it as CSV instead of leaving the user to find the option.
        let hint = if !csv && fields.len() == 1 && line.contains(',') {
            " (read as TSV, tab-separated; `--csv` reads CSV)"
        } else {
            ""
        };
        return Err(format!(
            "line {number}: expected 2 fields (key, value), found {}{hint}",
            fields.len()
        )
        .into());
    }
    let at_line = |error: BoxError| -> BoxError { format!("line {number}: {error}").into() };
    let key = parse_bytes(&fields[0]).map_err(at_line)?;
    let value = parse_bytes(&fields[1]).map_err(at_line)?;
    Ok((key, value))
}

/// Reads the pairs of `input`, advancing `progress` by bytes read; a bad line (or a read error)
/// is an `Err` item naming the line, after which the input ends.
fn pairs<'a>(
    input: &'a Input,
    progress: &'a ProgressBar,
) -> Result<impl Iterator<Item = Result<Pair, BoxError>> + 'a, BoxError> {
    let format = input.format;
    let mut reader: Box<dyn BufRead + 'a> = match &input.stdin {
        Some(bytes) => Box::new(bytes.as_slice()),
        None => Box::new(BufReader::new(
            std::fs::File::open(&input.path)
                .map_err(|e| format!("cannot read {}: {e}", input.path.display()))?,
        )),
    };
    let mut number = 0u64;
    let mut line = Vec::new();
    if input.header {
        // Line numbers in messages still count the header, as an editor shows them.
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("line 1: cannot read the input: {e}"))?;
        progress.inc(read as u64);
        number = 1;
    }
    let mut done = false;
    Ok(std::iter::from_fn(move || {
        if done {
            return None;
        }
        line.clear();
        number += 1;
        let parsed = match reader.read_until(b'\n', &mut line) {
            Ok(0) => return None,
            Ok(read) => {
                progress.inc(read as u64);
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                match std::str::from_utf8(text) {
                    Ok(text) => parse_line(text, format, number),
                    Err(error) => Err(format!(
                        "line {number}: not valid UTF-8 (byte {} of the line); write bytes that \
                         are not printable ASCII as \\xNN escapes, e.g. \\xff",
                        error.valid_up_to() + 1
                    )
                    .into()),
                }
            }
            Err(error) => Err(format!("line {number}: cannot read the input: {error}").into()),
        };
        if parsed.is_err() {
            done = true;
        }
        Some(parsed)
    }))
}

/// Where `load` reads its pairs.
struct Input {
    path: PathBuf,
    /// Standard input, read whole (`-`).
    /// The whole input, read once: standard input (`-`), or a path that is not a regular file
    /// (a pipe such as `<(zcat pairs.tsv.gz)`, a FIFO, a device), which cannot be read twice.
    stdin: Option<Vec<u8>>,
    format: Format,
    header: bool,
}

impl Input {
    fn new(args: &Args) -> Result<Input, BoxError> {
        let stdin = if args.input.as_os_str() == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
            Some(bytes)
        } else if std::fs::metadata(&args.input).is_ok_and(|meta| !meta.is_file() && !meta.is_dir())
        {
            // An unsorted input is read twice (to find that it is unsorted, then to load it):
            // a second read of a pipe would find it drained and load nothing.
            let bytes = std::fs::read(&args.input)
                .map_err(|e| format!("cannot read {}: {e}", args.input.display()))?;
            Some(bytes)
        } else {
            None
        };
        let extension_is = |names: &[&str]| {
            args.input.extension().is_some_and(|ext| {
                names
                    .iter()
                    .any(|name| ext.eq_ignore_ascii_case(std::ffi::OsStr::new(name)))
            })
        };
        let format = if args.jsonl || (!args.csv && extension_is(&["jsonl", "ndjson"])) {
            Format::JsonLines
        } else if args.csv || extension_is(&["csv"]) {
            Format::Csv
        } else {
            Format::Tsv
        };
        Ok(Input {
            path: args.input.clone(),
            stdin,
            format,
            header: args.header,
        })
    }
}

fn progress_bar(input: &Input) -> Result<ProgressBar, BoxError> {
    let len = match &input.stdin {
        Some(bytes) => bytes.len() as u64,
        None => std::fs::metadata(&input.path)
            .map_err(|e| format!("cannot read {}: {e}", input.path.display()))?
            .len(),
    };
    Ok(crate::progress::bytes(len))
}

/// Runs `artdb load`. Atomic: on any error (bad line, unreadable input, engine error) the
/// database is left as it was, and a missing file stays missing. A new file is built under a
/// temporary name beside it (`.NAME.load-PID`) and linked into place only when complete
/// ([`crate::fill`]'s rule), so a load killed midway (SIGKILL, Ctrl-C) leaves no database, empty
/// or partial, under NAME; the next load to NAME removes the dead process's temporary file. Into
/// an existing file, the load is one commit (a bulk load or one write batch) and a new table is
/// created by that commit, so a failed or killed load leaves no empty table behind.
pub fn run(args: Args) -> Result<(), BoxError> {
    let input = Input::new(&args)?;
    let target = Target::open(&args.file, "load")?;
    let created_table = !target.db().table_names().contains(&args.table);
    match load(target.db(), &args, &input, created_table) {
        Ok(report) => {
            target.close()?;
            report.print(&args)?;
            Ok(())
        }
        Err(error) => {
            // The message says what was left as it was; the exit code stays the error's own
            // (4 for corruption met midway).
            let code = crate::dbcommon::exit_code(&*error);
            let message = target.abandon(&error);
            Err(Box::new(crate::dbcommon::Exit { code, message }))
        }
    }
}

struct Report {
    count: u64,
    method: &'static str,
    keys: u64,
    seconds: f64,
}

impl Report {
    fn print(&self, args: &Args) -> std::io::Result<()> {
        if args.json {
            let json = serde_json::json!({
                "pairs": self.count,
                "method": self.method,
                "table_keys": self.keys,
                "seconds": self.seconds,
            });
            outln!("{json}")
        } else {
            outln!(
                "loaded {} pairs into {:?} by {} in {:.3} s; it now has {} keys",
                self.count,
                args.table,
                self.method,
                self.seconds,
                self.keys
            )
        }
    }
}

/// Loads into `args.table`, which `create` says is new: then the load's own commit creates it.
fn load(db: &Db, args: &Args, input: &Input, create: bool) -> Result<Report, BoxError> {
    let start = std::time::Instant::now();
    let empty = create || db.read().table(&args.table)?.is_empty();
    let mut method = "bulk load";
    let mut loaded = None;
    if empty {
        let bar = progress_bar(input)?;
        let pairs = pairs(input, &bar)?;
        let result = if create {
            db.bulk_load_new_table_try(&args.table, pairs)
        } else {
            db.bulk_load_try(&args.table, pairs)
        };
        bar.finish_and_clear();
        match result {
            Ok(count) => loaded = Some(count),
            Err(error) => match error.downcast_ref::<Error>() {
                Some(Error::Unsorted { .. } | Error::Duplicate { .. }) => {}
                _ => return Err(error),
            },
        }
    }
    let count = match loaded {
        Some(count) => count,
        None => {
            method = "write batch";
            let bar = progress_bar(input)?;
            let mut batch = db.write()?;
            if create {
                batch.create_table(&args.table)?;
            }
            let mut count = 0u64;
            for pair in pairs(input, &bar)? {
                let (key, value) = pair?;
                batch
                    .insert(&args.table, &key, &value)
                    .map_err(|e| format!("key {}: {e}", show_bytes(&key)))?;
                count += 1;
            }
            bar.finish_and_clear();
            batch.commit()?;
            count
        }
    };
    let keys = db.read().table(&args.table)?.len();
    Ok(Report {
        count,
        method,
        keys,
        seconds: start.elapsed().as_secs_f64(),
    })
}
