//! Raw memory of heap node images: allocation, freeing, and byte views of them.
//!
//! This is the only module (with the SIMD search) that contains `unsafe`. It knows nothing of the
//! tree: it hands out byte slices of allocations and views byte slices as node structs. The rest
//! of the crate works on those safe views.
//!
//! Invariants the callers uphold (stated again on each function):
//! 1. A heap image is allocated by [`alloc_image_in`] with alignment [`IMAGE_ALIGN`] and freed once,
//!    by [`free_image`], with the size it was allocated with. The size is recomputed from the
//!    image's own header, which is never changed in a way that changes the size.
//! 2. A heap image reachable from a published version (a `Snapshot`) is never written again; the
//!    writer writes only images created in its current, unpublished version, and no shared view
//!    of such an image is alive while it writes.
//! 3. An image is freed only when nothing can reach it any more (see `write/cow.rs`).

pub(crate) mod arena;
pub(crate) mod search;

use std::alloc::{self, Layout};

/// Alignment of every heap image (the low three bits of a heap word are its tag).
pub(crate) const IMAGE_ALIGN: usize = 8;

/// Marker for node structs that may be viewed over any byte slice of sufficient length.
///
/// # Safety
/// The implementing type must be `#[repr(C)]`, consist only of `u8` and arrays of `u8` (so its
/// alignment is 1, it has no padding, and every bit pattern is a valid value), and contain no
/// references, pointers or interior mutability.
pub(crate) unsafe trait Image: Sized {}

/// Views the front of `bytes` as an image struct; `None` if `bytes` is too short.
#[inline]
pub(crate) fn view<T: Image>(bytes: &[u8]) -> Option<&T> {
    const { assert!(core::mem::align_of::<T>() == 1) };
    if bytes.len() < core::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: `T: Image` has alignment 1 and every bit pattern is valid (trait contract), and the
    // slice holds at least `size_of::<T>()` initialised bytes that live as long as the borrow.
    Some(unsafe { &*bytes.as_ptr().cast::<T>() })
}

/// Views the front of `bytes` as a mutable image struct; `None` if `bytes` is too short.
#[inline]
pub(crate) fn view_mut<T: Image>(bytes: &mut [u8]) -> Option<&mut T> {
    const { assert!(core::mem::align_of::<T>() == 1) };
    if bytes.len() < core::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: as in `view`; the exclusive borrow of the slice becomes the exclusive borrow of `T`.
    Some(unsafe { &mut *bytes.as_mut_ptr().cast::<T>() })
}

fn layout(size: usize) -> Layout {
    // Image sizes are bounded by KEY_LEN_MAX + VALUE_LEN_MAX + a few KiB, far below isize::MAX,
    // so the layout is always valid; fall back to the smallest layout defensively.
    Layout::from_size_align(size.max(IMAGE_ALIGN), IMAGE_ALIGN).unwrap_or(Layout::new::<u64>())
    // ok: unreachable, see above
}

/// Allocates a zeroed image of `size` bytes and returns its address (nonzero, 8-aligned): from
/// the image arena's chunks of `group` (`raw/arena.rs`; images of different groups never share
/// a chunk) when it serves that size, else from the global allocator.
fn alloc_image_in(size: usize, group: crate::raw::arena::Group) -> usize {
    if crate::raw::arena::serves(size) {
        return crate::raw::arena::alloc(size, group);
    }
    let layout = layout(size);
    // SAFETY: the layout has nonzero size (at least IMAGE_ALIGN bytes).
    let pointer = unsafe { alloc::alloc_zeroed(layout) };
    if pointer.is_null() {
        alloc::handle_alloc_error(layout);
    }
    pointer as usize
}

/// Allocates a zeroed image of `size` bytes ([`alloc_image_in`] into `group`) and borrows it
/// mutably: its address and its bytes, for the caller to write before it publishes the word.
///
/// Safe, like `Box::leak`: the allocation is new, so no other reference to it exists, and it
/// is freed only through [`free_image`], whose contract forbids using any borrow of it
/// afterwards.
#[inline]
pub(crate) fn alloc_image_mut<'a>(
    size: usize,
    group: crate::raw::arena::Group,
) -> (usize, &'a mut [u8]) {
    let address = alloc_image_in(size, group);
    // SAFETY: `address` is a live allocation of `size` zeroed bytes made just now; nothing else
    // refers to it, and it can be freed only by the unsafe `free_image`, whose caller must not
    // use this borrow afterwards (invariant 3).
    let bytes = unsafe { image_mut::<'a>(address, size) };
    (address, bytes)
}

/// Frees an image.
///
/// # Safety
/// - `address` was returned by [`alloc_image_in`] with this same `size` and was not freed yet;
/// - no reference into the image is used afterwards (invariant 3).
pub(crate) unsafe fn free_image(address: usize, size: usize) {
    if crate::raw::arena::serves(size) {
        // SAFETY: `alloc_image_in(size, _)` took it from the arena (the same size decides), once.
        return unsafe { crate::raw::arena::free(address, size) };
    }
    // SAFETY: the caller guarantees the allocation came from `alloc_image_in(size, _)`, so it was made
    // with exactly `layout(size)`.
    unsafe { alloc::dealloc(address as *mut u8, layout(size)) }
}

/// Borrows the first `len` bytes of a heap image.
///
/// # Safety
/// - `address` is a live image of at least `len` bytes allocated by [`alloc_image_in`];
/// - the image is not written and not freed while the borrow `'a` lasts (invariants 2 and 3).
#[inline]
pub(crate) unsafe fn image<'a>(address: usize, len: usize) -> &'a [u8] {
    // SAFETY: the caller guarantees a live allocation of at least `len` initialised (zeroed at
    // allocation) bytes, unchanged for 'a.
    unsafe { core::slice::from_raw_parts(address as *const u8, len) }
}

/// Borrows the first `len` bytes of a heap image mutably.
///
/// # Safety
/// - `address` is a live image of at least `len` bytes allocated by [`alloc_image_in`];
/// - no other reference to the image exists while the borrow `'a` lasts (invariant 2: it was
///   created in the writer's current version and no snapshot can reach it).
#[inline]
pub(crate) unsafe fn image_mut<'a>(address: usize, len: usize) -> &'a mut [u8] {
    // SAFETY: the caller guarantees a live allocation of at least `len` bytes and exclusivity.
    unsafe { core::slice::from_raw_parts_mut(address as *mut u8, len) }
}

/// Hints the CPU to start loading the cache line at `address` (no effect on correctness).
#[inline(always)]
pub(crate) fn prefetch(address: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch never faults and never reads memory architecturally, whatever the
        // address; SSE is part of the x86-64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address as *const i8) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = address;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    struct Pair {
        a: u8,
        b: [u8; 3],
    }
    // SAFETY: repr(C), only u8 fields.
    unsafe impl Image for Pair {}

    #[test]
    fn view_checks_length() {
        let bytes = [1u8, 2, 3, 4, 5];
        let pair = view::<Pair>(&bytes).map(|p| (p.a, p.b));
        assert_eq!(pair, Some((1, [2, 3, 4])));
        assert!(view::<Pair>(&bytes[..3]).is_none());
    }

    #[test]
    fn alloc_write_read_free() {
        let (address, _) = alloc_image_mut(40, arena::Group::General);
        assert_eq!(address % IMAGE_ALIGN, 0);
        // SAFETY: just allocated with 40 bytes; only this test touches it.
        let bytes = unsafe { image_mut(address, 40) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes[39] = 7;
        // SAFETY: as above; the mutable borrow is no longer used.
        assert_eq!(unsafe { image(address, 40) }[39], 7);
        // SAFETY: allocated above with size 40, freed once, not used afterwards.
        unsafe { free_image(address, 40) };
    }
}
