//! The crate's unsafe operations, fenced here: mapping a table file, a cache prefetch hint, and
//! reading a key's first eight bytes without a range check.
//!
//! Mapping: `memmap2::Mmap::map` is unsafe because another process could change the file while it
//! is mapped, and then the `&[u8]` the map hands out would change under Rust's feet. bitable files
//! are written once under a temporary name and renamed into place, never modified in place; the
//! contract of the format (stated on `Table::open`) is that nobody writes a table file that is
//! open. Everything else - damage at rest, truncation before open - is caught by checksums and the
//! header's length check.
//!
//! A prefetch never faults and never reads memory architecturally, so any address is sound; it
//! only asks the core to start loading a cache line. The search in a fixed page (`page.rs`) loads
//! the lines of 16 sampled records at once, then the lines of the one group between two samples
//! at once, so a leaf search costs about two miss latencies instead of about seven dependent ones;
//! a guided search (`page::Guess`) loads the header line and the lines around its guess at once,
//! one miss latency when the guess holds.
//! Rejected: prefetching the whole page (64 lines saturate the line-fill buffers and take longer
//! than the misses they hide) and an Eytzinger layout inside pages (it would make cursors and
//! slotted pages harder, for a gain the two-round search already gets).

/// Maps `file` read-only (see the module notes for why this is sound under the format contract).
pub(crate) fn map_read_only(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the file is a bitable, which is never modified in place while open (module notes;
    // `Table::open` documents the contract); the map is read-only.
    unsafe { memmap2::Mmap::map(file) }
}

/// Hints the CPU to load the cache line holding `bytes[at]` (no effect if `at` is out of range).
#[inline(always)]
pub(crate) fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = bytes.get(at) {
        let pointer = byte as *const u8 as *const i8;
        // SAFETY: `_mm_prefetch` only hints the cache; it cannot fault or read memory
        // architecturally, and `pointer` points into a live slice anyway. SSE is part of the
        // x86_64 baseline, so the instruction exists on every target this compiles for.
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(pointer)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// Hints the CPU to load 16 lines of `page`, one every 1/16 of it from its start (the header line
/// and the first round of a fixed page's sampled search). Every offset is inside the page, so
/// no per-line range check runs (a prefetch could not fault anyway).
#[inline(always)]
pub(crate) fn prefetch_sixteenths(page: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        let step = page.len() / 16;
        let base = page.as_ptr();
        for sixteenth in 0..16 {
            // `wrapping_add` stays inside the page (`sixteenth * step < page.len()` for a
            // non-empty page; an empty page gives its one-past-the-end pointer), and the hint
            // needs no valid pointer in any case.
            let pointer = base.wrapping_add(sixteenth * step) as *const i8;
            // SAFETY: as in `prefetch`: `_mm_prefetch` only hints the cache, it cannot fault or
            // read memory architecturally, so any address is sound; SSE is x86_64 baseline.
            #[allow(unused_unsafe)]
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(pointer)
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = page;
}

/// Hints the CPU to load the lines of `page` from byte `start` (rounded down to its line) up to
/// byte `end` (clamped to the page): one range check for the whole range instead of one a line.
#[inline(always)]
pub(crate) fn prefetch_lines(page: &[u8], start: usize, end: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let end = end.min(page.len());
        let base = page.as_ptr();
        let mut at = start & !(CACHE_LINE - 1);
        while at < end {
            // `at < end <= page.len()`: inside the page (and the hint needs no valid pointer).
            let pointer = base.wrapping_add(at) as *const i8;
            // SAFETY: as in `prefetch`: `_mm_prefetch` only hints the cache, it cannot fault or
            // read memory architecturally, so any address is sound; SSE is x86_64 baseline.
            #[allow(unused_unsafe)]
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(pointer)
            };
            at += CACHE_LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (page, start, end);
}

/// Bytes of a cache line.
const CACHE_LINE: usize = 64;

/// The eight bytes of `bytes` from `at` as a big-endian integer, without a range check: the head
/// of a key in a validated fixed page (`page::PageRef::order`), read once or more per entry a
/// search compares.
///
/// # Safety
/// - `at + 8 <= bytes.len()` (so `at + 8` does not overflow either).
#[inline(always)]
pub(crate) unsafe fn read_head_unchecked(bytes: &[u8], at: usize) -> u64 {
    debug_assert!(
        at.checked_add(8).is_some_and(|end| end <= bytes.len()),
        "a key head lies inside its page"
    );
    let pointer = bytes.as_ptr().wrapping_add(at).cast::<[u8; 8]>();
    // SAFETY: the caller guarantees `at + 8 <= bytes.len()` (`# Safety`), so the eight bytes at
    // `pointer` lie inside the slice, which is live for the call; `read_unaligned` takes any
    // alignment, and every bit pattern is a valid `[u8; 8]`.
    let raw = unsafe { pointer.read_unaligned() };
    u64::from_be_bytes(raw)
}
