//! `artdb stats FILE`: tables, keys, tree shape (node kinds, depth) and file space.
//!
//! The tree shape reads every node; a node it cannot read would silently drop out of the
//! figures, so (without `--quick`) the command also runs the checks of `artdb verify` and, on
//! any problem, prints the problems instead of figures and exits with code 4, as `verify` does.

use crate::dbcommon::{Exit, EXIT_CORRUPT};
use crate::outln;
use artdb::Db;
use std::path::PathBuf;

/// Problems printed before "... and N more" (`artdb verify` lists them all).
const PROBLEMS_SHOWN: usize = 5;

/// Options of `artdb stats`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (must exist: only put, load, restore, import, shell and table create make one).
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Skip the tree shape and the checks (which read every node).
    #[arg(long)]
    quick: bool,
}

/// Runs `artdb stats`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let db = match Db::open(&args.file, crate::dbcommon::options_read_only()) {
        Ok(db) => db,
        Err(error @ artdb::Error::Corruption { .. }) if args.json => {
            // Damage found at open (the file or its write-ahead log): no figures, as below.
            let problems = [error.to_string()];
            outln!(
                "{}",
                serde_json::json!({ "ok": false, "problems": problems })
            )?;
            return Err(Box::new(error));
        }
        Err(error) => return Err(Box::new(error)),
    };
    let stats = db.stats()?;
    let mut tables = Vec::new();
    for table in &stats.tables {
        let shape = if args.quick {
            None
        } else {
            Some(db.table_tree_stats(&table.name)?)
        };
        tables.push((table, shape));
    }
    if !args.quick {
        let mut problems: Vec<String> = db
            .verify()?
            .problems
            .iter()
            .map(ToString::to_string)
            .collect();
        for (table, shape) in &tables {
            if let Some(shape) = shape {
                if shape.keys != table.keys {
                    problems.push(format!(
                        "table {:?}: {} keys in the catalog, {} reachable",
                        table.name, table.keys, shape.keys
                    ));
                }
            }
        }
        if !problems.is_empty() {
            if args.json {
                outln!(
                    "{}",
                    serde_json::json!({ "ok": false, "problems": problems })
                )?;
            } else {
                for problem in problems.iter().take(PROBLEMS_SHOWN) {
                    eprintln!("artdb: problem: {problem}");
                }
                if problems.len() > PROBLEMS_SHOWN {
                    eprintln!(
                        "artdb: ... and {} more problems",
                        problems.len() - PROBLEMS_SHOWN
                    );
                }
            }
            return Err(Box::new(Exit {
                code: EXIT_CORRUPT,
                message: format!(
                    "{} is damaged ({} problems); its figures would be wrong. \
                     Run `artdb verify` for details and restore it from a backup",
                    args.file.display(),
                    problems.len()
                ),
            }));
        }
    }
    let store = &stats.store;
    if args.json {
        let tables: Vec<serde_json::Value> = tables
            .iter()
            .map(|(table, shape)| {
                let mut value = serde_json::json!({ "name": table.name, "keys": table.keys });
                if let Some(shape) = shape {
                    value["node4"] = shape.node4.into();
                    value["node16"] = shape.node16.into();
                    value["node48"] = shape.node48.into();
                    value["node256"] = shape.node256.into();
                    value["leaves"] = shape.leaves.into();
                    value["inline_values"] = shape.inline_values.into();
                    value["packs"] = shape.packs.into();
                    value["dense_packs"] = shape.dense_packs.into();
                    value["wide_packs"] = shape.wide_packs.into();
                    value["depth_histogram"] = shape.depth_histogram.clone().into();
                }
                value
            })
            .collect();
        let json = serde_json::json!({
            "file_bytes": store.file_bytes,
            "page_count": store.page_count,
            "generation": store.generation,
            "tables": tables,
            "log": {
                "bytes": stats.log.bytes,
                "records": stats.log.records,
                "last_lsn": stats.log.last_lsn,
                "covered_lsn": stats.log.covered_lsn,
                "file_bytes": stats.log.file_bytes,
            },
        });
        outln!("{json}")?;
        return Ok(());
    }
    outln!(
        "file {}: {} bytes, {} pages, checkpoint {}",
        args.file.display(),
        store.file_bytes,
        store.page_count,
        store.generation
    )?;
    outln!(
        "log {}: {} bytes in {} records, last LSN {}, checkpoint covers LSN {}, file {} bytes",
        artdb::db::log_path(&args.file).display(),
        stats.log.bytes,
        stats.log.records,
        stats.log.last_lsn,
        stats.log.covered_lsn,
        stats.log.file_bytes
    )?;
    for (table, shape) in tables {
        outln!("table {:?}: {} keys", table.name, table.keys)?;
        if let Some(shape) = shape {
            outln!(
                "  nodes: {} Node4, {} Node16, {} Node48, {} Node256, {} leaves, {} inline values, \
                 {} packs ({} dense, {} wide)",
                shape.node4,
                shape.node16,
                shape.node48,
                shape.node256,
                shape.leaves,
                shape.inline_values,
                shape.packs,
                shape.dense_packs,
                shape.wide_packs
            )?;
            outln!(
                "  depth histogram (entries by inner nodes above): {:?}",
                shape.depth_histogram
            )?;
        }
    }
    drop(db);
    Ok(())
}
