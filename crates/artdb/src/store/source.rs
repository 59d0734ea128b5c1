//! source: the read side of the store. Serves persisted node images in place from a read-only
//! map of the database file, checking each page's checksum the first time this process uses it.
//!
//! Cost of a visit once a page is verified: one atomic load of the window pointer, one of the
//! data end, one bit test, one slice: no hash lookup, no lock, no reference count.
//!
//! Windows: a map is created with room to spare (twice the file, at least
//! `WINDOW_LEN_MIN_BYTES`); when the file outgrows it a bigger window replaces it. Old windows
//! stay mapped until the source is dropped, because slices handed out from them may still be in
//! use; so the address space used is at most about twice the final file size. Each window carries
//! its own bitset of verified pages, seeded from the previous window's.
//!
//! Invariants: a page's bit is set only after its checksum matched and its generation was at most
//! the newest checkpoint this process opened or wrote (a page written by a later checkpoint than
//! the one being read is a reused page: read through a salvaged older checkpoint, it would be
//! another node's bytes), or because this process wrote the page itself; offsets at or past
//! `data_end` are never read (they may be past the file).

use super::format::PAGE_SIZE;
use super::page::{
    checksum_matches, PageHeader, NODE_IMAGE_ALIGN, PAGE_HEADER_LEN, PAGE_KIND_EXTENT,
    PAGE_KIND_PACKED,
};
use crate::error::{CorruptionKind, Error, Result};
use crate::io::{Map, Storage};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

/// Smallest map created, so that a growing file is not remapped at every checkpoint.
pub const WINDOW_LEN_MIN_BYTES: u64 = 64 << 20;

struct Window {
    map: Map,
    verified: Box<[AtomicU64]>,
}

impl Window {
    fn is_verified(&self, page: u64) -> bool {
        let word = self.verified.get((page / 64) as usize);
        word.is_some_and(|word| word.load(Ordering::Acquire) & (1 << (page % 64)) != 0)
    }

    fn set_verified(&self, page: u64) {
        if let Some(word) = self.verified.get((page / 64) as usize) {
            word.fetch_or(1 << (page % 64), Ordering::AcqRel);
        }
    }
}

/// The read side of the store (see the module docs). Shared by every tree of the database.
pub struct PageSource {
    storage: Arc<dyn Storage>,
    window: AtomicPtr<Window>,
    // Boxed so a window's address stays put when the Vec grows: `window` points into it.
    #[allow(clippy::vec_box)]
    windows: Mutex<Vec<Box<Window>>>,
    data_end: AtomicU64,
    generation_max: AtomicU64,
}

impl PageSource {
    /// A source over `storage` whose first `data_end` bytes hold published pages.
    /// `generation` is the checkpoint being read: pages of a later one are refused.
    pub fn new(storage: Arc<dyn Storage>, data_end: u64, generation: u64) -> Result<PageSource> {
        let source = PageSource {
            storage,
            window: AtomicPtr::new(std::ptr::null_mut()),
            windows: Mutex::new(Vec::new()),
            data_end: AtomicU64::new(0),
            generation_max: AtomicU64::new(generation),
        };
        source.ensure_window(data_end)?;
        source.data_end.store(data_end, Ordering::Release);
        Ok(source)
    }

    /// Bytes of the file that hold written pages.
    pub fn data_end(&self) -> u64 {
        self.data_end.load(Ordering::Acquire)
    }

    /// Makes sure a window covers `len` bytes. Called by the writer before it raises the data
    /// end past the current window.
    pub fn ensure_window(&self, len: u64) -> Result<()> {
        let mut windows = self.windows.lock();
        let current_len = windows.last().map_or(0, |window| window.map.len() as u64);
        if len <= current_len && !windows.is_empty() {
            return Ok(());
        }
        let wanted = len.saturating_mul(2).max(WINDOW_LEN_MIN_BYTES);
        let map = match self.storage.map(wanted) {
            Ok(map) => map,
            Err(_) => self
                .storage
                .map(len.max(PAGE_SIZE))
                .map_err(Error::io("map the database file"))?,
        };
        let words = (map.len() as u64 / PAGE_SIZE).div_ceil(64) as usize;
        let verified: Box<[AtomicU64]> = (0..words).map(|_| AtomicU64::new(0)).collect();
        if let Some(previous) = windows.last() {
            for (word, old) in verified.iter().zip(previous.verified.iter()) {
                word.store(old.load(Ordering::Acquire), Ordering::Relaxed);
            }
        }
        let mut window = Box::new(Window { map, verified });
        let pointer: *mut Window = &mut *window;
        windows.push(window);
        self.window.store(pointer, Ordering::Release);
        Ok(())
    }

    /// Raises the data end after the writer wrote pages up to `data_end` (never lowers it), and
    /// the newest generation whose pages may be read to `generation`.
    pub fn publish_data_end(&self, data_end: u64, generation: u64) {
        self.data_end.fetch_max(data_end, Ordering::AcqRel);
        self.generation_max.fetch_max(generation, Ordering::AcqRel);
    }

    fn window(&self) -> &Window {
        let pointer = self.window.load(Ordering::Acquire);
        // SAFETY: `window` always points at a Box in `self.windows` (set in `ensure_window`,
        // which `new` calls before returning); boxes are never removed or moved until `self` is
        // dropped, so the reference lives as long as `&self`.
        unsafe { &*pointer }
    }

    /// Marks pages this process wrote itself as verified.
    pub fn mark_written(&self, first_page: u64, pages: u64) {
        let window = self.window();
        for page in first_page..first_page + pages {
            window.set_verified(page);
        }
    }

    /// The bytes from node image offset `offset` to the data end, after checking the page that
    /// holds the image. The tree reads as much of it as the image's header says.
    pub fn node_image(&self, offset: u64) -> Result<&[u8]> {
        let Some(data_end) = self.image_data_end(offset) else {
            return Err(Error::corruption(offset, CorruptionKind::NodeOffset));
        };
        let window = self.window();
        let page = offset / PAGE_SIZE;
        if !window.is_verified(page) {
            self.verify_page(window, page, data_end)?;
        }
        window
            .map
            .bytes(offset, (data_end - offset) as usize)
            .ok_or_else(|| Error::corruption(offset, CorruptionKind::NodeOffset))
    }

    /// The data end, if `offset` can be where an image starts: below the data end, past a
    /// page header, aligned.
    #[inline]
    fn image_data_end(&self, offset: u64) -> Option<u64> {
        let data_end = self.data_end();
        let in_page = offset % PAGE_SIZE;
        let well_formed = offset < data_end
            && in_page >= PAGE_HEADER_LEN as u64
            && offset % NODE_IMAGE_ALIGN == 0;
        well_formed.then_some(data_end)
    }

    /// Checks the checksum of the packed page or extent starting at `page`; returns the number
    /// of pages it covers.
    fn verify_page(&self, window: &Window, page: u64, data_end: u64) -> Result<u64> {
        let at = page * PAGE_SIZE;
        let corrupt = |kind| Error::corruption(at, kind);
        let head = window
            .map
            .bytes(at, PAGE_HEADER_LEN)
            .ok_or_else(|| corrupt(CorruptionKind::NodeOffset))?;
        let header = PageHeader::read(head);
        let pages = match header.kind {
            PAGE_KIND_PACKED if header.extent_pages == 1 => 1,
            PAGE_KIND_EXTENT if header.extent_pages >= 1 => u64::from(header.extent_pages),
            _ => return Err(corrupt(CorruptionKind::PageHeader("kind or extent length"))),
        };
        let end = at
            .checked_add(pages * PAGE_SIZE)
            .filter(|&end| end <= data_end);
        let Some(end) = end else {
            return Err(corrupt(CorruptionKind::PageHeader(
                "extent past the end of the data",
            )));
        };
        let covered = window
            .map
            .bytes(at, (end - at) as usize)
            .ok_or_else(|| corrupt(CorruptionKind::NodeOffset))?;
        if !checksum_matches(covered) {
            return Err(corrupt(CorruptionKind::PageChecksum));
        }
        if header.generation > self.generation_max.load(Ordering::Acquire) {
            return Err(corrupt(CorruptionKind::PageHeader(
                "written by a later checkpoint than the one open (the page was reused)",
            )));
        }
        for verified in page..page + pages {
            window.set_verified(verified);
        }
        Ok(pages)
    }

    /// Checks the page or extent at `page` regardless of its verified bit (for `verify`).
    pub fn check_page(&self, page: u64) -> Result<u64> {
        self.verify_page(self.window(), page, self.data_end())
    }
}

impl std::fmt::Debug for PageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageSource")
            .field("data_end", &self.data_end())
            .finish()
    }
}

/// The tree reads persisted nodes through this (DESIGN.md: the store implements the tree's
/// trait). Errors keep their offset: `Error::Persisted { offset }` maps back to
/// `Error::Corruption { at: offset }` in the engine.
impl artdb_art::NodeSource for PageSource {
    fn node_image(&self, offset: u64) -> std::result::Result<&[u8], artdb_art::Error> {
        PageSource::node_image(self, offset).map_err(|error| match error {
            Error::Corruption { at, kind } => artdb_art::Error::Persisted {
                offset: at,
                reason: kind.to_string(),
            },
            other => artdb_art::Error::Storage(other.to_string()),
        })
    }

    /// The current window up to the data end, its verified bits, and the page layout, handed
    /// over once per lookup (the tree checks offsets against them as `node_image` does).
    #[inline]
    fn quick_region(&self) -> Option<artdb_art::QuickRegion<'_>> {
        let data_end = self.data_end();
        let window = self.window();
        let bytes = window.map.bytes(0, usize::try_from(data_end).ok()?)?;
        Some(artdb_art::QuickRegion::new(
            bytes,
            &window.verified,
            PAGE_SIZE.trailing_zeros(),
            PAGE_HEADER_LEN as u64,
        ))
    }
}

const _: () = assert!(PAGE_SIZE.is_power_of_two());
