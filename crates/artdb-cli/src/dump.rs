//! `artdb dump FILE [--table T] [-p]`: writes tables to standard output in the text format of
//! `mdb_dump`/`db_dump` (see `dumpfmt`), one section per table, the default table `main` first
//! and without `database=`, so that LMDB's `mdb_load` puts it in its main database.
//!
//! Reads one snapshot: the dump is one committed state even while another thread writes.

use crate::dbcommon::{Exit, TABLE_DEFAULT};
use crate::dumpfmt::{self, Format};
use artdb::Db;
use std::io::Write;
use std::path::PathBuf;

/// Options of `artdb dump`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (must exist: only put, load, restore, import, shell and table create make one).
    file: PathBuf,
    /// Dump only this table (default: every table).
    #[arg(long)]
    table: Option<String>,
    /// Printable characters as themselves and other bytes as `\xx` (`format=print`), instead
    /// of hex (`format=bytevalue`).
    #[arg(short = 'p', long)]
    printable: bool,
}

/// Runs `artdb dump`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let db = Db::open(&args.file, crate::dbcommon::options_read_only())?;
    let read = db.read();
    let mut names = read.table_names();
    if let Some(table) = &args.table {
        if !names.contains(table) {
            return Err(Box::new(Exit {
                code: 1,
                message: format!(
                    "{} has no table {table:?} (its tables: {})",
                    args.file.display(),
                    names.join(", ")
                ),
            }));
        }
        names = vec![table.clone()];
    }
    if let Some(name) = names.iter().find(|name| !dumpfmt::name_fits_header(name)) {
        return Err(Box::new(Exit {
            code: 1,
            message: format!(
                "table {name:?} has a line break in its name, which the dump format \
                 (mdb_dump/db_dump) cannot carry: nothing was written; dump the other tables \
                 one at a time with --table, and copy this one with `artdb export` / `artdb \
                 import` (bitable files) or `artdb backup`"
            ),
        }));
    }
    // The default table first (see the module docs).
    names.sort_by_key(|name| (name != TABLE_DEFAULT, name.clone()));
    let format = if args.printable {
        Format::Print
    } else {
        Format::Hex
    };
    let stats = db.stats()?;
    let mut total_keys = 0;
    for name in &names {
        total_keys += read.table(name)?.len();
    }
    // LMDB needs its map size up front: generous room for the data in its B+tree's layout.
    let map_bytes = (16 << 20) + 4 * stats.store.file_bytes + 256 * total_keys;
    let map_bytes = map_bytes.div_ceil(1 << 20) << 20;
    let bar = crate::progress::items(total_keys, "pairs");
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut line = Vec::new();
    for name in &names {
        let database = (name != TABLE_DEFAULT).then_some(name.as_str());
        dumpfmt::write_header(&mut out, format, database, map_bytes)?;
        for item in read.table(name)?.iter() {
            let (key, value) = item?;
            line.clear();
            dumpfmt::encode_line(&key, format, &mut line);
            dumpfmt::encode_line(value, format, &mut line);
            out.write_all(&line)?;
            bar.inc(1);
        }
        dumpfmt::write_end(&mut out)?;
    }
    out.flush()?;
    bar.finish_and_clear();
    Ok(())
}
