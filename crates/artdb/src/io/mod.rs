//! io: the one I/O seam of the engine. Every read, write, sync, resize and map of the database
//! file goes through a [`Storage`]; nothing outside this module opens, syncs or maps a file.
//!
//! Implementations: [`FileStorage`] (a real file; a read-write open holds its exclusive `flock`,
//! so a second writer in this or another process gets [`crate::Error::Locked`]), [`MemoryStorage`]
//! (an in-memory file for tests and temporary databases) and [`PinnedStorage`] (a file read
//! beside a writer of another process, under a slot of the [`ReadersFile`]). The test kit
//! (`artdb-testkit`) wraps any storage to simulate crashes (unsynced writes kept, dropped or
//! torn) and to fail the N-th call.
//!
//! Contract of a storage (what the store relies on):
//! 1. `write_at` may extend the file; bytes between the old end and the write read as zero.
//! 2. A write is durable only after a later `sync` returns `Ok`. Writes before a failed `sync`
//!    are in an unknown state: the store stops writing until reopened.
//! 3. A [`Map`] returned by `map(len)` is a read-only view of bytes `0..len` that stays valid
//!    while the `Map` lives, and shows every later `write_at` into its range (the page cache is
//!    shared, as `MAP_SHARED` gives on Linux). `len` may exceed the current file length to reserve
//!    address space; the caller must not read past the file's length through the view.

mod file;
mod memory;
mod raw;
mod readers;

pub use file::{evict_from_page_cache, FileStorage};
pub use memory::MemoryStorage;
pub use readers::{
    readers_path, PinnedStorage, ReaderGuard, ReaderSlot, ReadersFile,
    WriterState as PublishedWriter, READER_SLOTS,
};

use std::sync::Arc;

/// The I/O seam: a file of bytes addressed by offset. See the module docs for the contract.
// `len` is a file's length; nothing asks whether a file is empty.
#[allow(clippy::len_without_is_empty)]
pub trait Storage: Send + Sync + 'static {
    /// Reads exactly `buf.len()` bytes at `offset`; reading past the end is an error.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()>;
    /// Writes all of `data` at `offset`, extending the file if needed.
    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()>;
    /// Makes every earlier write durable.
    fn sync(&self) -> std::io::Result<()>;
    /// Current length of the file in bytes.
    fn len(&self) -> std::io::Result<u64>;
    /// Sets the length of the file (truncating or zero-extending).
    fn set_len(&self, len: u64) -> std::io::Result<()>;
    /// A read-only view of bytes `0..len` (see the module docs, point 3).
    fn map(&self, len: u64) -> std::io::Result<Map>;
    /// Starts writing bytes `offset..offset + len` back to the device without waiting for it: a
    /// hint, so that a big checkpoint's final `sync` finds most of its pages written already.
    /// Durability still comes only from [`Storage::sync`]. The default does nothing.
    fn start_writeback(&self, offset: u64, len: u64) -> std::io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
}

/// Anything that keeps the memory behind a [`Map`] alive.
pub trait MapOwner: Send + Sync + 'static {}
impl<T: Send + Sync + 'static> MapOwner for T {}

/// A read-only view of the start of a storage (see [`Storage::map`]).
pub struct Map {
    pointer: *const u8,
    len: usize,
    _owner: Arc<dyn MapOwner>,
}

// SAFETY: a Map only hands out shared reads of memory kept alive by `_owner` (Send + Sync); the
// raw pointer is not tied to any thread.
unsafe impl Send for Map {}
// SAFETY: as above; concurrent shared reads of the viewed bytes are allowed.
unsafe impl Sync for Map {}

impl Map {
    /// Builds a view of `len` bytes at `pointer`, kept alive by `owner`.
    ///
    /// # Safety
    /// - `pointer..pointer + len` must stay mapped and readable while `owner` lives;
    /// - no one may write the bytes that a caller reads through this view while it reads them
    ///   (the store guarantees this: a page is rewritten only when no reader can reach it).
    pub unsafe fn from_raw_parts(pointer: *const u8, len: usize, owner: Arc<dyn MapOwner>) -> Map {
        Map {
            pointer,
            len,
            _owner: owner,
        }
    }

    /// Length of the view in bytes (may exceed the file length; see [`Storage::map`]).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes `offset..offset + len` of the view, or `None` if out of the view's range.
    /// The caller must keep the range within the file's length (module docs, point 3).
    pub fn bytes(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: `start..end` lies inside the view (checked above), which `from_raw_parts`'s
        // contract keeps mapped while `self` (holding the owner) lives.
        Some(unsafe { std::slice::from_raw_parts(self.pointer.add(start), len) })
    }
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Map").field("len", &self.len).finish()
    }
}
