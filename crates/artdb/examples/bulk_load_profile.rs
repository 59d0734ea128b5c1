//! Times `Db::bulk_load` of W2's keys (N sequential big-endian u32 keys, 7-byte row ids), and
//! the tree's `bulk_persist` into an in-memory sink, for profiling the bulk load path:
//! `cargo run --release -p artdb --example bulk_load_profile -- N DIR`.
use std::time::Instant;

#[path = "common/w2.rs"]
mod w2;
use w2::{fresh_db, key, row_id};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(Ok(10_000_000), |s| s.parse())?;
    let dir = args.next().unwrap_or_else(|| ".".to_string());
    let mode = args.next().unwrap_or_else(|| "both".to_string());
    if mode != "load" {
        let start = Instant::now();
        let tree = artdb_art::Tree::bulk_build((0..n).map(|i| (key(i), row_id(i))))?;
        println!("bulk_build (heap): {:.3} s", start.elapsed().as_secs_f64());
        drop(tree);
    }
    if mode == "heap" {
        return Ok(());
    }
    let (db, path) = fresh_db(&dir, "bulk-profile.artdb")?;
    let start = Instant::now();
    db.bulk_load("t", (0..n).map(|i| (key(i), row_id(i))))?;
    println!("bulk_load: {:.3} s", start.elapsed().as_secs_f64());
    db.close()?;
    println!("file: {} bytes", std::fs::metadata(&path)?.len());
    w2::remove_db(&path);
    Ok(())
}
