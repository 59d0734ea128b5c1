//! The lookup fast path through persisted inner nodes (W2's hot lookups).
//!
//! A persisted image comes from a file, so it gets every check the general path makes
//! ([`crate::lookup::Resolver::resolve`]: kind, count within the kind, depth, inline prefix length,
//! and a persisted child at a smaller offset than its persisted parent, which bounds every
//! descent). What this path saves is the rest: the source is asked once per lookup (or once
//! per [`crate::PointReader`], which also checks the root once: [`CheckedRoot`]) for its
//! [`QuickRegion`], and each level is then a compare against the walk's bound, one bit test,
//! the header word's checks and a view of the kind's struct, with no call through the source,
//! no `Result` and no `Entry`.
//!
//! Whatever it does not handle it hands back as [`Quick::Slow`] with the slot, depth and
//! persisted parent reached, and the general path continues from there (and reports what is
//! wrong, if anything is): leaves, wide packs, pages not verified yet, prefixes longer than the
//! header holds, keys that end at an inner node, heap words, and any image that fails a check.
//! Dense packs (W2's leaf level) and ordinary packs (a tree of random keys: `node::pack_get_checked`, with the checks `PackRef::from_image` and the
//! resolver make) are answered here.

use crate::lookup::GET_MANY_GROUP_LEN;
use crate::node::{
    dense_children_width, dense_image_len, probe_records, CheckedPack, Header, Layout, Node16,
    Node256, Node4, Node48, Probe, DENSE_HEADER_FIXED, KIND_NODE16, KIND_NODE256, KIND_NODE4,
    KIND_NODE48, NODE16_CAPACITY, NODE256_CAPACITY, NODE48_CAPACITY, NODE4_CAPACITY,
    PACK_HEADER_LEN, PACK_VALUE_WIDTH_MAX, PREFIX_INLINE_LEN_MAX,
};
use crate::persist::source::{QuickRegion, Walk};
use crate::raw;
use crate::word::{self, TAG_INLINE, TAG_MASK, TAG_PERSISTED};
use crate::KEY_LEN_MAX;

/// Outcome of [`get`].
#[derive(Clone, Copy)]
pub(crate) enum Quick<'a> {
    /// The lookup finished: the value, or `None` when the key is absent.
    Done(Option<&'a [u8]>),
    /// The general path continues at this slot and depth, below this persisted parent.
    Slow(&'a [u8; 8], usize, Option<u64>),
}

/// The first 8 header bytes as a little-endian word (node/mod.rs): kind (bits 0..8), flags,
/// count (16..32), prefix length (32..48), depth (48..64).
const HEAD_FLAGS_SHIFT: u32 = 8;
const HEAD_COUNT_SHIFT: u32 = 16;
const HEAD_PREFIX_SHIFT: u32 = 32;
const HEAD_DEPTH_SHIFT: u32 = 48;
/// Kind, prefix length and depth: a Node256 with no prefix at the expected depth (W2's inner
/// levels) is one masked compare of the header word against [`node256_head`].
const NODE256_HEAD_MASK: u64 = 0xFFFF_FFFF_0000_00FF;

/// Children each inner kind holds, by kind byte (0 for the other kinds).
const INNER_CAPACITY: [usize; 8] = [
    0,
    NODE4_CAPACITY,
    NODE16_CAPACITY,
    NODE48_CAPACITY,
    NODE256_CAPACITY,
    0,
    0,
    0,
];
/// Each inner kind's fixed body (header included), by kind byte.
const INNER_BODY_LEN: [usize; 8] = [
    usize::MAX,
    core::mem::size_of::<Node4>(),
    core::mem::size_of::<Node16>(),
    core::mem::size_of::<Node48>(),
    core::mem::size_of::<Node256>(),
    usize::MAX,
    usize::MAX,
    usize::MAX,
];

/// The header word fields [`NODE256_HEAD_MASK`] keeps, for a Node256 with no prefix at `depth`.
#[inline(always)]
fn node256_head(depth: usize) -> u64 {
    // depth <= key.len() <= KEY_LEN_MAX < 2^16: the shift keeps every bit.
    u64::from(KIND_NODE256) | (depth as u64) << HEAD_DEPTH_SHIFT
}

/// Looks `key` up from `slot` at `depth` (below the persisted node at `parent`, if any) through
/// persisted inner nodes served by `region`.
///
/// Each level makes the checks of [`crate::lookup::Resolver::resolve`] that a lookup through
/// that node depends on (and hands anything else to the general path), in their cheapest
/// forms: the region's (offset below the parent, past the page header, page verified, inside
/// the region: [`QuickRegion::image`]), then the header word read once (`head`): a child
/// its parent hinted to be a dense pack is tried first, the whole word against the hint
/// (`dense_get_hinted`); a Node256 with no prefix at this depth is recognised by one masked
/// compare (kind, prefix length, depth) and its count checked against 256; other inner kinds
/// get the stored depth and the inline prefix length (at most 8) in one subtraction and
/// compare, the kind by a range test and the count in the kind's arm; an unhinted dense pack's
/// header is one masked compare ([`crate::node::dense_get`]). The body length is checked by the
/// view of the kind's struct.
#[inline(always)]
pub(crate) fn get<'a>(
    region: &QuickRegion<'a>,
    slot: &'a [u8; 8],
    depth: usize,
    parent: Option<u64>,
    key: &[u8],
) -> Quick<'a> {
    let mut descent = Descent::new(region, slot, depth, parent);
    loop {
        match descent.level::<false>(key) {
            Level::Descend => {}
            Level::Done(value) => return Quick::Done(value),
            // (Only a group's levels stop at a pack's fence; answered here all the same.)
            Level::Pack(image, layout, probe) => {
                return Quick::Done(probe_records(image, &layout, key, probe))
            }
            Level::Slow => return descent.slow(),
        }
    }
}

/// Looks up `keys` (at most [`GET_MANY_GROUP_LEN`]) from `starts` (each a slot and depth with
/// no persisted parent, where the heap group walk handed them on) through the quick persisted
/// walk, one level of every lookup per round, each prefetching what it reads in the next round
/// (the child's header and the key's slot; a hinted pack's header and fence; a hinted dense
/// pack's value), so that the misses of different keys overlap: the persisted side of
/// `View::get_many`. `out[i]` receives `keys[i]`'s outcome, a [`Quick::Slow`] for the caller to
/// finish as `get` does.
pub(crate) fn get_group<'a>(
    region: &QuickRegion<'a>,
    keys: &[&[u8]],
    starts: &[(&'a [u8; 8], usize)],
    out: &mut [Quick<'a>],
) {
    let len = keys
        .len()
        .min(starts.len())
        .min(out.len())
        .min(GET_MANY_GROUP_LEN);
    let mut descents: [Option<Descent<'_, 'a>>; GET_MANY_GROUP_LEN] =
        core::array::from_fn(|_| None);
    for (i, &(slot, depth)) in starts.iter().enumerate().take(len) {
        region.prefetch(word::load(slot), keys[i].get(depth).copied());
        descents[i] = Some(Descent::new(region, slot, depth, None));
    }
    // Lookups whose fence search is done: the pack, its layout and the probe.
    let mut at_pack: [Option<(&'a [u8], Layout, Probe)>; GET_MANY_GROUP_LEN] =
        [None; GET_MANY_GROUP_LEN];
    let mut remaining = len;
    while remaining > 0 {
        for i in 0..len {
            let Some(descent) = descents[i].as_mut() else {
                continue;
            };
            let done = match descent.level::<true>(keys[i]) {
                Level::Descend => continue,
                Level::Done(value) => Quick::Done(value),
                Level::Slow => descent.slow(),
                Level::Pack(image, layout, probe) => {
                    at_pack[i] = Some((image, layout, probe));
                    Quick::Done(None)
                }
            };
            out[i] = done;
            descents[i] = None;
            remaining -= 1;
        }
    }
    for (i, pack) in at_pack.iter().enumerate().take(len) {
        if let Some((image, layout, probe)) = pack {
            out[i] = Quick::Done(probe_records(image, layout, keys[i], *probe));
        }
    }
}

/// Where one level of a quick walk left a lookup.
enum Level<'a> {
    /// The lookup finished.
    Done(Option<&'a [u8]>),
    /// The walk went down one level (its state is the child's).
    Descend,
    /// (`GROUP` only) an ordinary pack whose fence search is done, its record's lines
    /// prefetched: `node::probe_records` finishes it.
    Pack(&'a [u8], Layout, Probe),
    /// The general path must continue from the walk's state ([`Descent::slow`]).
    Slow,
}

/// The state of one lookup's quick walk: the slot it reads next, at `depth`, below the
/// persisted node at `parent` (`u64::MAX` for none), with the walk's bound and the value width
/// the last node hinted for dense pack children.
struct Descent<'r, 'a> {
    walk: Walk<'r, 'a>,
    slot: &'a [u8; 8],
    depth: usize,
    parent: u64,
    dense_width: Option<usize>,
}

impl<'r, 'a> Descent<'r, 'a> {
    #[inline(always)]
    fn new(
        region: &'r QuickRegion<'a>,
        slot: &'a [u8; 8],
        depth: usize,
        parent: Option<u64>,
    ) -> Descent<'r, 'a> {
        let parent = parent.unwrap_or(u64::MAX);
        Descent {
            walk: Walk::new(region, parent),
            slot,
            depth,
            parent,
            dense_width: None,
        }
    }

    /// The general path's starting point: the slot, depth and persisted parent reached.
    #[inline(always)]
    fn slow(&self) -> Quick<'a> {
        Quick::Slow(
            self.slot,
            self.depth,
            (self.parent != u64::MAX).then_some(self.parent),
        )
    }

    /// One level of the walk of `key` (see [`get`] for the checks). With `GROUP`, a descent
    /// also prefetches the child's lines (a group's lookup reads them a round later; a single
    /// walk reads them at once, so for it a prefetch is only instructions).
    #[inline(always)]
    fn level<const GROUP: bool>(&mut self, key: &[u8]) -> Level<'a> {
        let region = self.walk.region();
        let (slot, mut depth) = (self.slot, self.depth);
        let bits = word::load(slot);
        if bits & TAG_MASK != TAG_PERSISTED {
            return match bits & TAG_MASK {
                TAG_INLINE if bits & 0b1100_0000 == 0 => {
                    let len = ((bits >> 3) & 0b111) as usize;
                    Level::Done((key.len() == depth).then(|| word::inline_value(slot, len)))
                }
                _ if bits == 0 => Level::Done(None),
                _ => Level::Slow,
            };
        }
        let offset = bits & !TAG_MASK;
        // Below the parent (and inside the region), past the page header, page verified.
        let Some((bytes, head)) = self.walk.image_and_head(offset) else {
            return Level::Slow;
        };
        // A dense pack (W2's leaf level) whose parent hints its layout is answered first, from
        // the hint and the header word (`dense_get_hinted`); anything else goes on below.
        if let Some(width) = self.dense_width {
            if let Some(value) = dense_get_hinted(bytes, head, key, depth, width) {
                return Level::Done(value);
            }
        }
        let count = usize::from((head >> HEAD_COUNT_SHIFT) as u16);
        let child = if head & NODE256_HEAD_MASK == node256_head(depth) {
            // W2's inner levels. A key that ends here (its value slot) goes to the general
            // path; past here `depth < key.len() <= KEY_LEN_MAX`, the resolver's bound.
            let Some(&byte) = key.get(depth) else {
                return Level::Slow;
            };
            match raw::view::<Node256>(bytes) {
                Some(node) if count <= NODE256_CAPACITY => node.find(byte),
                _ => return Level::Slow,
            }
        } else {
            let kind = head as u8;
            // The stored depth and the inline prefix length in one test: the difference is the
            // prefix length when the depths match, and 2^16 or more (or wrapped) when not.
            let prefix_len =
                ((head >> HEAD_PREFIX_SHIFT) as u32).wrapping_sub((depth as u32) << 16) as usize;
            // The kind first: a leaf's or a pack's header has other fields where an inner node
            // keeps its prefix length and depth.
            let inner = kind.wrapping_sub(KIND_NODE4) <= KIND_NODE256 - KIND_NODE4;
            if !inner || prefix_len > PREFIX_INLINE_LEN_MAX {
                // A dense pack with no hint, or not the hinted layout, is answered here from
                // its header (node/pack/dense.rs).
                if let Some(value) = crate::node::dense_get(bytes, key, depth) {
                    return Level::Done(value);
                }
                // An ordinary pack (a tree of random keys), checked as the general path checks
                // it.
                if GROUP {
                    // A group's lookup stops after the fence search, with the record's lines
                    // prefetched: the group compares it after its last round.
                    match crate::node::pack_fence_checked(bytes, key, depth) {
                        Some(CheckedPack::Done(value)) => return Level::Done(value),
                        Some(CheckedPack::Records(image, layout, probe)) => {
                            let address = image.as_ptr() as usize;
                            raw::prefetch(address + probe.record_at);
                            raw::prefetch(address + probe.record_at + 63);
                            return Level::Pack(image, layout, probe);
                        }
                        None => {}
                    }
                } else if let Some(value) = crate::node::pack_get_checked(bytes, key, depth) {
                    return Level::Done(value);
                }
                return Level::Slow;
            }
            // The count within the kind and the body length, before anything is answered from
            // the node (the general path reports either first).
            let kind_index = usize::from(kind) & 7;
            if count > INNER_CAPACITY[kind_index] || bytes.len() < INNER_BODY_LEN[kind_index] {
                return Level::Slow;
            }
            let Some(header) = raw::view::<Header>(bytes) else {
                return Level::Slow;
            };
            // A key that ends within or at this node (its value slot) goes to the general
            // path. Past here `at < key.len() <= KEY_LEN_MAX` (callers checked the key), so
            // `depth + prefix_len < KEY_LEN_MAX`, the resolver's bound, holds without a test.
            let at = depth + prefix_len;
            let Some(&byte) = key.get(at) else {
                return Level::Slow;
            };
            debug_assert!(at < KEY_LEN_MAX);
            if prefix_len != 0 && !header.inline_prefix_matches(key, depth, prefix_len) {
                return Level::Done(None);
            }
            let found = match kind {
                KIND_NODE256 => raw::view::<Node256>(bytes).map(|node| node.find(byte)),
                KIND_NODE48 => raw::view::<Node48>(bytes).map(|node| node.find(byte)),
                KIND_NODE16 => raw::view::<Node16>(bytes).map(|node| node.find(byte)),
                KIND_NODE4 => raw::view::<Node4>(bytes).map(|node| node.find(byte)),
                _ => None,
            };
            let Some(found) = found else {
                return Level::Slow;
            };
            depth = at;
            found
        };
        match child {
            Some(child) => {
                // A node whose children are dense packs says so (node/mod.rs): the child's
                // value is then read where the hint puts it, together with its header.
                let flags = (head >> HEAD_FLAGS_SHIFT) as u8;
                self.dense_width = dense_children_width(flags);
                // A node whose children are ordinary packs says so: the child's header and
                // fence lines are loaded together (a pack's fence search waits for its header
                // otherwise, and its record for the fence).
                let bits = word::load(child);
                if crate::node::pack_children(flags) {
                    region.prefetch_pack(bits);
                } else if GROUP {
                    // A group's lookup reads the child a round later: start its lines now
                    // (header and the key's slot; a hinted dense pack's value).
                    match self.dense_width {
                        Some(width) => region.prefetch_dense(bits, key.get(depth + 1), width),
                        None => region.prefetch(bits, key.get(depth + 1).copied()),
                    }
                }
                // A single walk prefetches nothing else: its next level computes the header's
                // and the slot's addresses from the child word at once, and the core loads both
                // together. A prefetch (as `read::prefetch_for` does for heap nodes) only added
                // instructions: W2's hot pass was slower with it and its cold passes no faster
                // (measured in docs/benchmarks.md, W2).
                self.slot = child;
                self.depth = depth + 1;
                self.parent = offset;
                self.walk.descend();
                Level::Descend
            }
            None => Level::Done(None),
        }
    }
}

/// [`crate::node::dense_get`] of a dense pack with no prefix whose values are `width` bytes
/// wide, the layout its parent's `flags` hint (node/mod.rs), for a key whose last byte names the
/// entry (`key.len() == depth + 1`): `None` when the image is anything else (the general
/// `dense_get` then reads it). The value's address comes from the hint and the key, not from
/// the header, so the core loads the value's line together with the header's; the header is
/// then checked against the hint (kind, key width 1, count 256, no spare, value width, no
/// prefix) in one compare of `header`, the image's first 8 bytes as a little-endian word, a
/// predicted branch. The image length is checked before either is read, as `dense_get` checks
/// it: the same answers, and a wrong hint costs only speed.
#[inline(always)]
fn dense_get_hinted<'a>(
    bytes: &'a [u8],
    header: u64,
    key: &[u8],
    depth: usize,
    width: usize,
) -> Option<Option<&'a [u8]>> {
    if key.len() != depth + 1
        || width > PACK_VALUE_WIDTH_MAX
        || bytes.len() < dense_image_len(0, width)
    {
        return None;
    }
    let &byte = key.last()?;
    let at = PACK_HEADER_LEN + usize::from(byte) * width;
    let value = bytes.get(at..at + width)?;
    // Kind, key width, count, value width, spare, prefix length: the whole header word.
    (header == DENSE_HEADER_FIXED | (width as u64) << 32).then_some(Some(value))
}

/// The root's node, viewed as its kind.
#[derive(Clone, Copy)]
enum RootNode<'a> {
    Node4(&'a Node4),
    Node16(&'a Node16),
    Node48(&'a Node48),
    Node256(&'a Node256),
}

/// A persisted root inner node checked once, when a [`crate::PointReader`] is made, with the
/// checks [`get`] makes of a node at depth 0: its page is verified and it lies inside the
/// region, its kind is an inner kind, its count fits the kind, its body fits, its stored depth
/// is 0 and its prefix is held in the header. All of these depend only on the root's bytes and
/// its page's verified bit: the region's bytes do not change while it is borrowed (the promise
/// of [`QuickRegion`]) and a verified bit, once set, is never cleared, so every lookup through
/// the reader may skip them and start at the root's child (`get_below_root`).
#[derive(Clone, Copy)]
pub(crate) struct CheckedRoot<'a> {
    offset: u64,
    header: &'a Header,
    node: RootNode<'a>,
    prefix_len: usize,
}

impl<'a> CheckedRoot<'a> {
    /// The root word `root` checked, or `None` when it does not name an inner node the region
    /// serves that passes the checks (lookups then take [`get`] from the root word, which hands
    /// whatever is wrong to the general path).
    pub(crate) fn new(region: &QuickRegion<'a>, root: &'a [u8; 8]) -> Option<CheckedRoot<'a>> {
        let bits = word::load(root);
        if bits & TAG_MASK != TAG_PERSISTED {
            return None;
        }
        let offset = bits & !TAG_MASK;
        let bytes = region.image(offset)?;
        let header = raw::view::<Header>(bytes)?;
        let prefix_len = header.prefix_len();
        let count = header.count();
        let inner = matches!(
            header.kind,
            KIND_NODE4 | KIND_NODE16 | KIND_NODE48 | KIND_NODE256
        );
        if !inner || header.depth() != 0 || prefix_len > PREFIX_INLINE_LEN_MAX {
            return None;
        }
        let node = match header.kind {
            KIND_NODE4 if count <= NODE4_CAPACITY => RootNode::Node4(raw::view(bytes)?),
            KIND_NODE16 if count <= NODE16_CAPACITY => RootNode::Node16(raw::view(bytes)?),
            KIND_NODE48 if count <= NODE48_CAPACITY => RootNode::Node48(raw::view(bytes)?),
            KIND_NODE256 if count <= NODE256_CAPACITY => RootNode::Node256(raw::view(bytes)?),
            _ => return None,
        };
        Some(CheckedRoot {
            offset,
            header,
            node,
            prefix_len,
        })
    }
}

/// [`get`] from the root word `root_slot`, whose node `root` was checked when the reader was
/// made: the root's prefix and child search, then [`get`] from the child (below the root).
#[inline(always)]
pub(crate) fn get_below_root<'a>(
    region: &QuickRegion<'a>,
    root_slot: &'a [u8; 8],
    root: &CheckedRoot<'a>,
    key: &[u8],
) -> Quick<'a> {
    let at = root.prefix_len;
    // A key that ends within or at the root (its value slot) goes to the general path.
    let Some(&byte) = key.get(at) else {
        return Quick::Slow(root_slot, 0, None);
    };
    if at != 0 && !root.header.inline_prefix_matches(key, 0, at) {
        return Quick::Done(None);
    }
    let found = match root.node {
        RootNode::Node4(node) => node.find(byte),
        RootNode::Node16(node) => node.find(byte),
        RootNode::Node48(node) => node.find(byte),
        RootNode::Node256(node) => node.find(byte),
    };
    let Some(child) = found else {
        return Quick::Done(None);
    };
    // No prefetch of the child: a root has at most 256 children, which every lookup shares,
    // so they are in cache whenever lookups are hot (and a prefetch does not fault a cold page
    // in). It was a measurable share of a W2 lookup's instructions (`w2_hot_profile`).
    get(region, child, at + 1, Some(root.offset), key)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use crate::node::{
        dense_children_width, pack_children, InnerRef, PackRef, FLAGS_AT, KIND_DENSE, KIND_PACK,
    };
    use crate::test_support::xorshift;
    use crate::word::{self, Word};
    use crate::{MemoryNodeStore, Tree};

    /// Dense pack images of every value width (and one over the maximum), with and without a
    /// prefix, whole, cut short, longer, or with a header bit flipped, read with the right hint
    /// and with wrong ones, by keys that end at, before and past the entry's byte: whatever the
    /// hinted read answers, the header's read (`dense_get`) answers the same, and a well-formed
    /// image with its own width as the hint is answered by the hinted read.
    #[test]
    fn hinted_dense_reads_agree_with_the_header() {
        let mut next = xorshift(7);
        let mut answered = 0;
        for _ in 0..20_000 {
            let width = (next() % 18) as usize;
            let prefix_len = if next() % 4 == 0 {
                (next() % 3) as usize
            } else {
                0
            };
            let mut image = vec![KIND_DENSE, 1, 0, 1, width as u8, 0, prefix_len as u8, 0];
            image.extend(next().to_le_bytes());
            image.extend((0..prefix_len + 256 * width).map(|_| next() as u8));
            let damage = next() % 6;
            match damage {
                0 => image[(next() % 8) as usize] ^= 1 << (next() % 8),
                1 => image.truncate((next() % (image.len() as u64 + 1)) as usize),
                2 => image.extend([0xAB; 9]),
                _ => {}
            }
            let hint = if next() % 3 == 0 {
                (next() % 32) as usize
            } else {
                width
            };
            let depth = (next() % 3) as usize;
            let key_len = match next() % 5 {
                0 => depth,
                1 => depth + 2,
                2 => depth + 1 + prefix_len,
                _ => depth + 1,
            };
            let key: Vec<u8> = (0..key_len).map(|_| next() as u8).collect();
            // (An image shorter than a header word is refused by the length test first.)
            let head = image
                .first_chunk::<8>()
                .map_or(0, |h| u64::from_le_bytes(*h));
            let hinted = super::dense_get_hinted(&image, head, &key, depth, hint);
            if let Some(answer) = hinted {
                assert_eq!(Some(answer), crate::node::dense_get(&image, &key, depth));
                answered += 1;
            }
            let well_formed = damage >= 2 && prefix_len == 0 && width <= 16;
            if well_formed && hint == width && key_len == depth + 1 {
                let at = 16 + usize::from(key[depth]) * width;
                assert_eq!(hinted, Some(Some(&image[at..at + width])));
            }
        }
        assert!(answered > 3_000, "{answered}");
    }

    /// Offsets of the inner images reachable from `root` in `store`, each with the first 8
    /// header bytes of each of its persisted children.
    fn child_heads(store: &MemoryNodeStore, root: u64) -> Vec<(usize, Vec<[u8; 8]>)> {
        let bytes = store.bytes();
        let mut found = Vec::new();
        let mut pending = vec![root];
        while let Some(bits) = pending.pop() {
            let Word::Persisted(offset) = word::decode(bits) else {
                continue;
            };
            let Ok(inner) = InnerRef::from_image(&bytes[offset as usize..]) else {
                continue;
            };
            let mut heads = Vec::new();
            let mut start = 0;
            while let Some((byte, slot)) = inner.next_from(start) {
                let child = word::load(slot);
                if let Word::Persisted(at) = word::decode(child) {
                    let at = at as usize;
                    heads.push(bytes[at..at + 8].try_into().unwrap());
                }
                pending.push(child);
                start = usize::from(byte) + 1;
            }
            found.push((offset as usize, heads));
        }
        found
    }

    /// Offsets of the inner images reachable from `root` in `store`, each with the value widths
    /// of its dense pack children that have no prefix.
    fn inner_images(store: &MemoryNodeStore, root: u64) -> Vec<(usize, Vec<usize>)> {
        child_heads(store, root)
            .into_iter()
            .map(|(offset, heads)| {
                let dense = heads
                    .iter()
                    .filter(|head| head[0] == KIND_DENSE && head[6] == 0 && head[7] == 0)
                    .map(|head| usize::from(head[4]))
                    .collect();
                (offset, dense)
            })
            .collect()
    }

    /// Every answer of `tree` (and of a point reader of its snapshot) for the keys of `model`,
    /// keys one past each and absent keys around them, against `model`.
    fn check_reads(tree: &mut Tree, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
        let snapshot = tree.snapshot();
        let reader = snapshot.point_reader();
        let mut probes: Vec<Vec<u8>> = Vec::new();
        for key in model.keys() {
            probes.push(key.clone());
            let mut next = key.clone();
            if let Some(last) = next.last_mut() {
                *last = last.wrapping_add(1);
            }
            probes.push(next);
            let mut longer = key.clone();
            longer.push(0);
            probes.push(longer);
            probes.push(key[..key.len() - 1].to_vec());
        }
        for key in &probes {
            let expected = model.get(key).map(Vec::as_slice);
            assert_eq!(reader.get(key).unwrap(), expected, "{key:?}");
            assert_eq!(tree.get(key).unwrap(), expected, "{key:?}");
        }
        // `get_many` (the persisted group walk) in batches of several sizes.
        let mut out = Vec::new();
        for (i, batch) in probes.chunks(1 + probes.len() % 37).enumerate() {
            let keys: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
            if i % 2 == 0 {
                snapshot.get_many(&keys, &mut out).unwrap();
            } else {
                tree.get_many(&keys, &mut out).unwrap();
            }
            for (key, value) in batch.iter().zip(&out) {
                assert_eq!(*value, model.get(key).map(Vec::as_slice), "{key:?}");
            }
        }
    }

    /// 4-byte keys `0, a, b, c` for `a` in 0..6, `a + 2` values of `b` and every `c` (full runs
    /// of 256 become dense packs; parents of 2 to 7 of them), then a run short of 256; values
    /// of `width` bytes derived from the key.
    fn dense_pairs(width: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let keys = (0..6u8)
            .flat_map(|a| (0..a + 2).flat_map(move |b| (0..=255u8).map(move |c| [0, a, b, c])))
            .chain((0..77u8).map(|c| [0, 6, 0, c]));
        keys.map(|key| {
            let seed = u32::from_be_bytes(key) as usize;
            let value = (0..width).map(|j| (seed * 7 + j) as u8).collect();
            (key.to_vec(), value)
        })
        .collect()
    }

    #[test]
    fn dense_children_hints_are_written_and_never_trusted() {
        for width in [1usize, 3, 7] {
            let model = dense_pairs(width);
            let mut store = MemoryNodeStore::new();
            let (root, len) = Tree::bulk_persist(model.iter(), &mut store).unwrap();
            let images = inner_images(&store, root.to_bits());
            let mut hinted = 0;
            for (offset, dense) in &images {
                let flags = store.bytes()[offset + FLAGS_AT];
                match dense_children_width(flags) {
                    // A hint names the width of a dense child it has.
                    Some(hint) => {
                        assert!(dense.contains(&hint), "{offset}: {flags:#x} {dense:?}");
                        hinted += 1;
                    }
                    None => assert!(dense.is_empty(), "{offset}: no hint over {dense:?}"),
                }
            }
            // Every parent of dense packs (six inner nodes below the root) is hinted here: its
            // last child is one.
            assert_eq!(hinted, 6, "width {width}");
            let mut tree = Tree::open(root, len, Arc::new(store.clone())).unwrap();
            check_reads(&mut tree, &model);

            // Wrong hints (other widths, the bit on nodes without dense children, garbage)
            // change no answer: they only aim a prefetch.
            let mut next = xorshift(width as u64 + 1);
            for (offset, _) in &images {
                store.bytes_mut()[offset + FLAGS_AT] = next() as u8;
            }
            let mut tree = Tree::open(root, len, Arc::new(store.clone())).unwrap();
            check_reads(&mut tree, &model);

            // A heap tree persisted (the checkpoint's writer) gets the hints too, and a tree
            // changed after opening keeps answering right through its next checkpoint.
            let heap = Tree::bulk_build(model.iter()).unwrap();
            let mut store = MemoryNodeStore::new();
            let root = heap.persist(&mut store).unwrap();
            let hinted = inner_images(&store, root.to_bits())
                .iter()
                .filter(|(offset, dense)| {
                    let flags = store.bytes()[offset + FLAGS_AT];
                    assert_eq!(
                        dense_children_width(flags).is_some(),
                        !dense.is_empty(),
                        "{offset}"
                    );
                    dense_children_width(flags).is_some_and(|hint| dense.contains(&hint))
                })
                .count();
            assert_eq!(hinted, 6, "width {width}");
            let tree = Tree::open(root, len, Arc::new(store.clone())).unwrap();
            change_and_checkpoint(tree, store, model, 97, |i| vec![i as u8; width]);
        }
    }

    /// Removes every other one of each `step`-th key of `model` from `tree` (opened from
    /// `store`) and gives the others the value `value(i)`, checks the reads, persists the
    /// tree into `store`, opens it again and checks the reads again.
    fn change_and_checkpoint(
        mut tree: Tree,
        mut store: MemoryNodeStore,
        mut model: BTreeMap<Vec<u8>, Vec<u8>>,
        step: usize,
        value: impl Fn(usize) -> Vec<u8>,
    ) {
        let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
        for (i, key) in keys.iter().enumerate().step_by(step) {
            if i % 2 == 0 {
                tree.remove(key).unwrap();
                model.remove(key);
            } else {
                let value = value(i);
                tree.insert(key, &value).unwrap();
                model.insert(key.clone(), value);
            }
        }
        check_reads(&mut tree, &model);
        let root = tree.persist(&mut store).unwrap();
        let mut tree = Tree::open(root, model.len() as u64, Arc::new(store)).unwrap();
        check_reads(&mut tree, &model);
    }

    /// Ordinary pack images (kind 6) of random sorted entries, with and without a prefix,
    /// whole, cut short, longer, with fewer entries than they hold, of another kind or with too
    /// wide values, read by their own keys, keys one off, and keys of other lengths: whatever
    /// the quick walk's `pack_get_checked` answers, the general path (`PackRef::from_image`,
    /// then `read::pack_get`) answers the same, and every well-formed image is answered. (Both
    /// probe with `node::probe` since 21c68ff, so what this checks is that every image
    /// `pack_get_checked`'s cheaper checks accept is one `from_image` accepts, and that they
    /// accept every well-formed one.)
    #[test]
    fn checked_pack_reads_agree_with_the_general_path() {
        let mut next = xorshift(11);
        let mut answered = 0;
        let mut found = 0;
        for _ in 0..20_000 {
            let key_width = 1 + (next() % 9) as usize;
            let value_width = (next() % 17) as usize;
            let prefix_len = if next() % 4 == 0 {
                (next() % 3) as usize
            } else {
                0
            };
            let capacity = 2 + (next() % 300) as usize;
            let mut suffixes: Vec<Vec<u8>> = (0..capacity)
                .map(|_| (0..key_width).map(|_| next() as u8).collect())
                .collect();
            suffixes.sort();
            suffixes.dedup();
            let count = suffixes.len();
            if count < 2 {
                continue;
            }
            let spare = (next() % 4) as usize;
            let capacity = count + spare;
            let prefix: Vec<u8> = (0..prefix_len).map(|_| next() as u8).collect();
            let mut image = vec![
                KIND_PACK,
                key_width as u8,
                count as u8,
                (count >> 8) as u8,
                value_width as u8,
                spare as u8,
                prefix_len as u8,
                0,
            ];
            image.extend([0u8; 8]);
            image.extend(&prefix);
            let mut fence: Vec<u8> = suffixes.iter().map(|s| s[0]).collect();
            fence.resize(capacity, 0xEE);
            image.extend(&fence);
            let mut values = Vec::new();
            for suffix in &suffixes {
                let value: Vec<u8> = (0..value_width).map(|_| next() as u8).collect();
                image.extend(&suffix[1..]);
                image.extend(&value);
                values.push(value);
            }
            image.resize(image.len() + spare * (key_width - 1 + value_width), 0xEE);
            let damage = next() % 8;
            match damage {
                0 => image.truncate((next() % (image.len() as u64 + 1)) as usize),
                1 => image.extend([0xAB; 9]),
                2 => {
                    // Fewer entries (still sorted), the rest spare.
                    let fewer = (next() % count as u64) as usize;
                    image[2..4].copy_from_slice(&(fewer as u16).to_le_bytes());
                    image[5] = image[5].wrapping_add((count - fewer) as u8);
                }
                3 => image[0] = (next() % 10) as u8,
                4 => image[4] = 17 + (next() % 8) as u8,
                _ => {}
            }
            let depth = (next() % 3) as usize;
            let pick = (next() % count as u64) as usize;
            let mut key: Vec<u8> = (0..depth).map(|_| next() as u8).collect();
            key.extend(&prefix);
            key.extend(&suffixes[pick]);
            match next() % 5 {
                0 => {
                    let last = key.len() - 1;
                    key[last] = key[last].wrapping_add(1);
                }
                1 => key.push(0),
                2 => {
                    key.pop();
                }
                _ => {}
            }
            let quick = crate::node::pack_get_checked(&image, &key, depth);
            let general = PackRef::from_image(&image)
                .ok()
                .map(|pack| crate::lookup::pack_get(&pack, &key[depth..]));
            if let Some(answer) = quick {
                assert_eq!(Some(answer), general, "damage {damage}");
                answered += 1;
                found += usize::from(answer.is_some());
            } else if damage >= 5 {
                panic!("a well-formed pack is answered");
            }
            if damage >= 5 && key[depth + prefix_len..] == suffixes[pick][..] {
                assert_eq!(quick, Some(Some(&values[pick][..])));
            }
        }
        assert!(answered > 10_000, "{answered}");
        assert!(found > 3_000, "{found}");
    }

    /// Offsets of the inner images reachable from `root` in `store`, each with whether one of
    /// its children is an ordinary pack and whether one is a dense pack.
    fn pack_parents(store: &MemoryNodeStore, root: u64) -> Vec<(usize, bool, bool)> {
        child_heads(store, root)
            .into_iter()
            .map(|(offset, heads)| {
                let kind = |k: u8| heads.iter().any(|head| head[0] == k);
                (offset, kind(KIND_PACK), kind(KIND_DENSE))
            })
            .collect()
    }

    /// Random 8-byte keys (ordinary packs below two Node256 levels) and, mixed in, 5-byte
    /// keys: `bulk_persist` and a heap tree's `persist` hint ordinary pack children in their
    /// parents' flags, never on a node without one; the reads agree with the model with the
    /// hints, with garbage in their place, and after changes and another checkpoint.
    #[test]
    fn pack_children_hints_are_written_and_never_trusted() {
        let mut next = xorshift(5);
        let mut model = BTreeMap::new();
        for i in 0..60_000u64 {
            let key = if i % 50 == 0 {
                next().to_be_bytes()[..5].to_vec()
            } else {
                next().to_be_bytes().to_vec()
            };
            model.insert(key, (i * 3).to_le_bytes().to_vec());
        }
        let hinted_in = |store: &MemoryNodeStore, root: u64| {
            let parents = pack_parents(store, root);
            let mut hinted = 0;
            for &(offset, ordinary, dense) in &parents {
                let flags = store.bytes()[offset + FLAGS_AT];
                if pack_children(flags) {
                    assert!(ordinary && !dense, "{offset}: {flags:#x}");
                    hinted += 1;
                }
            }
            hinted
        };
        let mut store = MemoryNodeStore::new();
        let (root, len) = Tree::bulk_persist(model.iter(), &mut store).unwrap();
        assert!(hinted_in(&store, root.to_bits()) > 200);
        let mut tree = Tree::open(root, len, Arc::new(store.clone())).unwrap();
        check_reads(&mut tree, &model);
        let mut garbage = next();
        for (offset, _, _) in pack_parents(&store, root.to_bits()) {
            garbage = garbage.rotate_left(7) ^ 0x9E37;
            store.bytes_mut()[offset + FLAGS_AT] = garbage as u8;
        }
        let mut tree = Tree::open(root, len, Arc::new(store.clone())).unwrap();
        check_reads(&mut tree, &model);

        let heap = Tree::bulk_build(model.iter()).unwrap();
        let mut store = MemoryNodeStore::new();
        let root = heap.persist(&mut store).unwrap();
        assert!(hinted_in(&store, root.to_bits()) > 200);
        let tree = Tree::open(root, len, Arc::new(store.clone())).unwrap();
        change_and_checkpoint(tree, store, model, 13, |i| {
            (i as u64).to_le_bytes().to_vec()
        });
    }
}
