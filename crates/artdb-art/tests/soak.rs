//! Soak model test (session 13): every kind of write and every way a tree starts or moves
//! (insert, `set`, `insert_if_absent`, `remove`; `bulk_build`, `bulk_build_slice`,
//! `bulk_build_fixed`, `bulk_persist`; `persist` + `adopt_persisted` again and again, so
//! checkpoints after the first are incremental; a reopen over the store; a write batch rolled
//! back to its snapshot; a fork installed or dropped), with snapshots held across all of them
//! and read after later writes, against a `BTreeMap` after every step.
//!
//! Reads: `get` of a present key and of absent keys beside it (last byte changed, one byte
//! shorter, one longer, first byte changed) after every step; `get_many` of mixed present and
//! absent keys, ranges both ways, cursor seeks both ways with steps, prefix scans, first/last,
//! and a snapshot's `point_reader`. Every 128 steps and at the end: contents both ways,
//! `get_many` of every key and `verify`.
//!
//! Keys: random, dense (three runs of 256 one-byte suffixes: leaf packs of one-byte suffixes,
//! the Node256 a run of 6- or 7-byte values bursts into at its 65th key, dense packs),
//! clustered (a few prefixes, a few first suffix bytes: long fence runs), long shared prefixes,
//! and mixed widths, each of key widths 0..=40 and value widths 0..=40 (inline values, packs
//! up to 16 bytes, wide packs above; most pairs of one case share the case's widths, a tenth
//! not, so packs form and burst). Each test asserts that the node kinds it is about were
//! reached. Deterministic: the seed is fixed unless `ARTDB_TEST_SEED` is set (a number, or
//! `random`; a failure prints the case's seed); `ARTDB_TEST_SCALE` multiplies the cases.

mod common;
use common::{checkpoint, range_matches, scale, seek_matches, Model, Rng};

use artdb_art::{MemoryNodeStore, Snapshot, Stats, Tree, KEY_LEN_MAX};
use std::sync::Arc;

/// The seed the cases derive theirs from: `ARTDB_TEST_SEED` (a number or `random`), else fixed.
fn base_seed() -> u64 {
    match std::env::var("ARTDB_TEST_SEED") {
        Ok(text) if text == "random" => {
            let seed = std::collections::hash_map::RandomState::new();
            let seed = std::hash::BuildHasher::hash_one(&seed, std::time::SystemTime::now());
            println!("ARTDB_TEST_SEED={seed}");
            seed
        }
        Ok(text) => text.parse().unwrap_or(0x50A6_5EED),
        Err(_) => 0x50A6_5EED,
    }
}

#[derive(Clone, Copy, Debug)]
enum Family {
    /// Random bytes of the case's width.
    Random,
    /// Three runs of 256 keys that differ in their last byte.
    Dense,
    /// A few prefixes, then a first suffix byte from a few, then random bytes.
    Clustered,
    /// All but the last two bytes shared.
    SharedPrefix,
    /// Every key and value of its own width 0..=40.
    Mixed,
}

/// One run: a key pool drawn from `family` and steps of random operations over it.
struct Case {
    family: Family,
    key_width: usize,
    value_width: usize,
    seed: u64,
    steps: usize,
}

/// What a run saw of the tree's node kinds (the largest count of each at any check).
#[derive(Default, Debug)]
struct Reached {
    packs: u64,
    dense_packs: u64,
    wide_packs: u64,
    node256: u64,
    persisted: u64,
}

impl Reached {
    fn add(&mut self, stats: &Stats) {
        self.packs = self.packs.max(stats.packs);
        self.dense_packs = self.dense_packs.max(stats.dense_packs);
        self.wide_packs = self.wide_packs.max(stats.wide_packs);
        self.node256 = self.node256.max(stats.node256);
        self.persisted = self.persisted.max(stats.persisted);
    }
}

/// A snapshot held by a run, with the model it was taken with and the step that took it.
struct Held {
    snapshot: Snapshot,
    model: Model,
    step: usize,
}

struct Run<'c> {
    case: &'c Case,
    rng: Rng,
    pool: Vec<Vec<u8>>,
    tree: Tree,
    store: MemoryNodeStore,
    model: Model,
    held: Vec<Held>,
    step: usize,
    op: &'static str,
    reached: Reached,
}

impl Case {
    fn context(&self) -> String {
        format!(
            "{:?}, key width {}, value width {}, seed {:#x}",
            self.family, self.key_width, self.value_width, self.seed
        )
    }

    fn pool(&self, rng: &mut Rng) -> Vec<Vec<u8>> {
        let w = self.key_width;
        let mut pool: Vec<Vec<u8>> = Vec::new();
        match self.family {
            Family::Random => {
                for _ in 0..600 {
                    pool.push(rng.bytes(w));
                }
            }
            Family::Dense => {
                let base = rng.bytes(w.saturating_sub(2));
                let runs: &[u8] = if w >= 2 { &[3, 4, 200] } else { &[0] };
                for &run in runs {
                    for b in 0..=255u8 {
                        let mut key = base.clone();
                        if w >= 2 {
                            key.push(run);
                        }
                        if w >= 1 {
                            key.push(b);
                        }
                        pool.push(key);
                    }
                }
            }
            Family::Clustered => {
                let head = w / 2;
                let prefixes: Vec<Vec<u8>> = (0..3).map(|_| rng.bytes(head)).collect();
                let firsts = [0x10u8, 0x11, 0x80, rng.next() as u8];
                for _ in 0..600 {
                    let mut key = prefixes[rng.below(prefixes.len())].clone();
                    if key.len() < w {
                        key.push(firsts[rng.below(firsts.len())]);
                    }
                    let rest = w - key.len();
                    key.extend(rng.bytes(rest));
                    pool.push(key);
                }
            }
            Family::SharedPrefix => {
                let shared = rng.bytes(w.saturating_sub(2));
                for _ in 0..600 {
                    let mut key = shared.clone();
                    key.extend(rng.bytes(w - shared.len()));
                    pool.push(key);
                }
                // Keys that end inside the shared prefix: value slots, prefix splits.
                for len in (0..shared.len()).step_by(7) {
                    pool.push(shared[..len].to_vec());
                }
            }
            Family::Mixed => {
                for _ in 0..400 {
                    let len = rng.below(41);
                    pool.push(rng.bytes(len));
                }
            }
        }
        // A tenth of other widths (bursts, values slots, leaves beside packs); beside the dense
        // runs, not inside them, which must stay uniform to fill.
        let others = match self.family {
            Family::Dense if w <= 2 => 0,
            _ => pool.len() / 10,
        };
        for _ in 0..others {
            let mut key = pool[rng.below(pool.len())].clone();
            if let (Family::Dense, Some(first)) = (self.family, key.first_mut()) {
                *first ^= 0x80;
            }
            match rng.below(3) {
                0 => key.truncate(rng.below(key.len() + 1)),
                1 => {
                    let len = 1 + rng.below(8);
                    key.extend(rng.bytes(len))
                }
                _ => {
                    let len = rng.below(41);
                    key = rng.bytes(len)
                }
            }
            pool.push(key);
        }
        pool.sort();
        pool.dedup();
        // Shuffle so that insert order is random.
        for i in (1..pool.len()).rev() {
            let j = rng.below(i + 1);
            pool.swap(i, j);
        }
        pool
    }

    fn run(&self) -> Reached {
        let mut rng = Rng::new(self.seed);
        let pool = self.pool(&mut rng);
        let mut run = Run {
            case: self,
            rng,
            pool,
            tree: Tree::new(),
            store: MemoryNodeStore::new(),
            model: Model::new(),
            held: Vec::new(),
            step: 0,
            op: "start",
            reached: Reached::default(),
        };
        // Half the cases start from a build of a third of the pool, the rest empty.
        if self.seed % 2 == 0 {
            let pairs: Vec<Vec<u8>> = run.pool.iter().step_by(3).cloned().collect();
            for key in pairs {
                let value = run.value(&key);
                run.model.insert(key, value);
            }
            run.rebuild();
        }
        for step in 0..self.steps {
            run.step = step;
            run.one_step();
            if step % 128 == 127 {
                run.check_all();
            }
        }
        run.op = "end";
        run.check_all();
        let held = std::mem::take(&mut run.held);
        for held in &held {
            run.check_snapshot(held);
        }
        let Run {
            mut tree,
            mut store,
            model,
            reached,
            ..
        } = run;
        let reopened = checkpoint(&mut tree, &mut store, false);
        assert_eq!(
            contents(&reopened),
            model,
            "{}: reopened at the end",
            self.context()
        );
        drop(held);
        reached
    }
}

fn contents(tree: &Tree) -> Model {
    common::contents(tree.iter())
}

impl Run<'_> {
    fn context(&self) -> String {
        format!(
            "{} at step {} ({})",
            self.case.context(),
            self.step,
            self.op
        )
    }

    /// A value for `key`: of the case's width when the key has the case's width (now and then
    /// not, except in dense runs, which must stay uniform to fill), else of any width 0..=40.
    fn value(&mut self, key: &[u8]) -> Vec<u8> {
        let uniform = key.len() == self.case.key_width
            && match self.case.family {
                Family::Mixed => false,
                Family::Dense => true,
                _ => !self.rng.chance(30),
            };
        let width = if uniform {
            self.case.value_width
        } else {
            self.rng.below(41)
        };
        self.rng.bytes(width)
    }

    fn key(&mut self) -> Vec<u8> {
        self.pool[self.rng.below(self.pool.len())].clone()
    }

    /// A key beside `key` that may be absent.
    fn beside(&mut self, key: &[u8]) -> Vec<u8> {
        let mut other = key.to_vec();
        match self.rng.below(5) {
            0 if !other.is_empty() => {
                let last = other.len() - 1;
                other[last] = other[last].wrapping_add(1 + self.rng.below(3) as u8);
            }
            1 => {
                other.pop();
            }
            2 if other.len() < KEY_LEN_MAX => other.push(self.rng.next() as u8),
            3 if !other.is_empty() => other[0] ^= 0x40,
            _ => other = self.rng.bytes(other.len()),
        }
        other
    }

    fn one_step(&mut self) {
        let pick = self.rng.below(1000);
        let key = self.key();
        match pick {
            0..=11 if matches!(self.case.family, Family::Dense) => {
                self.op = "fill run";
                self.fill_run(&key);
            }
            0..=299 => {
                self.op = "insert";
                let value = self.value(&key);
                let old = self.model.insert(key.clone(), value.clone());
                let got = self.tree.insert(&key, &value).unwrap();
                assert_eq!(got, old, "{}", self.context());
            }
            300..=399 => {
                self.op = "set";
                let value = self.value(&key);
                let replaced = self.model.insert(key.clone(), value.clone()).is_some();
                let got = self.tree.set(&key, &value).unwrap();
                assert_eq!(got, replaced, "{}", self.context());
            }
            400..=469 => {
                self.op = "insert_if_absent";
                let value = self.value(&key);
                let absent = !self.model.contains_key(&key);
                if absent {
                    self.model.insert(key.clone(), value.clone());
                }
                let got = self.tree.insert_if_absent(&key, &value).unwrap();
                assert_eq!(got, absent, "{}", self.context());
            }
            470..=629 => {
                self.op = "remove";
                let old = self.model.remove(&key);
                let got = self.tree.remove(&key).unwrap();
                assert_eq!(got, old, "{}", self.context());
            }
            630..=699 => {
                self.op = "get_many";
                self.check_get_many(false);
            }
            700..=729 => {
                self.op = "range";
                let other = self.key();
                let other = if self.rng.chance(300) {
                    self.beside(&other)
                } else {
                    other
                };
                let context = self.context();
                range_matches(&self.tree, &self.model, key.clone(), other)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
            }
            730..=769 => {
                self.op = "seek";
                let target = if self.rng.chance(500) {
                    self.beside(&key)
                } else {
                    key.clone()
                };
                let back = self.rng.chance(500);
                let steps = self.rng.below(40) as u8;
                let context = self.context();
                seek_matches(&self.tree, &self.model, &target, back, steps)
                    .unwrap_or_else(|e| panic!("{context}: {e}"));
            }
            770..=784 => {
                self.op = "prefix";
                let len = self.rng.below(key.len() + 1);
                let prefix = &key[..len];
                let got: Vec<Vec<u8>> = self.tree.prefix(prefix).map(|r| r.unwrap().0).collect();
                let want: Vec<Vec<u8>> = self
                    .model
                    .range(prefix.to_vec()..)
                    .take_while(|(k, _)| k.starts_with(prefix))
                    .map(|(k, _)| k.clone())
                    .collect();
                assert_eq!(got, want, "{}", self.context());
                let back: Vec<Vec<u8>> = self
                    .tree
                    .prefix(prefix)
                    .rev()
                    .map(|r| r.unwrap().0)
                    .collect();
                assert_eq!(
                    back,
                    want.into_iter().rev().collect::<Vec<_>>(),
                    "{}",
                    self.context()
                );
            }
            785..=794 => {
                self.op = "first/last";
                let first = self.tree.first().unwrap().map(|(k, v)| (k, v.to_vec()));
                let want = self
                    .model
                    .first_key_value()
                    .map(|(k, v)| (k.clone(), v.clone()));
                assert_eq!(first, want, "{}", self.context());
                let last = self.tree.last().unwrap().map(|(k, v)| (k, v.to_vec()));
                let want = self
                    .model
                    .last_key_value()
                    .map(|(k, v)| (k.clone(), v.clone()));
                assert_eq!(last, want, "{}", self.context());
            }
            795..=839 => {
                self.op = "snapshot";
                if self.held.len() >= 5 {
                    let index = self.rng.below(self.held.len());
                    let held = self.held.swap_remove(index);
                    self.check_snapshot(&held);
                }
                self.held.push(Held {
                    snapshot: self.tree.snapshot(),
                    model: self.model.clone(),
                    step: self.step,
                });
            }
            840..=869 => {
                self.op = "snapshot point reads";
                if !self.held.is_empty() {
                    let index = self.rng.below(self.held.len());
                    self.check_snapshot_points(index);
                }
            }
            870..=891 => {
                self.op = "checkpoint";
                self.tree = checkpoint(&mut self.tree, &mut self.store, true);
                self.reached.add(&self.tree.stats());
            }
            892..=899 => {
                self.op = "reopen";
                self.tree = checkpoint(&mut self.tree, &mut self.store, false);
            }
            900..=909 => {
                self.op = "rebuild";
                self.rebuild();
            }
            910..=949 => {
                self.op = "batch";
                self.batch();
            }
            950..=979 => {
                self.op = "fork";
                self.fork();
            }
            _ => {
                self.op = "drop snapshots";
                for held in std::mem::take(&mut self.held) {
                    self.check_snapshot(&held);
                }
            }
        }
        assert_eq!(
            self.tree.len(),
            self.model.len() as u64,
            "{}: len",
            self.context()
        );
        // A present key (when there is one) and keys beside it, after every step.
        let probe = self.key();
        self.check_get(&probe);
        for _ in 0..2 {
            let other = self.beside(&probe);
            self.check_get(&other);
        }
    }

    fn check_get(&self, key: &[u8]) {
        assert_eq!(
            self.tree.get(key).unwrap(),
            self.model.get(key).map(Vec::as_slice),
            "{}: get {key:02x?}",
            self.context()
        );
    }

    /// `get_many` of pool keys and keys beside them (or, with `all`, of every model key in
    /// order and then shuffled).
    fn check_get_many(&mut self, all: bool) {
        let keys: Vec<Vec<u8>> = if all {
            let mut keys: Vec<Vec<u8>> = self.model.keys().cloned().collect();
            let len = keys.len();
            for i in (1..len).rev() {
                keys.swap(i, self.rng.below(i + 1));
            }
            keys
        } else {
            let n = 1 + self.rng.below(48);
            (0..n)
                .map(|_| {
                    let key = self.key();
                    if self.rng.chance(350) {
                        self.beside(&key)
                    } else {
                        key
                    }
                })
                .collect()
        };
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        self.tree.get_many(&refs, &mut out).unwrap();
        assert_eq!(out.len(), keys.len(), "{}", self.context());
        for (key, got) in keys.iter().zip(&out) {
            assert_eq!(
                *got,
                self.model.get(key).map(Vec::as_slice),
                "{}: get_many {key:02x?}",
                self.context()
            );
        }
    }

    fn check_all(&mut self) {
        let context = self.context();
        assert_eq!(contents(&self.tree), self.model, "{context}: contents");
        let back: Vec<Vec<u8>> = self.tree.iter().rev().map(|r| r.unwrap().0).collect();
        let want: Vec<Vec<u8>> = self.model.keys().rev().cloned().collect();
        assert_eq!(back, want, "{context}: contents backwards");
        self.check_get_many(true);
        if let Err(violations) = self.tree.verify() {
            panic!("{context}: verify: {violations:?}");
        }
        self.reached.add(&self.tree.stats());
    }

    fn check_snapshot(&self, held: &Held) {
        let context = format!("{}: snapshot of step {}", self.context(), held.step);
        let got = common::contents(held.snapshot.iter());
        assert_eq!(got, held.model, "{context}");
        let reader = held.snapshot.point_reader();
        for (key, value) in held.model.iter().step_by(3) {
            assert_eq!(
                held.snapshot.get(key).unwrap(),
                Some(value.as_slice()),
                "{context}"
            );
            assert_eq!(
                reader.get(key).unwrap(),
                Some(value.as_slice()),
                "{context}"
            );
        }
        if let Err(violations) = held.snapshot.verify() {
            panic!("{context}: verify: {violations:?}");
        }
    }

    /// Point reads of a held snapshot (`get`, its `point_reader`, `get_many`) of pool keys and
    /// keys beside them.
    fn check_snapshot_points(&mut self, index: usize) {
        let keys: Vec<Vec<u8>> = (0..24)
            .map(|_| {
                let key = self.key();
                if self.rng.chance(400) {
                    self.beside(&key)
                } else {
                    key
                }
            })
            .collect();
        let held = &self.held[index];
        let context = format!("{}: snapshot of step {}", self.context(), held.step);
        let reader = held.snapshot.point_reader();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let mut out = Vec::new();
        held.snapshot.get_many(&refs, &mut out).unwrap();
        for (key, many) in keys.iter().zip(out) {
            let want = held.model.get(key).map(Vec::as_slice);
            assert_eq!(
                held.snapshot.get(key).unwrap(),
                want,
                "{context}: {key:02x?}"
            );
            assert_eq!(reader.get(key).unwrap(), want, "{context}: {key:02x?}");
            assert_eq!(many, want, "{context}: get_many {key:02x?}");
        }
        let mut cursor = held.snapshot.cursor();
        let target = &keys[0];
        let found = cursor.seek(target).unwrap();
        let mut want = held.model.range(target.clone()..);
        assert_eq!(found, want.clone().next().is_some(), "{context}");
        for _ in 0..20 {
            match want.next() {
                Some((k, v)) => {
                    assert_eq!(cursor.key(), k.as_slice(), "{context}");
                    assert_eq!(cursor.value(), v.as_slice(), "{context}");
                    cursor.next().unwrap();
                }
                None => break,
            }
        }
    }

    /// Inserts every missing pool key that differs from `key` only in its last byte, in random
    /// order, reading each back (a dense run through its Node256 burst to a dense pack).
    fn fill_run(&mut self, key: &[u8]) {
        let Some((_, head)) = key.split_last() else {
            return;
        };
        let mut missing: Vec<Vec<u8>> = self
            .pool
            .iter()
            .filter(|k| k.len() == key.len() && k.starts_with(head))
            .filter(|k| !self.model.contains_key(*k))
            .cloned()
            .collect();
        for i in (1..missing.len()).rev() {
            missing.swap(i, self.rng.below(i + 1));
        }
        for key in missing {
            let value = self.value(&key);
            assert_eq!(
                self.tree.insert(&key, &value).unwrap(),
                None,
                "{}",
                self.context()
            );
            self.model.insert(key.clone(), value);
            self.check_get(&key);
        }
        self.reached.add(&self.tree.stats());
    }

    /// Replaces the tree by a build of the model (the held snapshots keep the old one).
    fn rebuild(&mut self) {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = self
            .model
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let fixed = pairs.iter().all(|(k, v)| k.len() == 8 && v.len() <= 7);
        self.tree = match self.rng.below(if fixed { 4 } else { 3 }) {
            0 => Tree::bulk_build(pairs).unwrap(),
            1 => Tree::bulk_build_slice(&pairs).unwrap(),
            2 => {
                self.store = MemoryNodeStore::new();
                let (root, len) = Tree::bulk_persist(pairs, &mut self.store).unwrap();
                Tree::open(root, len, Arc::new(self.store.clone())).unwrap()
            }
            _ => {
                let fixed: Vec<([u8; 8], [u8; 8])> = pairs
                    .iter()
                    .map(|(k, v)| {
                        let mut word = [0u8; 8];
                        word[..v.len()].copy_from_slice(v);
                        word[7] = v.len() as u8;
                        (k.as_slice().try_into().unwrap(), word)
                    })
                    .collect();
                Tree::bulk_build_fixed(&fixed).unwrap()
            }
        };
        self.reached.add(&self.tree.stats());
    }

    /// A write batch from a snapshot of its own: a few writes, then kept or rolled back.
    fn batch(&mut self) {
        let start = self.tree.snapshot();
        let before = self.model.clone();
        for _ in 0..1 + self.rng.below(30) {
            let key = self.key();
            if self.rng.chance(300) {
                assert_eq!(
                    self.tree.remove(&key).unwrap(),
                    self.model.remove(&key),
                    "{}",
                    self.context()
                );
            } else {
                let value = self.value(&key);
                assert_eq!(
                    self.tree.insert(&key, &value).unwrap(),
                    self.model.insert(key, value),
                    "{}",
                    self.context()
                );
            }
        }
        if self.rng.chance(500) {
            self.tree.rollback_to(&start).unwrap();
            self.model = before.clone();
            self.op = "batch rolled back";
        }
        // The batch's snapshot still reads the state before the batch.
        assert_eq!(common::contents(start.iter()), before, "{}", self.context());
    }

    /// A fork of a fresh snapshot: a few writes in it, then installed, dropped, or offered
    /// after the tree moved on (given back).
    fn fork(&mut self) {
        let base = self.tree.snapshot();
        let mut fork = base.fork();
        let mut forked = self.model.clone();
        for _ in 0..1 + self.rng.below(20) {
            let key = self.key();
            if self.rng.chance(300) {
                assert_eq!(
                    fork.remove(&key).unwrap(),
                    forked.remove(&key).is_some(),
                    "{}",
                    self.context()
                );
            } else {
                let value = self.value(&key);
                assert_eq!(
                    fork.set(&key, &value).unwrap(),
                    forked.insert(key.clone(), value).is_some(),
                    "{}",
                    self.context()
                );
            }
            let probe = self.key();
            assert_eq!(
                fork.get(&probe).unwrap(),
                forked.get(&probe).map(Vec::as_slice),
                "{}: fork get",
                self.context()
            );
        }
        assert_eq!(fork.len(), forked.len() as u64, "{}", self.context());
        let got: Model = common::contents(fork.iter());
        assert_eq!(got, forked, "{}: fork contents", self.context());
        match self.rng.below(3) {
            0 => drop(fork),
            1 => {
                // The tree moves on first: the fork must come back unchanged.
                let key = self.key();
                let value = self.value(&key);
                assert_eq!(
                    self.tree.insert(&key, &value).unwrap(),
                    self.model.insert(key, value),
                    "{}",
                    self.context()
                );
                let back = self.tree.install(fork).err().unwrap_or_else(|| {
                    panic!("{}: a fork of a moved tree installed", self.context())
                });
                assert_eq!(common::contents(back.iter()), forked, "{}", self.context());
            }
            _ => {
                if self.tree.install(fork).is_err() {
                    panic!("{}: a fork of the newest snapshot refused", self.context());
                }
                self.model = forked;
                self.op = "fork installed";
            }
        }
        drop(base);
    }
}

fn run_cases(
    family: Family,
    key_widths: &[usize],
    value_widths: &[usize],
    steps: usize,
) -> Reached {
    let base = base_seed();
    let mut reached = Reached::default();
    for round in 0..u64::from(scale()) {
        for (i, &key_width) in key_widths.iter().enumerate() {
            let seed = base ^ (round << 40) ^ ((key_width as u64) << 16) ^ (family as u64) << 8;
            let value_width = value_widths[(i + round as usize) % value_widths.len()];
            let case = Case {
                family,
                key_width,
                value_width,
                seed: Rng::new(seed).next(),
                steps,
            };
            let got = case.run();
            reached.packs += got.packs;
            reached.dense_packs += got.dense_packs;
            reached.wide_packs += got.wide_packs;
            reached.node256 += got.node256;
            reached.persisted += got.persisted;
        }
    }
    reached
}

#[test]
fn soak_random_keys() {
    let reached = run_cases(
        Family::Random,
        &[0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 24, 33, 40],
        &[8, 0, 3, 7, 12, 16, 17, 40, 1, 6],
        800,
    );
    assert!(reached.packs > 0 && reached.wide_packs > 0, "{reached:?}");
    assert!(reached.persisted > 0, "{reached:?}");
}

#[test]
fn soak_dense_runs() {
    let reached = run_cases(
        Family::Dense,
        &[1, 2, 3, 4, 6, 8, 12, 20, 40],
        &[7, 6, 8, 0, 16, 5, 3, 17],
        1200,
    );
    assert!(
        reached.dense_packs > 0 && reached.node256 > 0,
        "{reached:?}"
    );
}

#[test]
fn soak_clustered_keys() {
    let reached = run_cases(
        Family::Clustered,
        &[2, 3, 4, 6, 8, 10, 16, 25, 40],
        &[8, 2, 16, 0, 24, 7],
        800,
    );
    assert!(reached.packs > 0, "{reached:?}");
}

#[test]
fn soak_long_shared_prefixes() {
    let reached = run_cases(
        Family::SharedPrefix,
        &[2, 3, 9, 17, 30, 40],
        &[8, 0, 16, 40, 6],
        800,
    );
    assert!(reached.packs > 0, "{reached:?}");
}

#[test]
fn soak_mixed_widths() {
    run_cases(Family::Mixed, &[0, 1, 2, 3], &[0], 1000);
}
