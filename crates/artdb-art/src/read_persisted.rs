//! The lookup fast path through persisted inner nodes (W2's hot lookups).
//!
//! A persisted image comes from a file, so it gets every check the general path makes
//! ([`crate::read::Resolver::resolve`]: kind, count within the kind, depth, inline prefix length,
//! and a persisted child at a smaller offset than its persisted parent, which bounds every
//! descent). What this path saves is the rest: the source is asked once per lookup for its
//! [`QuickRegion`], and each level is then an offset check, one bit test and a view of the
//! kind's struct, with no call through the source, no `Result` and no `Entry`.
//!
//! Whatever it does not handle it hands back as [`Quick::Slow`] with the slot, depth and
//! persisted parent reached, and the general path continues from there (and reports what is
//! wrong, if anything is): leaves and packs, pages not verified yet, prefixes longer than the
//! header holds, keys that end at an inner node, heap words, and any image that fails a check.

use crate::node::{
    Header, Node16, Node256, Node4, Node48, KIND_NODE16, KIND_NODE256, KIND_NODE4, KIND_NODE48,
    PREFIX_INLINE_LEN_MAX,
};
use crate::persist::QuickRegion;
use crate::raw;
use crate::word::{self, TAG_INLINE, TAG_MASK, TAG_PERSISTED};
use crate::KEY_LEN_MAX;

/// Outcome of [`get`].
pub(crate) enum Quick<'a> {
    /// The lookup finished: the value, or `None` when the key is absent.
    Done(Option<&'a [u8]>),
    /// The general path continues at this slot and depth, below this persisted parent.
    Slow(&'a [u8; 8], usize, Option<u64>),
}

/// Whether `key` continues at `depth` with the `prefix_len` (1..=8) bytes of the header's
/// inline prefix. Short keys compare byte by byte (no `memcmp` call for W2's 4-byte keys).
#[inline(always)]
fn prefix_matches(header: &Header, key: &[u8], depth: usize, prefix_len: usize) -> bool {
    if key.len() >= depth + 8 {
        return header.inline_prefix_matches(key, depth, prefix_len);
    }
    let Some(rest) = key.get(depth..depth + prefix_len) else {
        return false;
    };
    rest.iter()
        .zip(header.prefix_inline(prefix_len))
        .all(|(a, b)| a == b)
}

/// Looks `key` up from `slot` at `depth` (below the persisted node at `parent`, if any) through
/// persisted inner nodes served by `region`.
#[inline(always)]
pub(crate) fn get<'a>(
    region: &QuickRegion<'a>,
    mut slot: &'a [u8; 8],
    mut depth: usize,
    parent: Option<u64>,
    key: &[u8],
) -> Quick<'a> {
    // The persisted parent's offset, u64::MAX for none (offsets are below 2^63).
    let mut parent = parent.unwrap_or(u64::MAX);
    let at_parent = |parent: u64| (parent != u64::MAX).then_some(parent);
    loop {
        let bits = word::load(slot);
        match bits & TAG_MASK {
            TAG_PERSISTED => {
                let offset = bits & !TAG_MASK;
                if offset >= parent {
                    return Quick::Slow(slot, depth, at_parent(parent));
                }
                let Some(bytes) = region.image(offset) else {
                    return Quick::Slow(slot, depth, at_parent(parent));
                };
                let Some(header) = raw::view::<Header>(bytes) else {
                    return Quick::Slow(slot, depth, at_parent(parent));
                };
                // The kind first: a leaf's or a pack's header has other fields where an inner
                // node keeps its prefix length and depth.
                let kind = header.kind;
                let inner = matches!(kind, KIND_NODE4 | KIND_NODE16 | KIND_NODE48 | KIND_NODE256);
                let prefix_len = header.prefix_len();
                let count = header.count();
                let well_formed =
                    inner && prefix_len <= PREFIX_INLINE_LEN_MAX && header.depth() == depth;
                if !well_formed {
                    // A dense pack (W2's leaf level) is answered here (node/pack.rs).
                    if let Some(value) = crate::node::dense_get(bytes, key, depth) {
                        return Quick::Done(value);
                    }
                    return Quick::Slow(slot, depth, at_parent(parent));
                }
                // A key that ends within or at this node (its value slot) goes to the general
                // path. Past here `at < key.len() <= KEY_LEN_MAX` (callers checked the key), so
                // `depth + prefix_len < KEY_LEN_MAX`, the resolver's bound, holds without a test.
                let at = depth + prefix_len;
                let Some(&byte) = key.get(at) else {
                    return Quick::Slow(slot, depth, at_parent(parent));
                };
                debug_assert!(at < KEY_LEN_MAX);
                if prefix_len != 0 && !prefix_matches(header, key, depth, prefix_len) {
                    return Quick::Done(None);
                }
                // Each arm checks the count against its kind, as `Resolver::resolve` does.
                let child = match kind {
                    KIND_NODE256 if count <= 256 => {
                        raw::view::<Node256>(bytes).map(|node| node.find(byte))
                    }
                    KIND_NODE48 if count <= 48 => {
                        raw::view::<Node48>(bytes).map(|node| node.find(byte))
                    }
                    KIND_NODE16 if count <= 16 => {
                        raw::view::<Node16>(bytes).map(|node| node.find(byte))
                    }
                    KIND_NODE4 if count <= 4 => {
                        raw::view::<Node4>(bytes).map(|node| node.find(byte))
                    }
                    _ => None,
                };
                match child {
                    Some(Some(child)) => {
                        region.prefetch(word::load(child), key.get(at + 1).copied());
                        slot = child;
                        depth = at + 1;
                        parent = offset;
                    }
                    Some(None) => return Quick::Done(None),
                    None => return Quick::Slow(slot, depth, at_parent(parent)),
                }
            }
            TAG_INLINE if bits & 0b1100_0000 == 0 => {
                let len = ((bits >> 3) & 0b111) as usize;
                return Quick::Done((key.len() == depth).then(|| word::inline_value(slot, len)));
            }
            _ if bits == 0 => return Quick::Done(None),
            _ => return Quick::Slow(slot, depth, at_parent(parent)),
        }
    }
}
