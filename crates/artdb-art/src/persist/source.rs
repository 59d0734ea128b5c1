//! The persisted node's two seams: [`NodeSource`] (serve the image at an offset, implemented by
//! the engine's store; [`QuickRegion`] and `Walk` its verified-bytes fast path) and [`NodeSink`]
//! (append an image, return its offset), with [`MemoryNodeStore`], both traits over a byte
//! vector. The lowest part of persistence: the lookups read through it, and it names nothing
//! of the tree (writing a tree through a sink is `persist/mod.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::node::{self, HEADER_LEN};
use crate::word;
use crate::Error;

/// Serves persisted node images by file offset (implemented by the engine's store).
pub trait NodeSource: Send + Sync {
    /// The bytes starting at `offset`: at least the whole image there (more is fine, e.g. the
    /// rest of the map). The tree checks the image before using it.
    fn node_image(&self, offset: u64) -> Result<&[u8], Error>;

    /// The images [`NodeSource::node_image`] serves with no error to report and no first-use
    /// work left (for the engine: pages whose checksum matched), described once so that a
    /// lookup can find them at every level without calling the source (see [`QuickRegion`]).
    /// A lookup that meets an image outside it calls `node_image`, which does that work or
    /// reports what is wrong, and asks for the region again. `None` (the default) sends every
    /// level through `node_image`.
    #[inline]
    fn quick_region(&self) -> Option<QuickRegion<'_>> {
        None
    }
}

/// Images a reader may use without calling their [`NodeSource`]: the image at `offset` is
/// `bytes[offset..]` when `offset` is below `bytes.len()`, a multiple of 8, at least
/// `page_header_len` bytes into its page (pages of `1 << page_shift` bytes), and the page's bit is
/// set in `verified` (bit `page % 64` of word `page / 64`). Anything else goes to the source.
///
/// The source promises that such bytes are exactly what `node_image` would return and that
/// they stay mapped and unchanged for the region's lifetime; a bit set in `verified` means the
/// source has done the page's first-use work (for the engine: its checksum matched). The tree
/// checks every image it reads this way as it checks any persisted image.
#[derive(Clone, Copy)]
pub struct QuickRegion<'a> {
    bytes: &'a [u8],
    verified: &'a [AtomicU64],
    page_shift: u32,
    /// `(1 << page_shift) - 1`, computed once here rather than at every level of a lookup.
    page_mask: u64,
    page_header_len: u64,
}

impl<'a> QuickRegion<'a> {
    /// A region over `bytes` (offset 0 of the source at `bytes[0]`) with pages of
    /// `1 << page_shift` bytes (`page_shift` is at most 63), the first `page_header_len` bytes
    /// of each holding no image, and one bit per page in `verified`.
    #[inline]
    pub fn new(
        bytes: &'a [u8],
        verified: &'a [AtomicU64],
        page_shift: u32,
        page_header_len: u64,
    ) -> QuickRegion<'a> {
        let page_shift = page_shift.min(63);
        // Only pages with a bit in `verified` can be served: the bytes past them are cut off
        // here, so that an offset below `bytes.len()` always names a word of `verified` (the
        // invariant `Walk::image` relies on). `pages << page_shift`, or all of u64 when that
        // overflows (every offset's page then has a bit).
        let pages = (verified.len() as u64).saturating_mul(64);
        let covered = if pages > u64::MAX >> page_shift {
            u64::MAX
        } else {
            pages << page_shift
        };
        let served =
            usize::try_from(covered).map_or(bytes.len(), |covered| covered.min(bytes.len()));
        QuickRegion {
            bytes: bytes.get(..served).unwrap_or_default(),
            verified,
            page_shift,
            page_mask: (1u64 << page_shift) - 1,
            page_header_len,
        }
    }

    /// The bytes from `offset` on, when the region serves that offset.
    #[inline(always)]
    pub(crate) fn image(&self, offset: u64) -> Option<&'a [u8]> {
        let page = offset >> self.page_shift;
        let in_page = offset & self.page_mask;
        if offset % 8 != 0 || in_page < self.page_header_len {
            return None;
        }
        let word = self.verified.get((page / 64) as usize)?;
        if word.load(Ordering::Acquire) & (1 << (page % 64)) == 0 {
            return None;
        }
        self.bytes.get(usize::try_from(offset).ok()?..)
    }

    /// Where the persisted image `bits` names would be in the region, for a prefetch (`None`
    /// for other words). No bounds check: a prefetch never faults, and an offset past the
    /// region is refused when the lookup reads it.
    #[inline(always)]
    fn prefetch_address(&self, bits: u64) -> Option<usize> {
        (bits & word::TAG_MASK == word::TAG_PERSISTED)
            .then(|| (self.bytes.as_ptr() as usize).wrapping_add((bits & !word::TAG_MASK) as usize))
    }

    /// Prefetches what a lookup reads next when `bits` names a persisted node of the region: its
    /// header, and (with the key's next byte) the lines where a Node48's index byte and a
    /// Node256's child word for that byte would be (as `read::prefetch_for` does for heap
    /// nodes), so those misses overlap instead of following one another. A hint only: nothing
    /// is read, and a wrong guess costs a useless prefetch.
    #[inline(always)]
    pub(crate) fn prefetch(&self, bits: u64, next_byte: Option<u8>) {
        let Some(address) = self.prefetch_address(bits) else {
            return;
        };
        crate::raw::prefetch(address);
        if let Some(byte) = next_byte {
            crate::raw::prefetch(address + HEADER_LEN + byte as usize);
            crate::raw::prefetch(address + HEADER_LEN + 8 * byte as usize);
        }
    }

    /// Prefetches the header of the persisted image `bits` names and, when the key's byte there
    /// is `next_byte`, the line of that byte's value in a dense pack of `width`-byte values with
    /// no prefix (the layout its parent's `flags` hint: node/mod.rs). A hint only, as
    /// [`QuickRegion::prefetch`].
    #[inline(always)]
    pub(crate) fn prefetch_dense(&self, bits: u64, next_byte: Option<&u8>, width: usize) {
        let Some(address) = self.prefetch_address(bits) else {
            return;
        };
        crate::raw::prefetch(address);
        if let Some(&byte) = next_byte {
            crate::raw::prefetch(
                address.wrapping_add(node::PACK_HEADER_LEN + usize::from(byte) * width),
            );
        }
    }

    /// Prefetches the first four lines of the persisted image `bits` names (a pack's header
    /// and, for up to ~240 entries, its whole fence), when its parent hints that its children
    /// are ordinary packs (node/mod.rs): the fence's lines then arrive with the header instead
    /// of one miss after it. A hint only, as [`QuickRegion::prefetch`].
    #[inline(always)]
    pub(crate) fn prefetch_pack(&self, bits: u64) {
        let Some(address) = self.prefetch_address(bits) else {
            return;
        };
        crate::raw::prefetch(address);
        crate::raw::prefetch(address.wrapping_add(64));
        crate::raw::prefetch(address.wrapping_add(128));
        crate::raw::prefetch(address.wrapping_add(192));
    }
}

/// One descent through a [`QuickRegion`] (`lookup::persisted::get`): the images it reads lie
/// below a bound that starts at the persisted parent's offset (or the region's end, less a
/// header word, for a walk with no persisted parent) and becomes each image's offset as the
/// walk descends into it, which is the general path's check that a persisted child lies below
/// its persisted parent. So an offset below the bound is inside the region with a header word
/// after it, and the region's pages all have a word of verified bits (`QuickRegion::new`):
/// [`Walk::image`] reads both with no further bounds check.
pub(crate) struct Walk<'r, 'a> {
    region: &'r QuickRegion<'a>,
    /// Invariant: at most `region.bytes.len() - 8` (0 when shorter).
    bound: u64,
    /// The last offset `image` served (below `bound`), for `descend`.
    served: u64,
}

impl<'r, 'a> Walk<'r, 'a> {
    /// A walk below the persisted node at `parent` (`u64::MAX` for none).
    #[inline(always)]
    pub(crate) fn new(region: &'r QuickRegion<'a>, parent: u64) -> Walk<'r, 'a> {
        let header_bound = (region.bytes.len() as u64).saturating_sub(7);
        let bound = parent.min(header_bound);
        Walk {
            region,
            bound,
            served: bound,
        }
    }

    /// The bytes from `offset` on (at least 8), when `offset` is below the bound, a multiple of
    /// 8 past its page's header, and its page is verified; the same bytes as
    /// [`QuickRegion::image`]. The walk's users call [`Walk::image_and_head`], which also
    /// reads the header word.
    #[inline(always)]
    fn image(&mut self, offset: u64) -> Option<&'a [u8]> {
        let region = self.region;
        if offset >= self.bound
            || offset % 8 != 0
            || offset & region.page_mask < region.page_header_len
        {
            return None;
        }
        let page = offset >> region.page_shift;
        // SAFETY: `offset < bound <= bytes.len() - 8`, and `QuickRegion::new` cut `bytes` to
        // the pages `verified` has bits for, so `page / 64 < verified.len()`.
        let word = unsafe { region.verified.get_unchecked((page / 64) as usize) };
        if word.load(Ordering::Acquire) & (1 << (page % 64)) == 0 {
            return None;
        }
        self.served = offset;
        // SAFETY: `offset < bytes.len()` (above), so the range is in bounds (and `offset` fits
        // a usize, as every index below a slice's length does).
        Some(unsafe { region.bytes.get_unchecked(offset as usize..) })
    }

    /// [`Walk::image`] and the image's first 8 bytes as a little-endian word (its header word),
    /// read with no length check of their own: the bound leaves at least 8 bytes after any
    /// offset below it.
    #[inline(always)]
    pub(crate) fn image_and_head(&mut self, offset: u64) -> Option<(&'a [u8], u64)> {
        let bytes = self.image(offset)?;
        // SAFETY: `image` served `offset < bound <= region.bytes.len() - 8` (the struct's
        // invariant), so `bytes` (the region from `offset` on) holds at least 8 bytes, and an
        // unaligned read of them is allowed.
        let head = unsafe { bytes.as_ptr().cast::<u64>().read_unaligned() };
        Some((bytes, u64::from_le(head)))
    }

    /// The region the walk reads.
    #[inline(always)]
    pub(crate) fn region(&self) -> &'r QuickRegion<'a> {
        self.region
    }

    /// Moves the bound to the offset `image` served last: the walk goes on below that node.
    #[inline(always)]
    pub(crate) fn descend(&mut self) {
        self.bound = self.served;
    }
}

/// Every page of a [`MemoryNodeStore`] counts as verified: the store is one page of `1 << 63`
/// bytes whose bit is set.
static MEMORY_STORE_VERIFIED: [AtomicU64; 1] = [AtomicU64::new(1)];

/// Receives node images written by [`Tree::persist`] (implemented by the engine's store).
pub trait NodeSink {
    /// Stores `image` and returns its offset: a multiple of 8 and greater than
    /// `children_offset_max`, the largest offset of a persisted child named in the image (`None`
    /// if it names none, e.g. a leaf). Offsets need not grow otherwise, so space can be reused.
    fn write(&mut self, image: &[u8], children_offset_max: Option<u64>) -> Result<u64, Error>;
}

/// Node images in a byte vector: a [`NodeSink`] while being written, a [`NodeSource`] after.
#[derive(Debug, Default, Clone)]
pub struct MemoryNodeStore {
    bytes: Vec<u8>,
}

impl MemoryNodeStore {
    /// An empty store. The first image goes to offset 8, so offset 0 never holds a node.
    pub fn new() -> MemoryNodeStore {
        MemoryNodeStore { bytes: vec![0; 8] }
    }

    /// The stored bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The stored bytes, writable (for corruption tests).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

impl NodeSink for MemoryNodeStore {
    fn write(&mut self, image: &[u8], _children_offset_max: Option<u64>) -> Result<u64, Error> {
        let offset = self.bytes.len() as u64;
        self.bytes.extend_from_slice(image);
        let padded = self.bytes.len().div_ceil(8) * 8;
        self.bytes.resize(padded, 0);
        Ok(offset)
    }
}

impl NodeSource for MemoryNodeStore {
    fn node_image(&self, offset: u64) -> Result<&[u8], Error> {
        usize::try_from(offset)
            .ok()
            .and_then(|start| self.bytes.get(start..))
            .filter(|bytes| !bytes.is_empty())
            .ok_or_else(|| Error::persisted(offset, "offset past the end of the store"))
    }

    fn quick_region(&self) -> Option<QuickRegion<'_>> {
        Some(QuickRegion::new(&self.bytes, &MEMORY_STORE_VERIFIED, 63, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages of 64 bytes, the first 8 of each a page header; one bitset word (64 pages), so the
    /// region serves at most 4096 bytes whatever its slice holds.
    fn region_of<'a>(bytes: &'a [u8], verified: &'a [AtomicU64]) -> QuickRegion<'a> {
        QuickRegion::new(bytes, verified, 6, 8)
    }

    #[test]
    fn walk_serves_what_image_serves_below_its_bound() {
        // Bytes that differ from their neighbours, so a header word read from the wrong place
        // shows.
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let verified = [AtomicU64::new(!(1 << 3))];
        let region = region_of(&bytes, &verified);
        // Pages past the bitset's 64 are not served (the slice is cut to 4096 bytes).
        assert!(region.image(4096 + 8).is_none());
        assert!(region.image(4000).is_some());
        for parent in [u64::MAX, 4096, 3000, 200, 0] {
            for offset in (0..5200u64).step_by(4) {
                let mut walk = Walk::new(&region, parent);
                let expected = if offset < parent && offset + 8 <= 4096 {
                    region.image(offset)
                } else {
                    None
                };
                let got = walk.image(offset);
                assert_eq!(
                    got.map(<[u8]>::len),
                    expected.map(<[u8]>::len),
                    "{offset} {parent}"
                );
                // `image_and_head` serves the same bytes and their first 8 as the header word.
                let with_head = Walk::new(&region, parent).image_and_head(offset);
                assert_eq!(with_head.map(|(image, _)| image), got, "{offset} {parent}");
                if let Some((image, head)) = with_head {
                    let first: [u8; 8] = image[..8].try_into().unwrap();
                    assert_eq!(head, u64::from_le_bytes(first), "{offset} {parent}");
                }
                if let Some(image) = got {
                    assert!(image.len() >= 8);
                    // Descending makes the served offset the bound.
                    walk.descend();
                    assert!(walk.image(offset).is_none());
                }
            }
        }
        // Unverified page 3 (bytes 192..256), page headers, unaligned offsets.
        let mut walk = Walk::new(&region, u64::MAX);
        assert!(walk.image(200).is_none());
        assert!(walk.image(256).is_none());
        assert!(walk.image(260).is_none());
        assert!(walk.image(264).is_some());
    }

    #[test]
    fn regions_shorter_than_a_header_word_serve_nothing() {
        let verified = [AtomicU64::new(u64::MAX)];
        for len in 0..12 {
            let bytes = vec![0u8; len];
            let region = region_of(&bytes, &verified);
            let mut walk = Walk::new(&region, u64::MAX);
            for offset in (0..16).step_by(8) {
                let image = walk.image(offset);
                assert!(image.is_none() || (offset as usize + 8 <= len && offset >= 8));
                // The header word is read only where 8 bytes are served.
                let with_head = Walk::new(&region, u64::MAX).image_and_head(offset);
                assert_eq!(with_head.map(|(image, _)| image), image);
            }
        }
        // A bitset of no words serves nothing.
        let bytes = vec![0u8; 256];
        let region = region_of(&bytes, &[]);
        assert!(region.image(8).is_none());
        assert!(Walk::new(&region, u64::MAX).image(8).is_none());
    }
}
