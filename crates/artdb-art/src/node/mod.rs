//! Node images: the common header, the four inner kinds (a file each), leaves, and the one place
//! where a node changes kind (grow, shrink, re-prefix).
//!
//! Every node is a fixed little-endian byte image made only of `u8` arrays (alignment 1, no
//! padding, no pointers other than child words), so the same struct views a heap allocation and a
//! persisted image in a read-only memory map. Heap images are allocated 8-byte aligned.
//!
//! Header (32 bytes, at offset 0 of every inner node):
//!
//! | offset | size | field        | meaning                                                    |
//! |--------|------|--------------|------------------------------------------------------------|
//! | 0      | 1    | kind         | 1 Node4, 2 Node16, 3 Node48, 4 Node256 (5 leaf, 6 pack, 7 dense pack) |
//! | 1      | 1    | flags        | a hint about the children (below), or 0                     |
//! | 2      | 2    | count        | number of children (u16 LE)                                |
//! | 4      | 2    | prefix_len   | compressed prefix length in bytes (u16 LE)                 |
//! | 6      | 2    | depth        | key bytes consumed above this node (u16 LE)                |
//! | 8      | 8    | version      | tree version that created this heap node; 0 when persisted |
//! | 16     | 8    | value        | child word of the key that ends at this node (0 = none)    |
//! | 24     | 8    | prefix       | the prefix when `prefix_len <= 8`                          |
//!
//! A prefix longer than 8 bytes is stored whole after the kind's fixed body, padded to 8 bytes
//! ("full prefix" path compression: no optimistic skipping, because inline values carry no key
//! to check against). Invariants (checked by `verify`):
//! 1. `count` fits the kind: Node4 1..=4, Node16 4..=16, Node48 13..=48, Node256 37..=256 for
//!    nodes shaped by inserts and removes (bulk-built nodes use the smallest kind that fits);
//! 2. Node4/Node16 keys are sorted and distinct; Node48 index entries name distinct used slots;
//! 3. `count + (value != 0) >= 2` (a node with one entry is collapsed into its parent's slot);
//! 4. `depth + prefix_len < KEY_LEN_MAX` and `depth` equals the key bytes consumed above.
//!
//! `flags` is a hint, never trusted and never checked: bit 7 set says that children of this node
//! are dense packs with no prefix whose values are `flags & 0x1F` bytes wide
//! ([`dense_children_width`]). The persisted lookup path reads a dense child's value where the
//! hint puts it, together with the child's header, and checks the header against the hint
//! (lookup/persisted.rs `dense_get_hinted`); a wrong hint costs only speed. Writers of persisted
//! images set it (persist/mod.rs, build/stream.rs); readers that predate it ignore the byte, and images
//! without it (0) are read from their header, as before. `flags` = 0x40 (bit 7 clear) says
//! that the children are ordinary packs (kind 6, [`pack_children`]): the
//! persisted lookup path then starts loading a child's first four lines (header and fence) as
//! it descends, so that the fence does not wait for the header's miss; readers that predate
//! it see bit 7 clear, no dense hint, as before. A node with both kinds of children keeps the
//! dense hint.

mod leaf;
mod node16;
mod node256;
mod node4;
mod node48;
mod pack;

pub(crate) use leaf::{
    alloc_leaf, free_heap_leaf, heap_leaf_image, heap_leaf_image_mut, leaf_image_len, LeafRef,
};
pub(crate) use node16::Node16;
pub(crate) use node256::Node256;
pub(crate) use node4::Node4;
pub(crate) use node48::Node48;
pub(crate) use pack::{
    alloc_pack, alloc_pack_spare, dense_get, dense_image_len, fill_dense_image, fits as fits_pack,
    heap_pack_find, hinted_pack_len, is_pack_image, pack_fence_checked, pack_get_checked, probe,
    probe_dense, probe_fence, probe_hinted, probe_hinted_fence, probe_hinted_records,
    probe_records, CheckedPack, HintedRun, Layout, PackMut, PackRef, PackWriter, Probe,
    DENSE_ENTRIES, DENSE_HEADER_FIXED, PACK_HEADER_LEN,
};
pub use pack::{
    pack_capacity_max, pack_capacity_max_for, PACK_AREA_LEN_MAX, PACK_ENTRIES_MAX,
    PACK_IMAGE_LEN_MAX, PACK_KEY_WIDTH_MAX, PACK_VALUE_WIDTH_MAX, PACK_WIDE_AREA_LEN_MAX,
    PACK_WIDE_VALUE_WIDTH_MAX,
};

use crate::raw::{self, Image};

/// Kind byte of a Node4.
pub(crate) const KIND_NODE4: u8 = 1;
/// Kind byte of a Node16.
pub(crate) const KIND_NODE16: u8 = 2;
/// Kind byte of a Node48.
pub(crate) const KIND_NODE48: u8 = 3;
/// Kind byte of a Node256.
pub(crate) const KIND_NODE256: u8 = 4;
/// Kind byte of a leaf.
pub(crate) const KIND_LEAF: u8 = 5;
/// Kind byte of a leaf pack.
pub(crate) const KIND_PACK: u8 = 6;
/// Kind byte of a dense pack: a full leaf pack of 256 one-byte suffixes whose fence is implicit
/// (entry `b` holds suffix byte `b`; node/pack/dense.rs).
pub(crate) const KIND_DENSE: u8 = 7;
/// Kind byte of a wide pack: a leaf pack of values over `PACK_VALUE_WIDTH_MAX` bytes, whose
/// sorted records hold a value slot and whose values sit in an area of their own (node/pack/wide.rs).
pub(crate) const KIND_WIDE: u8 = 8;

/// Children a Node4 holds.
pub const NODE4_CAPACITY: usize = 4;
/// Children a Node16 holds.
pub const NODE16_CAPACITY: usize = 16;
/// Children a Node48 holds.
pub const NODE48_CAPACITY: usize = 48;
/// Children a Node256 holds.
pub const NODE256_CAPACITY: usize = 256;
/// A Node16 left with this many children or fewer after a removal becomes a Node4. Growing
/// happens at 5, shrinking at 3: one key inserted and removed at the boundary does not thrash.
pub const NODE16_SHRINK_COUNT: usize = 3;
/// A Node48 left with this many children or fewer becomes a Node16 (grows at 17).
pub const NODE48_SHRINK_COUNT: usize = 12;
/// A Node256 left with this many children or fewer becomes a Node48 (grows at 49).
pub const NODE256_SHRINK_COUNT: usize = 36;

/// Bit 7 of an inner node's `flags`: its children are dense packs with no prefix whose values
/// are `flags & DENSE_CHILDREN_WIDTH_MASK` bytes wide (a hint: see the module doc).
const FLAG_DENSE_CHILDREN: u8 = 0x80;
/// The value width held by the flags' low bits (`PACK_VALUE_WIDTH_MAX` fits).
const DENSE_CHILDREN_WIDTH_MASK: u8 = 0x1F;
const _: () = assert!(pack::PACK_VALUE_WIDTH_MAX <= DENSE_CHILDREN_WIDTH_MASK as usize);

/// The `flags` byte that says "dense pack children, values `value_width` bytes wide", or 0 when
/// the width does not fit the hint (no dense pack has such values).
#[inline]
pub(crate) fn dense_children_flags(value_width: usize) -> u8 {
    match u8::try_from(value_width) {
        Ok(width) if width <= DENSE_CHILDREN_WIDTH_MASK => FLAG_DENSE_CHILDREN | width,
        _ => 0,
    }
}

/// The value width a `flags` byte hints for dense pack children, if it holds the hint.
#[inline(always)]
pub(crate) fn dense_children_width(flags: u8) -> Option<usize> {
    (flags & FLAG_DENSE_CHILDREN != 0).then_some(usize::from(flags & DENSE_CHILDREN_WIDTH_MASK))
}

/// `flags` of an inner node whose children are ordinary packs (kind 6; bit 7 clear, bit 6 set,
/// the low bits 0): a hint, see the module doc.
const FLAG_PACK_CHILDREN: u8 = 0x40;

/// The `flags` byte that says "ordinary pack children".
#[inline]
pub(crate) fn pack_children_flags() -> u8 {
    FLAG_PACK_CHILDREN
}

/// Whether a `flags` byte hints ordinary pack children.
#[inline(always)]
pub(crate) fn pack_children(flags: u8) -> bool {
    flags == FLAG_PACK_CHILDREN
}

/// Where `flags` sits in an inner node's image.
pub(crate) const FLAGS_AT: usize = 1;

/// Bytes of the common header.
pub(crate) const HEADER_LEN: usize = 32;
/// Longest prefix kept in the header; longer ones go after the body.
pub(crate) const PREFIX_INLINE_LEN_MAX: usize = 8;

/// `PREFIX_MASKS[n]`: the low `n` bytes of a little-endian word (`n <= PREFIX_INLINE_LEN_MAX`).
const PREFIX_MASKS: [u64; PREFIX_INLINE_LEN_MAX + 1] = {
    let mut masks = [0u64; PREFIX_INLINE_LEN_MAX + 1];
    let mut n = 1;
    while n <= PREFIX_INLINE_LEN_MAX {
        masks[n] = u64::MAX >> (64 - 8 * n);
        n += 1;
    }
    masks
};

/// `key[depth..]`'s first (up to) 8 bytes as a little-endian word, zero past the key's end
/// (`key[depth]` in the low byte). Loads that may overlap instead of a byte loop or a memcpy
/// call: for keys shorter than 8 bytes from `depth` (W2's 4-byte keys), whose prefix compare
/// was a memcmp call.
#[inline(always)]
pub(crate) fn key_word_at(key: &[u8], depth: usize) -> u64 {
    let len = key.len();
    if let Some(eight) = key.get(depth..depth + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(eight);
        return u64::from_le_bytes(word);
    }
    let n = len.saturating_sub(depth);
    if n == 0 {
        return 0;
    }
    // 1..=7 bytes left, at key[depth..len].
    if len >= 8 {
        // The key's last 8 bytes hold them at their top: shift them down (by 8 to 56 bits).
        let mut word = [0u8; 8];
        word.copy_from_slice(&key[len - 8..]);
        return u64::from_le_bytes(word) >> (8 * (8 - n));
    }
    if n >= 4 {
        // Two 4-byte loads, the second ending at the key's end; where they overlap they hold
        // the same bytes, so OR joins them.
        let mut low = [0u8; 4];
        low.copy_from_slice(&key[depth..depth + 4]);
        let mut high = [0u8; 4];
        high.copy_from_slice(&key[len - 4..]);
        return u64::from(u32::from_le_bytes(low))
            | u64::from(u32::from_le_bytes(high)) << (8 * (n - 4));
    }
    // 1..=3 bytes: the first, the middle and the last (the same byte more than once when n < 3).
    u64::from(key[depth])
        | u64::from(key[depth + n / 2]) << (8 * (n / 2))
        | u64::from(key[len - 1]) << (8 * (n - 1))
}

/// The common header of inner nodes (see the table above).
#[repr(C)]
pub(crate) struct Header {
    pub kind: u8,
    pub flags: u8,
    count: [u8; 2],
    prefix_len: [u8; 2],
    depth: [u8; 2],
    version: [u8; 8],
    /// Child word of the key that ends at this node.
    pub value: [u8; 8],
    prefix: [u8; 8],
}
// SAFETY: repr(C), only u8 and u8 arrays.
unsafe impl Image for Header {}
const _: () = assert!(core::mem::size_of::<Header>() == HEADER_LEN);
const _: () = assert!(core::mem::offset_of!(Header, version) == 8);
const _: () = assert!(core::mem::offset_of!(Header, value) == 16);
const _: () = assert!(core::mem::offset_of!(Header, prefix) == 24);

impl Header {
    #[inline]
    pub fn count(&self) -> usize {
        u16::from_le_bytes(self.count) as usize
    }
    #[inline]
    pub fn set_count(&mut self, count: usize) {
        self.count = (count as u16).to_le_bytes();
    }
    #[inline]
    pub fn prefix_len(&self) -> usize {
        u16::from_le_bytes(self.prefix_len) as usize
    }
    /// The inline prefix field as a little-endian word (byte i at bits 8i..8i+8).
    #[inline]
    pub fn prefix_word(&self) -> u64 {
        u64::from_le_bytes(self.prefix)
    }
    /// Whether `key` continues at `depth` with the node's prefix, for a prefix of
    /// `1..=PREFIX_INLINE_LEN_MAX` bytes (held in the header): one masked 8-byte compare, with
    /// no memcmp call, also when fewer than 8 key bytes are left ([`key_word_at`]).
    #[inline(always)]
    pub fn inline_prefix_matches(&self, key: &[u8], depth: usize, prefix_len: usize) -> bool {
        // A table of the masks, not a shift: one load that the compare takes as its operand,
        // against three instructions to build the mask.
        let mask = PREFIX_MASKS[prefix_len.min(PREFIX_INLINE_LEN_MAX)];
        if let Some(eight) = key.get(depth..depth + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(eight);
            return (u64::from_le_bytes(word) ^ self.prefix_word()) & mask == 0;
        }
        key.len().saturating_sub(depth) >= prefix_len
            && (key_word_at(key, depth) ^ self.prefix_word()) & mask == 0
    }
    #[inline]
    pub fn depth(&self) -> usize {
        u16::from_le_bytes(self.depth) as usize
    }
    #[inline]
    pub fn version(&self) -> u64 {
        u64::from_le_bytes(self.version)
    }
    #[inline]
    pub fn set_version(&mut self, version: u64) {
        self.version = version.to_le_bytes();
    }
}

/// Size of a kind's fixed body (header included); `None` for unknown kinds.
#[inline]
pub(crate) fn body_len(kind: u8) -> Option<usize> {
    match kind {
        KIND_NODE4 => Some(core::mem::size_of::<Node4>()),
        KIND_NODE16 => Some(core::mem::size_of::<Node16>()),
        KIND_NODE48 => Some(core::mem::size_of::<Node48>()),
        KIND_NODE256 => Some(core::mem::size_of::<Node256>()),
        _ => None,
    }
}

/// Capacity of a kind.
pub(crate) fn capacity(kind: u8) -> usize {
    match kind {
        KIND_NODE4 => NODE4_CAPACITY,
        KIND_NODE16 => NODE16_CAPACITY,
        KIND_NODE48 => NODE48_CAPACITY,
        _ => NODE256_CAPACITY,
    }
}

/// The smallest kind that holds `count` children.
pub(crate) fn kind_for(count: usize) -> u8 {
    if count <= NODE4_CAPACITY {
        KIND_NODE4
    } else if count <= NODE16_CAPACITY {
        KIND_NODE16
    } else if count <= NODE48_CAPACITY {
        KIND_NODE48
    } else {
        KIND_NODE256
    }
}

/// Bytes after the body taken by a prefix of `prefix_len` bytes.
#[inline]
pub(crate) fn prefix_tail_len(prefix_len: usize) -> usize {
    if prefix_len <= PREFIX_INLINE_LEN_MAX {
        0
    } else {
        prefix_len.div_ceil(8) * 8
    }
}

/// Total image length of an inner node.
#[inline]
pub(crate) fn inner_image_len(kind: u8, prefix_len: usize) -> Option<usize> {
    Some(body_len(kind)? + prefix_tail_len(prefix_len))
}

/// A read-only view of an inner node image.
#[derive(Clone, Copy)]
pub(crate) struct InnerRef<'a> {
    pub body: Body<'a>,
    pub prefix: &'a [u8],
    /// The whole image (fixed body and prefix tail).
    pub image: &'a [u8],
    /// File offset when the image is persisted (its children must lie below it).
    pub persisted: Option<u64>,
}

/// The kind-specific part of an [`InnerRef`].
#[derive(Clone, Copy)]
pub(crate) enum Body<'a> {
    N4(&'a Node4),
    N16(&'a Node16),
    N48(&'a Node48),
    N256(&'a Node256),
}

/// Why an image is not a usable inner node (for `Error::Persisted`).
pub(crate) type ImageFault = &'static str;

impl<'a> InnerRef<'a> {
    /// Views `bytes` (at least the image; maybe more) as an inner node.
    #[inline]
    pub fn from_image(bytes: &'a [u8]) -> Result<InnerRef<'a>, ImageFault> {
        let header = raw::view::<Header>(bytes).ok_or("image shorter than a node header")?;
        let prefix_len = header.prefix_len();
        let len = inner_image_len(header.kind, prefix_len).ok_or("unknown node kind")?;
        let image = bytes
            .get(..len)
            .ok_or("image shorter than its kind and prefix need")?;
        let body = match header.kind {
            KIND_NODE4 => Body::N4(raw::view(image).ok_or("short Node4")?),
            KIND_NODE16 => Body::N16(raw::view(image).ok_or("short Node16")?),
            KIND_NODE48 => Body::N48(raw::view(image).ok_or("short Node48")?),
            _ => Body::N256(raw::view(image).ok_or("short Node256")?),
        };
        let prefix = if prefix_len <= PREFIX_INLINE_LEN_MAX {
            &header.prefix[..prefix_len]
        } else {
            let start = len - prefix_tail_len(prefix_len);
            image
                .get(start..start + prefix_len)
                .ok_or("prefix outside the image")?
        };
        Ok(InnerRef {
            body,
            prefix,
            image,
            persisted: None,
        })
    }

    #[inline]
    pub fn header(&self) -> &'a Header {
        match self.body {
            Body::N4(node) => &node.header,
            Body::N16(node) => &node.header,
            Body::N48(node) => &node.header,
            Body::N256(node) => &node.header,
        }
    }

    #[inline]
    pub fn kind(&self) -> u8 {
        self.header().kind
    }

    #[inline]
    pub fn count(&self) -> usize {
        self.header().count()
    }

    /// The value slot (a child word; 0 = no key ends here).
    #[inline]
    pub fn value_slot(&self) -> &'a [u8; 8] {
        &self.header().value
    }

    /// The child slot for byte `byte`.
    #[inline]
    pub fn find(&self, byte: u8) -> Option<&'a [u8; 8]> {
        match self.body {
            Body::N4(node) => node.find(byte),
            Body::N16(node) => node.find(byte),
            Body::N48(node) => node.find(byte),
            Body::N256(node) => node.find(byte),
        }
    }

    /// The child with the smallest byte `>= start` (`start` may be 256: none).
    #[inline]
    pub fn next_from(&self, start: usize) -> Option<(u8, &'a [u8; 8])> {
        match self.body {
            Body::N4(node) => node.next_from(start),
            Body::N16(node) => node.next_from(start),
            Body::N48(node) => node.next_from(start),
            Body::N256(node) => node.next_from(start),
        }
    }

    /// The child with the largest byte `< end` (`end` may be 0: none).
    #[inline]
    pub fn prev_before(&self, end: usize) -> Option<(u8, &'a [u8; 8])> {
        match self.body {
            Body::N4(node) => node.prev_before(end),
            Body::N16(node) => node.prev_before(end),
            Body::N48(node) => node.prev_before(end),
            Body::N256(node) => node.prev_before(end),
        }
    }

    /// Copies the children, in byte order, into `list`.
    pub fn entries(&self, list: &mut EntryList) {
        list.clear();
        let mut start = 0usize;
        while let Some((byte, slot)) = self.next_from(start) {
            list.push(byte, u64::from_le_bytes(*slot));
            start = byte as usize + 1;
        }
    }
}

/// A mutable view of a heap inner node image created in the writer's current version.
pub(crate) enum InnerMut<'a> {
    N4(&'a mut Node4),
    N16(&'a mut Node16),
    N48(&'a mut Node48),
    N256(&'a mut Node256),
}

impl<'a> InnerMut<'a> {
    /// Views `bytes` (exactly an inner image made by this crate) mutably.
    pub fn from_image(bytes: &'a mut [u8]) -> Option<InnerMut<'a>> {
        let kind = *bytes.first()?;
        Some(match kind {
            KIND_NODE4 => InnerMut::N4(raw::view_mut(bytes)?),
            KIND_NODE16 => InnerMut::N16(raw::view_mut(bytes)?),
            KIND_NODE48 => InnerMut::N48(raw::view_mut(bytes)?),
            KIND_NODE256 => InnerMut::N256(raw::view_mut(bytes)?),
            _ => return None,
        })
    }

    pub fn header(&mut self) -> &mut Header {
        match self {
            InnerMut::N4(node) => &mut node.header,
            InnerMut::N16(node) => &mut node.header,
            InnerMut::N48(node) => &mut node.header,
            InnerMut::N256(node) => &mut node.header,
        }
    }

    /// The value slot, for the rest of the borrow.
    pub fn into_value_slot(self) -> &'a mut [u8; 8] {
        match self {
            InnerMut::N4(node) => &mut node.header.value,
            InnerMut::N16(node) => &mut node.header.value,
            InnerMut::N48(node) => &mut node.header.value,
            InnerMut::N256(node) => &mut node.header.value,
        }
    }

    /// The child slot for `byte`, for the rest of the borrow.
    pub fn into_child_slot(self, byte: u8) -> Option<&'a mut [u8; 8]> {
        match self {
            InnerMut::N4(node) => node.find_mut(byte),
            InnerMut::N16(node) => node.find_mut(byte),
            InnerMut::N48(node) => node.find_mut(byte),
            InnerMut::N256(node) => node.find_mut(byte),
        }
    }

    /// Adds a child; the caller checked that `byte` is absent and the node is not full.
    pub fn add(&mut self, byte: u8, word: u64) {
        match self {
            InnerMut::N4(node) => node.add(byte, word),
            InnerMut::N16(node) => node.add(byte, word),
            InnerMut::N48(node) => node.add(byte, word),
            InnerMut::N256(node) => node.add(byte, word),
        }
    }

    /// Removes the child for `byte` and returns its word (0 if absent).
    pub fn remove(&mut self, byte: u8) -> u64 {
        match self {
            InnerMut::N4(node) => node.remove(byte),
            InnerMut::N16(node) => node.remove(byte),
            InnerMut::N48(node) => node.remove(byte),
            InnerMut::N256(node) => node.remove(byte),
        }
    }
}

/// Up to 256 (byte, word) pairs in byte order: the children of one node, on the stack.
pub(crate) struct EntryList {
    bytes: [u8; 256],
    words: [u64; 256],
    len: usize,
}

impl EntryList {
    pub fn new() -> EntryList {
        EntryList {
            bytes: [0; 256],
            words: [0; 256],
            len: 0,
        }
    }
    pub fn clear(&mut self) {
        self.len = 0;
    }
    pub fn push(&mut self, byte: u8, word: u64) {
        debug_assert!(self.len < 256, "at most 256 children");
        debug_assert!(
            self.len == 0 || self.bytes[self.len - 1] < byte,
            "entries in byte order"
        );
        if self.len < 256 {
            self.bytes[self.len] = byte;
            self.words[self.len] = word;
            self.len += 1;
        }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn get(&self, index: usize) -> (u8, u64) {
        (self.bytes[index], self.words[index])
    }
    /// Inserts an entry keeping byte order (the byte must be absent).
    pub fn insert_sorted(&mut self, byte: u8, word: u64) {
        debug_assert!(self.len < 256, "at most 256 children");
        if self.len >= 256 {
            return;
        }
        let index = self.bytes[..self.len]
            .iter()
            .position(|&b| b > byte)
            .unwrap_or(self.len);
        self.bytes.copy_within(index..self.len, index + 1);
        self.words.copy_within(index..self.len, index + 1);
        self.bytes[index] = byte;
        self.words[index] = word;
        self.len += 1;
    }
}

/// What a new inner node looks like apart from its children.
pub(crate) struct Shape<'k> {
    pub prefix: &'k [u8],
    pub depth: usize,
    pub version: u64,
    pub value: u64,
}

/// Allocates an inner node of `kind` holding `entries` (byte order) and returns its heap word.
///
/// This is the one place where nodes change kind: growing, shrinking, re-prefixing after a split
/// or a collapse, and bulk building all come here.
pub(crate) fn build_inner(kind: u8, shape: &Shape<'_>, entries: &EntryList) -> u64 {
    build_inner_in(kind, shape, entries, crate::raw::arena::Group::General)
}

/// [`build_inner`] into the image arena's chunks of `group` (write/pack.rs: the Node256 of a
/// dense run being filled).
pub(crate) fn build_inner_in(
    kind: u8,
    shape: &Shape<'_>,
    entries: &EntryList,
    group: crate::raw::arena::Group,
) -> u64 {
    debug_assert!(entries.len() <= capacity(kind), "entries fit the kind");
    let len = inner_len(kind, shape.prefix.len());
    let (address, bytes) = raw::alloc_image_mut(len, group);
    fill_inner(
        bytes,
        kind,
        shape,
        (0..entries.len()).map(|i| entries.get(i)),
    );
    crate::word::heap_node(address)
}

/// A heap Node256 of `shape` whose children `fill` writes by byte into its zeroed slot array,
/// returning how many it wrote (at least `NODE48_CAPACITY + 1`, so that Node256 is the kind
/// [`kind_for`] gives). The last level of a bulk build that knows each child's byte and word
/// sets it with one store, where [`build_inner`] passes it through an [`EntryList`] and an
/// `add` per child.
pub(crate) fn build_node256(
    shape: &Shape<'_>,
    fill: impl FnOnce(&mut [[u8; 8]; NODE256_CAPACITY]) -> usize,
) -> u64 {
    let len = inner_len(KIND_NODE256, shape.prefix.len());
    let (address, bytes) = raw::alloc_image_mut(len, crate::raw::arena::Group::General);
    fill_inner(bytes, KIND_NODE256, shape, core::iter::empty());
    if let Some(node) = raw::view_mut::<Node256>(bytes) {
        node.fill_with(fill);
    }
    crate::word::heap_node(address)
}

/// Length of the image of an inner node of `kind` (one of ours) with a prefix of `prefix_len`.
pub(crate) fn inner_len(kind: u8, prefix_len: usize) -> usize {
    body_len(kind).unwrap_or(core::mem::size_of::<Node256>()) + prefix_tail_len(prefix_len)
    // ok: kinds are ours
}

/// Writes the image of an inner node of `kind` holding `entries` (byte order) into `bytes`,
/// which is zeroed and [`inner_len`] long: [`build_inner`]'s heap image, or a bulk build's image
/// composed in a scratch buffer on its way to a sink.
pub(crate) fn fill_inner(
    bytes: &mut [u8],
    kind: u8,
    shape: &Shape<'_>,
    entries: impl Iterator<Item = (u8, u64)>,
) {
    let prefix_len = shape.prefix.len();
    let body = body_len(kind).unwrap_or(core::mem::size_of::<Node256>()); // ok: kinds are ours
    let (fixed, tail) = bytes.split_at_mut(body.min(bytes.len()));
    if let Some(header) = raw::view_mut::<Header>(fixed) {
        header.kind = kind;
        header.prefix_len = (prefix_len as u16).to_le_bytes();
        header.depth = (shape.depth as u16).to_le_bytes();
        header.set_version(shape.version);
        header.value = shape.value.to_le_bytes();
        if prefix_len <= PREFIX_INLINE_LEN_MAX {
            header.prefix[..prefix_len].copy_from_slice(shape.prefix);
        }
    }
    if prefix_len > PREFIX_INLINE_LEN_MAX {
        if let Some(tail) = tail.get_mut(..prefix_len) {
            tail.copy_from_slice(shape.prefix);
        }
    }
    if let Some(mut node) = InnerMut::from_image(fixed) {
        for (byte, word) in entries {
            node.add(byte, word);
        }
    }
}

/// Copies an inner image to a new heap allocation stamped with `version`; returns the address.
pub(crate) fn copy_inner(image: &[u8], version: u64) -> usize {
    let (address, bytes) = raw::alloc_image_mut(image.len(), crate::raw::arena::Group::General);
    bytes.copy_from_slice(image);
    if let Some(header) = raw::view_mut::<Header>(bytes) {
        header.set_version(version);
    }
    address
}

/// Length of the heap inner image at `address`.
///
/// # Safety
/// `address` is a live heap inner image made by this crate.
#[inline]
pub(crate) unsafe fn heap_inner_len(address: usize) -> usize {
    // SAFETY: every inner image is at least HEADER_LEN bytes (caller: live image of ours).
    let header_bytes = unsafe { raw::image(address, HEADER_LEN) };
    match raw::view::<Header>(header_bytes) {
        Some(header) => inner_image_len(header.kind, header.prefix_len()).unwrap_or(HEADER_LEN),
        None => HEADER_LEN,
    }
}

/// Views the heap inner node at `address`.
///
/// # Safety
/// `address` is a live heap inner image made by this crate that is not written or freed during
/// `'a` (raw/mod.rs invariants 2 and 3).
#[inline]
pub(crate) unsafe fn heap_inner<'a>(address: usize) -> InnerRef<'a> {
    // SAFETY: the caller's guarantee (live image of ours) is what heap_inner_len needs.
    let len = unsafe { heap_inner_len(address) };
    // SAFETY: the image is live with `len` bytes and unchanged during 'a (caller).
    let bytes = unsafe { raw::image::<'a>(address, len) };
    match InnerRef::from_image(bytes) {
        Ok(node) => node,
        // Our own images always parse; an empty Node4 view keeps this total without panicking.
        Err(_) => empty_inner(),
    }
}

/// A view of a static empty Node4 (the fallback for an impossible parse failure).
fn empty_inner() -> InnerRef<'static> {
    static EMPTY: [u8; 72] = {
        let mut image = [0u8; 72];
        image[0] = KIND_NODE4;
        image
    };
    match InnerRef::from_image(&EMPTY) {
        Ok(node) => node,
        Err(_) => unreachable!("the static empty Node4 parses"), // ok: constant input
    }
}

/// Views the heap inner node at `address` mutably.
///
/// # Safety
/// `address` is a live heap inner image made by this crate in the writer's current version, and
/// no other reference to it is used during `'a` (raw/mod.rs invariant 2).
#[inline]
pub(crate) unsafe fn heap_inner_mut<'a>(address: usize) -> Option<InnerMut<'a>> {
    // SAFETY: the caller's guarantee (live image of ours) is what heap_inner_len needs.
    let len = unsafe { heap_inner_len(address) };
    // SAFETY: live, `len` bytes, exclusively ours during 'a (caller).
    let bytes = unsafe { raw::image_mut::<'a>(address, len) };
    InnerMut::from_image(bytes)
}

/// Views the fixed part of the heap inner node at `address` mutably (its header and children,
/// without a long prefix's tail): the insert fast path's view, which reads only the inline
/// prefix and so needs no image length (one kind load instead of the header's length
/// computation).
///
/// # Safety
/// As [`heap_inner_mut`]: `address` is a live heap inner image made by this crate in the
/// writer's current version, and no other reference to it is used during `'a`.
#[inline]
pub(crate) unsafe fn heap_inner_body_mut<'a>(address: usize) -> Option<InnerMut<'a>> {
    // SAFETY: every inner image starts with its kind byte (caller: live image of ours).
    let kind = unsafe { raw::image(address, 1) }.first().copied()?;
    let len = match kind {
        KIND_NODE4 => core::mem::size_of::<Node4>(),
        KIND_NODE16 => core::mem::size_of::<Node16>(),
        KIND_NODE48 => core::mem::size_of::<Node48>(),
        KIND_NODE256 => core::mem::size_of::<Node256>(),
        _ => return None,
    };
    // SAFETY: an image of this kind is at least its fixed part, `len` bytes (a long prefix's
    // tail follows it); live and exclusively ours during 'a (caller).
    let bytes = unsafe { raw::image_mut::<'a>(address, len) };
    InnerMut::from_image(bytes)
}

/// Frees one heap inner image (not its children).
///
/// # Safety
/// `address` is a live heap inner image made by this crate that nothing will reach again.
pub(crate) unsafe fn free_heap_inner(address: usize) {
    // SAFETY: live image of ours (caller).
    let len = unsafe { heap_inner_len(address) };
    // SAFETY: allocated by raw::alloc_image_in with exactly this length (the header never changes the
    // prefix length or kind after allocation), unreachable from now on (caller).
    unsafe { raw::free_image(address, len) }
}

/// Length of the common prefix of two byte strings.
#[inline]
pub(crate) fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    // Eight bytes at a time: the first differing bit's byte ends the prefix.
    let len = a.len().min(b.len());
    let (a, b) = (&a[..len], &b[..len]);
    let mut done = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let (mut xw, mut yw) = ([0u8; 8], [0u8; 8]);
        xw.copy_from_slice(x);
        yw.copy_from_slice(y);
        let diff = u64::from_le_bytes(xw) ^ u64::from_le_bytes(yw);
        if diff != 0 {
            return done + (diff.trailing_zeros() / 8) as usize;
        }
        done += 8;
    }
    // Four bytes at once for the tail (W2's 4-byte keys: one compare), then byte by byte.
    if let (Some(x), Some(y)) = (a[done..].first_chunk::<4>(), b[done..].first_chunk::<4>()) {
        let diff = u32::from_le_bytes(*x) ^ u32::from_le_bytes(*y);
        if diff != 0 {
            return done + (diff.trailing_zeros() / 8) as usize;
        }
        done += 4;
    }
    done + a[done..]
        .iter()
        .zip(&b[done..])
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod prefix_compare_tests {
    use super::*;

    /// The word-at-a-time prefix length equals a byte-by-byte count, for every length up to 20
    /// and every position of the first difference (in either string, or none).
    #[test]
    fn common_prefix_len_matches_a_byte_scan() {
        let base: Vec<u8> = (0u8..20).map(|i| i.wrapping_mul(37)).collect();
        for a_len in 0..=20 {
            for b_len in 0..=20 {
                for differ_at in 0..=20 {
                    let a = &base[..a_len];
                    let mut b = base[..b_len].to_vec();
                    if let Some(byte) = b.get_mut(differ_at) {
                        *byte ^= 0x80;
                    }
                    let want = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
                    assert_eq!(
                        common_prefix_len(a, &b),
                        want,
                        "{a_len} {b_len} {differ_at}"
                    );
                    assert_eq!(common_prefix_len(&b, a), want);
                }
            }
        }
    }

    /// Every key length to 12, every depth, every prefix length: `key_word_at` against the
    /// bytes it stands for, and `inline_prefix_matches` against a slice compare.
    #[test]
    fn key_word_and_prefix_compare_match_slices() {
        let mut next = crate::test_support::xorshift(0x9E37_79B9_7F4A_7C15);
        for _round in 0..200 {
            for len in 0..=12usize {
                // Small alphabet, so prefixes often match.
                let key: Vec<u8> = (0..len).map(|_| (next() % 3) as u8).collect();
                for depth in 0..=len + 1 {
                    let rest = key.get(depth..).unwrap_or_default();
                    let mut expected = [0u8; 8];
                    let take = rest.len().min(8);
                    expected[..take].copy_from_slice(&rest[..take]);
                    assert_eq!(
                        key_word_at(&key, depth),
                        u64::from_le_bytes(expected),
                        "key {key:?} depth {depth}"
                    );
                    for prefix_len in 1..=PREFIX_INLINE_LEN_MAX {
                        let prefix: Vec<u8> = (0..prefix_len).map(|_| (next() % 3) as u8).collect();
                        let mut image = [0u8; HEADER_LEN];
                        image[4..6].copy_from_slice(&(prefix_len as u16).to_le_bytes());
                        image[24..24 + prefix_len].copy_from_slice(&prefix);
                        let header = crate::raw::view::<Header>(&image).unwrap();
                        let want = key.get(depth..depth + prefix_len) == Some(&prefix[..]);
                        assert_eq!(
                            header.inline_prefix_matches(&key, depth, prefix_len),
                            want,
                            "key {key:?} depth {depth} prefix {prefix:?}"
                        );
                    }
                }
            }
        }
    }
}
