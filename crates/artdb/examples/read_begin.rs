//! Snapshot begin, one get and end, in a loop on 1 and 2 threads: what a read costs when every
//! read takes its own snapshot (the C API's and Go's `DB.Get`).
//!
//! `read_begin [KEYS] [SECONDS] [DIR]`
use artdb::{Db, Options};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let keys: u64 = args.next().map_or(Ok(100_000), |s| s.parse())?;
    let seconds: f64 = args.next().map_or(Ok(2.0), |s| s.parse())?;
    let dir = args.next().unwrap_or_else(|| "/tmp/read-begin".into());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let db = Arc::new(Db::open_or_create(
        std::path::Path::new(&dir).join("rb.artdb"),
        Options::default(),
    )?);
    db.create_table_if_missing("t")?;
    let key = |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
    let mut batch = db.write()?;
    for i in 0..keys {
        batch.insert("t", &key(i), &i.to_le_bytes())?;
    }
    batch.commit()?;
    for threads in [1u64, 2] {
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let db = Arc::clone(&db);
                std::thread::spawn(move || -> artdb::Result<u64> {
                    let mut done = 0u64;
                    let mut i = t;
                    while Instant::now() < deadline {
                        for _ in 0..1000 {
                            let read = db.read();
                            let table = read.table("t")?;
                            let value = table.get(&key(i % keys))?;
                            assert!(value.is_some());
                            i = i.wrapping_add(7919);
                            done += 1;
                        }
                    }
                    Ok(done)
                })
            })
            .collect();
        let mut total = 0;
        for handle in handles {
            total += handle.join().expect("reader thread")?;
        }
        println!(
            "{threads} thread(s): {:.0} snapshot+get+end per second",
            total as f64 / seconds
        );
    }
    Ok(())
}
