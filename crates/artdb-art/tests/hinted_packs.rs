//! Heap lookups in hinted packs (`lookup::heap::step`'s hinted arm, `node::probe_hinted`, session
//! 12) and dense runs across their burst at the 65th key (`write::pack::full_run_bursts`),
//! against a `BTreeMap` model.
//!
//! `probe_hinted` takes a pack's layout (capacity, record stride) from its word and the suffix
//! width from the key, checks the pack's header against them, and hands a lookup it cannot
//! answer (a fence window without both edges of the run, a run of more than four records, a
//! last record whose 8-byte load would pass the image) to the general probe. The trees here
//! have packs of every suffix width it takes (2..=9) and others (1, 10, 13, 24), of value widths
//! 0..=16 and wide ones (17, 40), of a few to ~1000 entries (windows of 32 and 64 fence bytes,
//! and packs smaller than a window), whose first suffix bytes are spread evenly, at random,
//! skewed (the count guess places the window wrong) or clustered (long runs); they start empty,
//! bulk built (full packs, no spare slot), slice built or persisted. Inserts, removals,
//! re-inserts, replacements, `set`, `insert_if_absent` (which, like `remove`, looks the key up
//! first) and writes of other widths (bursts) are interleaved with lookups (`get` and
//! `get_many`) of present keys and absent ones beside them (the last byte changed, the first
//! suffix byte changed, one byte shorter, one byte longer); snapshots taken between the writes
//! read their own version after later ones; and `verify`, which checks that every hinted word's
//! hint describes its pack (capacity, stride, full bit), runs at every stage. Deterministic
//! (xorshift seeds); `ARTDB_TEST_SCALE` runs more seeds.

mod common;
use common::{contents, scale, start_tree, Model, Rng, Start};

use artdb_art::{pack_capacity_max_for, MemoryNodeStore, Snapshot, Tree, Violation};

/// How the first bytes of a group's suffixes spread over 0..=255.
#[derive(Clone, Copy, Debug)]
enum Spread {
    /// Evenly: the count guess places the fence window right.
    Even,
    /// Uniformly at random.
    Random,
    /// Squared (most first bytes low): the window placed from the count guess often misses.
    Skewed,
    /// Three first bytes only: runs far longer than four records.
    Clustered,
}

const SPREADS: [Spread; 4] = [
    Spread::Even,
    Spread::Random,
    Spread::Skewed,
    Spread::Clustered,
];

const STARTS: [Start; 4] = [
    Start::Inserted,
    Start::BulkBuilt,
    Start::SliceBuilt,
    Start::BulkPersisted,
];

/// Up to `n` distinct suffixes of `width` bytes spread as `spread` says (fewer when the spread
/// cannot make `n`, as three first bytes of one-byte suffixes).
fn suffixes(rng: &mut Rng, spread: Spread, width: usize, n: usize) -> Vec<Vec<u8>> {
    let mut set = std::collections::BTreeSet::new();
    let mut tries = 0;
    while set.len() < n && tries < 20 * n {
        tries += 1;
        let mut suffix: Vec<u8> = (0..width).map(|_| rng.next() as u8).collect();
        match spread {
            Spread::Even => {
                // The i-th of n at i / n of the range (its first two bytes), the rest random.
                let at = (set.len() * 65_536 / n) as u16;
                let [high, low] = at.to_be_bytes();
                suffix[0] = high;
                if let Some(second) = suffix.get_mut(1) {
                    *second = low;
                }
            }
            Spread::Random => {}
            Spread::Skewed => {
                let r = usize::from(suffix[0]);
                suffix[0] = (r * r / 255) as u8;
            }
            Spread::Clustered => suffix[0] = 0x40 + (rng.next() % 3) as u8,
        }
        set.insert(suffix);
    }
    set.into_iter().collect()
}

/// The value of `key` at write `generation`, `width` bytes.
fn value(key: &[u8], generation: u64, width: usize) -> Vec<u8> {
    let mut h = 0xCBF2_9CE4_8422_2325u64 ^ generation.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    (0..width)
        .map(|j| (h.rotate_left(8 * j as u32) as u8) ^ j as u8)
        .collect()
}

/// Keys beside `key` that a lookup should find absent unless the model has them: its last byte
/// changed two ways, the byte at `at` (the first suffix byte of its pack) changed, one byte
/// shorter, one byte longer.
fn probes(key: &[u8], at: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(5);
    if let Some(&last) = key.last() {
        for changed in [last ^ 1, last.wrapping_add(1)] {
            let mut k = key.to_vec();
            *k.last_mut().unwrap() = changed;
            out.push(k);
        }
        out.push(key[..key.len() - 1].to_vec());
    }
    if at < key.len() {
        let mut k = key.to_vec();
        k[at] = k[at].wrapping_add(1);
        out.push(k);
    }
    let mut longer = key.to_vec();
    longer.push(0x5C);
    out.push(longer);
    out
}

/// A version to check: the tree or a snapshot of it.
trait Version {
    fn get(&self, key: &[u8]) -> Option<&[u8]>;
    fn get_many<'a>(&'a self, keys: &[&[u8]], out: &mut Vec<Option<&'a [u8]>>);
    fn pairs(&self) -> Model;
    fn check(&self) -> Result<(), Vec<Violation>>;
}

impl Version for Tree {
    fn get(&self, key: &[u8]) -> Option<&[u8]> {
        Tree::get(self, key).unwrap()
    }
    fn get_many<'a>(&'a self, keys: &[&[u8]], out: &mut Vec<Option<&'a [u8]>>) {
        Tree::get_many(self, keys, out).unwrap()
    }
    fn pairs(&self) -> Model {
        contents(self.iter())
    }
    fn check(&self) -> Result<(), Vec<Violation>> {
        self.verify()
    }
}

impl Version for Snapshot {
    fn get(&self, key: &[u8]) -> Option<&[u8]> {
        Snapshot::get(self, key).unwrap()
    }
    fn get_many<'a>(&'a self, keys: &[&[u8]], out: &mut Vec<Option<&'a [u8]>>) {
        Snapshot::get_many(self, keys, out).unwrap()
    }
    fn pairs(&self) -> Model {
        contents(self.iter())
    }
    fn check(&self) -> Result<(), Vec<Violation>> {
        self.verify()
    }
}

/// One lookup against the model.
fn check_get(version: &impl Version, model: &Model, key: &[u8], context: &str) {
    assert_eq!(
        version.get(key),
        model.get(key).map(Vec::as_slice),
        "{context}: key {key:02x?}"
    );
}

/// Every model key and the probes beside it (`at`: the index of each key's first pack suffix
/// byte) by `get` and by `get_many`, the contents, and `verify`.
fn check_all(version: &impl Version, model: &Model, at: usize, context: &str) {
    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(model.len() * 6);
    for (key, value) in model {
        assert_eq!(
            version.get(key),
            Some(value.as_slice()),
            "{context}: present key {key:02x?}"
        );
        keys.push(key.clone());
        for probe in probes(key, at) {
            check_get(version, model, &probe, context);
            keys.push(probe);
        }
    }
    let mut out = Vec::new();
    for chunk in keys.chunks(97) {
        let refs: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
        version.get_many(&refs, &mut out);
        for (key, got) in chunk.iter().zip(&out) {
            assert_eq!(
                *got,
                model.get(key).map(Vec::as_slice),
                "{context}: get_many {key:02x?}"
            );
        }
    }
    assert_eq!(version.pairs(), *model, "{context}: contents");
    assert_eq!(version.check(), Ok(()), "{context}: verify");
}

/// A tree of groups of fixed-width keys, each group one pack (or several, past a pack's
/// capacity) of `suffix_width`-byte suffixes at `depth`.
struct Case {
    suffix_width: usize,
    value_width: usize,
    /// Key bytes above the packs: `depth - 1` shared bytes (an inner node's prefix), then the
    /// group's byte.
    depth: usize,
    groups: Vec<(Spread, usize)>,
    start: Start,
    seed: u64,
}

impl Case {
    /// Suffix widths 2..=9 get a mid-sized group (60..=259 entries: capacity at most 256, a
    /// 32-byte fence window), a large one (300..=999 entries, at most nine tenths of the
    /// pack's capacity bound: a 64-byte window) and a small one (3..=32: smaller than a
    /// window); other widths the same sizes, halved.
    fn new(suffix_width: usize, value_width: usize, seed: u64) -> Case {
        let mut rng = Rng(seed);
        let cap = pack_capacity_max_for(suffix_width, value_width);
        let shrink = if (2..=9).contains(&suffix_width) && value_width <= 16 {
            1
        } else {
            2
        };
        let spread = |k: usize| SPREADS[(suffix_width + value_width + k) % 4];
        let groups = vec![
            (spread(0), (60 + rng.below(200)) / shrink),
            (spread(1), (300 + rng.below(700)).min(cap * 9 / 10) / shrink),
            (spread(2), 3 + rng.below(30)),
        ];
        Case {
            suffix_width,
            value_width,
            depth: 1 + (suffix_width + value_width) % 3,
            groups,
            start: STARTS[(suffix_width * 3 + value_width) % 4],
            seed,
        }
    }

    fn head(&self, group: usize) -> Vec<u8> {
        let mut head = vec![0x7F; self.depth - 1];
        head.push(0x20 + 3 * group as u8);
        head
    }

    fn run(&self) {
        let mut rng = Rng(self.seed ^ 0xA5A5_5A5A_0F0F_F0F0);
        let (width, vw, at) = (self.suffix_width, self.value_width, self.depth);
        let context = format!(
            "suffix width {width}, value width {vw}, depth {at}, groups {:?}, {:?}, seed {:#x} \
             (ARTDB_TEST_SEED={})",
            self.groups,
            self.start,
            self.seed,
            base_seed()
        );
        let mut pool: Vec<Vec<u8>> = Vec::new();
        for (group, &(spread, n)) in self.groups.iter().enumerate() {
            for suffix in suffixes(&mut rng, spread, width, n) {
                let mut key = self.head(group);
                key.extend_from_slice(&suffix);
                pool.push(key);
            }
        }
        rng.shuffle(&mut pool);
        let preset = match self.start {
            Start::Inserted => 0,
            _ => pool.len() / 2,
        };
        let mut model: Model = pool[..preset]
            .iter()
            .map(|k| (k.clone(), value(k, 0, vw)))
            .collect();
        // The groups' shared bytes as a key of their own: the groups then hang from an inner
        // node (its value slot holds this key) instead of sharing one pack of wider suffixes,
        // so each group is a pack of `width`-byte suffixes (or, past a pack's capacity bound,
        // an inner node of packs one byte narrower). Never removed.
        let divider = self.head(0)[..at - 1].to_vec();
        model.insert(divider.clone(), value(&divider, 0, vw));
        let mut store = MemoryNodeStore::new();
        let mut tree = start_tree(self.start, &model, &mut store);
        check_all(&tree, &model, at, &format!("{context}, started"));

        // Fill: one key at a time, each read back with a neighbour; everything three times.
        let rest = pool.len() - preset;
        let every = rest / 3 + 1;
        for (i, key) in pool[preset..].iter().enumerate() {
            let v = value(key, 0, vw);
            assert_eq!(tree.insert(key, &v).unwrap(), None, "{context}: fill");
            model.insert(key.clone(), v);
            check_get(&tree, &model, key, &context);
            let beside = probes(key, at);
            check_get(&tree, &model, &beside[i % beside.len()], &context);
            if (i + 1) % every == 0 {
                check_all(&tree, &model, at, &format!("{context}, fill {i}"));
            }
        }
        if width >= 2 {
            let stats = tree.stats();
            assert!(
                stats.packs >= self.groups.len() as u64,
                "{context}: {stats:?}"
            );
        }

        // Mixed writes and lookups, with snapshots between them.
        let ops = pool.len();
        let mut snapshots: Vec<(Snapshot, Model, usize)> = Vec::new();
        for step in 0..ops {
            let key = pool[rng.below(pool.len())].clone();
            let generation = step as u64 + 1;
            let roll = rng.below(100);
            match roll {
                0..=27 => {
                    assert_eq!(
                        tree.remove(&key).unwrap(),
                        model.remove(&key),
                        "{context}: remove {key:02x?}"
                    );
                }
                28..=47 => {
                    let v = value(&key, generation, vw);
                    assert_eq!(
                        tree.insert(&key, &v).unwrap(),
                        model.insert(key.clone(), v),
                        "{context}: insert {key:02x?}"
                    );
                }
                48..=57 => {
                    let v = value(&key, generation, vw);
                    assert_eq!(
                        tree.set(&key, &v).unwrap(),
                        model.insert(key.clone(), v).is_some(),
                        "{context}: set {key:02x?}"
                    );
                }
                58..=67 => {
                    let v = value(&key, generation, vw);
                    let absent = !model.contains_key(&key);
                    assert_eq!(
                        tree.insert_if_absent(&key, &v).unwrap(),
                        absent,
                        "{context}: insert_if_absent {key:02x?}"
                    );
                    if absent {
                        model.insert(key.clone(), v);
                    }
                }
                68..=96 => {
                    for probe in probes(&key, at) {
                        check_get(&tree, &model, &probe, &context);
                    }
                }
                // Other widths, late in the run (the packs they hit burst into inner nodes):
                // a key one byte longer, or a value one byte wider or narrower.
                _ if step > ops / 2 => {
                    if roll % 2 == 0 {
                        let mut longer = key.clone();
                        longer.push(rng.next() as u8);
                        let v = value(&longer, generation, vw);
                        assert_eq!(
                            tree.insert(&longer, &v).unwrap(),
                            model.insert(longer.clone(), v),
                            "{context}: insert longer {longer:02x?}"
                        );
                        pool.push(longer);
                    } else {
                        let other = if vw == 0 { 1 } else { vw - 1 + 2 * (step % 2) };
                        let v = value(&key, generation, other);
                        assert_eq!(
                            tree.insert(&key, &v).unwrap(),
                            model.insert(key.clone(), v),
                            "{context}: insert {other}-byte value {key:02x?}"
                        );
                    }
                }
                _ => {}
            }
            check_get(&tree, &model, &key, &context);
            if step % (ops / 5 + 1) == 0 {
                if snapshots.len() == 2 {
                    let (snapshot, old, taken) = snapshots.remove(0);
                    check_all(
                        &snapshot,
                        &old,
                        at,
                        &format!("{context}, snapshot of step {taken} at step {step}"),
                    );
                }
                snapshots.push((tree.snapshot(), model.clone(), step));
            }
            if step % (ops / 4 + 1) == ops / 8 {
                check_all(&tree, &model, at, &format!("{context}, step {step}"));
            }
        }
        check_all(&tree, &model, at, &format!("{context}, mixed"));
        for (snapshot, old, taken) in &snapshots {
            check_all(
                snapshot,
                old,
                at,
                &format!("{context}, snapshot of step {taken} at the end"),
            );
        }
        snapshots.clear();

        // With no snapshot alive the writer changes older packs in place: remove and put back
        // a tenth of the keys.
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        for key in keys.iter().step_by(10) {
            assert_eq!(
                tree.remove(key).unwrap(),
                model.remove(key),
                "{context}: last remove"
            );
            check_get(&tree, &model, key, &context);
        }
        for key in keys.iter().step_by(20) {
            let v = value(key, u64::MAX, vw);
            assert_eq!(
                tree.insert(key, &v).unwrap(),
                model.insert(key.clone(), v),
                "{context}: last insert"
            );
        }
        check_all(&tree, &model, at, &format!("{context}, end"));
        assert_eq!(tree.len(), model.len() as u64, "{context}: len");
    }
}

/// The seed the cases' seeds derive from: `ARTDB_TEST_SEED` when set (a failure prints it).
fn base_seed() -> u64 {
    std::env::var("ARTDB_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1234_5678_9ABC_DEF1)
}

/// Each value width of `values` with each suffix width of `widths`, `scale()` seeds each.
fn run_widths(widths: std::ops::RangeInclusive<usize>, values: &[usize]) {
    let base = base_seed();
    for round in 0..u64::from(scale()) {
        for width in widths.clone() {
            for &vw in values {
                let seed = base ^ (round << 40) ^ (width as u64) << 8 ^ vw as u64;
                Case::new(width, vw, seed).run();
            }
        }
    }
}

const VALUE_WIDTHS: [usize; 17] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

#[test]
fn hinted_packs_suffix_widths_2_to_5() {
    run_widths(2..=5, &VALUE_WIDTHS);
}

#[test]
fn hinted_packs_suffix_widths_6_to_9() {
    run_widths(6..=9, &VALUE_WIDTHS);
}

/// Suffix widths the hinted probe does not take (one-byte suffixes carry no hint; 10 and more
/// bytes are handed on after the header check), and wide values (a wide pack's word is hinted,
/// its kind is not the hinted probe's).
#[test]
fn other_suffix_and_value_widths() {
    for width in [1usize, 10, 13, 24] {
        run_widths(width..=width, &[0, 1, 7, 8, 16, 17, 40]);
    }
    run_widths(2..=9, &[17, 40]);
}

/// The key of byte `b` of dense run `run`.
#[test]
/// A tree that is one pack, so its root word is the hinted word (the hinted probe's first step
/// of the walk, with no inner node above it), before and after removals and re-inserts, in the
/// tree and in a snapshot.
fn a_pack_at_the_root() {
    let mut rng = Rng(base_seed() ^ 0x0123_4567_89AB_CDEF);
    for &(width, vw) in &[(8usize, 8usize), (6, 8), (2, 0), (9, 16), (4, 3), (3, 40)] {
        for (k, &n) in [2usize, 17, 150, 600].iter().enumerate() {
            let spread = SPREADS[(width + k) % 4];
            let n = n.min(pack_capacity_max_for(width, vw) * 9 / 10);
            let context =
                format!("root pack: width {width}, value width {vw}, {n} keys, {spread:?}");
            let mut keys = suffixes(&mut rng, spread, width, n);
            rng.shuffle(&mut keys);
            // The first two keys differ in their first byte: the pack they make has no
            // prefix, which a hinted word needs.
            if let Some(at) = keys.iter().position(|k| k[0] != keys[0][0]) {
                keys.swap(1, at);
            } else {
                continue;
            }
            let mut tree = Tree::new();
            let mut model = Model::new();
            for key in &keys {
                let v = value(key, 0, vw);
                tree.insert(key, &v).unwrap();
                model.insert(key.clone(), v);
            }
            let stats = tree.stats();
            assert_eq!(
                (
                    stats.node4 + stats.node16 + stats.node48 + stats.node256,
                    stats.leaves
                ),
                (0, 0),
                "{context}: one pack"
            );
            check_all(&tree, &model, 0, &context);
            let snapshot = tree.snapshot();
            for key in keys.iter().step_by(3) {
                assert_eq!(
                    tree.remove(key).unwrap().is_some(),
                    model.remove(key).is_some()
                );
            }
            check_all(&tree, &model, 0, &format!("{context}, after removals"));
            for key in keys.iter().step_by(6) {
                let v = value(key, 1, vw);
                tree.insert(key, &v).unwrap();
                model.insert(key.clone(), v);
            }
            check_all(&tree, &model, 0, &format!("{context}, after re-inserts"));
            let all: Model = keys.iter().map(|k| (k.clone(), value(k, 0, vw))).collect();
            check_all(&snapshot, &all, 0, &format!("{context}, snapshot"));
        }
    }
}

fn run_key(run: u8, b: u8) -> Vec<u8> {
    vec![0xD0, run, b]
}

/// Runs of one-byte suffixes (`[0xD0, run, b]`) of 5- to 8-byte values, started by each way a
/// tree starts (inserted; bulk and slice built, whose packs are full, so the next insert into a
/// run of 64 or more 6- or 7-byte values bursts it into a Node256 of inline words; persisted)
/// with 1, 63, 64, 65, 100, 128, 129 or 255 keys: in half of the cases two runs beside a pack
/// of two-byte suffixes (a hinted word), in the other half one run alone (the root: a pack, a
/// Node256 and a dense pack with a two-byte prefix). The runs are then filled to 256 in random
/// order, a key removed and put back every few inserts; at a run's 63rd to 66th, 128th, 129th,
/// 255th and 256th key every key and the keys beside them are read, and at the 64th, 65th and
/// 255th a snapshot is taken, which reads its own version after all the later writes. Full
/// runs end dense.
#[test]
fn dense_runs_across_the_65th_key_from_every_start() {
    for width in [5usize, 6, 7, 8] {
        for initial in [1usize, 63, 64, 65, 100, 128, 129, 255] {
            for (s, &start) in STARTS.iter().enumerate() {
                let alone = (initial + s) % 2 == 1;
                let seed =
                    0xD15E_A5E5 ^ ((width as u64) << 32) ^ ((initial as u64) << 8) ^ s as u64;
                let mut rng = Rng(seed);
                let context = format!("width {width}, {initial} keys, {start:?}, alone {alone}");
                let runs: &[u8] = if alone { &[1] } else { &[1, 2] };
                let mut model = Model::new();
                let mut fill: Vec<(u8, u8)> = Vec::new();
                for &run in runs {
                    let mut order: Vec<u8> = (0..=255).collect();
                    rng.shuffle(&mut order);
                    let present = if run == 1 { initial } else { initial / 2 + 1 };
                    for &b in &order[..present] {
                        model.insert(run_key(run, b), value(&[run, b], 0, width));
                    }
                    fill.extend(order[present..].iter().map(|&b| (run, b)));
                }
                if !alone {
                    for i in 0..40u16 {
                        let [a, b] = (i * 1601).to_be_bytes();
                        model.insert(vec![0xD0, 0, a, b], value(&[a, b], 0, width));
                    }
                }
                let mut store = MemoryNodeStore::new();
                let mut tree = start_tree(start, &model, &mut store);
                check_all(&tree, &model, 2, &context);
                // The runs' remaining keys, interleaved at random.
                rng.shuffle(&mut fill);
                let mut snapshots: Vec<(Snapshot, Model, String)> = Vec::new();
                for (i, &(run, b)) in fill.iter().enumerate() {
                    let key = run_key(run, b);
                    let v = value(&[run, b], 1, width);
                    assert_eq!(tree.insert(&key, &v).unwrap(), None, "{context}");
                    model.insert(key.clone(), v);
                    check_get(&tree, &model, &key, &context);
                    if i % 5 == 4 {
                        // Remove a key inserted earlier and put it back.
                        let (run_back, b_back) = fill[rng.below(i + 1)];
                        let back = run_key(run_back, b_back);
                        let old = model.remove(&back);
                        assert_eq!(tree.remove(&back).unwrap(), old, "{context}: remove");
                        check_get(&tree, &model, &back, &context);
                        let v = value(&[run_back, b_back], i as u64, width);
                        assert_eq!(tree.insert(&back, &v).unwrap(), None, "{context}");
                        model.insert(back, v);
                    }
                    let keys = model.range(run_key(run, 0)..=run_key(run, 255)).count();
                    if matches!(keys, 63..=66 | 128 | 129 | 255 | 256) {
                        let stage = format!("{context}: run {run} at {keys} keys");
                        check_all(&tree, &model, 2, &stage);
                        if matches!(keys, 64 | 65 | 255) {
                            snapshots.push((tree.snapshot(), model.clone(), stage));
                        }
                    }
                }
                for (snapshot, old, stage) in &snapshots {
                    check_all(snapshot, old, 2, &format!("{stage}, snapshot at the end"));
                }
                let stats = tree.stats();
                assert_eq!(stats.dense_packs, runs.len() as u64, "{context}: {stats:?}");
                assert_eq!(stats.node256, 0, "{context}: {stats:?}");
            }
        }
    }
}
