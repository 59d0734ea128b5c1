//! `artdb bitable ...`: build, query, merge, check and describe bitable files.
//!
//! Keys and values on the command line and in TSV input are text (the bytes of the UTF-8 string)
//! unless `--hex` is given, in which case they are hexadecimal. Output shows bytes as text with
//! non-printable bytes escaped (`\xNN`), or as hex with `--hex`; `--json` prints one JSON document
//! (pairs as strings in the same encoding). Exit codes (as for the database commands): 0
//! success, 1 error, 2 bad command line, 3 `get` of an absent key, 4 a damaged table (found at
//! open, where the header's checksum, fields, geometry and figures are checked, or by a read or
//! `verify` of its pages).

use crate::dbcommon::{Exit, EXIT_CORRUPT, EXIT_NOT_FOUND};
use crate::outln;
use artdb_bitable::{merge, Builder, Durability, MergeRule, Options, Table};
use std::io::{BufRead, BufReader, Read, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};

type BoxError = Box<dyn std::error::Error>;
/// One item of a scan.
type PairResult<'t> = artdb_bitable::Result<(&'t [u8], &'t [u8])>;

/// Output and key-encoding flags shared by the subcommands.
#[derive(clap::Args, Clone, Copy)]
pub struct Format {
    /// Print one JSON document instead of human-readable text.
    #[arg(long)]
    json: bool,
    /// Keys and values (arguments, input and output) are hexadecimal.
    #[arg(long)]
    hex: bool,
}

/// The `bitable` subcommands.
#[derive(clap::Subcommand)]
pub enum Command {
    /// Build a table from sorted `key<TAB>value` lines.
    #[command(after_help = "Example: artdb bitable build t.bt --from pairs.tsv")]
    Build {
        /// The table file to write.
        out: PathBuf,
        /// Input file, or `-` for standard input.
        #[arg(long, default_value = "-")]
        from: String,
        /// Page size in bytes (a power of two from 512 to 65536).
        #[arg(
            long,
            default_value_t = 4096,
            allow_negative_numbers = true,
            value_parser = crate::numbers::bitable_page_size
        )]
        page_size: usize,
        /// Skip the fsyncs and the write-behind (a scratch table: it may not survive a power
        /// loss, and its pages are left to the kernel to write back).
        #[arg(long)]
        no_sync: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Print the value stored under a key (exit code 3 if absent).
    #[command(after_help = "Example: artdb bitable get t.bt somekey")]
    Get {
        /// The table file.
        file: PathBuf,
        /// The key.
        key: String,
        #[command(flatten)]
        format: Format,
    },
    /// Print pairs in key order.
    #[command(after_help = "Example: artdb bitable scan t.bt --prefix some --limit 10")]
    Scan {
        /// The table file.
        file: PathBuf,
        /// First key (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// Last key (exclusive).
        #[arg(long)]
        to: Option<String>,
        /// Only keys starting with this prefix.
        #[arg(long)]
        prefix: Option<String>,
        /// Print at most this many pairs.
        #[arg(long, allow_negative_numbers = true, value_parser = crate::numbers::any_u64)]
        limit: Option<u64>,
        #[command(flatten)]
        format: Format,
    },
    /// Merge tables into one (a key in several inputs: the last input wins, or --strict fails).
    #[command(after_help = "Example: artdb bitable merge all.bt a.bt b.bt")]
    Merge {
        /// The table file to write.
        out: PathBuf,
        /// Input tables, oldest first.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Fail on a key present in two inputs instead of keeping the newest.
        #[arg(long)]
        strict: bool,
        #[command(flatten)]
        format: Format,
    },
    /// Check every page and the key order of a table.
    #[command(after_help = "Example: artdb bitable verify t.bt")]
    Verify {
        /// The table file.
        file: PathBuf,
        #[command(flatten)]
        format: Format,
    },
    /// Print pairs, pages and bytes per level, large-value bytes and fill factors.
    #[command(after_help = "Example: artdb bitable stats t.bt --json")]
    Stats {
        /// The table file.
        file: PathBuf,
        #[command(flatten)]
        format: Format,
    },
}

/// Runs a `bitable` subcommand; a damaged table is exit code 4.
pub fn run(command: Command) -> Result<(), BoxError> {
    run_command(command).map_err(|error| match error.downcast_ref::<artdb_bitable::Error>() {
        Some(bitable_error) if Table::is_corruption(bitable_error) => Box::new(Exit {
            code: EXIT_CORRUPT,
            message: error.to_string(),
        }) as BoxError,
        _ => error,
    })
}

fn run_command(command: Command) -> Result<(), BoxError> {
    match command {
        Command::Build {
            out,
            from,
            page_size,
            no_sync,
            format,
        } => build(out, &from, page_size, no_sync, format),
        Command::Get { file, key, format } => get(file, &key, format),
        Command::Scan {
            file,
            from,
            to,
            prefix,
            limit,
            format,
        } => scan(file, from, to, prefix, limit, format),
        Command::Merge {
            out,
            inputs,
            strict,
            format,
        } => merge_tables(out, &inputs, strict, format),
        Command::Verify { file, format } => verify(file, format),
        Command::Stats { file, format } => stats(file, format),
    }
}

fn decode(text: &str, format: Format) -> Result<Vec<u8>, BoxError> {
    if !format.hex {
        return Ok(text.as_bytes().to_vec());
    }
    if !text.len().is_multiple_of(2) {
        return Err(format!("`{text}` is not hexadecimal: it has an odd number of digits").into());
    }
    (0..text.len())
        .step_by(2)
        .map(|at| {
            u8::from_str_radix(&text[at..at + 2], 16)
                .map_err(|_| format!("`{text}` is not hexadecimal").into())
        })
        .collect()
}

fn encode(bytes: &[u8], format: Format) -> String {
    if format.hex {
        bytes.iter().map(|byte| format!("{byte:02x}")).collect()
    } else {
        bytes.escape_ascii().to_string()
    }
}

fn build(
    out: PathBuf,
    from: &str,
    page_size: usize,
    no_sync: bool,
    format: Format,
) -> Result<(), BoxError> {
    let (reader, len): (Box<dyn Read>, Option<u64>) = if from == "-" {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let file = std::fs::File::open(from).map_err(|e| format!("cannot open {from}: {e}"))?;
        let len = file.metadata()?.len();
        (Box::new(file), Some(len))
    };
    let progress = match len {
        Some(len) => indicatif::ProgressBar::new(len),
        None => indicatif::ProgressBar::new_spinner(),
    };
    if format.json || len.is_none() {
        progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut reader = BufReader::with_capacity(1 << 20, progress.wrap_read(reader));
    // A `--no-sync` table is a scratch table: no write-behind (the option's documented use), so
    // its build runs at the page cache's speed.
    let options = Options {
        page_size,
        write_behind: !no_sync,
        ..Options::default()
    };
    let mut builder = Builder::with_options(&out, options)?;
    let mut line = Vec::new();
    let mut line_number = 0u64;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        line_number += 1;
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let Some(tab) = text.iter().position(|&byte| byte == b'\t') else {
            return Err(format!("line {line_number}: expected `key<TAB>value`").into());
        };
        let (key, value) = (&text[..tab], &text[tab + 1..]);
        let (key, value) = if format.hex {
            let key = decode(std::str::from_utf8(key)?, format)?;
            let value = decode(std::str::from_utf8(value)?, format)?;
            (key, value)
        } else {
            (key.to_vec(), value.to_vec())
        };
        builder
            .append(&key, &value)
            .map_err(|e| format!("line {line_number}: {e}"))?;
    }
    progress.finish_and_clear();
    let durability = if no_sync {
        Durability::NonDurable
    } else {
        Durability::Durable
    };
    let summary = builder.finish(durability)?;
    if format.json {
        let document = serde_json::json!({
            "file": out.display().to_string(),
            "pairs": summary.pairs,
            "file_bytes": summary.file_bytes,
            "levels": summary.levels.len(),
        });
        outln!("{document}")?;
    } else {
        outln!(
            "wrote {}: {} pairs, {} bytes, {} levels",
            out.display(),
            summary.pairs,
            summary.file_bytes,
            summary.levels.len()
        )?;
    }
    Ok(())
}

fn get(file: PathBuf, key: &str, format: Format) -> Result<(), BoxError> {
    let table = open_table(&file)?;
    let key = decode(key, format)?;
    match table.get(&key)? {
        Some(value) if format.json => {
            outln!(
                "{}",
                serde_json::json!({"key": encode(&key, format), "value": encode(value, format)})
            )?;
            Ok(())
        }
        Some(value) => {
            outln!("{}", encode(value, format))?;
            Ok(())
        }
        None => {
            if format.json {
                outln!(
                    "{}",
                    serde_json::json!({"key": encode(&key, format), "value": null})
                )?;
            }
            Err(Box::new(Exit {
                code: EXIT_NOT_FOUND,
                message: format!("key {} not found", encode(&key, format)),
            }))
        }
    }
}

fn scan(
    file: PathBuf,
    from: Option<String>,
    to: Option<String>,
    prefix: Option<String>,
    limit: Option<u64>,
    format: Format,
) -> Result<(), BoxError> {
    let table = open_table(&file)?;
    let from = from.map(|k| decode(&k, format)).transpose()?;
    let to = to.map(|k| decode(&k, format)).transpose()?;
    let prefix = prefix.map(|k| decode(&k, format)).transpose()?;
    let lower = from.as_deref().map_or(Bound::Unbounded, Bound::Included);
    let upper = to.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
    let pairs: Box<dyn Iterator<Item = PairResult<'_>>> = match &prefix {
        Some(prefix) => {
            let lower_key = from.as_deref();
            Box::new(
                table
                    .prefix(prefix)
                    .filter(move |item| match (item, lower_key) {
                        (Ok((key, _)), Some(lower)) => *key >= lower,
                        _ => true,
                    }),
            )
        }
        None => Box::new(table.range(lower, upper)),
    };
    let upper_key = to.as_deref();
    let mut stdout = std::io::stdout().lock();
    let mut rows = Vec::new();
    for item in pairs.take(limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX))) {
        let (key, value) = item?;
        if upper_key.is_some_and(|upper| key >= upper) {
            break;
        }
        if format.json {
            rows.push(serde_json::json!([
                encode(key, format),
                encode(value, format)
            ]));
        } else {
            writeln!(stdout, "{}\t{}", encode(key, format), encode(value, format))?;
        }
    }
    if format.json {
        writeln!(stdout, "{}", serde_json::json!({"pairs": rows}))?;
    }
    Ok(())
}

fn merge_tables(
    out: PathBuf,
    inputs: &[PathBuf],
    strict: bool,
    format: Format,
) -> Result<(), BoxError> {
    let tables = inputs
        .iter()
        .map(|path| open_table(path))
        .collect::<Result<Vec<_>, _>>()?;
    let references: Vec<&Table> = tables.iter().collect();
    let page_size = tables.first().map_or(4096, |t| t.page_size());
    let mut builder = Builder::with_options(
        &out,
        Options {
            page_size,
            ..Options::default()
        },
    )?;
    let rule = if strict {
        MergeRule::Error
    } else {
        MergeRule::NewestWins
    };
    merge(&references, &mut builder, rule)?;
    let summary = builder.finish(Durability::Durable)?;
    if format.json {
        outln!(
            "{}",
            serde_json::json!({"file": out.display().to_string(), "pairs": summary.pairs, "inputs": inputs.len()})
        )?;
    } else {
        outln!(
            "merged {} tables into {}: {} pairs",
            inputs.len(),
            out.display(),
            summary.pairs
        )?;
    }
    Ok(())
}

fn verify(file: PathBuf, format: Format) -> Result<(), BoxError> {
    // Killed builds of this table leave `.NAME.PID-N.building` files beside it: remove them.
    let removed = artdb_bitable::remove_stale_temp_files(&file);
    for path in &removed {
        eprintln!(
            "artdb: removed {}, left by a build that was killed",
            path.display()
        );
    }
    let result = open_table(&file).and_then(|table| Ok(table.verify().map(|()| table.len())?));
    match (result, format.json) {
        (Ok(pairs), true) => outln!(
            "{}",
            serde_json::json!({"ok": true, "pairs": pairs, "stale_temp_files_removed": removed.len()})
        )?,
        (Ok(pairs), false) => outln!("{}: ok, {pairs} pairs", file.display())?,
        (Err(error), true) => {
            outln!(
                "{}",
                serde_json::json!({"ok": false, "error": error.to_string()})
            )?;
            return Err(error);
        }
        (Err(error), false) => return Err(error),
    }
    Ok(())
}

/// Opens a bitable file, saying what is wrong with the path when it cannot be one (missing, a
/// directory, unreadable) instead of the raw system error (`mmap` on a directory says "No such
/// device").
pub fn open_table(file: &Path) -> Result<Table, BoxError> {
    match std::fs::metadata(file) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{}: no such file; check the path", file.display()).into())
        }
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(format!(
                "{}: permission denied; check the file's and its directories' permissions",
                file.display()
            )
            .into())
        }
        Err(error) => return Err(format!("{}: {error}", file.display()).into()),
        Ok(metadata) if metadata.is_dir() => {
            return Err(format!(
                "{} is a directory, not a bitable file; name the table file inside it",
                file.display()
            )
            .into())
        }
        // A FIFO, socket or device: the table's open names what it is.
        Ok(metadata) if !metadata.is_file() => {}
        Ok(metadata) if metadata.len() == 0 => {
            return Err(format!("{} is empty, not a bitable file", file.display()).into())
        }
        Ok(_) => {}
    }
    Table::open(file).map_err(|error| {
        if Table::is_corruption(&error) {
            Box::new(Exit {
                code: EXIT_CORRUPT,
                message: format!("{}: not a readable bitable file: {error}", file.display()),
            }) as BoxError
        } else {
            format!("{}: {error}", file.display()).into()
        }
    })
}

fn stats(file: PathBuf, format: Format) -> Result<(), BoxError> {
    let table = open_table(&file)?;
    let stats = table.stats();
    if format.json {
        let levels: Vec<_> = stats
            .levels
            .iter()
            .map(|level| {
                serde_json::json!({
                    "level": level.level, "pages": level.pages, "bytes": level.bytes,
                    "used_bytes": level.used_bytes, "fill_factor": level.fill_factor,
                })
            })
            .collect();
        let document = serde_json::json!({
            "pairs": stats.pairs, "page_size": stats.page_size, "file_bytes": stats.file_bytes,
            "key_bytes": stats.key_bytes, "value_bytes": stats.value_bytes,
            "large_value_count": stats.large_value_count,
            "large_value_bytes": stats.large_value_bytes, "levels": levels,
        });
        outln!("{document}")?;
        return Ok(());
    }
    outln!("pairs              {}", stats.pairs)?;
    outln!("page size          {} bytes", stats.page_size)?;
    outln!("file               {} bytes", stats.file_bytes)?;
    outln!(
        "keys / values      {} / {} bytes",
        stats.key_bytes,
        stats.value_bytes
    )?;
    outln!(
        "large values       {} ({} bytes)",
        stats.large_value_count,
        stats.large_value_bytes
    )?;
    outln!("level  kind    pages        bytes   fill")?;
    for level in &stats.levels {
        let kind = if level.level == 0 { "leaf" } else { "branch" };
        outln!(
            "{:>5}  {kind:<6} {:>6} {:>12} {:>5.1}%",
            level.level,
            level.pages,
            level.bytes,
            level.fill_factor * 100.0
        )?;
    }
    Ok(())
}
