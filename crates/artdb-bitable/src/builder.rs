//! The builder: appends pairs in strictly increasing key order and writes a table file.
//!
//! States: `Building` (appending) -> `finish` -> done; an I/O error moves it to `Failed`, where every
//! call returns `Error::BuilderFailed`. An out-of-order or duplicate key, or a key too large, is
//! rejected before anything changes, so the table so far is unharmed and the build may go on.
//!
//! Streaming: each level is written sequentially as its pages fill. Leaf pages go straight into the
//! output file (under a temporary name) from page 1 on; each branch level and the large-value area
//! go to their own unlinked temporary file in the output's directory. `finish` appends the branch
//! levels (bottom up) and the large-value area to the output, then writes the header at page 0.
//! Memory: one pending page per level plus a fixed write buffer per level (256 pages for the
//! leaves, 16 for a branch level) - independent of the table's size. Once the leaves fill their
//! first buffer, full leaf buffers go to a background writer thread (`BackgroundWriter`: at most
//! four 256-page buffers in circulation, written in order), so the kernel's copy into the page
//! cache and writeback throttling overlap with encoding on a second core; `finish` waits for it
//! before anything else touches the file, and a write error there fails the build. The writer
//! also writes behind (`writeback`): every 8 MiB it starts the kernel's writeback of what it wrote
//! and waits for the window before, so the disk works during the build rather than in the final
//! fsync, and the build's dirty pages stay bounded (W3's durable build is faster with it; a
//! non-durable build is slower, hence `Options::write_behind`; measured in docs/benchmarks.md,
//! W3). Branch levels
//! are about 1/100 of the leaves for short keys, so the final copy (`copy_file_range` on Linux)
//! is cheap.
//!
//! Durability protocol (`finish(Durability::Durable)`), argued in `docs/bitable-format.md`:
//! 1. write everything, header last, to `.NAME.PID-N.building` in the target directory;
//! 2. fsync that file; 3. rename it to NAME; 4. fsync the directory.
//!
//! A crash before 3 leaves NAME untouched (the old table, or nothing) and the temporary file,
//! which the next build of NAME removes (`stale.rs`); after 3 the name points at a
//! file whose bytes were all stable before the rename. `NonDurable` skips 2 and 4.

use crate::error::{io, Error, Result};
use crate::format::*;
use crate::pending::PendingPage;
use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// Whether `finish` makes the table durable before naming it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync the file, rename, fsync the directory: the table survives a power loss once
    /// `finish` returns.
    Durable,
    /// No syncs: for tables that live one power cycle (scratch tables, benchmark inputs).
    NonDurable,
}

/// Builder options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Page size in bytes: a power of two from 512 to 65536. Default 4096.
    pub page_size: usize,
    /// Alignment of keys in fixed-layout pages (a power of two up to 64). Default 1.
    pub key_align: usize,
    /// Alignment of values in fixed-layout pages (a power of two up to 64). Default 1. With 8, a
    /// table of 8-byte values lets readers load each value in place as a `u64`.
    pub value_align: usize,
    /// Write behind the build (default true): every 8 MiB of leaves the builder starts the
    /// kernel's writeback of them and waits for the 8 MiB before, so a durable `finish` has
    /// little left to sync and the build holds at most ~24 MiB of dirty pages. Turn it off for
    /// scratch tables that are never synced and must be built as fast as memory allows: the
    /// build then leaves all writeback to the kernel (and may hold the whole table dirty).
    pub write_behind: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: PAGE_SIZE_DEFAULT,
            key_align: 1,
            value_align: 1,
            write_behind: true,
        }
    }
}

/// Pages a level buffers before writing them (leaf level, branch levels).
const LEAF_BUFFER_PAGES: usize = 256;
const BRANCH_BUFFER_PAGES: usize = 16;

/// Names temporary files uniquely within the process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Full buffers the background writer may hold queued (besides the one it is writing and the
/// one being filled): the leaf level's memory is at most `2 + WRITER_QUEUE` buffers.
const WRITER_QUEUE: usize = 2;

/// Write-behind window: once the background writer has written this many bytes past the last
/// window, it asks the kernel to start writing them to disk, and it waits for the window before
/// the previous one to reach the disk. So writeback runs beside the build instead of after it
/// (the durable build's final fsync finds at most two windows dirty), and the build's dirty pages
/// stay bounded instead of piling up to the kernel's dirty limit, where writers get throttled.
const WRITE_BEHIND: u64 = 8 << 20;

/// Write-behind for the table file (Linux: `sync_file_range`; elsewhere the kernel's own
/// writeback and the final fsync do it all).
mod writeback {
    use std::fs::File;

    /// The next window's bytes and how far writeback was started and waited for.
    pub(super) struct WriteBehind {
        /// Offset up to which writeback was started.
        started: u64,
        /// Offset up to which writeback was waited for.
        waited: u64,
        /// False once the file system refused: the kernel's own writeback takes over.
        on: bool,
    }

    impl WriteBehind {
        /// Write-behind (if `on`) for a file whose next write lands at `offset`.
        pub(super) fn new(offset: u64, on: bool) -> Self {
            WriteBehind {
                started: offset,
                waited: offset,
                on,
            }
        }

        /// Called after a write that ended at `written`: starts writeback of the window behind
        /// it once the window is full, and waits for the one before. Errors of the disk (EIO,
        /// ENOSPC) are returned, so a build that cannot reach the disk fails early; a file system
        /// that does not support the call turns write-behind off.
        pub(super) fn wrote(&mut self, file: &File, written: u64) -> std::io::Result<()> {
            if !self.on || written - self.started < super::WRITE_BEHIND {
                return Ok(());
            }
            let result = range(file, self.started, written - self.started, false).and_then(|()| {
                if written - self.waited > 2 * super::WRITE_BEHIND {
                    let end = self.started;
                    let waited = range(file, self.waited, end - self.waited, true);
                    self.waited = end;
                    waited
                } else {
                    Ok(())
                }
            });
            self.started = written;
            match result {
                Err(error) if is_disk_error(&error) => Err(error),
                Err(_) => {
                    self.on = false;
                    Ok(())
                }
                Ok(()) => Ok(()),
            }
        }
    }

    fn is_disk_error(error: &std::io::Error) -> bool {
        matches!(error.raw_os_error(), Some(libc::EIO) | Some(libc::ENOSPC))
    }

    /// Starts writeback of `len` bytes at `offset` (`wait`: and waits until they are written).
    #[cfg(target_os = "linux")]
    fn range(file: &File, offset: u64, len: u64, wait: bool) -> std::io::Result<()> {
        use std::os::unix::io::AsRawFd;
        let flags = if wait {
            libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER
        } else {
            libc::SYNC_FILE_RANGE_WRITE
        };
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        };
        // SAFETY: a system call on a descriptor that `file` keeps open; no memory is passed.
        let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn range(_file: &File, _offset: u64, _len: u64, _wait: bool) -> std::io::Result<()> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::builder::WRITE_BEHIND;
        use std::io::Write;

        #[test]
        fn windows_are_started_in_order_and_waited_two_behind() {
            let mut file = tempfile::tempfile().expect("temp file");
            let chunk = vec![0x5au8; 1 << 20];
            let mut written = 4096u64;
            file.write_all(&chunk[..4096]).expect("write");
            let mut behind = WriteBehind::new(written, true);
            for _ in 0..((7 * WRITE_BEHIND) >> 20) {
                file.write_all(&chunk).expect("write");
                written += chunk.len() as u64;
                behind.wrote(&file, written).expect("write-behind");
                assert!(behind.on || cfg!(not(target_os = "linux")));
                assert!(behind.waited <= behind.started && behind.started <= written);
                assert!(
                    written - behind.started < WRITE_BEHIND,
                    "a full window is started"
                );
                assert!(
                    written - behind.waited <= 3 * WRITE_BEHIND,
                    "dirty bytes stay bounded"
                );
            }
            if cfg!(target_os = "linux") {
                assert!(
                    behind.waited >= 4 * WRITE_BEHIND,
                    "waited to {}",
                    behind.waited
                );
            }
            assert_eq!(file.metadata().expect("metadata").len(), written);
        }

        #[test]
        fn a_file_that_cannot_write_behind_turns_it_off_without_an_error() {
            // A character device: sync_file_range refuses it (ESPIPE).
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/null")
                .expect("open /dev/null");
            let mut behind = WriteBehind::new(0, true);
            behind.wrote(&file, 3 * WRITE_BEHIND).expect("no error");
            assert!(!behind.on);
            behind
                .wrote(&file, 6 * WRITE_BEHIND)
                .expect("still no error");
            assert!(!behind.on);
        }
    }
}

/// The leaf level's background writer: a thread that writes full buffers to the table file in
/// the order they were sent, and returns each buffer for reuse. It lets the kernel's copy of one
/// buffer into the page cache (and any writeback throttling) overlap with encoding the next, on
/// a second core, and writes behind (`writeback::WriteBehind`). Started at the first full
/// buffer, so tables of one buffer never start it.
struct BackgroundWriter {
    /// `None` once stopped.
    sender: Option<SyncSender<Vec<u8>>>,
    /// Written buffers coming back (in a mutex only so that the builder stays `Sync`).
    returned: Mutex<Receiver<Vec<u8>>>,
    /// The thread; its result is the first write error, if any.
    thread: Option<JoinHandle<std::io::Result<()>>>,
    /// Buffers in circulation (the one being filled included).
    buffers: usize,
}

impl BackgroundWriter {
    /// Starts a writer thread on a clone of `file` (which shares its file offset).
    fn start(file: &File, write_behind: bool) -> Result<BackgroundWriter> {
        let mut clone = io("clone the table file for the writer", file.try_clone())?;
        let (sender, receiver) = sync_channel::<Vec<u8>>(WRITER_QUEUE);
        let (give_back, returned) = sync_channel::<Vec<u8>>(WRITER_QUEUE + 2);
        let thread = std::thread::Builder::new()
            .name("bitable-writer".into())
            .spawn(move || {
                let mut written = clone.stream_position()?;
                let mut behind = writeback::WriteBehind::new(written, write_behind);
                for buffer in receiver {
                    clone.write_all(&buffer)?;
                    written += buffer.len() as u64;
                    behind.wrote(&clone, written)?;
                    // Never blocks: the channel holds every buffer there is. If the builder
                    // stopped listening the buffer is just freed.
                    let _ = give_back.try_send(buffer);
                }
                Ok(())
            });
        let thread = io("start the writer thread", thread)?;
        Ok(BackgroundWriter {
            sender: Some(sender),
            returned: Mutex::new(returned),
            thread: Some(thread),
            buffers: 1,
        })
    }

    /// An empty buffer of `capacity` bytes to fill next: a new one while fewer than
    /// `2 + WRITER_QUEUE` exist, else a written one (waiting for it), so that the level's memory
    /// stays bounded and steady-state buffers are reused (fresh memory costs page faults and
    /// zeroing: a large share of a build's time when every buffer was new).
    fn next_buffer(&mut self, capacity: usize) -> Result<Vec<u8>> {
        if self.buffers < 2 + WRITER_QUEUE {
            self.buffers += 1;
            return Ok(Vec::with_capacity(capacity));
        }
        let returned = match self.returned.get_mut() {
            Ok(receiver) => receiver.recv().ok(),
            Err(_) => None,
        };
        match returned {
            Some(mut buffer) => {
                buffer.clear();
                Ok(buffer)
            }
            // The thread stopped (it failed, or returned every buffer it had): its error says why.
            None => {
                self.stop()?;
                io(
                    "write pages",
                    Err(std::io::Error::other("the writer thread stopped")),
                )
            }
        }
    }

    /// Queues `buffer` to be written after those sent before it; waits while the queue is full.
    fn send(&mut self, buffer: Vec<u8>) -> Result<()> {
        let sent = match &self.sender {
            Some(sender) => sender.send(buffer).is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        // The thread stopped: it failed (its error says why) or was stopped before.
        self.stop()?;
        io(
            "write pages",
            Err(std::io::Error::other("the writer thread stopped")),
        )
    }

    /// Waits until every buffer sent is written; the first write error, if any. Idempotent.
    fn stop(&mut self) -> Result<()> {
        self.sender = None;
        match self.thread.take().map(JoinHandle::join) {
            None | Some(Ok(Ok(()))) => Ok(()),
            Some(Ok(Err(error))) => io("write pages", Err(error)),
            Some(Err(_)) => io(
                "write pages",
                Err(std::io::Error::other("the writer thread panicked")),
            ),
        }
    }
}

/// One level's page stream: a file, a write buffer of whole pages, and counters.
struct LevelWriter {
    file: File,
    buffer: Vec<u8>,
    buffer_pages_max: usize,
    page_size: usize,
    pages: u64,
    used_bytes: u64,
    /// Whether full buffers go to a background writer (the leaf level).
    in_background: bool,
    /// Whether the background writer writes behind (`Options::write_behind`).
    write_behind: bool,
    background: Option<BackgroundWriter>,
}

impl LevelWriter {
    fn new(file: File, page_size: usize, buffer_pages_max: usize, in_background: bool) -> Self {
        LevelWriter {
            file,
            buffer: Vec::with_capacity(page_size * buffer_pages_max),
            buffer_pages_max,
            page_size,
            pages: 0,
            used_bytes: 0,
            in_background,
            write_behind: false,
            background: None,
        }
    }

    /// Encodes `pending` as this level's next page.
    fn write_page(&mut self, pending: &mut PendingPage) -> Result<u64> {
        if self.buffer.len() >= self.page_size * self.buffer_pages_max {
            self.flush()?;
        }
        let start = self.buffer.len();
        self.buffer.resize(start + self.page_size, 0);
        let index = self.pages;
        self.used_bytes += pending.encode(&mut self.buffer[start..], index) as u64;
        self.pages += 1;
        Ok(index)
    }

    /// Writes the buffered pages: queued to the background writer when the buffer is full and
    /// the level writes in the background, else directly.
    fn flush(&mut self) -> Result<()> {
        let full = self.buffer.len() >= self.page_size * self.buffer_pages_max;
        if self.in_background && full {
            if self.background.is_none() {
                self.background = Some(BackgroundWriter::start(&self.file, self.write_behind)?);
            }
            if let Some(background) = &mut self.background {
                let full = std::mem::take(&mut self.buffer);
                background.send(full)?;
                self.buffer = background.next_buffer(self.page_size * self.buffer_pages_max)?;
            }
            return Ok(());
        }
        // Writes through `self.file` must follow everything queued before them.
        self.wait()?;
        io("write pages", self.file.write_all(&self.buffer))?;
        self.buffer.clear();
        Ok(())
    }

    /// Waits until everything queued to the background writer is written.
    fn wait(&mut self) -> Result<()> {
        match self.background.take() {
            Some(mut background) => background.stop(),
            None => Ok(()),
        }
    }
}

/// A branch level: its pending page and its stream.
struct BranchLevel {
    pending: PendingPage,
    writer: LevelWriter,
}

/// Builds a table by appending pairs in strictly increasing key order.
pub struct Builder {
    options: Options,
    path: PathBuf,
    temp_path: PathBuf,
    directory: PathBuf,
    leaf: PendingPage,
    leaves: LevelWriter,
    branches: Vec<BranchLevel>,
    large: Option<(File, std::io::BufWriter<File>)>,
    large_len: u64,
    large_count: u64,
    pairs: u64,
    key_bytes: u64,
    value_bytes: u64,
    /// The last key of the last written leaf (the pending leaf holds later keys).
    last_key: Vec<u8>,
    /// Scratch for the key going up a level.
    carry: Vec<u8>,
    failed: bool,
    finished: bool,
}

/// What `finish` wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Pairs in the table.
    pub pairs: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// Levels, leaf first.
    pub levels: Vec<LevelInfo>,
    /// Bytes of the large-value area.
    pub large_value_bytes: u64,
}

impl Builder {
    /// Starts building the table that `finish` will name `path`, with default options.
    pub fn create(path: impl AsRef<Path>) -> Result<Builder> {
        Builder::with_options(path, Options::default())
    }

    /// Starts building a table with the given options.
    pub fn with_options(path: impl AsRef<Path>, options: Options) -> Result<Builder> {
        check_page_size(options.page_size)?;
        for align in [options.key_align, options.value_align] {
            if !align.is_power_of_two() || align > ALIGN_MAX {
                return Err(Error::InvalidOption {
                    what: "key and value alignments must be powers of two from 1 to 64",
                });
            }
        }
        let path = path.as_ref().to_path_buf();
        let directory = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Some(name) = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
        else {
            return Err(Error::InvalidOption {
                what: "the table path must name a file",
            });
        };
        if !directory.is_dir() {
            // Named here: the failed create of the temporary file would name no path.
            return Err(Error::Io {
                operation: "create the table's temporary file",
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "the directory {} does not exist (or is not a directory)",
                        directory.display()
                    ),
                ),
            });
        }
        // Killed builds of the same target leave their temporary files; remove those first.
        crate::stale::remove_stale_temp_files(&path);
        let temp_path = directory.join(format!(".{name}.{}.building", unique_suffix()));
        let mut file = io(
            "create the table's temporary file",
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&temp_path),
        )?;
        // Page 0 is the header, written last; until then it is zero, so the file cannot open.
        io(
            "reserve the header page",
            file.write_all(&vec![0u8; options.page_size]),
        )?;
        let new_page = |level| {
            PendingPage::new(
                options.page_size,
                level,
                options.key_align,
                options.value_align,
            )
        };
        let mut leaves = LevelWriter::new(file, options.page_size, LEAF_BUFFER_PAGES, true);
        leaves.write_behind = options.write_behind;
        Ok(Builder {
            leaf: new_page(0),
            leaves,
            branches: Vec::new(),
            large: None,
            large_len: 0,
            large_count: 0,
            pairs: 0,
            key_bytes: 0,
            value_bytes: 0,
            last_key: Vec::new(),
            carry: Vec::new(),
            failed: false,
            finished: false,
            options,
            path,
            temp_path,
            directory,
        })
    }

    /// Largest key this builder accepts.
    pub fn key_len_max(&self) -> usize {
        key_len_max(self.options.page_size)
    }

    /// Pairs appended so far.
    pub fn len(&self) -> u64 {
        self.pairs
    }

    /// Whether no pair was appended yet.
    pub fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// Appends a pair; its key must be greater than the previous key.
    #[inline]
    pub fn append(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if self.failed {
            return Err(Error::BuilderFailed);
        }
        if key.len() > self.key_len_max() {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max: self.key_len_max(),
            });
        }
        if self.pairs > 0 {
            let previous = if self.leaf.is_empty() {
                &self.last_key[..]
            } else {
                self.leaf.last_key()
            };
            match crate::page::compare_keys(key, previous) {
                std::cmp::Ordering::Greater => {}
                std::cmp::Ordering::Equal => return Err(Error::DuplicateKey { index: self.pairs }),
                std::cmp::Ordering::Less => return Err(Error::KeyOutOfOrder { index: self.pairs }),
            }
        }
        let result = self.append_ordered(key, value);
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn append_ordered(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut reference = [0u8; LARGE_REF_LEN];
        let (stored, value_word): (&[u8], u64) =
            if value.len() <= value_inline_max(self.options.page_size) {
                (value, (value.len() as u64) << 1)
            } else {
                let offset = self.write_large(value)?;
                reference[..8].copy_from_slice(&offset.to_le_bytes());
                reference[8..].copy_from_slice(&crc32c::crc32c(value).to_le_bytes());
                (&reference, (value.len() as u64) << 1 | 1)
            };
        if !self.leaf.try_add(key, stored, value_word) {
            self.flush_leaf()?;
            let added = self.leaf.try_add(key, stored, value_word);
            debug_assert!(added, "an empty page accepts any entry within the limits");
        }
        self.pairs += 1;
        self.key_bytes += key.len() as u64;
        self.value_bytes += value.len() as u64;
        Ok(())
    }

    fn write_large(&mut self, value: &[u8]) -> Result<u64> {
        if self.large.is_none() {
            let file = temp_file(&self.directory)?;
            let writer = io("open the large-value area", file.try_clone())?;
            self.large = Some((file, std::io::BufWriter::with_capacity(1 << 20, writer)));
        }
        let offset = self.large_len;
        if let Some((_, writer)) = &mut self.large {
            io("write a large value", writer.write_all(value))?;
        }
        self.large_len += value.len() as u64;
        self.large_count += 1;
        Ok(offset)
    }

    /// Writes the pending leaf page and announces it to level 1.
    fn flush_leaf(&mut self) -> Result<()> {
        self.last_key.clear();
        self.last_key.extend_from_slice(self.leaf.last_key());
        self.carry.clear();
        self.carry.extend_from_slice(self.leaf.first_entry_key());
        let index = self.leaves.write_page(&mut self.leaf)?;
        self.announce(1, index)
    }

    /// Adds child page `child` of level `level - 1`, whose first key is in `self.carry`, to level
    /// `level`; when that level's page is full it is written and announced one level up, in a loop
    /// bounded by the level limit.
    fn announce(&mut self, mut level: usize, mut child: u64) -> Result<()> {
        loop {
            if level >= LEVELS_MAX {
                return Err(Error::TooManyLevels { max: LEVELS_MAX });
            }
            if self.branches.len() < level {
                let file = temp_file(&self.directory)?;
                let options = self.options;
                self.branches.push(BranchLevel {
                    pending: PendingPage::new(
                        options.page_size,
                        level as u16,
                        options.key_align,
                        options.key_align,
                    ),
                    writer: LevelWriter::new(file, options.page_size, BRANCH_BUFFER_PAGES, false),
                });
            }
            let branch = &mut self.branches[level - 1];
            if !branch.pending.started {
                branch.pending.started = true;
                branch.pending.first_child = child;
                std::mem::swap(&mut branch.pending.first_key, &mut self.carry);
                return Ok(());
            }
            if branch.pending.try_add(&self.carry, &[], 0) {
                return Ok(());
            }
            let index = branch.writer.write_page(&mut branch.pending)?;
            branch.pending.started = true;
            branch.pending.first_child = child;
            // The new page's first key is the carried key; the written page's goes up.
            std::mem::swap(&mut branch.pending.first_key, &mut self.carry);
            child = index;
            level += 1;
        }
    }

    /// Writes the rest of the table and its header, then names it (see the module notes).
    pub fn finish(mut self, durability: Durability) -> Result<Summary> {
        if self.failed {
            return Err(Error::BuilderFailed);
        }
        self.finished = true;
        let result = self.finish_inner(durability);
        if result.is_err() {
            let _ = fs::remove_file(&self.temp_path);
        }
        result
    }

    fn finish_inner(&mut self, durability: Durability) -> Result<Summary> {
        if !self.leaf.is_empty() {
            self.flush_leaf()?;
        }
        let levels = self.close_levels()?;
        self.leaves.flush()?;
        self.leaves.wait()?;
        let page_size = self.options.page_size as u64;
        for branch in &mut self.branches {
            branch.writer.flush()?;
            copy_whole(&mut branch.writer.file, &mut self.leaves.file)?;
        }
        let pages_end = levels
            .last()
            .map_or(1, |top| top.start_page + top.page_count);
        let large_offset = pages_end * page_size;
        if let Some((mut file, mut writer)) = self.large.take() {
            io("write the large-value area", writer.flush())?;
            drop(writer);
            copy_whole(&mut file, &mut self.leaves.file)?;
        }
        let header = Header {
            page_size: self.options.page_size,
            pair_count: self.pairs,
            file_len: large_offset + self.large_len,
            large_offset: if self.large_len == 0 { 0 } else { large_offset },
            large_len: self.large_len,
            key_align_log2: self.options.key_align.trailing_zeros() as u8,
            value_align_log2: self.options.value_align.trailing_zeros() as u8,
            key_bytes: self.key_bytes,
            value_bytes: self.value_bytes,
            large_count: self.large_count,
            levels,
        };
        let mut page = vec![0u8; self.options.page_size];
        header.encode(&mut page);
        io("write the header", self.leaves.file.write_all_at(&page, 0))?;
        if durability == Durability::Durable {
            io("sync the table file", self.leaves.file.sync_all())?;
        }
        io(
            "rename the table into place",
            fs::rename(&self.temp_path, &self.path),
        )?;
        if durability == Durability::Durable {
            let directory = io("open the table's directory", File::open(&self.directory))?;
            io("sync the table's directory", directory.sync_all())?;
        }
        Ok(Summary {
            pairs: self.pairs,
            file_bytes: header.file_len,
            levels: header.levels,
            large_value_bytes: self.large_len,
        })
    }

    /// Writes every level's last page bottom up and drops the levels above the root; returns the
    /// level table (leaf first) with absolute start pages.
    fn close_levels(&mut self) -> Result<Vec<LevelInfo>> {
        let mut level = 1;
        while level <= self.branches.len() {
            let branch = &self.branches[level - 1];
            if branch.writer.pages == 0 && branch.pending.is_empty() {
                // One child and nothing else: the level below is a single page, the root.
                self.branches.truncate(level - 1);
                break;
            }
            let branch = &mut self.branches[level - 1];
            std::mem::swap(&mut branch.pending.first_key, &mut self.carry);
            let index = branch.writer.write_page(&mut branch.pending)?;
            self.announce(level + 1, index)?;
            level += 1;
        }
        let mut levels = Vec::with_capacity(self.branches.len() + 1);
        if self.leaves.pages > 0 {
            levels.push(LevelInfo {
                start_page: 1,
                page_count: self.leaves.pages,
                used_bytes: self.leaves.used_bytes,
            });
        }
        for branch in &self.branches {
            let start_page = levels
                .last()
                .map_or(1, |below: &LevelInfo| below.start_page + below.page_count);
            levels.push(LevelInfo {
                start_page,
                page_count: branch.writer.pages,
                used_bytes: branch.writer.used_bytes,
            });
        }
        Ok(levels)
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        // Nothing may write to the file after it is removed (a write error is moot here).
        let _ = self.leaves.wait();
        if !self.finished {
            let _ = fs::remove_file(&self.temp_path);
        }
    }
}

fn unique_suffix() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A temporary file in `directory`, unlinked at once so nothing is left behind by a crash.
fn temp_file(directory: &Path) -> Result<File> {
    let path = directory.join(format!(".bitable-{}.tmp", unique_suffix()));
    let file = io(
        "create a temporary level file",
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path),
    )?;
    io("unlink a temporary level file", fs::remove_file(&path))?;
    Ok(file)
}

/// Appends all of `from` to `to`.
fn copy_whole(from: &mut File, to: &mut File) -> Result<()> {
    io(
        "rewind a temporary level file",
        from.seek(SeekFrom::Start(0)),
    )?;
    io("copy a level into the table", std::io::copy(from, to))?;
    Ok(())
}
