//! The heap-only lookup fast path used by `View::get`, and its group walk used by
//! `View::get_many` ([`get_group`]).
//!
//! A lookup in a tree that lives on the heap needs none of the checks persisted images need
//! (kind, length, count, depth, offset order: see `lookup/mod.rs`): every heap word reachable from a
//! version names a live, well-formed image of this crate (raw/mod.rs invariants 2 and 3). This path
//! walks heap words only, reading each node's kind and prefix length straight from its header
//! and searching the kind's body directly (Node256: the slot of the byte; Node48: the index
//! byte; Node16: SSE2; Node4: a scan), with no `Result`, no `Entry` enum and no allocation.
//!
//! Whatever it does not handle it hands back with the slot and depth reached ([`Fast::Slow`]
//! from [`get`], a bit of the returned mask from [`get_group`]), and the general path continues
//! from there: persisted words (checked there),
//! invalid tags, prefixes longer than the header holds, and keys that end at an inner node
//! (value slots). A slot reached through heap nodes only has a heap parent, so the general path
//! continues with no persisted parent.

use crate::lookup::{prefetch_for, prefetch_for_split, GET_MANY_GROUP_LEN};
use crate::node::{
    self, probe, probe_dense, probe_fence, probe_hinted, probe_hinted_fence, probe_hinted_records,
    probe_records, Header, HintedRun, Layout, LeafRef, Node16, Node256, Node4, Node48, Probe,
    HEADER_LEN, KIND_DENSE, KIND_NODE16, KIND_NODE256, KIND_NODE4, KIND_NODE48,
    PREFIX_INLINE_LEN_MAX,
};
use crate::raw::{self, Image};
use crate::word::{self, TAG_HEAP_LEAF, TAG_HEAP_NODE, TAG_HEAP_PACK_HINTED, TAG_INLINE, TAG_MASK};

/// Outcome of the fast path.
#[derive(Clone, Copy)]
pub(crate) enum Fast<'a> {
    /// The lookup finished: the value, or `None` when the key is absent.
    Done(Option<&'a [u8]>),
    /// The general path must continue at this slot and depth (no persisted parent).
    Slow(&'a [u8; 8], usize),
}

/// Views the heap image at `address` as `T`.
///
/// # Safety
/// `address` is a live heap image of this crate, at least `size_of::<T>()` bytes long, not
/// written or freed during `'a`.
#[inline(always)]
unsafe fn heap_view<'a, T: Image>(address: usize) -> Option<&'a T> {
    // SAFETY: live, at least size_of::<T>() bytes, unchanged during 'a (caller).
    let bytes = unsafe { raw::image::<'a>(address, core::mem::size_of::<T>()) };
    raw::view::<T>(bytes)
}

/// Compares `key` at `depth` with the node's prefix: `Ok` with the key's byte after the prefix
/// and that byte's depth; `Err(true)` when the key is absent (the prefix differs);
/// `Err(false)` when the general path must go on (a prefix longer than the header holds, or a
/// key that ends at or inside this node).
#[inline(always)]
fn past_prefix(header: &Header, key: &[u8], depth: usize) -> Result<(u8, usize), bool> {
    let prefix_len = header.prefix_len();
    let mut at = depth;
    if prefix_len != 0 {
        if prefix_len > PREFIX_INLINE_LEN_MAX {
            return Err(false);
        }
        if !header.inline_prefix_matches(key, depth, prefix_len) {
            return Err(true);
        }
        at += prefix_len;
    }
    match key.get(at) {
        Some(&byte) => Ok((byte, at)),
        None => Err(false),
    }
}

/// The step that [`past_prefix`]'s `Err(absent)` ends in.
#[inline(always)]
fn exit<'a>(absent: bool, slot: &'a [u8; 8], depth: usize) -> Step<'a> {
    if absent {
        Step::Done(None)
    } else {
        Step::Slow(slot, depth)
    }
}

/// One level of a heap lookup.
pub(crate) enum Step<'a> {
    /// The lookup finished.
    Done(Option<&'a [u8]>),
    /// Continue at this child slot and depth.
    Descend(&'a [u8; 8], usize),
    /// A heap pack (its image and the layout its header gave) whose fence search is done:
    /// compare its records next.
    Pack(&'a [u8], Layout, Probe),
    /// A hinted heap pack whose fence search, from the word's hint, is done: compare the run's
    /// records next.
    Hinted(HintedRun<'a>),
    /// The general path must continue here.
    Slow(&'a [u8; 8], usize),
}

/// Advances a lookup of `key` by one level from `slot` at `depth`. With `SPLIT_PACKS` a pack
/// lookup stops after its fence search ([`Step::Pack`]) so a group can prefetch the record.
///
/// # Safety
/// `slot` belongs to a version whose heap images stay live and unwritten during `'a` (raw/mod.rs
/// invariants 2 and 3: a `Tree` borrowed shared, or a `Snapshot`).
#[inline(always)]
pub(crate) unsafe fn step<'a, const SPLIT_PACKS: bool>(
    slot: &'a [u8; 8],
    depth: usize,
    key: &[u8],
) -> Step<'a> {
    let bits = word::load(slot);
    match bits & TAG_MASK {
        TAG_HEAP_NODE if bits != 0 => {
            let address = bits as usize;
            // SAFETY: a heap node word names a live inner image (at least a header) of this
            // version, unchanged during 'a (caller).
            let Some(header) = (unsafe { heap_view::<Header>(address) }) else {
                return Step::Slow(slot, depth);
            };
            // The header's kind says which struct the live image is, so the image is at
            // least that struct's size, and it is unchanged during 'a (caller).
            // Node256 first, on a branch of its own, with the prefix compare inside each branch
            // (so the compiler does not fold the kind tests back into one jump table): the root
            // and the upper levels of a large tree are Node256s, and one compare is cheaper
            // there than a jump table. The other kinds keep a match of three.
            let (child, at) = if header.kind == KIND_NODE256 {
                let (byte, at) = match past_prefix(header, key, depth) {
                    Ok(found) => found,
                    Err(absent) => return exit(absent, slot, depth),
                };
                // SAFETY: a live Node256 image (kind), see above.
                let node = unsafe { heap_view::<Node256>(address) };
                (node.and_then(|node| node.find(byte)), at)
            } else {
                let (byte, at) = match past_prefix(header, key, depth) {
                    Ok(found) => found,
                    Err(absent) => return exit(absent, slot, depth),
                };
                let child = match header.kind {
                    KIND_NODE48 => {
                        // SAFETY: a live Node48 image (kind), see above.
                        let node = unsafe { heap_view::<Node48>(address) };
                        node.and_then(|node| node.find(byte))
                    }
                    KIND_NODE16 => {
                        // SAFETY: a live Node16 image (kind), see above.
                        let node = unsafe { heap_view::<Node16>(address) };
                        node.and_then(|node| node.find(byte))
                    }
                    KIND_NODE4 => {
                        // SAFETY: a live Node4 image (kind), see above.
                        let node = unsafe { heap_view::<Node4>(address) };
                        node.and_then(|node| node.find(byte))
                    }
                    _ => return Step::Slow(slot, depth),
                };
                (child, at)
            };
            match child {
                Some(child) => Step::Descend(child, at + 1),
                None => Step::Done(None),
            }
        }
        TAG_HEAP_PACK_HINTED => {
            let address = word::hinted_pack_address(bits);
            #[cfg(feature = "probe-ladder")]
            if !SPLIT_PACKS && crate::ladder::stage() == crate::ladder::WALK {
                return Step::Done(None);
            }
            // SAFETY: a hinted word names a live pack image of this version, not written or
            // freed during 'a (caller), and every pack has at least its 16-byte header.
            let head = unsafe { raw::image::<'a>(address, 8) };
            let header = u64::from_le_bytes(head.try_into().unwrap_or_default());
            // The pack's layout from its word: see `probe_hinted`.
            let (capacity, stride, full) = word::pack_hint_fields(bits);
            let count_guess = word::pack_count_guess(capacity, full);
            #[cfg(feature = "probe-ladder")]
            if !SPLIT_PACKS {
                let hint = (capacity, stride, count_guess);
                if let Some(step) = ladder_cut(address, header, hint, key, depth) {
                    return step;
                }
            }
            let key_width = key.len().wrapping_sub(depth);
            if let Some(len) = node::hinted_pack_len(header, capacity, stride, key_width) {
                // SAFETY: as above; this live pack's header agrees with the hint, which makes
                // `len` its length.
                let image = unsafe { raw::image::<'a>(address, len) };
                if SPLIT_PACKS {
                    match probe_hinted_fence(
                        image,
                        header,
                        capacity,
                        stride,
                        count_guess,
                        key,
                        depth,
                    ) {
                        Some(Some(run)) => return Step::Hinted(run),
                        Some(None) => return Step::Done(None),
                        None => {}
                    }
                } else if let Some(value) =
                    probe_hinted(image, header, capacity, stride, count_guess, key, depth)
                {
                    return Step::Done(value);
                }
            }
            // SAFETY: a hinted word names a live pack image of this version, not written or
            // freed during 'a (caller).
            unsafe { leaf_step::<SPLIT_PACKS>(address, slot, depth, key) }
        }
        // SAFETY: a heap leaf word names a live leaf or pack image of this version, not written
        // or freed during 'a (caller).
        TAG_HEAP_LEAF => unsafe {
            leaf_step::<SPLIT_PACKS>(word::heap_leaf_address(bits), slot, depth, key)
        },
        TAG_INLINE if bits & 0b1100_0000 == 0 => {
            let len = ((bits >> 3) & 0b111) as usize;
            Step::Done((key.len() == depth).then(|| word::inline_value(slot, len)))
        }
        _ if bits == 0 => Step::Done(None),
        _ => Step::Slow(slot, depth),
    }
}

/// The probe ladder's cut after a hinted pack's header load (`ladder.rs`): `None` goes on with
/// the whole probe. Wrong answers by design (the feature is a timing diagnostic); every read
/// stays inside the pack, as the probe's do.
#[cfg(feature = "probe-ladder")]
#[inline(always)]
fn ladder_cut<'a>(
    address: usize,
    header: u64,
    (capacity, stride, count_guess): (usize, usize, usize),
    key: &[u8],
    depth: usize,
) -> Option<Step<'a>> {
    use crate::ladder::{DEPENDENT, EMPTY_BRANCH, HEADER, WINDOW};
    let stage = crate::ladder::stage();
    // A branch that waits on `x` and is always predicted right.
    let wait = |x: u64| Some(Step::Done((x == u64::MAX).then_some(&[][..])));
    match stage {
        HEADER => return wait(header),
        WINDOW | EMPTY_BRANCH => {}
        _ if stage >= DEPENDENT => {
            return wait(crate::ladder::dependent_adds(header, stage - DEPENDENT));
        }
        _ => return None,
    }
    // As in the probe: the fence is read only once the header agrees with the hint.
    let len = node::hinted_pack_len(header, capacity, stride, key.len().wrapping_sub(depth))?;
    // SAFETY: a hinted word names a live pack, not written or freed during 'a (the caller's
    // contract), whose header agrees with the hint, which makes `len` its length.
    let image = unsafe { raw::image::<'a>(address, len) };
    let count = ((header >> 16) & 0xFFFF) as usize;
    let run = node::search::window_eq(
        image.get(node::PACK_HEADER_LEN..)?,
        capacity,
        count,
        count_guess,
        *key.get(depth)?,
    )
    .map_or(u64::MAX - 1, |(_, _, run)| run as u64);
    if stage == EMPTY_BRANCH && run == 0 {
        return Some(Step::Done(None));
    }
    wait(run)
}

/// [`step`] at a heap leaf or pack (not answered from a hinted word's layout) at `address`.
///
/// # Safety
/// `address` is a live heap leaf or pack image of a version whose heap images stay live and
/// unwritten during `'a` (as for [`step`]).
#[inline(always)]
unsafe fn leaf_step<'a, const SPLIT_PACKS: bool>(
    address: usize,
    slot: &'a [u8; 8],
    depth: usize,
    key: &[u8],
) -> Step<'a> {
    // SAFETY: `address` is a live leaf or pack image, not written or freed during 'a (caller).
    let image = unsafe { node::heap_leaf_image::<'a>(address) };
    let rest = key.get(depth..).unwrap_or_default();
    if node::is_pack_image(image) {
        // A dense pack's entry is at a place the key's byte gives, with no fence to search: a
        // group gains nothing by splitting it, and the split probe's general layout work cost
        // `get_many` on dense keys more than twice the instructions of `get`.
        if !SPLIT_PACKS {
            return Step::Done(probe(image, key, depth));
        }
        if image.first() == Some(&KIND_DENSE) {
            let value = probe_dense(image, key, depth);
            // The caller reads the value after the group's last round: start its line.
            if let Some(value) = value {
                raw::prefetch(value.as_ptr() as usize);
            }
            return Step::Done(value);
        }
        return match probe_fence(image, key, depth) {
            Some((layout, probe)) => Step::Pack(image, layout, probe),
            None => Step::Done(None),
        };
    }
    match LeafRef::from_image(image) {
        Ok(leaf) => Step::Done((rest == leaf.suffix).then_some(leaf.value)),
        Err(_) => Step::Slow(slot, depth),
    }
}

/// Looks `key` up from `root` through heap words only.
///
/// # Safety
/// `root` is the root slot of a version whose heap images stay live and unwritten during `'a`
/// (raw/mod.rs invariants 2 and 3: a `Tree` borrowed shared, or a `Snapshot`).
// Always inlined: out of line (the benchmark harness's caller in another crate did not inline
// it) each lookup paid a call, six register saves and restores and its result through memory,
// a large share beside what a Node256 root's rejection of a key takes.
#[inline(always)]
pub(crate) unsafe fn get<'a>(root: &'a [u8; 8], key: &[u8]) -> Fast<'a> {
    let mut slot = root;
    let mut depth = 0usize;
    loop {
        // SAFETY: `slot` is the root or a child slot of this version (caller).
        match unsafe { step::<false>(slot, depth, key) } {
            Step::Descend(child, next) => {
                prefetch_for(word::load(child), key, next);
                slot = child;
                depth = next;
            }
            Step::Done(value) => return Fast::Done(value),
            Step::Pack(image, layout, probe) => {
                return Fast::Done(probe_records(image, &layout, key, probe));
            }
            Step::Hinted(run) => return Fast::Done(probe_hinted_records(run, key)),
            Step::Slow(slot, depth) => return Fast::Slow(slot, depth),
        }
    }
}

/// Inner levels a lookup of a group walk passes in its first round (later rounds: one each):
/// the root and the level below it, the nodes that every key of a large tree shares (10M
/// random 8-byte keys: a Node256 and 256 Node256s, 520 KiB, then the packs).
const GROUP_FIRST_ROUND_LEVELS: usize = 2;

/// Looks up `keys` (at most [`GET_MANY_GROUP_LEN`]) together, prefetching what each lookup
/// reads next, so that the cache misses of different keys overlap instead of following one
/// another. The first round takes each lookup through up to [`GROUP_FIRST_ROUND_LEVELS`] inner
/// nodes in one go (the top of a tree, in cache for every key of a large one) and stops it at
/// the first word past them, whose lines it prefetches (a heap Node256 root, every large
/// tree's, is read once for the group, not once a lookup); each later round advances every lookup
/// still in inner nodes by one level (the lookups still walking are the set bits of a mask, so
/// a round keeps no list). A lookup that reaches a pack has its fence searched in the round
/// after its prefetch (from the word's hint when it has one, else from the header) and its
/// record lines prefetched; a dense pack's value is found in that round and its line
/// prefetched. All record compares run after the last walk round, when those lines had the
/// longest time to arrive. `values[i]` receives `keys[i]`'s value (`None` when it is absent);
/// the lookups the general path must finish are the set bits of the mask returned, each with
/// the slot and depth to continue from in `slow[i]` (and `None` in `values[i]`). Only the first
/// `keys.len()` (at most [`GET_MANY_GROUP_LEN`]) entries are written.
///
/// # Safety
/// As for [`get`].
pub(crate) unsafe fn get_group<'a>(
    root: &'a [u8; 8],
    keys: &[&[u8]],
    values: &mut [Option<&'a [u8]>; GET_MANY_GROUP_LEN],
    slow: &mut [(&'a [u8; 8], usize); GET_MANY_GROUP_LEN],
) -> u32 {
    let len = keys.len().min(GET_MANY_GROUP_LEN);
    let mut group = Group {
        keys: &keys[..len],
        values,
        slow,
        slow_lanes: 0,
        slots: [root; GET_MANY_GROUP_LEN],
        depths: [0usize; GET_MANY_GROUP_LEN],
        hinted_runs: [None; GET_MANY_GROUP_LEN],
        general_runs: [None; GET_MANY_GROUP_LEN],
        walking: 0,
        hinted: 0,
        general: 0,
    };
    // SAFETY: the root slot of this version (caller).
    match unsafe { heap_node256(root) } {
        Some(node) => {
            // A heap Node256 root (every large tree's): its header was read once for the
            // group, so each lookup's first level is its prefix compare and one child load.
            for i in 0..len {
                let key = group.keys[i];
                let step = match past_prefix(&node.header, key, 0) {
                    Ok((byte, at)) => match node.find(byte) {
                        // The second of the round's GROUP_FIRST_ROUND_LEVELS levels, if the
                        // child is an inner node (as in `advance`).
                        Some(child) => {
                            let bits = word::load(child);
                            if bits & TAG_MASK == TAG_HEAP_NODE && bits != 0 {
                                // SAFETY: a child slot of this version's root.
                                unsafe { advance::<1>(child, at + 1, key) }
                            } else {
                                prefetch_for_split(bits, key, at + 1);
                                Step::Descend(child, at + 1)
                            }
                        }
                        None => Step::Done(None),
                    },
                    Err(absent) => exit(absent, root, 0),
                };
                group.settle(i, step);
            }
        }
        None => {
            for i in 0..len {
                // SAFETY: the root slot of this version (caller).
                let step = unsafe { advance::<GROUP_FIRST_ROUND_LEVELS>(root, 0, group.keys[i]) };
                group.settle(i, step);
            }
        }
    }
    while group.walking != 0 {
        let mut lanes = group.walking;
        group.walking = 0;
        while lanes != 0 {
            // A set bit of the mask: under GET_MANY_GROUP_LEN, and under `len` (only lanes
            // below it are ever set).
            let i = lanes.trailing_zeros() as usize % GET_MANY_GROUP_LEN;
            lanes &= lanes - 1;
            let (slot, depth) = (group.slots[i], group.depths[i]);
            // SAFETY: a child slot of this version that a step of this version returned.
            let step = unsafe { advance::<1>(slot, depth, group.keys[i]) };
            group.settle(i, step);
        }
    }
    let mut lanes = group.hinted;
    while lanes != 0 {
        let i = lanes.trailing_zeros() as usize % GET_MANY_GROUP_LEN;
        lanes &= lanes - 1;
        if let Some(run) = group.hinted_runs[i] {
            group.values[i] = probe_hinted_records(run, group.keys[i]);
        }
    }
    let mut lanes = group.general;
    while lanes != 0 {
        let i = lanes.trailing_zeros() as usize % GET_MANY_GROUP_LEN;
        lanes &= lanes - 1;
        if let Some((image, layout, probe)) = group.general_runs[i] {
            group.values[i] = probe_records(image, &layout, group.keys[i], probe);
        }
    }
    group.slow_lanes
}

// The lane masks are `u32`s; a power of two makes the lanes' `% GET_MANY_GROUP_LEN` an `and`.
const _: () = assert!(GET_MANY_GROUP_LEN.is_power_of_two() && GET_MANY_GROUP_LEN <= 32);

/// Advances a group walk's lookup of `key` from `slot` at `depth` by up to `LEVELS` inner
/// nodes (each level after the first only while the child is a heap inner node, whose lines a
/// cache holds at the top of a tree), prefetching the lines of the word it stops at.
///
/// # Safety
/// As for [`step`].
#[inline(always)]
unsafe fn advance<'a, const LEVELS: usize>(
    mut slot: &'a [u8; 8],
    mut depth: usize,
    key: &[u8],
) -> Step<'a> {
    let mut left = LEVELS;
    loop {
        // SAFETY: a slot of this version (caller), or a child slot a step of it returned.
        match unsafe { step::<true>(slot, depth, key) } {
            Step::Descend(child, next) => {
                left -= 1;
                let bits = word::load(child);
                if left > 0 && bits & TAG_MASK == TAG_HEAP_NODE && bits != 0 {
                    slot = child;
                    depth = next;
                    continue;
                }
                prefetch_for_split(bits, key, next);
                return Step::Descend(child, next);
            }
            other => return other,
        }
    }
}

/// The heap Node256 that `slot` names, if it names one (borrowed for as long as the slot). Its
/// header is read first: only its kind makes viewing the image as a Node256 sound.
///
/// # Safety
/// As for [`step`], with `'a` the slot's borrow.
#[inline(always)]
unsafe fn heap_node256(slot: &[u8; 8]) -> Option<&Node256> {
    let bits = word::load(slot);
    if bits & TAG_MASK != TAG_HEAP_NODE || bits == 0 {
        return None;
    }
    let address = bits as usize;
    // SAFETY: a heap node word names a live inner image (at least a header) of this version,
    // unchanged during the slot's borrow (caller).
    let header = unsafe { heap_view::<Header>(address) }?;
    if header.kind != KIND_NODE256 {
        return None;
    }
    // SAFETY: a live Node256 image (its header's kind), unchanged during the slot's borrow
    // (caller).
    unsafe { heap_view::<Node256>(address) }
}

/// A group walk's state (see [`get_group`]): each lookup's lane `i` holds its slot and depth
/// while it walks (bit `i` of `walking`), or its fence search's result while its record
/// compare waits (bit `i` of `hinted` or of `general`, by the fence step that ran); a lookup
/// for the general path has bit `i` of `slow_lanes` and its place in `slow[i]`.
struct Group<'a, 'k, 'o> {
    keys: &'k [&'k [u8]],
    values: &'o mut [Option<&'a [u8]>; GET_MANY_GROUP_LEN],
    slow: &'o mut [(&'a [u8; 8], usize); GET_MANY_GROUP_LEN],
    slow_lanes: u32,
    slots: [&'a [u8; 8]; GET_MANY_GROUP_LEN],
    depths: [usize; GET_MANY_GROUP_LEN],
    /// A hinted pack's run, searched from its word's hint.
    hinted_runs: [Option<HintedRun<'a>>; GET_MANY_GROUP_LEN],
    /// A pack searched by the general fence step: its image, layout and probe.
    general_runs: [Option<(&'a [u8], Layout, Probe)>; GET_MANY_GROUP_LEN],
    walking: u32,
    hinted: u32,
    general: u32,
}

impl<'a> Group<'a, '_, '_> {
    /// Records where lane `i`'s round left it.
    #[inline(always)]
    fn settle(&mut self, i: usize, step: Step<'a>) {
        let i = i % GET_MANY_GROUP_LEN;
        match step {
            Step::Descend(child, next) => {
                self.slots[i] = child;
                self.depths[i] = next;
                self.walking |= 1 << i;
            }
            Step::Pack(image, layout, probe) => {
                let address = image.as_ptr() as usize;
                raw::prefetch(address + probe.record_at);
                raw::prefetch(address + probe.record_at + 63);
                self.general_runs[i] = Some((image, layout, probe));
                self.general |= 1 << i;
            }
            Step::Hinted(run) => {
                raw::prefetch(run.address());
                raw::prefetch(run.address() + 63);
                self.hinted_runs[i] = Some(run);
                self.hinted |= 1 << i;
            }
            Step::Done(value) => self.values[i] = value,
            Step::Slow(slot, depth) => {
                self.values[i] = None;
                self.slow[i] = (slot, depth);
                self.slow_lanes |= 1 << i;
            }
        }
    }
}

const _: () = assert!(HEADER_LEN == core::mem::size_of::<Header>());
