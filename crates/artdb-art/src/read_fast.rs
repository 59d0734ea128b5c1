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
    self, Header, LeafRef, Node16, Node256, Node4, Node48, PackRef, HEADER_LEN, KIND_NODE16,
    KIND_NODE256, KIND_NODE4, KIND_NODE48, KIND_PACK, PREFIX_INLINE_LEN_MAX,
};
use crate::raw::{self, Image};
use crate::read::{pack_get, prefetch_for};
use crate::word::{self, TAG_HEAP_LEAF, TAG_HEAP_NODE, TAG_INLINE, TAG_MASK};

/// Outcome of the fast path.
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
        let bits = word::load(slot);
        match bits & TAG_MASK {
            TAG_HEAP_NODE if bits != 0 => {
                let address = bits as usize;
                // SAFETY: a heap node word names a live inner image (at least a header) of this
                // version, unchanged during 'a (caller).
                let Some(header) = (unsafe { heap_view::<Header>(address) }) else {
                    return Fast::Slow(slot, depth);
                };
                let prefix_len = header.prefix_len();
                let mut at = depth;
                if prefix_len != 0 {
                    if prefix_len > PREFIX_INLINE_LEN_MAX {
                        return Fast::Slow(slot, depth);
                    }
                    match key.get(depth..depth + prefix_len) {
                        Some(part) if part == header.prefix_inline(prefix_len) => {}
                        _ => return Fast::Done(None),
                    }
                    at += prefix_len;
                }
                let Some(&byte) = key.get(at) else {
                    return Fast::Slow(slot, depth);
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
                    _ => return Fast::Slow(slot, depth),
                };
                let Some(child) = child else {
                    return Fast::Done(None);
                };
                depth = at + 1;
                prefetch_for(word::load(child), key, depth);
                slot = child;
            }
            TAG_HEAP_LEAF => {
                let address = (bits & !TAG_MASK) as usize;
                // SAFETY: a heap leaf word names a live leaf or pack image of this version,
                // never written after creation, not freed during 'a (caller).
                let image = unsafe { node::heap_leaf_image::<'a>(address) };
                let rest = key.get(depth..).unwrap_or_default();
                return Fast::Done(if image.first() == Some(&KIND_PACK) {
                    match PackRef::from_image(image) {
                        Ok(pack) => pack_get(&pack, rest),
                        Err(_) => return Fast::Slow(slot, depth),
                    }
                } else {
                    match LeafRef::from_image(image) {
                        Ok(leaf) => (rest == leaf.suffix).then_some(leaf.value),
                        Err(_) => return Fast::Slow(slot, depth),
                    }
                });
            }
            TAG_INLINE if bits & 0b1100_0000 == 0 => {
                let len = ((bits >> 3) & 0b111) as usize;
                return Fast::Done((key.len() == depth).then(|| word::inline_value(slot, len)));
            }
            _ if bits == 0 => return Fast::Done(None),
            _ => return Fast::Slow(slot, depth),
        }
    }
}

const _: () = assert!(HEADER_LEN == core::mem::size_of::<Header>());
