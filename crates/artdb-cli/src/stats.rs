//! `artdb stats FILE`: tables, keys, tree shape (node kinds, depth) and file space.

use artdb::{Db, Options};
use std::path::PathBuf;

/// Options of `artdb stats`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file.
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Skip the tree shape (which reads every node).
    #[arg(long)]
    quick: bool,
}

/// Runs `artdb stats`.
pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let db = Db::open(&args.file, Options::default())?;
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
        });
        println!("{json}");
        return Ok(());
    }
    println!(
        "file {}: {} bytes, {} pages, checkpoint {}",
        args.file.display(),
        store.file_bytes,
        store.page_count,
        store.generation
    );
    for (table, shape) in tables {
        println!("table {:?}: {} keys", table.name, table.keys);
        if let Some(shape) = shape {
            println!(
                "  nodes: {} Node4, {} Node16, {} Node48, {} Node256, {} leaves, {} inline values",
                shape.node4,
                shape.node16,
                shape.node48,
                shape.node256,
                shape.leaves,
                shape.inline_values
            );
            println!(
                "  depth histogram (entries by inner nodes above): {:?}",
                shape.depth_histogram
            );
        }
    }
    db.close()?;
    Ok(())
}
