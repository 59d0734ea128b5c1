//! Times W2's `insert_txn`: one write batch of N sequential 4-byte keys with 7-byte values,
//! committed (a batch that big bypasses the log: its commit is a checkpoint). Prints the insert
//! loop and the commit separately:
//! `cargo run --release -p artdb --example insert_batch_profile -- N DIR`.
use std::time::Instant;

#[path = "common/w2.rs"]
mod w2;
use w2::{fresh_db, key, row_id};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(Ok(10_000_000), |s| s.parse())?;
    let dir = args.next().unwrap_or_else(|| ".".to_string());
    let (db, path) = fresh_db(&dir, "insert-batch.artdb")?;
    let start = Instant::now();
    let mut batch = db.write()?;
    for i in 0..n {
        batch.insert("t", &key(i), &row_id(i))?;
    }
    let inserted = start.elapsed().as_secs_f64();
    batch.commit()?;
    let total = start.elapsed().as_secs_f64();
    println!(
        "inserts {inserted:.3} s, commit {:.3} s, total {total:.3} s",
        total - inserted
    );
    db.close()?;
    w2::remove_db(&path);
    Ok(())
}
