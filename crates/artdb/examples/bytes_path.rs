//! A bytes-table workload for instruction-count A/B runs between two commits (callgrind): a
//! write batch of N keys, a point get of each, a range scan of all and N/10 one-key
//! transactions, on a database in the directory given (default `/tmp/bp`, replaced).
//!
//! `bytes_path [N] [DIR]`; docs/benchmarks.md ("Typed tables and the bytes path") uses it.
use artdb::{Db, Durability, Options, WriteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(50_000);
    let dir = std::env::args().nth(2).unwrap_or_else(|| "/tmp/bp".into());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let path = std::path::Path::new(&dir).join("bp.artdb");
    let db = Db::open_or_create(&path, Options::default())?;
    db.create_table_if_missing("t")?;
    let key = |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
    let mut batch = db.write()?;
    for i in 0..n {
        batch.insert("t", &key(i), &i.to_le_bytes())?;
    }
    batch.commit()?;
    let read = db.read();
    let t = read.table("t")?;
    let mut sum = 0u64;
    for i in 0..n {
        let v = t.get(&key(i))?.expect("present");
        sum += u64::from_le_bytes(v.try_into()?);
    }
    let mut count = 0u64;
    for pair in t.range(&[0u8; 8][..]..) {
        let (_k, v) = pair?;
        count += v.len() as u64;
    }
    drop(read);
    for i in 0..(n / 10) {
        let mut txn = db.begin_write(WriteOptions::default().durability(Durability::NoSync))?;
        txn.insert("t", &key(i), &(i + 1).to_le_bytes())?;
        txn.commit()?;
    }
    println!("sum {sum} bytes {count}");
    db.close()?;
    Ok(())
}
