//! Hot point lookups of random 8-byte keys in a table read from its file, beside the same keys
//! in a heap tree, side by side in one process: `Db::bulk_load` of N random keys (8-byte values),
//! close and open, `Tree::bulk_build` of the same pairs, then rounds that alternate a pass of
//! each over the same shuffled sample of the keys (the order swapped every round), every value
//! checked. Prints each round's ns per lookup and the median of the rounds' ratios (file / heap).
//! W2 measures this with dense keys (dense packs); here every lookup ends in an ordinary pack.
//!
//! Usage: `cargo run --release -p artdb --example random_hot -- N DIR [ROUNDS]`; instructions
//! per lookup: `valgrind --tool=callgrind --toggle-collect='*file_pass*' ... N DIR 1` (or
//! `*heap_pass*`; each side runs 1 + ROUNDS passes of N / 7 lookups).

use std::time::Instant;

use artdb::{Db, Options};

#[path = "../../artdb-art/examples/common/splitmix.rs"]
mod common;
use common::splitmix;

/// A pass through the file's table (not inlined: `--toggle-collect=*file_pass*` counts it).
#[inline(never)]
fn file_pass(probe: &[([u8; 8], [u8; 8])], table: &artdb::Table<'_>) -> f64 {
    pass(probe, |k| table.get(k).ok().flatten())
}

/// A pass through the heap tree (`--toggle-collect=*heap_pass*`).
#[inline(never)]
fn heap_pass(probe: &[([u8; 8], [u8; 8])], tree: &artdb_art::Tree) -> f64 {
    pass(probe, |k| tree.get(k).ok().flatten())
}

/// One pass of `get_many` calls of 32 keys each: ns per key; panics on a wrong value.
#[inline(never)]
fn many_pass<'a>(
    probe: &[([u8; 8], [u8; 8])],
    mut get_many: impl FnMut(&[&[u8]], &mut Vec<Option<&'a [u8]>>) -> bool,
    out: &mut Vec<Option<&'a [u8]>>,
) -> f64 {
    let start = Instant::now();
    let mut bad = 0usize;
    // The keys of a call, on the stack: no allocation inside the timed loop.
    let mut keys: [&[u8]; 32] = [&[]; 32];
    for chunk in probe.chunks(32) {
        for (key, (k, _)) in keys.iter_mut().zip(chunk) {
            *key = k;
        }
        out.clear();
        assert!(get_many(&keys[..chunk.len()], out), "get_many failed");
        for ((_, value), got) in chunk.iter().zip(out.iter()) {
            if *got != Some(&value[..]) {
                bad += 1;
            }
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / probe.len() as f64;
    assert_eq!(bad, 0, "wrong values");
    ns
}

/// One pass through `get`: ns per lookup; panics on a wrong value.
#[inline(always)]
fn pass<'a>(probe: &[([u8; 8], [u8; 8])], mut get: impl FnMut(&[u8]) -> Option<&'a [u8]>) -> f64 {
    let start = Instant::now();
    let mut bad = 0usize;
    for (key, value) in probe {
        if get(key) != Some(&value[..]) {
            bad += 1;
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / probe.len() as f64;
    assert_eq!(bad, 0, "wrong values");
    ns
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(Ok(10_000_000), |s| s.parse())?;
    let dir = args.next().unwrap_or_else(|| ".".to_string());
    let rounds: usize = args.next().map_or(Ok(9), |s| s.parse())?;
    let mut pairs: Vec<([u8; 8], [u8; 8])> = (0..n)
        .map(|i| (splitmix(i).to_be_bytes(), i.to_le_bytes()))
        .collect();
    let mut probe: Vec<([u8; 8], [u8; 8])> = pairs.iter().step_by(7).copied().collect();
    for i in (1..probe.len()).rev() {
        let j = (splitmix(i as u64 ^ 0x5555) % (i as u64 + 1)) as usize;
        probe.swap(i, j);
    }
    pairs.sort_unstable();
    pairs.dedup_by(|a, b| a.0 == b.0);
    let path = std::path::Path::new(&dir).join("random-hot.artdb");
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("artdb.wal"));
    let db = Db::create(&path, Options::default())?;
    db.create_table("t")?;
    db.bulk_load("t", pairs.iter().map(|(k, v)| (k, v)))?;
    db.close()?;
    let heap = artdb_art::Tree::bulk_build(pairs.iter().map(|(k, v)| (k, v)))?;
    drop(pairs);
    let db = Db::open(&path, Options::default())?;
    let read = db.read();
    let table = read.table("t")?;
    println!("n={n} lookups per pass={}", probe.len());
    file_pass(&probe, &table);
    heap_pass(&probe, &heap);
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let (file, mem) = if round % 2 == 0 {
            let file = file_pass(&probe, &table);
            (file, heap_pass(&probe, &heap))
        } else {
            let mem = heap_pass(&probe, &heap);
            (file_pass(&probe, &table), mem)
        };
        println!(
            "round {}: file {file:.1} ns, heap {mem:.1} ns, ratio {:.2}",
            round + 1,
            file / mem
        );
        ratios.push(file / mem);
    }
    ratios.sort_by(f64::total_cmp);
    println!("median file / heap: {:.2}x", ratios[ratios.len() / 2]);
    // `get_many` (32 keys per call) on each side, against the same side's `get`.
    let mut batch = Vec::new();
    for round in 0..3 {
        let file_many = many_pass(
            &probe,
            |keys, out| table.get_many(keys, out).is_ok(),
            &mut batch,
        );
        let heap_many = many_pass(
            &probe,
            |keys, out| heap.get_many(keys, out).is_ok(),
            &mut batch,
        );
        let file_one = file_pass(&probe, &table);
        let heap_one = heap_pass(&probe, &heap);
        println!(
            "get_many round {}: file {file_many:.1} ns ({:.2}x its get), heap {heap_many:.1} ns ({:.2}x its get)",
            round + 1,
            file_one / file_many,
            heap_one / heap_many
        );
    }
    drop(read);
    db.close()?;
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("artdb.wal"));
    Ok(())
}
