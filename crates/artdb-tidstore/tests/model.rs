//! Model tests: random operation sequences on a `TidStore` and on a `BTreeSet<(u32, u16)>`, which
//! must agree after every step: every operation's result, `len`, both iteration orders, the
//! lookup cursor (in order and out of order) and `verify`.
//!
//! Blocks are drawn from a small set (plus the extremes 0 and u32::MAX) so operations collide, and
//! offsets cluster around the forms' boundaries: three offsets (the `u16` form), five offsets
//! and offset 2047/2048 (the packed form's limits, beyond which a bitmap is needed) and word
//! edges (63/64, 127/128). A run of inserts moves a block from embedded to bitmap form, removes
//! and `set_block_offsets` with few offsets move it back; the test counts the transitions it saw
//! and requires both directions to have happened.
//!
//! The append path (`append.rs`: blocks above every block seen so far are kept in a vector until
//! `flush_appends` or an operation that needs the tree) is driven by `Ascend` ops, which pick a
//! block above the highest one used so far, mixed with every other op in any order: lookups,
//! cursors and iteration between appends, blocks below or between appended ones, removals of
//! appended blocks, explicit flushes, in both modes. The test counts the reads it made while
//! blocks were appended and unflushed, and requires them to have happened.
//!
//! `insert_many` is driven by `InsertMany` ops (ids drawn as any other op's, in any order: the
//! id-by-id fallback) and `AscendMany` ops (ids ascending from above the highest block, with
//! blocks of 1 to 8 offsets and runs of up to 300, across chunk boundaries, sometimes with one
//! id out of order or out of range): after each, the store must hold what `insert` of each id
//! in turn would have left, and report the same count and the same error.
//!
//! Scale with `ARTDB_TEST_SCALE` (default 1: the whole file runs in a few seconds). A failure
//! prints proptest's minimal case and its seed; replay by setting `PROPTEST_SEED` as shown there.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use artdb_tidstore::{Error, TidStore, TidStoreOptions};
use proptest::prelude::*;

const BLOCKS: [u32; 6] = [0, 1, 2, 1000, 65_536, u32::MAX];

/// The test's side of the append path: the highest block any op has named so far.
#[derive(Default)]
struct Driver {
    highest: Option<u32>,
}

impl Driver {
    fn note(&mut self, op: &Op) {
        let block = match op {
            Op::Insert(b, _) | Op::SetBlock(b, _) => *b,
            Op::InsertMany(ids) => match ids.iter().map(|&(b, _)| b).max() {
                Some(b) => b,
                None => return,
            },
            _ => return,
        };
        self.highest = Some(self.highest.map_or(block, |h| h.max(block)));
    }

    /// Resolves an `Ascend` or `AscendMany` into the op it stands for.
    fn resolve(&mut self, op: &Op) -> Op {
        if let Op::AscendMany(blocks, damage) = op {
            let resolved = Op::InsertMany(self.ascending_ids(blocks, *damage));
            self.note(&resolved);
            return resolved;
        }
        let Op::Ascend(delta, offsets, offset) = op else {
            return op.clone();
        };
        let block = self
            .highest
            .map_or(*delta - 1, |h| h.saturating_add(*delta));
        let resolved = match offsets {
            Some(offsets) => Op::SetBlock(block, offsets.clone()),
            None => Op::Insert(block, *offset),
        };
        self.note(&resolved);
        resolved
    }

    /// The ids of `blocks` (gaps above the highest block, offsets), ascending; `damage`
    /// `(position, kind)` then breaks the id at `position` (modulo the length): kind 0 swaps it
    /// with the one before, 1 repeats the one before, 2 makes its offset 0, 3 makes it
    /// `MAX_OFFSET + 1`.
    fn ascending_ids(
        &self,
        blocks: &[(u32, Vec<u16>)],
        damage: Option<(usize, u8)>,
    ) -> Vec<(u32, u16)> {
        let mut ids = Vec::new();
        let mut block = self.highest;
        for (delta, offsets) in blocks {
            let next = block.map_or(delta - 1, |b| b.saturating_add(*delta));
            block = Some(next);
            ids.extend(offsets.iter().map(|&o| (next, o)));
        }
        if let Some((position, kind)) = damage {
            if !ids.is_empty() {
                let at = position % ids.len();
                match (kind % 4, at) {
                    (0, 1..) => ids.swap(at - 1, at),
                    (1, 1..) => ids[at] = ids[at - 1],
                    (2, _) => ids[at].1 = 0,
                    (3, _) => ids[at].1 = MAX_OFFSET + 1,
                    _ => {}
                }
            }
        }
        ids
    }
}
const MAX_OFFSET: u16 = 2100;

static TO_BITMAP: AtomicU64 = AtomicU64::new(0);
static TO_EMBEDDED: AtomicU64 = AtomicU64::new(0);
static READS_WHILE_APPENDED: AtomicU64 = AtomicU64::new(0);

fn scale() -> u32 {
    std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

#[derive(Clone, Debug)]
enum Op {
    Insert(u32, u16),
    Remove(u32, u16),
    Contains(u32, u16),
    SetBlock(u32, Vec<u16>),
    RemoveBlock(u32),
    /// Probes (block, offset) pairs through one lookup cursor; `sorted` probes in id order.
    Cursor(Vec<(u32, u16)>, bool),
    /// A block `delta` above the highest block used so far: offsets set at once (`Some`) or one
    /// offset inserted (`None`, with the offset given).
    Ascend(u32, Option<Vec<u16>>, u16),
    /// `flush_appends`.
    Flush,
    /// `insert_many` of these ids.
    InsertMany(Vec<(u32, u16)>),
    /// `insert_many` of ascending ids above the highest block used so far: per block, its
    /// distance from the one before and its offsets; then maybe one id damaged (see
    /// `Driver::ascending_ids`).
    AscendMany(Vec<(u32, Vec<u16>)>, Option<(usize, u8)>),
}

fn block() -> impl Strategy<Value = u32> {
    prop::sample::select(BLOCKS.to_vec())
}

/// Offsets that hit the interesting sizes, plus the invalid 0 and `MAX_OFFSET + 1` now and then.
fn offset() -> impl Strategy<Value = u16> {
    prop_oneof![
        12 => valid_offset(),
        1 => prop::sample::select(vec![0u16, MAX_OFFSET + 1, u16::MAX]),
    ]
}

/// The valid offsets of [`offset`], drawn directly: a `prop_filter` of `offset` rejected one
/// draw in 13, and at `ARTDB_TEST_SCALE=20` the run passed proptest's 65,536 local rejects and
/// aborted (session 13's soak).
fn valid_offset() -> impl Strategy<Value = u16> {
    prop_oneof![
        6 => 1..=6u16,
        3 => prop::sample::select(vec![62u16, 63, 64, 65, 127, 128, 129, 291, 2047, 2048, MAX_OFFSET]),
        3 => 1..=MAX_OFFSET,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (block(), offset()).prop_map(|(b, o)| Op::Insert(b, o)),
        4 => (block(), offset()).prop_map(|(b, o)| Op::Remove(b, o)),
        3 => (block(), offset()).prop_map(|(b, o)| Op::Contains(b, o)),
        3 => (block(), prop::collection::vec(offset(), 0..8), any::<bool>())
            .prop_map(|(b, offsets, sort)| Op::SetBlock(b, prepare(offsets, sort))),
        1 => block().prop_map(Op::RemoveBlock),
        1 => (prop::collection::vec((block(), offset()), 0..40), any::<bool>())
            .prop_map(|(probes, sorted)| Op::Cursor(probes, sorted)),
        8 => (
            prop_oneof![3 => 1..=3u32, 1 => 4..=70_000u32],
            // Mostly valid lists (sorted, deduplicated); now and then one left as drawn, so the
            // append path's one-pass check meets unsorted and repeated offsets too.
            prop::option::of(
                (prop::collection::vec(offset(), 0..8), prop::bool::weighted(0.9))
                    .prop_map(|(o, sort)| prepare(o, sort)),
            ),
            offset(),
        )
            .prop_map(|(delta, offsets, offset)| Op::Ascend(delta, offsets, offset)),
        1 => Just(Op::Flush),
        2 => prop::collection::vec((block(), offset()), 0..80).prop_map(Op::InsertMany),
        4 => (
            prop::collection::vec((prop_oneof![4 => 1..=2u32, 1 => 3..=300u32], block_offsets()), 0..40),
            prop::option::weighted(0.2, (any::<usize>(), any::<u8>())),
        )
            .prop_map(|(blocks, damage)| Op::AscendMany(blocks, damage)),
    ]
}

/// The offsets of one block for `AscendMany`: mostly 1 to 8 (the embedded forms and small
/// bitmaps, around 2047), sometimes a run long enough to fill a chunk (64 ids) or more,
/// consecutive (a fully dead page) or spaced.
fn block_offsets() -> impl Strategy<Value = Vec<u16>> {
    prop_oneof![
        8 => prop::collection::vec(valid_offset(), 1..=8)
            .prop_map(|o| prepare(o, true)),
        1 => (1..=300u16, 60..=300u16).prop_map(|(first, len)| (first..first + len).map(|o| o.min(MAX_OFFSET)).collect::<Vec<_>>())
            .prop_map(|o| prepare(o, true)),
        1 => (1..=7u16, 60..=300u16).prop_map(|(step, len)| (1..=len).map(|i| (i * step).min(MAX_OFFSET)).collect::<Vec<_>>())
            .prop_map(|o| prepare(o, true)),
    ]
}

/// Usually a valid (sorted, deduplicated) offset list; sometimes left as drawn, to test the
/// unsorted-input error.
fn prepare(mut offsets: Vec<u16>, sort: bool) -> Vec<u16> {
    if sort {
        offsets.sort_unstable();
        offsets.dedup();
    }
    offsets
}

fn valid(offset: u16) -> bool {
    (1..=MAX_OFFSET).contains(&offset)
}

fn model_block(model: &BTreeSet<(u32, u16)>, block: u32) -> Vec<u16> {
    model
        .range((block, 0)..=(block, u16::MAX))
        .map(|&(_, o)| o)
        .collect()
}

/// Applies `op` to both; panics (failing the case) on any disagreement.
fn step(store: &mut TidStore, model: &mut BTreeSet<(u32, u16)>, op: &Op) {
    let insert_only = store.options().insert_only;
    match op {
        Op::Insert(b, o) => {
            let was_embedded = store.block_offsets(*b).unwrap().is_embedded();
            match store.insert(*b, *o) {
                Ok(inserted) => assert_eq!(inserted, model.insert((*b, *o))),
                Err(Error::OffsetOutOfRange { .. }) => assert!(!valid(*o)),
                Err(e) => panic!("insert({b}, {o}): {e}"),
            }
            if was_embedded && !store.block_offsets(*b).unwrap().is_embedded() {
                TO_BITMAP.fetch_add(1, Ordering::Relaxed);
            }
        }
        Op::Remove(b, o) => {
            let was_bitmap = !store.block_offsets(*b).unwrap().is_embedded();
            match store.remove(*b, *o) {
                Ok(removed) => assert_eq!(removed, model.remove(&(*b, *o))),
                Err(Error::OffsetOutOfRange { .. }) => assert!(!valid(*o)),
                Err(Error::InsertOnly { .. }) => assert!(insert_only && valid(*o)),
                Err(e) => panic!("remove({b}, {o}): {e}"),
            }
            if was_bitmap && store.block_offsets(*b).unwrap().is_embedded() {
                TO_EMBEDDED.fetch_add(1, Ordering::Relaxed);
            }
        }
        Op::Contains(b, o) => match store.contains(*b, *o) {
            Ok(found) => assert_eq!(found, model.contains(&(*b, *o))),
            Err(Error::OffsetOutOfRange { .. }) => assert!(!valid(*o)),
            Err(e) => panic!("contains({b}, {o}): {e}"),
        },
        Op::SetBlock(b, offsets) => set_block(store, model, *b, offsets),
        Op::RemoveBlock(b) => match store.remove_block(*b) {
            Ok(count) => {
                let old = model_block(model, *b);
                assert_eq!(count, old.len());
                for o in old {
                    model.remove(&(*b, o));
                }
            }
            Err(Error::InsertOnly { .. }) => assert!(insert_only),
            Err(e) => panic!("remove_block({b}): {e}"),
        },
        Op::Cursor(probes, sorted) => check_cursor(store, model, probes, *sorted),
        Op::Flush => {
            store.flush_appends().unwrap();
            assert_eq!(store.unflushed_blocks(), 0);
        }
        Op::InsertMany(ids) => insert_many(store, model, ids),
        Op::Ascend(..) | Op::AscendMany(..) => unreachable!("resolved by the driver"),
    }
}

/// `insert_many` against the model's `insert` of each id in turn, up to the first invalid one.
fn insert_many(store: &mut TidStore, model: &mut BTreeSet<(u32, u16)>, ids: &[(u32, u16)]) {
    let invalid = ids.iter().position(|&(_, o)| !valid(o));
    let before = &ids[..invalid.unwrap_or(ids.len())];
    let added = before.iter().filter(|&&id| model.insert(id)).count() as u64;
    match (store.insert_many(ids), invalid) {
        (Ok(count), None) => assert_eq!(count, added, "insert_many's count"),
        (Err(Error::OffsetOutOfRange { block, offset, .. }), Some(at)) => {
            assert_eq!(
                (block, offset),
                ids[at],
                "insert_many's error names the first bad id"
            )
        }
        (result, invalid) => panic!("insert_many: {result:?}, first invalid id at {invalid:?}"),
    }
}

fn set_block(store: &mut TidStore, model: &mut BTreeSet<(u32, u16)>, b: u32, offsets: &[u16]) {
    let was_bitmap = !store.block_offsets(b).unwrap().is_embedded();
    let old = model_block(model, b);
    let sorted = offsets.windows(2).all(|w| w[0] < w[1]);
    match store.set_block_offsets(b, offsets) {
        Ok(()) => {
            assert!(
                sorted && offsets.iter().all(|&o| valid(o)),
                "accepted {offsets:?}"
            );
            assert!(!store.options().insert_only || old.is_empty() || offsets.is_empty());
            for o in old {
                model.remove(&(b, o));
            }
            model.extend(offsets.iter().map(|&o| (b, o)));
        }
        Err(Error::OffsetOutOfRange { offset, .. }) => assert!(!valid(offset)),
        Err(Error::OffsetsUnsorted { index, .. }) => assert!(offsets[index - 1] >= offsets[index]),
        Err(Error::InsertOnly { .. }) => assert!(store.options().insert_only && !old.is_empty()),
        Err(e) => panic!("set_block_offsets({b}, {offsets:?}): {e}"),
    }
    if was_bitmap && store.block_offsets(b).unwrap().is_embedded() {
        TO_EMBEDDED.fetch_add(1, Ordering::Relaxed);
    }
}

fn check_cursor(
    store: &TidStore,
    model: &BTreeSet<(u32, u16)>,
    probes: &[(u32, u16)],
    sorted: bool,
) {
    let mut probes = probes.to_vec();
    if sorted {
        probes.sort_unstable();
    }
    // Every stored id too, so the cursor sees hits and not only misses.
    if sorted {
        probes.extend(model.iter().copied());
        probes.sort_unstable();
    }
    let mut cursor = store.lookup_cursor();
    for (b, o) in probes {
        match cursor.contains(b, o) {
            Ok(found) => assert_eq!(found, model.contains(&(b, o)), "cursor at ({b}, {o})"),
            Err(Error::OffsetOutOfRange { .. }) => assert!(!valid(o)),
            Err(e) => panic!("cursor.contains({b}, {o}): {e}"),
        }
    }
}

/// Everything observable must equal the model.
fn check_whole(store: &TidStore, model: &BTreeSet<(u32, u16)>) {
    assert_eq!(store.len(), model.len() as u64);
    let ids: Vec<(u32, u16)> = store.ids().collect::<Result<_, _>>().unwrap();
    assert!(ids.iter().eq(model.iter()), "ids() differs from the model");
    let mut blocks = Vec::new();
    for item in store.iter() {
        let (block, offsets) = item.unwrap();
        // The canonical form, restated here as the reference: up to three offsets, or four or
        // five none above 2047, live in the child word.
        let list = offsets.to_vec();
        let fits = list.len() <= 3 || (list.len() <= 5 && list.iter().all(|&o| o <= 2047));
        assert_eq!(
            offsets.is_embedded(),
            fits,
            "form of block {block}: {list:?}"
        );
        blocks.push((block, offsets.to_vec()));
    }
    let mut expected: Vec<(u32, Vec<u16>)> = Vec::new();
    for &(b, o) in model {
        match expected.last_mut() {
            Some((last, offsets)) if *last == b => offsets.push(o),
            _ => expected.push((b, vec![o])),
        }
    }
    assert_eq!(blocks, expected);
    assert_eq!(store.block_count(), expected.len() as u64);
    if let Err(violations) = store.verify() {
        panic!("verify: {violations:?}");
    }
}

fn run(options: TidStoreOptions, ops: &[Op]) {
    let mut store = TidStore::with_options(options).unwrap();
    let mut model = BTreeSet::new();
    let mut driver = Driver::default();
    for (i, op) in ops.iter().enumerate() {
        let op = driver.resolve(op);
        driver.note(&op);
        if store.unflushed_blocks() > 0 && matches!(op, Op::Contains(..) | Op::Cursor(..)) {
            READS_WHILE_APPENDED.fetch_add(1, Ordering::Relaxed);
        }
        step(&mut store, &mut model, &op);
        if i % 16 == 15 {
            check_whole(&store, &model);
        }
    }
    check_whole(&store, &model);
}

fn options(insert_only: bool) -> TidStoreOptions {
    TidStoreOptions {
        max_offset: MAX_OFFSET,
        insert_only,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96 * scale()))]

    #[test]
    fn heap_mode_matches_btreeset(ops in prop::collection::vec(op(), 1..300)) {
        run(options(false), &ops);
    }

    #[test]
    fn insert_only_mode_matches_btreeset(ops in prop::collection::vec(op(), 1..300)) {
        run(options(true), &ops);
    }
}

#[test]
fn both_transitions_are_exercised() {
    // Deterministic sequences guarantee both directions even if proptest's draws miss them.
    let mut ops = Vec::new();
    for o in 1..=70u16 {
        ops.push(Op::Insert(5, o));
    }
    for o in (1..=70u16).rev() {
        ops.push(Op::Remove(5, o));
    }
    ops.push(Op::SetBlock(6, vec![1, 2, 3, 4, 5, 200]));
    ops.push(Op::SetBlock(6, vec![9]));
    // Four offsets, one above the packed form's 2047: a bitmap until it is removed.
    ops.push(Op::SetBlock(7, vec![1, 2, 3, 2048]));
    ops.push(Op::Remove(7, 2048));
    ops.push(Op::Insert(7, 2047));
    ops.push(Op::Insert(7, 2100));
    ops.push(Op::Cursor(vec![(5, 1), (6, 9), (7, 1)], true));
    TO_BITMAP.store(0, Ordering::Relaxed);
    TO_EMBEDDED.store(0, Ordering::Relaxed);
    run(options(false), &ops);
    assert!(TO_BITMAP.load(Ordering::Relaxed) >= 1);
    assert!(TO_EMBEDDED.load(Ordering::Relaxed) >= 3);
}

/// The vacuum pattern and its deviations, deterministically: ascending blocks (set and insert),
/// a lookup and a cursor between appends, a block between appended ones, a removal of an
/// appended block, more appends after that, a flush, and reads after it.
#[test]
fn append_path_orders() {
    for insert_only in [false, true] {
        let mut ops = Vec::new();
        for delta in [1, 1, 5, 300, 2] {
            ops.push(Op::Ascend(delta, Some(vec![1, 2, 3, 4, 5, 70]), 0));
            ops.push(Op::Ascend(1, None, 9));
            ops.push(Op::Insert(0, 7));
        }
        ops.push(Op::Contains(2, 70));
        ops.push(Op::Cursor(vec![(1, 1), (2, 3), (500, 1)], true));
        ops.push(Op::Ascend(10, Some(vec![8]), 0));
        ops.push(Op::SetBlock(20, vec![1, 2]));
        ops.push(Op::Ascend(10, Some(vec![1, 2, 3, 4]), 0));
        ops.push(Op::Remove(1, 1));
        ops.push(Op::RemoveBlock(3));
        ops.push(Op::Ascend(4, Some(vec![6]), 0));
        ops.push(Op::Contains(1, 2));
        ops.push(Op::Flush);
        ops.push(Op::Flush);
        ops.push(Op::Cursor(vec![(1, 2), (2, 3), (10_000, 1)], false));
        READS_WHILE_APPENDED.store(0, Ordering::Relaxed);
        run(options(insert_only), &ops);
        assert!(READS_WHILE_APPENDED.load(Ordering::Relaxed) >= 2);
    }
}

/// Many blocks (so the tree's nodes grow through every kind and the arena through several
/// chunks), driven by a seeded generator; both modes, checked against the model at the end.
#[test]
fn many_blocks_match_btreeset() {
    use rand::{Rng, SeedableRng};
    let seed = 0x7153_2024 + u64::from(scale());
    for insert_only in [false, true] {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut store = TidStore::with_options(options(insert_only)).unwrap();
        let mut model = BTreeSet::new();
        for i in 0..30_000 * scale() {
            // Clustered blocks: runs of neighbours plus far-away ones.
            let block = if rng.gen_bool(0.8) {
                rng.gen_range(0..5_000)
            } else {
                rng.gen()
            };
            let offset = rng.gen_range(1..=MAX_OFFSET);
            let op = match rng.gen_range(0..10) {
                0..=5 => Op::Insert(block, offset),
                6 => Op::Remove(block, offset),
                7 => {
                    let count = rng.gen_range(0..12);
                    let offsets = (0..count).map(|_| rng.gen_range(1..=MAX_OFFSET)).collect();
                    Op::SetBlock(block, prepare(offsets, true))
                }
                8 => Op::RemoveBlock(block),
                _ => Op::Contains(block, offset),
            };
            step(&mut store, &mut model, &op);
            if i % 10_000 == 9_999 {
                check_whole(&store, &model);
            }
        }
        check_whole(&store, &model);
        let mut probes: Vec<(u32, u16)> = (0..20_000)
            .map(|_| (rng.gen_range(0..5_000), rng.gen_range(1..=MAX_OFFSET)))
            .collect();
        check_cursor(&store, &model, &probes, true);
        probes.truncate(2_000);
        check_cursor(&store, &model, &probes, false);
    }
}

/// `insert_many` of ascending ids builds the store `set_block_offsets` block by block builds:
/// the same ids, the same form per block, `verify` clean, before and after the flush. Seeded
/// blocks of 1 to 12 offsets (a few above 2047), fully dead blocks of 291 and longer spaced
/// runs, so the chunks of 64 ids split blocks at every position and long runs span chunks; then
/// more ids on top of the built tree (the ordinary path) and a second ascending batch.
#[test]
fn insert_many_matches_set_block_offsets() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x1D50_F1D5 + u64::from(scale()));
    for insert_only in [false, true] {
        let mut ids: Vec<(u32, u16)> = Vec::new();
        let mut block = rng.gen_range(0..3u32);
        for _ in 0..3_000 * scale() {
            let offsets: Vec<u16> = match rng.gen_range(0..20) {
                0 => (1..=291).collect(),
                1 => (1..=rng.gen_range(64..400u16)).map(|i| i * 5).collect(),
                2 => vec![3, 900, 2047, 2048],
                _ => {
                    let count = rng.gen_range(1..=12);
                    let drawn = (0..count).map(|_| rng.gen_range(1..=MAX_OFFSET)).collect();
                    prepare(drawn, true)
                }
            };
            ids.extend(offsets.iter().map(|&o| (block, o)));
            block += rng.gen_range(1..4);
        }
        let mut by_blocks = TidStore::with_options(options(insert_only)).unwrap();
        for run in ids.chunk_by(|a, b| a.0 == b.0) {
            let offsets: Vec<u16> = run.iter().map(|&(_, o)| o).collect();
            by_blocks.set_block_offsets(run[0].0, &offsets).unwrap();
        }
        let mut many = TidStore::with_options(options(insert_only)).unwrap();
        let split = ids.len() / 2;
        assert_eq!(many.insert_many(&ids[..split]).unwrap(), split as u64);
        assert_eq!(
            many.insert_many(&ids[split..]).unwrap(),
            (ids.len() - split) as u64
        );
        assert_eq!(many.unflushed_blocks(), by_blocks.unflushed_blocks());
        let model: BTreeSet<(u32, u16)> = ids.iter().copied().collect();
        check_whole(&many, &model);
        let forms = |store: &TidStore| -> Vec<(u32, bool)> {
            store
                .iter()
                .map(|item| item.map(|(b, offsets)| (b, offsets.is_embedded())))
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(forms(&many), forms(&by_blocks));
        many.flush_appends().unwrap();
        by_blocks.flush_appends().unwrap();
        check_whole(&many, &model);
        assert_eq!(many.memory_usage(), by_blocks.memory_usage());
        // Ids in blocks the tree holds (the ordinary path), then a new ascending batch.
        let mut model = model;
        let mut ops: Vec<(u32, u16)> = (0..200)
            .map(|_| (rng.gen_range(0..block), rng.gen_range(1..=MAX_OFFSET)))
            .collect();
        ops.extend((1..=100u16).map(|o| (block + 5, o * 3)));
        insert_many(&mut many, &mut model, &ops);
        check_whole(&many, &model);
    }
}
