//! The heap-only lookup fast path used by `View::get`.
//!
//! A lookup in a tree that lives on the heap needs none of the checks persisted images need
//! (kind, length, count, depth, offset order: see `read.rs`): every heap word reachable from a
//! version names a live, well-formed image of this crate (raw.rs invariants 2 and 3). This path
//! walks heap words only, reading each node's kind and prefix length straight from its header
//! and searching the kind's body directly (Node256: the slot of the byte; Node48: the index
//! byte; Node16: SSE2; Node4: a scan), with no `Result`, no `Entry` enum and no allocation.
//!
//! Whatever it does not handle it hands back as [`Fast::Slow`] with the slot and depth reached,
//! and the general path (`View::get`) continues from there: persisted words (checked there),
//! invalid tags, prefixes longer than the header holds, and keys that end at an inner node
//! (value slots). A slot reached through heap nodes only has a heap parent, so the general path
//! continues with no persisted parent.

use crate::node::{
    self, probe, probe_fence, probe_records, Header, LeafRef, Node16, Node256, Node4, Node48,
    Probe, HEADER_LEN, KIND_NODE16, KIND_NODE256, KIND_NODE4, KIND_NODE48, PREFIX_INLINE_LEN_MAX,
};
use crate::raw::{self, Image};
use crate::read::{prefetch_for, prefetch_for_split, GET_MANY_GROUP_LEN};
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

/// One level of a heap lookup.
pub(crate) enum Step<'a> {
    /// The lookup finished.
    Done(Option<&'a [u8]>),
    /// Continue at this child slot and depth.
    Descend(&'a [u8; 8], usize),
    /// A heap pack whose fence search is done: compare its records next.
    Pack(usize, Probe),
    /// The general path must continue here.
    Slow(&'a [u8; 8], usize),
}

/// Advances a lookup of `key` by one level from `slot` at `depth`. With `SPLIT_PACKS` a pack
/// lookup stops after its fence search ([`Step::Pack`]) so a group can prefetch the record.
///
/// # Safety
/// `slot` belongs to a version whose heap images stay live and unwritten during `'a` (raw.rs
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
            let prefix_len = header.prefix_len();
            let mut at = depth;
            if prefix_len != 0 {
                if prefix_len > PREFIX_INLINE_LEN_MAX {
                    return Step::Slow(slot, depth);
                }
                if !header.inline_prefix_matches(key, depth, prefix_len) {
                    return Step::Done(None);
                }
                at += prefix_len;
            }
            let Some(&byte) = key.get(at) else {
                return Step::Slow(slot, depth);
            };
            // The header's kind says which struct the live image is, so the image is at
            // least that struct's size, and it is unchanged during 'a (caller).
            let child = match header.kind {
                KIND_NODE256 => {
                    // SAFETY: a live Node256 image (kind), see above.
                    let node = unsafe { heap_view::<Node256>(address) };
                    node.and_then(|node| node.find(byte))
                }
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
            match child {
                Some(child) => Step::Descend(child, at + 1),
                None => Step::Done(None),
            }
        }
        TAG_HEAP_LEAF | TAG_HEAP_PACK_HINTED => {
            let address = word::heap_leaf_address(bits);
            // SAFETY: a heap leaf word names a live leaf or pack image of this version, not
            // written or freed during 'a (caller).
            let image = unsafe { node::heap_leaf_image::<'a>(address) };
            let rest = key.get(depth..).unwrap_or_default();
            if node::is_pack_image(image) {
                if !SPLIT_PACKS {
                    return Step::Done(probe(image, key, depth));
                }
                return match probe_fence(image, key, depth) {
                    Some(probe) => Step::Pack(address, probe),
                    None => Step::Done(None),
                };
            }
            match LeafRef::from_image(image) {
                Ok(leaf) => Step::Done((rest == leaf.suffix).then_some(leaf.value)),
                Err(_) => Step::Slow(slot, depth),
            }
        }
        TAG_INLINE if bits & 0b1100_0000 == 0 => {
            let len = ((bits >> 3) & 0b111) as usize;
            Step::Done((key.len() == depth).then(|| word::inline_value(slot, len)))
        }
        _ if bits == 0 => Step::Done(None),
        _ => Step::Slow(slot, depth),
    }
}

/// Finishes a pack lookup of `key` that [`step`] left at `probe`.
///
/// # Safety
/// `address` is the heap pack [`step`] returned, of a version live and unwritten during `'a`.
#[inline(always)]
pub(crate) unsafe fn finish_pack<'a>(address: usize, probe: Probe, key: &[u8]) -> Option<&'a [u8]> {
    // SAFETY: a live heap pack of this version, unchanged during 'a (caller).
    let image = unsafe { node::heap_leaf_image::<'a>(address) };
    probe_records(image, key, probe)
}

/// Looks `key` up from `root` through heap words only.
///
/// # Safety
/// `root` is the root slot of a version whose heap images stay live and unwritten during `'a`
/// (raw.rs invariants 2 and 3: a `Tree` borrowed shared, or a `Snapshot`).
#[inline]
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
            Step::Pack(address, probe) => {
                // SAFETY: the pack `step` just returned, of this version (caller).
                let value = unsafe { finish_pack(address, probe, key) };
                return Fast::Done(value);
            }
            Step::Slow(slot, depth) => return Fast::Slow(slot, depth),
        }
    }
}

/// Where one lookup of a [`get_group`] stands.
#[derive(Clone, Copy)]
enum State<'a> {
    At(&'a [u8; 8], usize),
    Pack(usize, Probe),
    Finished,
}

/// Looks up `keys` (at most [`GET_MANY_GROUP_LEN`]) together, one level of every lookup per
/// round, prefetching what each lookup reads next, so that the cache misses of different keys
/// overlap instead of following one another. A pack costs two rounds: the fence search (header
/// and fence lines, prefetched together), then the record compare (its line prefetched when the
/// fence search found it). `out[i]` receives `keys[i]`'s outcome; a `Fast::Slow` is for the
/// general path to finish.
///
/// # Safety
/// As for [`get`].
pub(crate) unsafe fn get_group<'a>(root: &'a [u8; 8], keys: &[&[u8]], out: &mut [Fast<'a>]) {
    let mut states = [State::Finished; GET_MANY_GROUP_LEN];
    let len = keys.len().min(GET_MANY_GROUP_LEN).min(out.len());
    for state in states.iter_mut().take(len) {
        *state = State::At(root, 0);
    }
    let mut remaining = len;
    while remaining > 0 {
        for i in 0..len {
            let key = keys[i];
            let next = match states[i] {
                State::Finished => continue,
                // SAFETY: a slot of this version (caller).
                State::At(slot, depth) => match unsafe { step::<true>(slot, depth, key) } {
                    Step::Descend(child, next) => {
                        prefetch_for_split(word::load(child), key, next);
                        State::At(child, next)
                    }
                    Step::Pack(address, probe) => {
                        raw::prefetch(address + probe.record_at);
                        raw::prefetch(address + probe.record_at + 63);
                        State::Pack(address, probe)
                    }
                    Step::Done(value) => {
                        out[i] = Fast::Done(value);
                        State::Finished
                    }
                    Step::Slow(slot, depth) => {
                        out[i] = Fast::Slow(slot, depth);
                        State::Finished
                    }
                },
                State::Pack(address, probe) => {
                    // SAFETY: the pack `step` returned for this lookup, of this version (caller).
                    out[i] = Fast::Done(unsafe { finish_pack(address, probe, key) });
                    State::Finished
                }
            };
            if matches!(next, State::Finished) {
                remaining -= 1;
            }
            states[i] = next;
        }
    }
}

const _: () = assert!(HEADER_LEN == core::mem::size_of::<Header>());
