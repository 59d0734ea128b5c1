//! W2's hot lookups (5,000 keys spaced N/5,000 apart, every value checked), on the persisted
//! tree through `Db` and on the same tree built in the heap, repeated for profiling:
//! `cargo run --release -p artdb --example w2_hot_profile -- N DIR PASSES [grouped|memstore|membulk|memfile|dependent|cold|count|refault|drift]`.
//!
//! Layout comparisons (the persisted side is `Table::get`, the second side a point reader):
//! `memstore` puts the second side's tree, persisted by `Tree::persist`, in a `MemoryNodeStore`
//! (a heap vector), `membulk` the same by `Tree::bulk_persist`; `memfile` bulk-loads the
//! persisted side into an in-memory database file (`MemoryStorage`: the engine's page layout in
//! anonymous memory) instead of the file on disk; `paged<P>/<H>` (e.g. `paged15/24`, the
//! engine's page size and page header) bulk-persists the second side into pages of 2^P bytes
//! whose first H bytes hold no image, in a heap vector.
//!
//! Instructions per lookup (callgrind, this VM has no hardware counters): the `count` mode runs
//! one warm-up pass of each side, then PASSES passes of each side in the functions
//! `measured_persisted` and `measured_heap` (not inlined), so
//! `valgrind --tool=callgrind --toggle-collect='*measured_persisted*' w2_hot_profile N DIR 4 count`
//! (or `*measured_heap*`) counts exactly one side's lookups (5,000 per pass, plus the loop's
//! few instructions per lookup).
use std::time::Instant;

use artdb::{Db, Options};

#[path = "common/w2.rs"]
mod w2;
use w2::{fresh_db, key, row_id};

/// One pass of lookups of `keys` through `get`: the seconds it took and the wrong values. With
/// `dependent`, each key waits for the previous lookup's value (it adds 0 to the key, through a
/// data dependency the core cannot skip), so lookups cannot overlap their misses.
fn timed_pass<'a>(
    keys: &[u64],
    dependent: bool,
    mut get: impl FnMut(&[u8]) -> Result<Option<&'a [u8]>, Box<dyn std::error::Error>>,
) -> Result<(f64, u64), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let (mut carry, mut bad) = (0u64, 0u64);
    for &k in keys {
        let k = k + carry;
        let value = get(&key(k))?;
        if value != Some(&row_id(k)[..]) {
            bad += 1;
        }
        carry = match (dependent, value) {
            (false, _) => 0,
            (true, value) => value.map_or(1, |v| u64::from(v.len() != 7)),
        };
    }
    Ok((start.elapsed().as_secs_f64(), bad))
}

/// Minor and major page faults of this process so far (`/proc/self/stat` fields 10 and 12;
/// `None` where unreadable).
fn fault_counts() -> (Option<u64>, Option<u64>) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let field = |i: usize| fields.get(i).and_then(|v| v.parse().ok());
    (field(7), field(9))
}

/// [`fault_counts`] as a line of text.
fn faults() -> String {
    let shown = |count: Option<u64>| count.map_or("?".to_string(), |c| c.to_string());
    let (minor, major) = fault_counts();
    format!(
        "faults so far: minor {}, major {}",
        shown(minor),
        shown(major)
    )
}

/// Minor page faults of this process so far (0 where unreadable).
fn minor_faults() -> u64 {
    fault_counts().0.unwrap_or(0)
}

/// The memory-management counters of `/proc/vmstat` that the `refault` mode reports.
fn vmstat() -> Vec<(String, u64)> {
    let text = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
    text.lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(name, _)| {
            [
                "compact_",
                "pgmigrate",
                "thp_",
                "numa_hint",
                "pgsteal",
                "workingset",
            ]
            .iter()
            .any(|p| name.starts_with(p))
        })
        .filter_map(|(name, value)| Some((name.to_string(), value.parse().ok()?)))
        .collect()
}

/// PASSES passes of lookups of `keys` through the persisted table (the `count` mode); the wrong
/// values.
#[inline(never)]
fn measured_persisted(table: &artdb::Table<'_>, keys: &[u64], passes: usize) -> u64 {
    let mut bad = 0;
    for _ in 0..passes {
        for &k in keys {
            if !matches!(table.get(&key(k)), Ok(Some(v)) if v == row_id(k)) {
                bad += 1;
            }
        }
    }
    bad
}

/// The same through the heap tree.
#[inline(never)]
fn measured_heap(tree: &artdb_art::Tree, keys: &[u64], passes: usize) -> u64 {
    let mut bad = 0;
    for _ in 0..passes {
        for &k in keys {
            if !matches!(tree.get(&key(k)), Ok(Some(v)) if v == row_id(k)) {
                bad += 1;
            }
        }
    }
    bad
}

/// `paged<P>/<H>`'s store: images packed into pages of `1 << page_shift` bytes whose first
/// `header` bytes hold none (an image longer than a page's room goes on across pages), in a heap
/// vector, every page verified.
struct PagedSink {
    bytes: Vec<u8>,
    page_shift: u32,
    header: u64,
    verified: Vec<std::sync::atomic::AtomicU64>,
}

impl artdb_art::NodeSink for PagedSink {
    fn write(&mut self, image: &[u8], _max: Option<u64>) -> Result<u64, artdb_art::Error> {
        let page = 1usize << self.page_shift;
        let mut at = self.bytes.len().next_multiple_of(8);
        if at / page != (at + image.len() - 1) / page && image.len() <= page - self.header as usize
        {
            at = (at / page + 1) * page + self.header as usize;
        }
        self.bytes.resize(at, 0);
        self.bytes.extend_from_slice(image);
        Ok(at as u64)
    }
}

impl artdb_art::NodeSource for PagedSink {
    fn node_image(&self, offset: u64) -> Result<&[u8], artdb_art::Error> {
        usize::try_from(offset)
            .ok()
            .and_then(|at| self.bytes.get(at..))
            .ok_or_else(|| artdb_art::Error::Persisted {
                offset,
                reason: "offset past the end".to_string(),
            })
    }
    fn quick_region(&self) -> Option<artdb_art::QuickRegion<'_>> {
        Some(artdb_art::QuickRegion::new(
            &self.bytes,
            &self.verified,
            self.page_shift,
            self.header,
        ))
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(Ok(10_000_000), |s| s.parse())?;
    let dir = args.next().unwrap_or_else(|| ".".to_string());
    let passes: usize = args.next().map_or(Ok(100), |s| s.parse())?;
    let (db, path) = fresh_db(&dir, "w2-hot.artdb")?;
    db.bulk_load("t", (0..n).map(|i| (key(i), row_id(i))))?;
    db.close()?;
    let keys: Vec<u64> = (0..5000u64).map(|i| i * (n / 5000)).collect();
    let mode = args.next().unwrap_or_default();
    // `cold`: evicts the file first and prints the time of each of the first passes (cold, then
    // the passes after it), as W2's harness sees them.
    if mode == "cold" {
        artdb::io::evict_from_page_cache(&path)?;
    }
    // `refault`: PASSES cycles of evicting the file, opening it, one pass to fault it back in
    // and 21 timed passes (their median printed), in this one process: whether the hot figure
    // changes from cycle to cycle, when only the page cache's memory under the same file changes.
    if mode == "refault" {
        for cycle in 0..passes {
            artdb::io::evict_from_page_cache(&path)?;
            let db = Db::open(&path, Options::default())?;
            let read = db.read();
            let table = read.table("t")?;
            timed_pass(&keys, false, |k| Ok(table.get(k)?))?;
            // Odd cycles spin the core for 100 ms first, touching none of the tree's memory:
            // whether the first passes after the faults are slow for the core's sake (a clock
            // or a host scheduler that has not caught up after the wait for the disk) or for
            // the memory's.
            if cycle % 2 == 1 {
                let start = Instant::now();
                let mut x = 0u64;
                while start.elapsed().as_millis() < 100 {
                    for i in 0..1000u64 {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                    }
                }
            }
            let mut times = Vec::new();
            let mut each = String::new();
            let before = vmstat();
            for _ in 0..21 {
                let faults_before = minor_faults();
                let (seconds, bad) = timed_pass(&keys, false, |k| Ok(table.get(k)?))?;
                if bad != 0 {
                    return Err("wrong value".into());
                }
                let ns = seconds * 1e9 / keys.len() as f64;
                each += &format!(" {ns:.0}/{}", minor_faults() - faults_before);
                times.push(ns);
            }
            let after = vmstat();
            let moved: Vec<String> = after
                .iter()
                .filter_map(|(name, value)| {
                    let old = before
                        .iter()
                        .find(|(n, _)| n == name)
                        .map_or(0, |(_, v)| *v);
                    (*value != old).then(|| format!("{name} {:+}", *value as i64 - old as i64))
                })
                .collect();
            times.sort_by(f64::total_cmp);
            println!(
                "cycle {cycle}: hot median {:.1} ns; passes (ns/faults):{each}; vmstat: {}",
                times[10],
                moved.join(", ")
            );
            drop(read);
            db.close()?;
        }
        w2::remove_db(&path);
        return Ok(());
    }
    // `drift`: PASSES passes over the persisted table right after open, printing every 25th
    // pass's time: whether passes get slower or faster as they repeat.
    if mode == "drift" {
        let db = Db::open(&path, Options::default())?;
        let read = db.read();
        let table = read.table("t")?;
        let mut line = String::new();
        for pass in 0..passes {
            let (seconds, bad) = timed_pass(&keys, false, |k| Ok(table.get(k)?))?;
            if bad != 0 {
                return Err("wrong value".into());
            }
            if pass % 25 == 0 {
                line += &format!(" {:.1}", seconds * 1e9 / keys.len() as f64);
            }
        }
        println!("drift (ns per lookup, every 25th pass):{line}");
        drop(read);
        db.close()?;
        w2::remove_db(&path);
        return Ok(());
    }
    let db = Db::open(&path, Options::default())?;
    if mode == "cold" {
        let read = db.read();
        let table = read.table("t")?;
        for pass in 0..6 {
            let (seconds, bad) = timed_pass(&keys, false, |k| Ok(table.get(k)?))?;
            if bad != 0 {
                return Err("wrong value".into());
            }
            let ns = seconds * 1e9 / keys.len() as f64;
            println!("pass {pass}: {ns:.1} ns per lookup; {}", faults());
        }
    }
    // `memfile`: the persisted side is the same bulk load into an in-memory file
    // (`MemoryStorage`, anonymous memory) instead of the file on disk: the same layout and
    // code, another kind of mapping.
    let db = if mode == "memfile" {
        let storage = std::sync::Arc::new(artdb::io::MemoryStorage::new()?);
        let mem = Db::create_in(storage, Options::default())?;
        mem.create_table("t")?;
        mem.bulk_load("t", (0..n).map(|i| (key(i), row_id(i))))?;
        db.close()?;
        mem
    } else {
        db
    };
    let read = db.read();
    let table = read.table("t")?;
    let mut tree = artdb_art::Tree::bulk_build((0..n).map(|i| (key(i), row_id(i))))?;
    // `memstore` / `membulk`: the second side is the tree persisted into a `MemoryNodeStore`
    // (images in a heap vector, read through the persisted path), instead of the heap tree.
    if mode == "memstore" {
        let mut store = artdb_art::MemoryNodeStore::new();
        let root = tree.persist(&mut store)?;
        tree = artdb_art::Tree::open(root, n, std::sync::Arc::new(store))?;
    }
    if mode == "membulk" {
        let mut store = artdb_art::MemoryNodeStore::new();
        let (root, len) =
            artdb_art::Tree::bulk_persist((0..n).map(|i| (key(i), row_id(i))), &mut store)?;
        tree = artdb_art::Tree::open(root, len, std::sync::Arc::new(store))?;
    }
    if let Some(spec) = mode.strip_prefix("paged") {
        // `paged<P>/<H>` (experiment): images packed into pages of 2^P bytes whose first H bytes
        // hold none, none straddling a page, in a heap vector.
        let (p, h) = spec.split_once('/').ok_or("paged<P>/<H>")?;
        let (p, h): (u32, u64) = (p.parse()?, h.parse()?);
        let mut sink = PagedSink {
            bytes: vec![0; 1 << p],
            page_shift: p,
            header: h,
            verified: Vec::new(),
        };
        sink.bytes.resize(h as usize, 0);
        let (root, len) =
            artdb_art::Tree::bulk_persist((0..n).map(|i| (key(i), row_id(i))), &mut sink)?;
        sink.verified = (0..(sink.bytes.len() >> p) / 64 + 1)
            .map(|_| std::sync::atomic::AtomicU64::new(u64::MAX))
            .collect();
        tree = artdb_art::Tree::open(root, len, std::sync::Arc::new(sink))?;
    }
    if mode == "count" {
        // The warm-up (first use of each page: its checksum) is not counted.
        let (_, warm_persisted) = timed_pass(&keys, false, |k| Ok(table.get(k)?))?;
        let (_, warm_heap) = timed_pass(&keys, false, |k| Ok(tree.get(k)?))?;
        let bad = warm_persisted
            + warm_heap
            + measured_persisted(&table, &keys, passes)
            + measured_heap(&tree, &keys, passes);
        println!(
            "count: {} lookups per side (bad {bad})",
            passes * keys.len()
        );
        if bad != 0 {
            return Err("wrong value".into());
        }
        drop(read);
        db.close()?;
        w2::remove_db(&path);
        return Ok(());
    }
    // `dependent`: each key waits for the previous lookup's value (adds 0 to it, through a
    // data dependency the core cannot skip), so lookups cannot overlap their misses; the
    // independent default lets the core run ahead into the next lookup.
    let dependent = mode == "dependent";
    let mut bad = 0u64;
    // Passes alternate between the two, so both see the same machine; medians of the passes.
    let (mut persisted, mut heap) = (Vec::new(), Vec::new());
    // `grouped` (4th argument) runs every persisted pass first, then every heap pass, so neither
    // side's working set (cache lines, TLB entries) is evicted by the other's between passes.
    let grouped = mode == "grouped";
    // `memstore` reads the second side through a point reader, as `Table::get` reads the file:
    // the same code over images in heap memory.
    let snapshot = tree.snapshot();
    let reader = snapshot.point_reader();
    let memstore = mode == "memstore" || mode == "membulk" || mode.starts_with("paged");
    for pass in 0..=passes {
        if !grouped || pass == 0 {
            for pass in pass..if grouped { passes + 1 } else { pass + 1 } {
                let (elapsed, wrong) = timed_pass(&keys, dependent, |k| Ok(table.get(k)?))?;
                bad += wrong;
                if pass == 0 {
                    println!("persisted first pass: {:.3} ms", elapsed * 1e3);
                } else {
                    persisted.push(elapsed);
                }
            }
        }
        let (elapsed, wrong) = if memstore {
            timed_pass(&keys, dependent, |k| Ok(reader.get(k)?))?
        } else {
            timed_pass(&keys, dependent, |k| Ok(tree.get(k)?))?
        };
        bad += wrong;
        heap.push(elapsed);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] / keys.len() as f64 * 1e9
    };
    let (p, h) = (median(&mut persisted), median(&mut heap));
    let smaps = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    for line in smaps
        .lines()
        .filter(|l| l.contains("Pmd") || l.contains("AnonHuge"))
    {
        println!("{line}");
    }
    println!(
        "per lookup (median pass): persisted {p:.1} ns, heap {h:.1} ns, ratio {:.2} (bad {bad})",
        p / h
    );
    drop(read);
    db.close()?;
    w2::remove_db(&path);
    Ok(())
}
