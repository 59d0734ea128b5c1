//! Leaf: the rest of a key (lazy expansion) and its value, one allocation.
//!
//! | offset | size      | field      |
//! |--------|-----------|------------|
//! | 0      | 1         | kind = 5   |
//! | 1      | 1         | flags = 0  |
//! | 2      | 2         | suffix_len (u16 LE) |
//! | 4      | 4         | value_len (u32 LE)  |
//! | 8      | suffix_len| suffix: key bytes after the leaf's position |
//! | 8+s    | value_len | value |
//!
//! Leaves carry no version: they are never changed after creation (a new value is a new leaf).
//! Values of up to 7 bytes whose key ends at the word's position need no leaf at all (inline).

use super::KIND_LEAF;
use crate::raw::{self, Image};

/// Bytes of the leaf header.
pub(crate) const LEAF_HEADER_LEN: usize = 8;

#[repr(C)]
struct LeafHeader {
    kind: u8,
    flags: u8,
    suffix_len: [u8; 2],
    value_len: [u8; 4],
}
// SAFETY: repr(C), only u8 and u8 arrays.
unsafe impl Image for LeafHeader {}
const _: () = assert!(core::mem::size_of::<LeafHeader>() == LEAF_HEADER_LEN);
const _: () = assert!(crate::KEY_LEN_MAX <= u16::MAX as usize);
const _: () = assert!(crate::VALUE_LEN_MAX <= u32::MAX as usize);

/// Image length of a leaf.
pub(crate) fn leaf_image_len(suffix_len: usize, value_len: usize) -> usize {
    LEAF_HEADER_LEN + suffix_len + value_len
}

/// A read-only view of a leaf image.
#[derive(Clone, Copy)]
pub(crate) struct LeafRef<'a> {
    pub suffix: &'a [u8],
    pub value: &'a [u8],
}

impl<'a> LeafRef<'a> {
    /// Views `bytes` (at least the image) as a leaf.
    #[inline]
    pub fn from_image(bytes: &'a [u8]) -> Result<LeafRef<'a>, &'static str> {
        let header = raw::view::<LeafHeader>(bytes).ok_or("image shorter than a leaf header")?;
        if header.kind != KIND_LEAF {
            return Err("not a leaf");
        }
        let suffix_len = u16::from_le_bytes(header.suffix_len) as usize;
        let value_len = u32::from_le_bytes(header.value_len) as usize;
        let end = leaf_image_len(suffix_len, value_len);
        let body = bytes
            .get(LEAF_HEADER_LEN..end)
            .ok_or("leaf extends past the image")?;
        let (suffix, value) = body.split_at(suffix_len);
        Ok(LeafRef { suffix, value })
    }

    /// Image length of this leaf.
    pub fn image_len(&self) -> usize {
        leaf_image_len(self.suffix.len(), self.value.len())
    }
}

/// Allocates a heap leaf and returns its word.
pub(crate) fn alloc_leaf(suffix: &[u8], value: &[u8]) -> u64 {
    let len = leaf_image_len(suffix.len(), value.len());
    let (address, bytes) = raw::alloc_image_mut(len, crate::raw::arena::Group::General);
    let (head, body) = bytes.split_at_mut(LEAF_HEADER_LEN);
    if let Some(header) = raw::view_mut::<LeafHeader>(head) {
        header.kind = KIND_LEAF;
        header.suffix_len = (suffix.len() as u16).to_le_bytes();
        header.value_len = (value.len() as u32).to_le_bytes();
    }
    body[..suffix.len()].copy_from_slice(suffix);
    body[suffix.len()..].copy_from_slice(value);
    crate::word::heap_leaf(address)
}

/// Length of the heap leaf or pack at `address`.
///
/// # Safety
/// `address` is a live heap leaf or pack made by this crate.
#[inline]
pub(crate) unsafe fn heap_leaf_len(address: usize) -> usize {
    // SAFETY: every leaf and pack has at least its 8-byte header (caller: live leaf of ours).
    let head = unsafe { raw::image(address, LEAF_HEADER_LEN) };
    if let Ok(header) = <&[u8; 8]>::try_from(head) {
        if matches!(
            header[0],
            super::KIND_PACK | super::KIND_DENSE | super::KIND_WIDE
        ) {
            return super::pack::pack_image_len_from_header(header);
        }
    }
    match raw::view::<LeafHeader>(head) {
        Some(header) => leaf_image_len(
            u16::from_le_bytes(header.suffix_len) as usize,
            u32::from_le_bytes(header.value_len) as usize,
        ),
        None => LEAF_HEADER_LEN,
    }
}

/// The image of the heap leaf or pack at `address`.
///
/// # Safety
/// `address` is a live heap leaf or pack made by this crate, not freed during `'a`.
#[inline]
pub(crate) unsafe fn heap_leaf_image<'a>(address: usize) -> &'a [u8] {
    // SAFETY: live leaf of ours (caller).
    let len = unsafe { heap_leaf_len(address) };
    // SAFETY: live, `len` bytes, never written after creation, not freed during 'a (caller).
    unsafe { raw::image::<'a>(address, len) }
}

/// Frees a heap leaf or pack.
///
/// # Safety
/// `address` is a live heap leaf or pack made by this crate that nothing will reach again.
pub(crate) unsafe fn free_heap_leaf(address: usize) {
    // SAFETY: live leaf of ours (caller).
    let len = unsafe { heap_leaf_len(address) };
    // SAFETY: allocated by raw::alloc_image_in with this length (leaves never change), unreachable now.
    unsafe { raw::free_image(address, len) }
}

/// The image of the heap leaf or pack at `address`, writable.
///
/// # Safety
/// `address` is a live heap leaf or pack made by this crate that nothing but the caller can
/// reach during `'a` (no snapshot is alive and the writer holds no other view of it).
#[inline]
pub(crate) unsafe fn heap_leaf_image_mut<'a>(address: usize) -> &'a mut [u8] {
    // SAFETY: live leaf of ours (caller).
    let len = unsafe { heap_leaf_len(address) };
    // SAFETY: live, `len` bytes, exclusively the caller's during 'a (caller).
    unsafe { raw::image_mut::<'a>(address, len) }
}
