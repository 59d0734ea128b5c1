//! page: the header of a node page and of an extent.
//!
//! Node images live in pages (`PAGE_SIZE`, 32 KiB). A *packed* page holds many images after its header; an
//! image never spans pages. An image too big for a packed page (a leaf with a large value) gets an
//! *extent* of its own: whole consecutive pages with one header at the front, the image right
//! after it. Byte table: docs/file-format.md#node-pages.
//!
//! The CRC32C covers bytes 4.. of the page (or of the whole extent), header fields included; it is
//! checked the first time a process uses the page (see `source`) and in full by `verify`.

use super::format::{get_u32, get_u64, put_u16, put_u32, put_u64, PAGE_SIZE};

/// Length of a page header in bytes; the first image of a page starts here.
pub const PAGE_HEADER_LEN: usize = 24;
/// Alignment of every node image in the file (the tree's images are read in place).
pub const NODE_IMAGE_ALIGN: u64 = 8;
/// The largest image a packed page holds; larger images get an extent.
pub const PACKED_IMAGE_LEN_MAX: usize = PAGE_SIZE as usize - PAGE_HEADER_LEN;

const PAGE_CRC_AT: usize = 0;
pub(crate) const PAGE_KIND_AT: usize = 4;
const PAGE_USED_AT: usize = 6;
pub(crate) const PAGE_EXTENT_PAGES_AT: usize = 8;
const PAGE_GENERATION_AT: usize = 16;
const _: () = assert!(PAGE_GENERATION_AT + 8 == PAGE_HEADER_LEN);
const _: () = assert!(PAGE_HEADER_LEN as u64 % NODE_IMAGE_ALIGN == 0);
const _: () = assert!(PAGE_SIZE % NODE_IMAGE_ALIGN == 0);
// Every leaf pack the tree makes fits a packed page (the tree bounds packs by bytes).
const _: () = assert!(artdb_art::PACK_IMAGE_LEN_MAX <= PACKED_IMAGE_LEN_MAX);

/// Kind byte of a packed node page.
pub const PAGE_KIND_PACKED: u8 = 1;
/// Kind byte of the first page of an extent.
pub const PAGE_KIND_EXTENT: u8 = 2;

/// Writes the header into `page` (the first bytes of a packed page or an extent) and seals it
/// with its checksum. `page.len()` is a multiple of the page size.
pub fn seal(page: &mut [u8], kind: u8, used: u16, generation: u64) {
    debug_assert!(
        page.len() as u64 % PAGE_SIZE == 0 && !page.is_empty(),
        "seal of a partial page"
    );
    page[PAGE_KIND_AT] = kind;
    page[PAGE_KIND_AT + 1] = 0;
    put_u16(page, PAGE_USED_AT, used);
    put_u32(
        page,
        PAGE_EXTENT_PAGES_AT,
        (page.len() as u64 / PAGE_SIZE) as u32,
    );
    put_u32(page, PAGE_EXTENT_PAGES_AT + 4, 0);
    put_u64(page, PAGE_GENERATION_AT, generation);
    let crc = crc32c::crc32c(&page[PAGE_CRC_AT + 4..]);
    put_u32(page, PAGE_CRC_AT, crc);
}

/// The fields of a page header, unchecked.
#[derive(Debug, Clone, Copy)]
pub struct PageHeader {
    /// `PAGE_KIND_PACKED` or `PAGE_KIND_EXTENT` in a valid page.
    pub kind: u8,
    /// Pages covered by the checksum (1 for a packed page).
    pub extent_pages: u32,
    /// Generation of the checkpoint that wrote the page.
    pub generation: u64,
}

impl PageHeader {
    /// Reads the header fields from the first `PAGE_HEADER_LEN` bytes of `bytes`.
    pub fn read(bytes: &[u8]) -> PageHeader {
        PageHeader {
            kind: bytes[PAGE_KIND_AT],
            extent_pages: get_u32(bytes, PAGE_EXTENT_PAGES_AT),
            generation: get_u64(bytes, PAGE_GENERATION_AT),
        }
    }
}

/// Whether `covered` (a page or whole extent, header first) matches its stored checksum.
pub fn checksum_matches(covered: &[u8]) -> bool {
    covered.len() >= PAGE_HEADER_LEN
        && crc32c::crc32c(&covered[PAGE_CRC_AT + 4..]) == get_u32(covered, PAGE_CRC_AT)
}
