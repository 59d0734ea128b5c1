//! writer: the node sink of a checkpoint or bulk load. Packs node images into pages, gives
//! large images an extent of their own, and writes pages out as they fill.
//!
//! Placement: an image goes to the lowest open page (or newly allocated page) whose next free
//! offset is above the image's largest child offset, so the tree's order rule (a persisted child
//! lies below its parent) holds while freed pages are reused. Up to `OPEN_PAGES_MAX` pages are
//! being filled at once; the fullest is written when another is needed.
//!
//! Hazard: images written here are readable through the source only after `finish` (the pages
//! may still be in memory, and a reused page still shows its old bytes). The tree does not read
//! back an image it wrote during the same persist.

use super::format::PAGE_SIZE;
use super::page::{
    seal, NODE_IMAGE_ALIGN, PACKED_IMAGE_LEN_MAX, PAGE_HEADER_LEN, PAGE_KIND_EXTENT,
    PAGE_KIND_PACKED,
};
use super::source::PageSource;
use super::space::SpaceMap;
use crate::error::{CorruptionKind, Error, Result};
use crate::io::Storage;

/// Pages being filled at once.
pub const OPEN_PAGES_MAX: usize = 16;
/// A page with less room than this is written out at once.
const PAGE_ROOM_MIN_BYTES: usize = 64;
/// Consecutive sealed pages are written in one call of up to this many bytes.
const WRITE_RUN_BYTES_MAX: usize = 1 << 20;
/// Bytes written between two starts of writeback (`PageWriter::write_behind`).
const WRITE_BEHIND_BYTES: u64 = 8 << 20;

struct OpenPage {
    page: u64,
    bytes: Vec<u8>,
    fill: usize,
}

impl OpenPage {
    /// Offset the next image would get, if `len` bytes fit.
    fn next_offset(&self, len: usize) -> Option<u64> {
        let start = self.fill.next_multiple_of(NODE_IMAGE_ALIGN as usize);
        (start + len <= PAGE_SIZE as usize).then_some(self.page * PAGE_SIZE + start as u64)
    }

    fn room(&self) -> usize {
        PAGE_SIZE as usize - self.fill
    }
}

/// Counts of what a writer wrote.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteCounts {
    /// Node images written.
    pub images: u64,
    /// Pages written (packed pages and extent pages).
    pub pages: u64,
}

/// The node sink (see the module docs).
pub struct PageWriter<'s> {
    space: &'s mut SpaceMap,
    storage: &'s dyn Storage,
    source: &'s PageSource,
    generation: u64,
    open: Vec<OpenPage>,
    run: Vec<u8>,
    run_first_page: u64,
    allocated: Vec<(u64, u64)>,
    counts: WriteCounts,
    /// The write-behind window: what was written since writeback was last started.
    behind: Window,
    /// Counts pages without writing them (`PageWriter::dry_run`).
    dry_run: bool,
}

/// A span of the file and the bytes written into it (`PageWriter::write_behind`).
#[derive(Default)]
struct Window {
    from: u64,
    to: u64,
    bytes: u64,
}

impl<'s> PageWriter<'s> {
    pub(crate) fn new(
        space: &'s mut SpaceMap,
        storage: &'s dyn Storage,
        source: &'s PageSource,
        generation: u64,
    ) -> PageWriter<'s> {
        PageWriter {
            space,
            storage,
            source,
            generation,
            open: Vec::new(),
            run: Vec::new(),
            run_first_page: 0,
            allocated: Vec::new(),
            counts: WriteCounts::default(),
            behind: Window::default(),
            dry_run: false,
        }
    }

    /// A writer that packs and allocates as [`PageWriter::new`]'s does, into `space` (a copy
    /// of the space map, thrown away after), but writes nothing: its counts say how many pages
    /// the same images would take. `Db::compact` asks it whether a dense copy would shrink the
    /// file before writing one.
    pub(crate) fn dry_run(
        space: &'s mut SpaceMap,
        storage: &'s dyn Storage,
        source: &'s PageSource,
        generation: u64,
    ) -> PageWriter<'s> {
        PageWriter {
            dry_run: true,
            ..PageWriter::new(space, storage, source, generation)
        }
    }

    /// Writes one node image whose persisted children lie at or below `children_offset_max`;
    /// returns its offset, which is above `children_offset_max`.
    pub fn write_image(&mut self, image: &[u8], children_offset_max: Option<u64>) -> Result<u64> {
        self.counts.images += 1;
        // The page holding the largest child is not free, so a new page must lie above it.
        let page_min = children_offset_max.map_or(0, |max| max / PAGE_SIZE + 1);
        if page_min > self.space.page_count() {
            // A child past the end of the file: only a damaged or crafted image names one (the
            // tree's copy of it kept the word), and allocating up to it would map every page
            // in between (found by the fuzz body, tests/fuzz_body.rs).
            return Err(Error::corruption(
                children_offset_max.unwrap_or(0),
                CorruptionKind::NodeOffset,
            ));
        }
        if image.len() > PACKED_IMAGE_LEN_MAX {
            return self.write_extent(image, page_min);
        }
        let above = |offset: u64| children_offset_max.map_or(true, |max| offset > max);
        let chosen = self
            .open
            .iter()
            .enumerate()
            .filter_map(|(index, open)| open.next_offset(image.len()).map(|offset| (index, offset)))
            .filter(|&(_, offset)| above(offset))
            .min_by_key(|&(_, offset)| offset);
        let (index, offset) = match chosen {
            Some(found) => found,
            None => {
                let index = self.open_page(page_min)?;
                let first = self.open[index].page * PAGE_SIZE + PAGE_HEADER_LEN as u64;
                (index, first)
            }
        };
        let open = &mut self.open[index];
        let start = (offset - open.page * PAGE_SIZE) as usize;
        open.bytes[start..start + image.len()].copy_from_slice(image);
        open.fill = start + image.len();
        self.space.add_node(open.page);
        if open.room() < PAGE_ROOM_MIN_BYTES {
            let full = self.open.remove(index);
            self.seal_page(full)?;
        }
        Ok(offset)
    }

    fn open_page(&mut self, page_min: u64) -> Result<usize> {
        if self.open.len() >= OPEN_PAGES_MAX {
            let fullest = (0..self.open.len()).min_by_key(|&index| self.open[index].room());
            if let Some(index) = fullest {
                let page = self.open.remove(index);
                self.seal_page(page)?;
            }
        }
        let page = self.space.allocate(1, page_min);
        self.allocated.push((page, 1));
        self.open.push(OpenPage {
            page,
            bytes: vec![0; PAGE_SIZE as usize],
            fill: PAGE_HEADER_LEN,
        });
        Ok(self.open.len() - 1)
    }

    fn write_extent(&mut self, image: &[u8], page_min: u64) -> Result<u64> {
        let len = PAGE_HEADER_LEN + image.len();
        let pages = (len as u64).div_ceil(PAGE_SIZE);
        let first = self.space.allocate(pages, page_min);
        self.allocated.push((first, pages));
        let mut bytes = vec![0u8; (pages * PAGE_SIZE) as usize];
        bytes[PAGE_HEADER_LEN..len].copy_from_slice(image);
        seal(&mut bytes, PAGE_KIND_EXTENT, 0, self.generation);
        self.flush_run()?;
        self.write_pages(first, &bytes)?;
        self.space.add_extent(first, pages);
        Ok(first * PAGE_SIZE + PAGE_HEADER_LEN as u64)
    }

    fn seal_page(&mut self, mut page: OpenPage) -> Result<()> {
        seal(
            &mut page.bytes,
            PAGE_KIND_PACKED,
            page.fill as u16,
            self.generation,
        );
        let run_pages = (self.run.len() as u64) / PAGE_SIZE;
        if !self.run.is_empty() && page.page != self.run_first_page + run_pages {
            self.flush_run()?;
        }
        if self.run.is_empty() {
            self.run_first_page = page.page;
        }
        self.run.extend_from_slice(&page.bytes);
        if self.run.len() >= WRITE_RUN_BYTES_MAX {
            self.flush_run()?;
        }
        Ok(())
    }

    fn flush_run(&mut self) -> Result<()> {
        if self.run.is_empty() {
            return Ok(());
        }
        let run = std::mem::take(&mut self.run);
        let result = self.write_pages(self.run_first_page, &run);
        self.run = run;
        self.run.clear();
        result
    }

    fn write_pages(&mut self, first_page: u64, bytes: &[u8]) -> Result<()> {
        if self.dry_run {
            self.counts.pages += bytes.len() as u64 / PAGE_SIZE;
            return Ok(());
        }
        self.storage
            .write_at(first_page * PAGE_SIZE, bytes)
            .map_err(Error::io("write node pages"))?;
        let pages = bytes.len() as u64 / PAGE_SIZE;
        self.counts.pages += pages;
        self.write_behind(first_page * PAGE_SIZE, bytes.len() as u64);
        // The verified bits live in the window: it must cover the pages before they are marked.
        self.source
            .ensure_window((first_page + pages) * PAGE_SIZE)?;
        self.source.mark_written(first_page, pages);
        Ok(())
    }

    /// Counts `len` bytes written at `offset` towards the write-behind window, and once the
    /// window holds [`WRITE_BEHIND_BYTES`], starts the kernel's writeback of the span it covers:
    /// a big checkpoint or bulk load then has its pages on their way to the disk while it goes
    /// on, and the final sync does not find hundreds of MB still dirty. The span may hold pages
    /// this writer did not write (a checkpoint reuses free pages here and there): writing them
    /// back early is harmless, as the commit syncs the whole file. Only a hint: a failed write
    /// shows up in that sync, which is the one that counts.
    fn write_behind(&mut self, offset: u64, len: u64) {
        let window = &mut self.behind;
        if window.bytes == 0 {
            (window.from, window.to) = (offset, offset + len);
        } else {
            window.from = window.from.min(offset);
            window.to = window.to.max(offset + len);
        }
        window.bytes += len;
        if window.bytes >= WRITE_BEHIND_BYTES {
            window.bytes = 0;
            let _ = self
                .storage
                .start_writeback(window.from, window.to - window.from);
        }
    }

    /// Writes every open page and makes the written pages readable through the source.
    pub fn finish(mut self) -> Result<WriteCounts> {
        let mut open = std::mem::take(&mut self.open);
        open.sort_by_key(|page| page.page);
        for page in open {
            self.seal_page(page)?;
        }
        self.flush_run()?;
        if self.dry_run {
            return Ok(self.counts);
        }
        let data_end = self.space.page_count() * PAGE_SIZE;
        self.source.ensure_window(data_end)?;
        self.source.publish_data_end(data_end, self.generation);
        Ok(self.counts)
    }

    /// Abandons what was written (it was never published): the pages go back to the free set.
    pub fn abandon(mut self) {
        let allocated = std::mem::take(&mut self.allocated);
        self.space.unallocate(
            allocated
                .into_iter()
                .flat_map(|(first, pages)| first..first + pages),
        );
    }
}

/// The tree's sink over a [`PageWriter`]. The engine's error is kept aside so that the typed I/O
/// error, not the tree's string, reaches the caller.
pub struct TreeSink<'w, 's> {
    writer: &'w mut PageWriter<'s>,
    /// The engine error behind the last `Error::Storage` returned to the tree.
    pub error: Option<Error>,
}

impl<'w, 's> TreeSink<'w, 's> {
    /// A sink writing through `writer`.
    pub fn new(writer: &'w mut PageWriter<'s>) -> TreeSink<'w, 's> {
        TreeSink {
            writer,
            error: None,
        }
    }

    /// Converts an error from the tree, preferring the engine error kept aside.
    pub fn convert(&mut self, error: artdb_art::Error) -> Error {
        self.error
            .take()
            .unwrap_or_else(|| crate::error::from_tree(error))
    }
}

impl artdb_art::NodeSink for TreeSink<'_, '_> {
    fn write(
        &mut self,
        image: &[u8],
        children_offset_max: Option<u64>,
    ) -> std::result::Result<u64, artdb_art::Error> {
        self.writer
            .write_image(image, children_offset_max)
            .map_err(|error| {
                let message = error.to_string();
                self.error = Some(error);
                artdb_art::Error::Storage(message)
            })
    }
}
