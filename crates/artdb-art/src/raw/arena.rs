//! The image arena: heap images of [`ARENA_IMAGE_MIN`]..=[`ARENA_IMAGE_MAX`] bytes (packs,
//! Node48s, Node256s: the images a lookup in a large tree reads) come from 2 MiB chunks that are
//! advised for transparent huge pages once the arena holds [`HUGE_FROM_CHUNKS`] chunks.
//!
//! Why: a lookup in a tree of 10M keys reads a Node256 slot and a pack, each on its own 4 KiB
//! page, so each one missed the TLB and paid a page walk (two-dimensional in a virtual machine).
//! A 2 MiB page covers 512 times as much: W1's lookups stop paying the walks (see
//! docs/journal/art.md, "Image arena"). Small images (leaves, Node4, Node16) stay with the global
//! allocator: they are many, short-lived on copy-on-write paths, and served faster by its
//! thread caches; a small tree never makes a chunk.
//!
//! On Linux the chunks are anonymous mappings of their own (`mmap`), unmapped as soon as none of
//! their images is live (but one: the arena keeps one empty chunk, its spare, for the next chunk
//! it needs): a chunk handed back leaves no huge-page advice on memory that the global allocator
//! would reuse for other code, and its pages go back to the system at once.
//! Elsewhere they come from the global allocator. Either way [`arena_stats`] reports what the
//! arena holds (a global allocator's statistics do not see mapped chunks: W1 adds it).
//!
//! Inside a chunk the arena is a two-level segregated fit allocator (free blocks in 16 size bins
//! per power of two, found through two bitmaps, O(1) per allocation and free), with boundary
//! tags so that a freed block merges with free neighbours at once. One mutex guards it: an arena
//! allocation is a pack copy or a large node, whose own copying costs far more than the lock.
//!
//! **Groups.** Every chunk belongs to one [`Group`], whose free lists (bins and bitmaps) list
//! the chunk's free blocks: an image goes to a chunk of the group its allocation names.
//! [`Group::Run`] holds the images of dense runs being filled (one-byte-suffix packs of 6- or
//! 7-byte values, and the Node256 of inline words they burst into), [`Group::General`]
//! everything else. A run's images are replaced as its keys arrive, and the last one, the dense
//! pack, is a general image: once the runs are full, their chunks hold nothing and are unmapped,
//! instead of staying part full with holes no later image fits (W1's memory held after a
//! random-order fill of dense keys, measured in docs/journal/art.md, "Image arena"; the cost is a
//! transient peak while the runs complete, when both groups' chunks are held).
//!
//! `ARTDB_IMAGE_ARENA=off` in the environment (read once, at the first image allocation) sends
//! every image to the global allocator instead, e.g. for a memory checker that should see each
//! image as its own allocation.
//!
//! Block layout (every block starts 8 bytes before an [`ALIGN`] boundary, so payloads are
//! [`ALIGN`]-aligned: 16 bytes, as the system allocator's):
//! - header (8 bytes): the block's size in bytes (a multiple of [`ALIGN`], header included) in
//!   the low 32 bits, [`FREE`] when the block is free, [`PREV_FREE`] when the block before it
//!   is free;
//! - a free block holds the addresses of the next and previous free blocks of its bin at +8 and
//!   +16, and its size again in its last 8 bytes (the footer the next block's [`PREV_FREE`]
//!   points at);
//! - a chunk's first [`FIRST_BLOCK_AT`] bytes hold its group's number (a `u64`, read by a free
//!   to find the lists of the block's chunk), its first block starts there, and its last 8
//!   bytes are a header of size 0 that is never free (the end sentinel).

use std::alloc::{self, Layout};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Bytes per chunk (and its alignment): one huge page.
pub(crate) const CHUNK_LEN: usize = 2 << 20;
/// The smallest image the arena serves.
pub(crate) const ARENA_IMAGE_MIN: usize = 512;
/// The largest image the arena serves (larger ones, long values in leaves, are rare).
pub(crate) const ARENA_IMAGE_MAX: usize = 256 << 10;
/// Chunks the arena must hold before new chunks are advised for huge pages (below that, a
/// small tree's chunk costs no 2 MiB page fault).
pub(crate) const HUGE_FROM_CHUNKS: usize = 4;

const HEADER: usize = 8;
/// Payload alignment (and block size granule).
const ALIGN: usize = 16;
/// The smallest block: a header, two links and a footer, in whole granules.
const BLOCK_MIN: usize = if ALIGN >= 32 { ALIGN } else { 32 };
/// Where a chunk's first block starts: its payload then starts at `ALIGN`.
const FIRST_BLOCK_AT: usize = ALIGN - HEADER;
const SIZE_MASK: u64 = (1 << 32) - 1;
const FREE: u64 = 1 << 32;
const PREV_FREE: u64 = 1 << 33;
/// The span blocks can cover in a chunk: from the first block to the sentinel.
const CHUNK_SPAN: usize = CHUNK_LEN - FIRST_BLOCK_AT - HEADER;

/// Free blocks of a request's own bin looked at before the bins that surely hold it.
const OWN_BIN_SCAN: usize = 8;
/// Second-level bins per power of two.
const SL_LOG2: u32 = 4;
const SL: usize = 1 << SL_LOG2;
/// Sizes below this have exact bins of one granule each (first level 0).
const SMALL: usize = SL * ALIGN;
const SMALL_LOG2: u32 = SMALL.trailing_zeros();
/// First-level bins: level 0 for small sizes, then one per power of two from SMALL up to the
/// chunk span.
const FL: usize = 1 + (usize::BITS - CHUNK_LEN.leading_zeros() - SMALL_LOG2) as usize;

const _: () = assert!(SMALL.is_power_of_two() && CHUNK_LEN.is_power_of_two());
const _: () = assert!(ALIGN.is_power_of_two() && ALIGN >= 16 && FL <= 32);
const _: () = assert!(ARENA_IMAGE_MAX + HEADER + BLOCK_MIN <= CHUNK_SPAN);
// The group's number fits before the first block.
const _: () = assert!(FIRST_BLOCK_AT >= 8);

/// The bin of a free block of `size` bytes (rounded down: every block in it is at least the
/// bin's lower bound).
#[inline]
fn bin_of(size: usize) -> (usize, usize) {
    if size < SMALL {
        return (0, size / ALIGN);
    }
    let log = usize::BITS - 1 - size.leading_zeros();
    let first = (log + 1 - SMALL_LOG2) as usize;
    let second = (size >> (log - SL_LOG2)) - SL;
    (first, second)
}

/// The first bin whose every block holds `size` bytes.
#[inline]
fn bin_holding(size: usize) -> (usize, usize) {
    if size < SMALL {
        return bin_of(size);
    }
    let log = usize::BITS - 1 - size.leading_zeros();
    bin_of(size + (1 << (log - SL_LOG2)) - 1)
}

/// The chunks an image goes to: images of different groups never share a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Group {
    /// Every image but those of [`Group::Run`].
    General = 0,
    /// The images of a dense run being filled (node/pack/build.rs `alloc_pack_spare`, write/pack.rs
    /// `one_byte_node`): one-byte-suffix packs of 6- or 7-byte values that are not dense, copied
    /// into larger ones as keys arrive, and the Node256 of inline words such a pack bursts into,
    /// which the run's 256th key replaces by a dense pack (a general image).
    Run = 1,
}

/// Groups of chunks.
const GROUPS: usize = 2;

/// The free blocks of one group's chunks: a two-level segregated fit index.
struct Bins {
    first_bitmap: u32,
    second_bitmaps: [u32; FL],
    /// Head block of each bin's free list (0: empty).
    heads: [[usize; SL]; FL],
}

/// What the arena holds: each group's free lists and how much memory it has.
struct State {
    /// Each group's free lists.
    groups: [Bins; GROUPS],
    /// Chunks held (the spare included).
    chunks: usize,
    /// One chunk with no image, kept for the next chunk a group needs instead of being handed
    /// back: a run of sequential inserts empties its run chunk as each dense run completes and
    /// needs a new one for the next run, 256 keys later. Handing each back and taking a new one
    /// cost a 2 MiB page's mapping and zeroing per run (W2's one-transaction insert of
    /// sequential keys became several times slower with the run chunks until the spare;
    /// docs/journal/art.md, "Image arena").
    spare: Option<usize>,
    /// Bytes in live blocks (headers and rounding included).
    live_bytes: usize,
    /// Live images.
    live_images: usize,
    /// Bytes the live images asked for (their sizes, without headers and rounding).
    image_bytes: usize,
    /// Images allocated since the process started.
    allocations: u64,
}

static ARENA: Mutex<State> = Mutex::new(State {
    groups: [const {
        Bins {
            first_bitmap: 0,
            second_bitmaps: [0; FL],
            heads: [[0; SL]; FL],
        }
    }; GROUPS],
    chunks: 0,
    spare: None,
    live_bytes: 0,
    live_images: 0,
    image_bytes: 0,
    allocations: 0,
});

/// 0: not read yet, 1: the arena serves images, 2: `ARTDB_IMAGE_ARENA=off`.
static ENABLED: AtomicU8 = AtomicU8::new(0);

/// Whether an image of `size` bytes comes from (and goes back to) the arena.
#[inline]
pub(crate) fn serves(size: usize) -> bool {
    (ARENA_IMAGE_MIN..=ARENA_IMAGE_MAX).contains(&size) && enabled()
}

#[inline]
fn enabled() -> bool {
    match ENABLED.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let off = std::env::var_os("ARTDB_IMAGE_ARENA").is_some_and(|v| v == "off");
            // The first reader decides; a racing reader of the same environment agrees.
            let chosen = if off { 2 } else { 1 };
            match ENABLED.compare_exchange(0, chosen, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => chosen == 1,
                Err(seen) => seen == 1,
            }
        }
    }
}

/// What the arena holds right now (for statistics and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArenaStats {
    /// 2 MiB chunks held (each taken from the global allocator).
    pub chunks: usize,
    /// Bytes of those chunks (mapped from the system, or taken from the global allocator where
    /// there is no `mmap`).
    pub held_bytes: usize,
    /// Bytes of live images in them, with their 8-byte headers and rounding.
    pub live_bytes: usize,
    /// Live images.
    pub live_images: usize,
    /// Bytes the live images asked for: their sizes, without the arena's headers, rounding and
    /// free space (what a global allocator's statistics would count for them).
    pub image_bytes: usize,
    /// Images allocated from the arena since the process started.
    pub allocations: u64,
    /// Bytes of the one chunk the arena keeps with no image in it for its next chunk (0 or
    /// one chunk; counted in `chunks` and `held_bytes` too): not a leak.
    pub spare_bytes: usize,
}

/// What the image arena holds right now: chunks, live bytes and images (see the crate's
/// docs/journal/art.md, "Image arena").
pub fn arena_stats() -> ArenaStats {
    let state = lock();
    ArenaStats {
        chunks: state.chunks,
        held_bytes: state.chunks * CHUNK_LEN,
        live_bytes: state.live_bytes,
        live_images: state.live_images,
        image_bytes: state.image_bytes,
        allocations: state.allocations,
        spare_bytes: if state.spare.is_some() { CHUNK_LEN } else { 0 },
    }
}

fn lock() -> std::sync::MutexGuard<'static, State> {
    // No code under the lock panics; a poisoned lock still guards consistent lists.
    ARENA
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The layout reported when the system has no memory for a chunk.
fn chunk_layout() -> Layout {
    // A power of two, aligned to itself: always a valid layout.
    Layout::from_size_align(CHUNK_LEN, CHUNK_LEN).unwrap_or(Layout::new::<u64>())
    // ok: valid
}

/// The block size that serves an image of `size` bytes.
#[inline]
fn block_len(size: usize) -> usize {
    ((size + HEADER + ALIGN - 1) & !(ALIGN - 1)).max(BLOCK_MIN)
}

/// Reads the 8-byte word at `address`.
///
/// # Safety
/// `address` is 8-aligned and inside a chunk the arena holds (under the lock).
#[inline]
unsafe fn read(address: usize) -> u64 {
    // SAFETY: an aligned word of a live chunk (caller).
    unsafe { (address as *const u64).read() }
}

/// Writes the 8-byte word at `address`.
///
/// # Safety
/// As for [`read`], and no live image covers `address`.
#[inline]
unsafe fn write(address: usize, word: u64) {
    // SAFETY: an aligned word of a live chunk outside every live image (caller).
    unsafe { (address as *mut u64).write(word) }
}

impl Bins {
    /// Links the free block at `block` of `size` bytes into its bin and writes its header (with
    /// `prev_free`), its footer, and the next block's [`PREV_FREE`].
    ///
    /// # Safety
    /// `block..block + size` is a block of a held chunk of this group that no live image covers,
    /// and the block after it starts at `block + size`.
    unsafe fn insert(&mut self, block: usize, size: usize, prev_free: u64) {
        let (first, second) = bin_of(size);
        let head = self.heads[first][second];
        // SAFETY: header, links and footer lie inside the free block; the next block's header
        // lies inside the chunk (the sentinel at worst) (caller).
        unsafe {
            write(block, size as u64 | FREE | prev_free);
            write(block + 8, head as u64);
            write(block + 16, 0);
            write(block + size - 8, size as u64);
            if head != 0 {
                write(head + 16, block as u64);
            }
            let next = block + size;
            write(next, read(next) | PREV_FREE);
        }
        self.heads[first][second] = block;
        self.first_bitmap |= 1 << first;
        self.second_bitmaps[first] |= 1 << second;
    }

    /// Unlinks the free block at `block` of `size` bytes from its bin.
    ///
    /// # Safety
    /// `block` is a free block of that size, linked in its bin (of this group's lists).
    unsafe fn unlink(&mut self, block: usize, size: usize) {
        let (first, second) = bin_of(size);
        // SAFETY: the links of a free block (caller), and of its neighbours in the list.
        unsafe {
            let next = read(block + 8) as usize;
            let prev = read(block + 16) as usize;
            if prev != 0 {
                write(prev + 8, next as u64);
            } else {
                self.heads[first][second] = next;
            }
            if next != 0 {
                write(next + 16, prev as u64);
            }
        }
        if self.heads[first][second] == 0 {
            self.second_bitmaps[first] &= !(1 << second);
            if self.second_bitmaps[first] == 0 {
                self.first_bitmap &= !(1 << first);
            }
        }
    }

    /// A free block of at least `size` bytes, if any list holds one.
    fn find(&self, size: usize) -> Option<usize> {
        // First the size's own bin, whose blocks may be smaller than the size: the first few
        // that hold it (a hole left by a smaller image that grew is reused before fresh space).
        let (own_first, own_second) = bin_of(size);
        let mut block = self.heads[own_first][own_second];
        for _ in 0..OWN_BIN_SCAN {
            if block == 0 {
                break;
            }
            // SAFETY: a listed free block's header and link (the lock is held).
            let (header, next) = unsafe { (read(block), read(block + 8) as usize) };
            if (header & SIZE_MASK) as usize >= size {
                return Some(block);
            }
            block = next;
        }
        let (first, second) = bin_holding(size);
        if first >= FL {
            return None;
        }
        let above = self.second_bitmaps[first] & (u32::MAX << second);
        let (first, second) = if above != 0 {
            (first, above.trailing_zeros() as usize)
        } else {
            let firsts = self.first_bitmap & u32::MAX.checked_shl(first as u32 + 1).unwrap_or(0);
            if firsts == 0 {
                return None;
            }
            let first = firsts.trailing_zeros() as usize;
            (first, self.second_bitmaps[first].trailing_zeros() as usize)
        };
        Some(self.heads[first][second])
    }
}

impl State {
    /// Takes a new chunk for `group`, writes the group's number in its first word and lists the
    /// chunk as one free block of the group.
    fn grow(&mut self, group: usize) {
        let base = match self.spare.take() {
            // Held already (counted in `chunks`), with no image and on no list.
            Some(base) => base,
            None => {
                let Some(base) = chunk_source::take(self.chunks + 1 >= HUGE_FROM_CHUNKS) else {
                    alloc::handle_alloc_error(chunk_layout());
                };
                self.chunks += 1;
                base
            }
        };
        // SAFETY: the chunk is ours and holds no image: its group in its first word, the
        // sentinel at its end, then its one free block (which sets the sentinel's PREV_FREE).
        unsafe {
            write(base, group as u64);
            write(base + CHUNK_LEN - HEADER, 0);
            self.groups[group].insert(base + FIRST_BLOCK_AT, CHUNK_SPAN, 0);
        }
    }
}

/// Allocates a zeroed image of `size` bytes ([`serves`] holds) in a chunk of `group` and
/// returns its address (16-aligned).
pub(crate) fn alloc(size: usize, group: Group) -> usize {
    let group = group as usize;
    let need = block_len(size);
    let mut guard = lock();
    let state = &mut *guard;
    let block = match state.groups[group].find(need) {
        Some(block) => block,
        None => {
            state.grow(group);
            match state.groups[group].find(need) {
                Some(block) => block,
                // A new chunk's block holds any size the arena serves (asserted above).
                None => alloc::handle_alloc_error(chunk_layout()),
            }
        }
    };
    // SAFETY: `block` heads a bin's list: a free block of a held chunk, at least `need` bytes.
    unsafe {
        let header = read(block);
        let size_held = (header & SIZE_MASK) as usize;
        state.groups[group].unlink(block, size_held);
        let prev_free = header & PREV_FREE;
        // The block keeps the whole free block when the rest would be too small to list.
        let taken = if size_held - need >= BLOCK_MIN {
            need
        } else {
            size_held
        };
        write(block, taken as u64 | prev_free);
        if taken < size_held {
            state.groups[group].insert(block + taken, size_held - taken, 0);
        } else {
            let next = block + size_held;
            write(next, read(next) & !PREV_FREE);
        }
        state.live_bytes += taken;
    }
    state.live_images += 1;
    state.image_bytes += size;
    state.allocations += 1;
    drop(guard);
    let address = block + HEADER;
    // SAFETY: the payload is this caller's now: `size` bytes of the block after its header.
    unsafe { core::ptr::write_bytes(address as *mut u8, 0, size) };
    address
}

/// Frees an image the arena allocated.
///
/// # Safety
/// `address` was returned by [`alloc`] for an image of `size` bytes and not freed yet, and no
/// reference into it is used afterwards.
pub(crate) unsafe fn free(address: usize, size: usize) {
    let mut block = address - HEADER;
    let base = block & !(CHUNK_LEN - 1);
    let mut guard = lock();
    let state = &mut *guard;
    // SAFETY: a live block's header, and its chunk's first word (caller).
    let (header, group) = unsafe { (read(block), read(base) as usize) };
    let mut len = (header & SIZE_MASK) as usize;
    // A header that is free, or of another size than the image's, or a chunk without a group's
    // number, means a double free, a caller's size that changed or an address that is not the
    // arena's: the lists would be corrupted, so stop here.
    if group >= GROUPS
        || header & FREE != 0
        || len < block_len(size)
        || len - block_len(size) >= BLOCK_MIN
    {
        drop(guard);
        arena_corrupt(address, size, header);
    }
    state.live_bytes -= len;
    state.live_images -= 1;
    state.image_bytes -= size;
    // SAFETY: the block and its neighbours lie in one held chunk: the next block starts at
    // `block + len` (the sentinel at worst, never free), and PREV_FREE says the previous block
    // is free and its footer holds its size.
    unsafe {
        let next = block + len;
        let next_header = read(next);
        if next_header & FREE != 0 {
            let next_len = (next_header & SIZE_MASK) as usize;
            state.groups[group].unlink(next, next_len);
            len += next_len;
        }
        if header & PREV_FREE != 0 {
            let prev_len = read(block - 8) as usize;
            block -= prev_len;
            state.groups[group].unlink(block, prev_len);
            len += prev_len;
        }
        if block == base + FIRST_BLOCK_AT && len == CHUNK_SPAN {
            if state.spare.is_none() {
                // Kept whole and unlisted for the next `grow` (of either group: `grow` rewrites
                // the group's number and the chunk's one free block).
                state.spare = Some(base);
                return;
            }
            state.chunks -= 1;
            drop(guard);
            // SAFETY: the whole chunk is free and unlisted; it came from `chunk_source::take`.
            chunk_source::give_back(base);
            return;
        }
        // The block before a free block is never free (merged above).
        state.groups[group].insert(block, len, 0);
    }
}

#[cold]
#[inline(never)]
fn arena_corrupt(address: usize, size: usize, header: u64) -> ! {
    // An internal invariant broke (raw/mod.rs invariant 1): continuing would hand out memory twice.
    eprintln!(
        "artdb: image arena: free of {address:#x} ({size} bytes) found header {header:#x} \
         (a double free or a size mismatch); aborting"
    );
    std::process::abort()
}

/// Where chunks come from: their own anonymous mappings on Linux (so a chunk handed back leaves
/// no huge-page advice behind on memory the global allocator reuses for others, and its pages go
/// back to the system at once), the global allocator elsewhere.
mod chunk_source {
    use super::CHUNK_LEN;

    /// A new chunk of `CHUNK_LEN` bytes aligned to `CHUNK_LEN`, advised for huge pages when
    /// `huge`; `None` when the system has no memory for it.
    #[cfg(target_os = "linux")]
    pub(crate) fn take(huge: bool) -> Option<usize> {
        let span = 2 * CHUNK_LEN;
        // SAFETY: a new private anonymous mapping; no existing memory is touched.
        let start = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return None;
        }
        let start = start as usize;
        let base = (start + CHUNK_LEN - 1) & !(CHUNK_LEN - 1);
        // SAFETY: the parts of the new mapping before and after the aligned chunk are ours and
        // unused; unmapping them leaves exactly the chunk. Page-aligned: `start` is (a mapping)
        // and so are `base` and `base + CHUNK_LEN`.
        unsafe {
            if base > start {
                libc::munmap(start as *mut libc::c_void, base - start);
            }
            let end = start + span;
            if end > base + CHUNK_LEN {
                libc::munmap(
                    (base + CHUNK_LEN) as *mut libc::c_void,
                    end - base - CHUNK_LEN,
                );
            }
            if huge {
                // A hint on the chunk's own mapping; a failure (no THP) leaves 4 KiB pages.
                libc::madvise(base as *mut libc::c_void, CHUNK_LEN, libc::MADV_HUGEPAGE);
            }
        }
        Some(base)
    }

    /// Hands back a chunk [`take`] returned.
    ///
    /// # Safety
    /// `base` came from [`take`], was not handed back yet, and nothing in it is used again.
    #[cfg(target_os = "linux")]
    pub(crate) unsafe fn give_back(base: usize) {
        // SAFETY: the chunk's whole mapping, unused from now on (caller).
        unsafe {
            libc::munmap(base as *mut libc::c_void, CHUNK_LEN);
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn layout() -> std::alloc::Layout {
        // A power of two, aligned to itself: always a valid layout.
        std::alloc::Layout::from_size_align(CHUNK_LEN, CHUNK_LEN)
            .unwrap_or(std::alloc::Layout::new::<u64>()) // ok: valid, see above
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn take(_huge: bool) -> Option<usize> {
        // SAFETY: the layout has nonzero size.
        let base = unsafe { std::alloc::alloc(layout()) } as usize;
        (base != 0).then_some(base)
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) unsafe fn give_back(base: usize) {
        // SAFETY: `base` came from `take`, that is from `alloc` with this layout (caller).
        unsafe { std::alloc::dealloc(base as *mut u8, layout()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arena is process-wide and other tests of this crate allocate from it at the same
    /// time, so these tests check their own images (contents, no overlap, alignment) and the
    /// bins' arithmetic, not the arena's global counts.
    fn fill(address: usize, size: usize, byte: u8) {
        // SAFETY: an image this test allocated and owns.
        unsafe { core::ptr::write_bytes(address as *mut u8, byte, size) };
    }

    fn check(address: usize, size: usize, byte: u8) -> bool {
        // SAFETY: an image this test allocated and owns.
        let bytes = unsafe { core::slice::from_raw_parts(address as *const u8, size) };
        bytes.iter().all(|&b| b == byte)
    }

    /// The group number in the first word of the chunk holding the live image at `address`.
    fn group_of(address: usize) -> u64 {
        let _state = lock();
        // SAFETY: the chunk holds a live image of this test, so it is held; its first word is
        // written once, when the chunk is taken.
        unsafe { read(address & !(CHUNK_LEN - 1)) }
    }

    /// Checks every group's free lists against the blocks they list (under the lock, so other
    /// tests' threads see a consistent arena): each listed block is free, in the bin of its
    /// size, with its size again in its footer, its successor marked PREV_FREE and not free
    /// (merged at once), in a chunk of the lists' group, and each bitmap bit says whether its
    /// list is empty. Returns the free blocks seen.
    fn check_lists() -> usize {
        let state = lock();
        let mut seen = 0;
        for (group, bins) in state.groups.iter().enumerate() {
            for first in 0..FL {
                assert_eq!(
                    bins.first_bitmap & (1 << first) != 0,
                    bins.second_bitmaps[first] != 0
                );
                for second in 0..SL {
                    let head = bins.heads[first][second];
                    assert_eq!(bins.second_bitmaps[first] & (1 << second) != 0, head != 0);
                    let (mut block, mut prev) = (head, 0);
                    while block != 0 {
                        // SAFETY: a listed free block of a held chunk, its footer and the next
                        // block's header (the lock is held).
                        let (header, next, back, group_word) = unsafe {
                            (
                                read(block),
                                read(block + 8) as usize,
                                read(block + 16) as usize,
                                read(block & !(CHUNK_LEN - 1)),
                            )
                        };
                        let size = (header & SIZE_MASK) as usize;
                        assert!(header & FREE != 0, "a listed block is free");
                        assert_eq!(bin_of(size), (first, second), "listed in its bin");
                        assert_eq!(back, prev, "back link");
                        assert_eq!(group_word, group as u64, "in a chunk of its group");
                        // SAFETY: as above.
                        let (footer, successor) =
                            unsafe { (read(block + size - 8), read(block + size)) };
                        assert_eq!(footer as usize, size, "footer");
                        assert!(successor & PREV_FREE != 0, "successor knows");
                        assert!(successor & FREE == 0, "free neighbours are merged");
                        seen += 1;
                        prev = block;
                        block = next;
                    }
                }
            }
        }
        seen
    }

    #[test]
    fn model_of_both_groups_and_lists_stay_consistent() {
        // Random allocations and frees of both groups against a model of the live images (their
        // ranges, group and contents), with run-like traffic (an image replaced by a larger copy
        // in the same group) and the free lists checked as the steps go.
        let mut random = crate::test_support::xorshift(0x2545_F491_4F6C_DD1Du64);
        let mut live: Vec<(usize, usize, Group, u8)> = Vec::new();
        for step in 0..30_000u32 {
            let choice = random() % 8;
            if choice < 3 && !live.is_empty() {
                let at = random() as usize % live.len();
                let (address, size, group, byte) = live.swap_remove(at);
                assert!(check(address, size, byte), "image changed under its owner");
                assert_eq!(group_of(address), group as u64);
                // SAFETY: allocated below with this size, freed once.
                unsafe { free(address, size) };
            } else if choice < 5 && !live.is_empty() {
                // Grow: a larger copy in the same group, then the old image freed (a pack
                // copied into a larger one).
                let at = random() as usize % live.len();
                let (address, size, group, byte) = live[at];
                let grown = (size + size / 8 + 16).min(ARENA_IMAGE_MAX);
                let copy = alloc(grown, group);
                assert_eq!(group_of(copy), group as u64);
                fill(copy, grown, byte);
                assert!(check(address, size, byte));
                // SAFETY: allocated with this size, freed once; the model now holds the copy.
                unsafe { free(address, size) };
                live[at] = (copy, grown, group, byte);
            } else if live.len() < 600 {
                let group = if random() % 3 == 0 {
                    Group::Run
                } else {
                    Group::General
                };
                let size = ARENA_IMAGE_MIN + random() as usize % 6_000;
                let address = alloc(size, group);
                assert!(check(address, size, 0), "a new image is zeroed");
                let byte = (step % 251) as u8 + 1;
                fill(address, size, byte);
                live.push((address, size, group, byte));
            }
            if step % 1_000 == 0 {
                check_lists();
                // No two live images overlap (headers included).
                let mut ranges: Vec<(usize, usize)> = live
                    .iter()
                    .map(|&(address, size, _, _)| (address - HEADER, address + size))
                    .collect();
                ranges.sort_unstable();
                assert!(ranges.windows(2).all(|pair| pair[0].1 <= pair[1].0));
            }
        }
        for (address, size, group, byte) in live {
            assert!(check(address, size, byte));
            assert_eq!(group_of(address), group as u64);
            // SAFETY: allocated above with this size, freed once.
            unsafe { free(address, size) };
        }
        check_lists();
    }

    #[test]
    fn bins_bound_their_blocks() {
        let sizes = (BLOCK_MIN..70_000)
            .step_by(ALIGN)
            .chain((70_000..CHUNK_SPAN).step_by(4_096 + ALIGN))
            .chain([CHUNK_SPAN]);
        let mut last = (0, 0);
        for size in sizes {
            let bin = bin_of(size);
            assert!(bin.0 < FL && bin.1 < SL, "{size}");
            assert!(bin >= last, "bins grow with the size: {size}");
            last = bin;
            let holding = bin_holding(size);
            assert!(holding >= bin, "{size}");
            // Every block listed in the bin a search starts from (or above) holds the size.
            for other in (size.saturating_sub(2_048).max(BLOCK_MIN)..size).step_by(ALIGN) {
                assert!(
                    bin_of(other) < holding,
                    "{other} listed where {size} is searched"
                );
            }
        }
    }

    #[test]
    fn images_are_zeroed_aligned_and_disjoint() {
        let mut random = crate::test_support::xorshift(0x9E37_79B9_7F4A_7C15u64);
        let mut live: Vec<(usize, usize, u8)> = Vec::new();
        for round in 0..20_000u32 {
            if live.len() > 400 || (random() % 3 == 0 && !live.is_empty()) {
                let at = random() as usize % live.len();
                let (address, size, byte) = live.swap_remove(at);
                assert!(check(address, size, byte), "image changed under its owner");
                // SAFETY: allocated below with this size, freed once.
                unsafe { free(address, size) };
            } else {
                let size = match random() % 4 {
                    0 => ARENA_IMAGE_MIN + random() as usize % 64,
                    1 => 2064,
                    2 => ARENA_IMAGE_MIN + random() as usize % 20_000,
                    _ => ARENA_IMAGE_MIN + random() as usize % (ARENA_IMAGE_MAX - ARENA_IMAGE_MIN),
                };
                let group = if random() % 2 == 0 {
                    Group::General
                } else {
                    Group::Run
                };
                let address = alloc(size, group);
                assert_eq!(address % ALIGN, 0);
                assert_eq!(
                    group_of(address),
                    group as u64,
                    "an image sits in its group's chunk"
                );
                assert!(check(address, size, 0), "a new image is zeroed");
                let byte = (round % 251) as u8 + 1;
                fill(address, size, byte);
                live.push((address, size, byte));
            }
        }
        for (address, size, byte) in live {
            assert!(check(address, size, byte));
            // SAFETY: allocated above with this size, freed once.
            unsafe { free(address, size) };
        }
    }

    #[test]
    fn threads_allocate_and_free_at_once() {
        let handles: Vec<_> = (0..4u8)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut live = Vec::new();
                    for i in 0..5_000usize {
                        let size = ARENA_IMAGE_MIN + (i * 97 + usize::from(t) * 31) % 9_000;
                        let group = if i % 2 == 0 {
                            Group::General
                        } else {
                            Group::Run
                        };
                        let address = alloc(size, group);
                        assert_eq!(group_of(address), group as u64);
                        fill(address, size, t + 1);
                        live.push((address, size));
                        if i % 3 == 0 {
                            let (address, size) = live.swap_remove(i % live.len());
                            assert!(check(address, size, t + 1));
                            // SAFETY: allocated by this thread with this size, freed once.
                            unsafe { free(address, size) };
                        }
                    }
                    live
                })
            })
            .collect();
        // Free every thread's survivors on this thread (frees cross threads in the tree too).
        for (t, handle) in handles.into_iter().enumerate() {
            for (address, size) in handle.join().unwrap() {
                assert!(check(address, size, t as u8 + 1));
                // SAFETY: allocated by thread t with this size, freed once.
                unsafe { free(address, size) };
            }
        }
    }
}
