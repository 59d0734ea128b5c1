//! readers: the readers file beside a database (`<db>.readers`), shared by every process that
//! has the database open: its writer publishes what is durable, readers in other processes
//! publish which checkpoint they read, so that the writer reuses no page they may reach
//! (docs/file-format.md#readers-file, docs/recovery.md#readers-in-other-processes).
//!
//! The file is mapped `MAP_SHARED` read-write by each opener and accessed only through 64-bit
//! atomics, so every process sees the others' stores (Linux's unified page cache); it is never
//! synced: nothing in it must survive a crash (a restarted writer republishes, and a reader's
//! slot dies with its process).
//!
//! Liveness of a slot is an open-file-description lock (`F_OFD_SETLK`) on the slot's bytes,
//! held by the reader for as long as it uses the slot. The kernel drops it when the reader's
//! descriptor closes, also when its process is killed, so a dead reader's slot is told from a
//! live one by `F_OFD_GETLK` alone; the pid in the slot is only what `artdb readers` shows. OFD
//! locks rather than classic `fcntl` record locks because those belong to the process: two
//! readers of one process would share them, and closing either would drop both.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The file's first bytes.
pub const READERS_MAGIC: [u8; 8] = *b"ARTDBRDR";
/// The layout version this code writes and reads.
pub const READERS_VERSION: u64 = 1;
/// Reader slots in a readers file: the most snapshots' checkpoints that other processes can
/// hold at once (each process uses one slot per checkpoint its live snapshots read).
pub const READER_SLOTS: usize = 448;
/// Bytes before the first slot (one page of header).
pub const READERS_HEADER_LEN: usize = 4096;
/// Bytes of one slot (a cache line, so two readers' stores never share one).
pub const READER_SLOT_LEN: usize = 64;
/// Length of a readers file.
pub const READERS_FILE_LEN: usize = READERS_HEADER_LEN + READER_SLOTS * READER_SLOT_LEN;

// Header fields (each a little-endian u64 at an 8-aligned offset).
const H_MAGIC: usize = 0;
const H_VERSION: usize = 8;
const H_SLOTS: usize = 16;
/// Seqlock over `generation` and `durable_lsn`: odd while the writer changes them.
const H_STATE_SEQ: usize = 24;
const H_GENERATION: usize = 32;
const H_DURABLE_LSN: usize = 40;
/// Bumped to odd before the writer rewrites the log in place (a recycle) and to even after:
/// a reader whose copy of the log spans a change of it copies again.
const H_LOG_SEQ: usize = 48;
const H_WRITER_PID: usize = 56;

// Slot fields.
const S_GENERATION: usize = 0;
const S_PID: usize = 8;
const S_SINCE: usize = 16;

/// The path of the readers file of the database at `path`.
pub fn readers_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".readers");
    PathBuf::from(name)
}

/// What the writer last published (see [`ReadersFile::published`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterState {
    /// The generation of the newest durable checkpoint; 0 while a writer is opening (or none
    /// ever published).
    pub generation: u64,
    /// The highest LSN of the log known durable.
    pub durable_lsn: u64,
    /// The log's rewrite counter (odd while a recycle runs).
    pub log_seq: u64,
}

/// One slot as `artdb readers` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderSlot {
    /// Index of the slot.
    pub slot: usize,
    /// The pid of the process that took it.
    pub pid: u64,
    /// The checkpoint generation its snapshots read (pages of it are kept from reuse).
    pub generation: u64,
    /// When it was taken (seconds since the Unix epoch).
    pub since_unix_secs: u64,
    /// Whether its process still holds it (a dead one is ignored by the writer and cleared by
    /// [`ReadersFile::clear_dead`]).
    pub alive: bool,
}

/// An open readers file (see the module docs).
pub struct ReadersFile {
    file: File,
    path: PathBuf,
    map: memmap2::MmapRaw,
    /// Slots this open holds (OFD locks of one description never conflict with each other, so
    /// the process must keep its own slots apart itself).
    held: parking_lot::Mutex<Vec<bool>>,
}

impl std::fmt::Debug for ReadersFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadersFile")
            .field("path", &self.path)
            .finish()
    }
}

fn readers_error<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::ReadersFile {
        path: path.to_path_buf(),
        problem: format!("cannot {op}: {source}"),
    }
}

impl ReadersFile {
    /// Opens the readers file of the database at `db_path`, creating and formatting it if
    /// absent. `create` false: a missing file is `Ok(None)` (a reader in a directory it may not
    /// write, beside no writer of this version).
    pub fn of(db_path: &Path, create: bool) -> Result<Option<Arc<ReadersFile>>> {
        let path = readers_path(db_path);
        let opened = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(&path);
        let file = match opened {
            Ok(file) => file,
            Err(error) if !create && error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(readers_error(&path, "open it for reading and writing")(
                    error,
                ))
            }
        };
        // Formatting is serialized by a whole-file flock held only for it: two processes
        // opening a new database at once format it once.
        flock(&file, libc::LOCK_EX).map_err(readers_error(&path, "lock it to format it"))?;
        let formatted = format_if_new(&file, &path);
        let _ = flock(&file, libc::LOCK_UN);
        formatted?;
        let map = memmap2::MmapOptions::new()
            .len(READERS_FILE_LEN)
            .map_raw(&file)
            .map_err(readers_error(&path, "map it"))?;
        Ok(Some(Arc::new(ReadersFile {
            file,
            path,
            map,
            held: parking_lot::Mutex::new(vec![false; READER_SLOTS]),
        })))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset % 8 == 0 && offset + 8 <= READERS_FILE_LEN);
        // SAFETY: the map is READERS_FILE_LEN bytes long (the file was checked or formatted to
        // that length before mapping, and the map lives as long as `self`), `offset` is inside
        // it and 8-aligned (the map is page-aligned; every field offset is a multiple of 8), and
        // the memory is only ever accessed through atomics, by this and other processes.
        unsafe { &*(self.map.as_mut_ptr().add(offset) as *const AtomicU64) }
    }

    fn slot_word(&self, slot: usize, field: usize) -> &AtomicU64 {
        self.word(READERS_HEADER_LEN + slot * READER_SLOT_LEN + field)
    }

    /// What the writer published, read consistently (the seqlock): `None` if the writer is
    /// changing it right now and did not finish within a short spin.
    pub fn published(&self) -> Option<WriterState> {
        for _ in 0..1000 {
            let before = self.word(H_STATE_SEQ).load(Ordering::SeqCst);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let generation = self.word(H_GENERATION).load(Ordering::SeqCst);
            let durable_lsn = self.word(H_DURABLE_LSN).load(Ordering::SeqCst);
            let log_seq = self.word(H_LOG_SEQ).load(Ordering::SeqCst);
            if self.word(H_STATE_SEQ).load(Ordering::SeqCst) == before {
                return Some(WriterState {
                    generation,
                    durable_lsn,
                    log_seq,
                });
            }
        }
        None
    }

    /// The writer publishes the generation of the newest durable checkpoint. Called by the one
    /// writer only (it holds the database's exclusive lock).
    pub fn publish_generation(&self, generation: u64) {
        let seq = self.word(H_STATE_SEQ);
        let start = seq.load(Ordering::SeqCst) | 1;
        seq.store(start, Ordering::SeqCst);
        self.word(H_GENERATION).store(generation, Ordering::SeqCst);
        seq.store(start + 1, Ordering::SeqCst);
    }

    /// The writer publishes a newer durable LSN (after a log sync).
    pub fn publish_durable_lsn(&self, durable_lsn: u64) {
        if self.word(H_DURABLE_LSN).load(Ordering::SeqCst) >= durable_lsn {
            return;
        }
        let seq = self.word(H_STATE_SEQ);
        let start = seq.load(Ordering::SeqCst) | 1;
        seq.store(start, Ordering::SeqCst);
        self.word(H_DURABLE_LSN)
            .fetch_max(durable_lsn, Ordering::SeqCst);
        seq.store(start + 1, Ordering::SeqCst);
    }

    /// A writer opening: says "wait" to readers (generation 0), forgets a dead writer's
    /// half-done log rewrite and durable LSN, and names itself.
    pub fn writer_opening(&self) {
        let seq = self.word(H_STATE_SEQ);
        let start = seq.load(Ordering::SeqCst) | 1;
        seq.store(start, Ordering::SeqCst);
        self.word(H_GENERATION).store(0, Ordering::SeqCst);
        self.word(H_DURABLE_LSN).store(0, Ordering::SeqCst);
        let log_seq = self.word(H_LOG_SEQ);
        log_seq.store((log_seq.load(Ordering::SeqCst) | 1) + 1, Ordering::SeqCst);
        self.word(H_WRITER_PID)
            .store(u64::from(std::process::id()), Ordering::SeqCst);
        seq.store(start + 1, Ordering::SeqCst);
    }

    /// Marks the start (`true`) or end (`false`) of a rewrite of the log in place.
    pub fn log_rewrite(&self, starting: bool) {
        let log_seq = self.word(H_LOG_SEQ);
        let now = log_seq.load(Ordering::SeqCst);
        let next = if starting { now | 1 } else { (now | 1) + 1 };
        log_seq.store(next, Ordering::SeqCst);
    }

    /// Takes a free slot for snapshots of checkpoint `generation` (see [`ReaderGuard`]).
    pub fn claim(self: &Arc<ReadersFile>, generation: u64) -> Result<ReaderGuard> {
        let mut held = self.held.lock();
        for slot in 0..READER_SLOTS {
            if held[slot] {
                continue;
            }
            let range = self.slot_range(slot);
            match ofd_lock(&self.file, libc::F_WRLCK, range) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(source) => {
                    return Err(readers_error(&self.path, "lock a reader slot")(source));
                }
            }
            held[slot] = true;
            self.slot_word(slot, S_PID)
                .store(u64::from(std::process::id()), Ordering::SeqCst);
            self.slot_word(slot, S_SINCE)
                .store(unix_secs(), Ordering::SeqCst);
            self.slot_word(slot, S_GENERATION)
                .store(generation, Ordering::SeqCst);
            return Ok(ReaderGuard {
                file: Arc::clone(self),
                slot,
            });
        }
        Err(Error::ReadersFull {
            path: self.path.clone(),
            slots: READER_SLOTS,
        })
    }

    fn slot_range(&self, slot: usize) -> (i64, i64) {
        let start = (READERS_HEADER_LEN + slot * READER_SLOT_LEN) as i64;
        (start, READER_SLOT_LEN as i64)
    }

    /// Every slot in use, live or dead.
    pub fn list(&self) -> Result<Vec<ReaderSlot>> {
        let held = self.held.lock();
        let mut out = Vec::new();
        for slot in 0..READER_SLOTS {
            let generation = self.slot_word(slot, S_GENERATION).load(Ordering::SeqCst);
            if generation == 0 {
                continue;
            }
            let alive = held[slot]
                || ofd_held_elsewhere(&self.file, self.slot_range(slot))
                    .map_err(readers_error(&self.path, "test a reader slot's lock"))?;
            out.push(ReaderSlot {
                slot,
                pid: self.slot_word(slot, S_PID).load(Ordering::SeqCst),
                generation,
                since_unix_secs: self.slot_word(slot, S_SINCE).load(Ordering::SeqCst),
                alive,
            });
        }
        Ok(out)
    }

    /// The oldest checkpoint generation a live reader of another open holds, if any: the
    /// writer keeps every page that generation may reach.
    pub fn oldest_live(&self) -> Result<Option<u64>> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|slot| slot.alive)
            .map(|slot| slot.generation)
            .min())
    }

    /// Clears the slots of readers whose process is gone; returns how many. A slot is cleared
    /// only while this open holds its lock, so a reader taking it meanwhile is never undone.
    pub fn clear_dead(&self) -> Result<usize> {
        let held = self.held.lock();
        let mut cleared = 0;
        for slot in 0..READER_SLOTS {
            if held[slot] || self.slot_word(slot, S_GENERATION).load(Ordering::SeqCst) == 0 {
                continue;
            }
            let range = self.slot_range(slot);
            let locked = ofd_lock(&self.file, libc::F_WRLCK, range)
                .map_err(readers_error(&self.path, "lock a reader slot"))?;
            if locked {
                self.clear_slot(slot);
                let _ = ofd_lock(&self.file, libc::F_UNLCK, range);
                cleared += 1;
            }
        }
        Ok(cleared)
    }

    fn clear_slot(&self, slot: usize) {
        self.slot_word(slot, S_GENERATION)
            .store(0, Ordering::SeqCst);
        self.slot_word(slot, S_PID).store(0, Ordering::SeqCst);
        self.slot_word(slot, S_SINCE).store(0, Ordering::SeqCst);
    }
}

/// A reader slot held by this process; cleared and unlocked on drop.
#[derive(Debug)]
pub struct ReaderGuard {
    file: Arc<ReadersFile>,
    slot: usize,
}

impl ReaderGuard {
    /// Changes the generation the slot pins.
    pub fn set_generation(&self, generation: u64) {
        self.file
            .slot_word(self.slot, S_GENERATION)
            .store(generation, Ordering::SeqCst);
    }

    /// The slot's index.
    pub fn slot(&self) -> usize {
        self.slot
    }
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        self.file.clear_slot(self.slot);
        let _ = ofd_lock(
            &self.file.file,
            libc::F_UNLCK,
            self.file.slot_range(self.slot),
        );
        self.file.held.lock()[self.slot] = false;
    }
}

/// A database file read beside a writer of another process: the storage and every map of it
/// hold the reader slot that keeps the pages they may read from reuse, so the slot is cleared
/// only when the last snapshot reading through them is gone.
pub struct PinnedStorage {
    inner: super::FileStorage,
    guard: Arc<ReaderGuard>,
}

impl PinnedStorage {
    /// `inner` read under the pin of `guard`.
    pub fn new(inner: super::FileStorage, guard: ReaderGuard) -> PinnedStorage {
        PinnedStorage {
            inner,
            guard: Arc::new(guard),
        }
    }

    /// The file beneath.
    pub fn file(&self) -> &super::FileStorage {
        &self.inner
    }

    /// The slot.
    pub fn guard(&self) -> &ReaderGuard {
        &self.guard
    }
}

impl super::Storage for PinnedStorage {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_at(offset, buf)
    }

    fn write_at(&self, _offset: u64, _data: &[u8]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a reader beside a writer of another process writes nothing",
        ))
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn set_len(&self, _len: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a reader beside a writer of another process writes nothing",
        ))
    }

    fn map(&self, len: u64) -> io::Result<super::Map> {
        let map = self.inner.map(len)?;
        let pointer = map.pointer;
        let len = map.len;
        let owner: Arc<dyn super::MapOwner> = Arc::new((map, Arc::clone(&self.guard)));
        // SAFETY: the bytes stay mapped while `owner` lives, for it holds the inner map; the
        // pages the store reads through it are not rewritten while the slot in `owner` pins
        // their checkpoint (the writer's reuse rule, docs/recovery.md).
        Ok(unsafe { super::Map::from_raw_parts(pointer, len, owner) })
    }
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

fn flock(file: &File, operation: libc::c_int) -> io::Result<()> {
    // SAFETY: flock on a descriptor we own; no memory is passed.
    let status = unsafe { libc::flock(file.as_raw_fd(), operation) };
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Formats a new (empty or all-zero-header) readers file; checks an existing one.
fn format_if_new(file: &File, path: &Path) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let len = file
        .metadata()
        .map_err(readers_error(path, "read its length"))?
        .len();
    let mut header = [0u8; 24];
    if len >= header.len() as u64 {
        file.read_exact_at(&mut header, 0)
            .map_err(readers_error(path, "read its header"))?;
    }
    let blank = header.iter().all(|&byte| byte == 0);
    if len == 0 || blank {
        let mut image = vec![0u8; READERS_FILE_LEN];
        image[H_MAGIC..H_MAGIC + 8].copy_from_slice(&READERS_MAGIC);
        image[H_VERSION..H_VERSION + 8].copy_from_slice(&READERS_VERSION.to_le_bytes());
        image[H_SLOTS..H_SLOTS + 8].copy_from_slice(&(READER_SLOTS as u64).to_le_bytes());
        file.write_all_at(&image, 0)
            .map_err(readers_error(path, "format it"))?;
        return Ok(());
    }
    let bad = |problem: String| Error::ReadersFile {
        path: path.to_path_buf(),
        problem,
    };
    if header[H_MAGIC..H_MAGIC + 8] != READERS_MAGIC {
        return Err(bad(
            "it is not an artdb readers file (wrong magic); remove it once no process has the \
             database open, and it is made anew"
                .to_string(),
        ));
    }
    let version = u64::from_le_bytes(
        header[H_VERSION..H_VERSION + 8]
            .try_into()
            .unwrap_or([0; 8]),
    );
    let slots = u64::from_le_bytes(header[H_SLOTS..H_SLOTS + 8].try_into().unwrap_or([0; 8]));
    if version != READERS_VERSION || slots != READER_SLOTS as u64 || len != READERS_FILE_LEN as u64
    {
        return Err(bad(format!(
            "its layout (version {version}, {slots} slots, {len} bytes) is not the one this \
             artdb uses (version {READERS_VERSION}, {READER_SLOTS} slots, {READERS_FILE_LEN} \
             bytes): every process using the database must run the same artdb version; remove \
             it once no process has the database open"
        )));
    }
    Ok(())
}

fn ofd_record(kind: libc::c_int, (start, len): (i64, i64)) -> libc::flock {
    // SAFETY: `flock` is a plain C struct of integers, for which all zeros is a valid value
    // (and OFD locks require `l_pid` to be zero).
    let mut record: libc::flock = unsafe { std::mem::zeroed() };
    record.l_type = kind as libc::c_short;
    record.l_whence = libc::SEEK_SET as libc::c_short;
    record.l_start = start as libc::off_t;
    record.l_len = len as libc::off_t;
    record
}

/// Takes (`F_WRLCK`) or releases (`F_UNLCK`) an OFD lock on `range` without waiting; `false`
/// if another open file description holds a conflicting lock.
fn ofd_lock(file: &File, kind: libc::c_int, range: (i64, i64)) -> io::Result<bool> {
    let record = ofd_record(kind, range);
    // SAFETY: fcntl on a descriptor we own with a pointer to a live, initialized `flock`.
    let status = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &record) };
    if status == 0 {
        return Ok(true);
    }
    let error = io::Error::last_os_error();
    match error.raw_os_error() {
        Some(code) if code == libc::EAGAIN || code == libc::EACCES => Ok(false),
        _ => Err(error),
    }
}

/// Whether another open file description holds a lock on `range`.
fn ofd_held_elsewhere(file: &File, range: (i64, i64)) -> io::Result<bool> {
    let mut record = ofd_record(libc::F_WRLCK, range);
    // SAFETY: fcntl on a descriptor we own with a pointer to a live `flock` it fills in.
    let status = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut record) };
    if status != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(record.l_type != libc::F_UNLCK as libc::c_short)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_claimed_listed_and_freed() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.artdb");
        let writer = ReadersFile::of(&db, true).unwrap().unwrap();
        let reader = ReadersFile::of(&db, true).unwrap().unwrap();
        assert_eq!(writer.oldest_live().unwrap(), None);
        let a = reader.claim(7).unwrap();
        let b = reader.claim(5).unwrap();
        assert_ne!(a.slot(), b.slot());
        assert_eq!(writer.oldest_live().unwrap(), Some(5));
        drop(b);
        assert_eq!(writer.oldest_live().unwrap(), Some(7));
        a.set_generation(9);
        assert_eq!(writer.oldest_live().unwrap(), Some(9));
        drop(a);
        assert_eq!(writer.oldest_live().unwrap(), None);
    }

    #[test]
    fn a_slot_whose_open_is_gone_is_dead_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.artdb");
        let writer = ReadersFile::of(&db, true).unwrap().unwrap();
        let reader = ReadersFile::of(&db, true).unwrap().unwrap();
        // A killed process: its descriptor closed (dropping the lock), its slot stays written.
        reader.slot_word(0, S_PID).store(1, Ordering::SeqCst);
        reader.slot_word(0, S_GENERATION).store(3, Ordering::SeqCst);
        drop(reader);
        let listed = writer.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert!(!listed[0].alive);
        assert_eq!(listed[0].generation, 3);
        assert_eq!(writer.oldest_live().unwrap(), None);
        assert_eq!(writer.clear_dead().unwrap(), 1);
        assert!(writer.list().unwrap().is_empty());
    }

    #[test]
    fn published_state_round_trips_and_a_writer_open_resets_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.artdb");
        let writer = ReadersFile::of(&db, true).unwrap().unwrap();
        let reader = ReadersFile::of(&db, false).unwrap().unwrap();
        writer.publish_generation(4);
        writer.publish_durable_lsn(12);
        writer.publish_durable_lsn(10);
        let seen = reader.published().unwrap();
        assert_eq!((seen.generation, seen.durable_lsn), (4, 12));
        assert_eq!(seen.log_seq % 2, 0);
        writer.log_rewrite(true);
        assert_eq!(reader.published().unwrap().log_seq % 2, 1);
        writer.log_rewrite(false);
        let after = reader.published().unwrap();
        assert_eq!(after.log_seq % 2, 0);
        assert_ne!(after.log_seq, seen.log_seq);
        writer.writer_opening();
        assert_eq!(reader.published().unwrap().generation, 0);
    }

    #[test]
    fn a_foreign_file_is_refused_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.artdb");
        assert!(ReadersFile::of(&db, false).unwrap().is_none());
        std::fs::write(readers_path(&db), b"not a readers file at all, no").unwrap();
        let error = ReadersFile::of(&db, true).unwrap_err();
        assert!(matches!(error, Error::ReadersFile { .. }), "{error}");
        assert!(error.to_string().contains("not an artdb readers file"));
    }

    #[test]
    fn slots_run_out_with_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.artdb");
        let reader = ReadersFile::of(&db, true).unwrap().unwrap();
        let guards: Vec<_> = (0..READER_SLOTS)
            .map(|_| reader.claim(1).unwrap())
            .collect();
        let error = reader.claim(1).unwrap_err();
        assert!(matches!(error, Error::ReadersFull { .. }), "{error}");
        drop(guards);
        reader.claim(1).unwrap();
    }
}
