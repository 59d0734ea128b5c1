//! FileStorage: the database file on disk, locked while open.
//!
//! The lock is `flock` on the open file description, taken without waiting or, through the
//! `_waiting` opens, retried until a deadline (`Options::lock_wait_max`): exclusive
//! (`LOCK_EX`) for a read-write open, so one writer at a time, in this process or another
//! (`Error::Locked`). Read-only opens by path take the shared lock (`LOCK_SH`) only while they
//! open with no writer present ([`FileStorage::release_lock`] then), or none at all beside a
//! writer ([`FileStorage::open_read_only_unlocked`]): the pages they read are kept from reuse by
//! their slot in the readers file (`io/readers.rs`), not by a lock. The kernel releases the lock
//! when the descriptor closes (also when the process dies), so a crash never leaves a stale
//! lock. `flock` rather than `fcntl` record locks because fcntl locks belong to the process: a
//! second open in the same process would silently succeed and the first close would drop both.
//!
//! Create (docs/recovery.md#create): the caller formats the database in a file under a temporary
//! name beside the final one ([`FileStorage::create_temporary`]), syncs it, and then
//! [`FileStorage::persist`] renames it into place and syncs the directory. So no half-created
//! database ever exists under its name.
//!
//! Durability: `sync` is `fdatasync`, which also persists the file length when it changed.
//! Maps are `MAP_SHARED` read-only (memmap2), so they see every later `pwrite` (Linux's unified
//! page cache).

use super::{Map, Storage};
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The database file (see the module docs).
pub struct FileStorage {
    file: File,
    path: PathBuf,
    /// While created: the temporary name the file has until [`FileStorage::persist`].
    temporary: parking_lot::Mutex<Option<PathBuf>>,
}

/// Refuses what is not a regular file: a directory (`EISDIR`, which the error's message names),
/// a FIFO, socket or device. The opens above pass `O_NONBLOCK` so that a FIFO's open returns at
/// once instead of waiting for a writer (for a regular file the flag changes nothing).
fn check_regular(metadata: &std::fs::Metadata, path: &Path, read_only: bool) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        return Err(Error::Open {
            path: path.to_path_buf(),
            read_only,
            source: io::Error::from_raw_os_error(libc::EISDIR),
        });
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    };
    Err(Error::Open {
        path: path.to_path_buf(),
        read_only,
        source: io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {what}, not a database file; give the path of a regular file"),
        ),
    })
}

fn open_error(path: &Path, read_only: bool) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Open {
        path: path.to_path_buf(),
        read_only,
        source,
    }
}

impl FileStorage {
    /// Creates a new database file that will be named `path` (an error if `path` exists): the
    /// file is made under a temporary name in the same directory, locked exclusively; call
    /// [`FileStorage::persist`] once its contents are synced.
    pub fn create_temporary(path: &Path) -> Result<FileStorage> {
        if path.symlink_metadata().is_ok() {
            return Err(Error::AlreadyExists {
                path: path.to_path_buf(),
            });
        }
        let name = path.file_name().ok_or_else(|| Error::Open {
            path: path.to_path_buf(),
            read_only: false,
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
        })?;
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(name);
        temporary_name.push(format!(".{}.creating", std::process::id()));
        let temporary = path.with_file_name(temporary_name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(|source| {
                if source.kind() == io::ErrorKind::AlreadyExists {
                    // A leftover of a process with our id that died while creating: nothing
                    // ever had it open under the database's name.
                    let _ = std::fs::remove_file(&temporary);
                }
                Error::Open {
                    path: path.to_path_buf(),
                    read_only: false,
                    source,
                }
            })?;
        let storage = FileStorage::lock(file, path, false)?;
        *storage.temporary.lock() = Some(temporary);
        Ok(storage)
    }

    /// Gives a file made by [`FileStorage::create_temporary`] its final name (an error if that
    /// exists by now) and syncs the directory, so the name survives power loss. Call only after
    /// the file's contents are synced.
    pub fn persist(&self) -> Result<()> {
        let Some(temporary) = self.temporary.lock().take() else {
            return Ok(());
        };
        // A hard link fails if the target exists (no silent overwrite of a file that appeared
        // meanwhile); then the temporary name goes. Where hard links are not supported, a
        // rename after a check (a narrow race with another creator of the same name).
        let mut linked = std::fs::hard_link(&temporary, &self.path);
        if let Err(error) = &linked {
            if error.kind() != io::ErrorKind::AlreadyExists && self.path.symlink_metadata().is_err()
            {
                linked = std::fs::rename(&temporary, &self.path);
            }
        }
        if let Err(source) = linked {
            let _ = std::fs::remove_file(&temporary);
            return Err(if source.kind() == io::ErrorKind::AlreadyExists {
                Error::AlreadyExists {
                    path: self.path.clone(),
                }
            } else {
                Error::Io {
                    op: "name the new database file",
                    source,
                }
            });
        }
        if temporary.symlink_metadata().is_ok() {
            std::fs::remove_file(&temporary).map_err(Error::io("remove the temporary name"))?;
        }
        let directory = match self.path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        File::open(directory)
            .and_then(|directory| directory.sync_all())
            .map_err(Error::io("sync the directory of the new database file"))
    }

    /// Opens an existing file at `path` for reading and writing and locks it exclusively.
    pub fn open(path: &Path) -> Result<FileStorage> {
        FileStorage::open_waiting(path, Duration::ZERO)
    }

    /// Opens the file at `path` for reading and writing, creating it if absent, and locks it
    /// (the write-ahead log beside a database file).
    pub fn open_or_create(path: &Path) -> Result<FileStorage> {
        FileStorage::open_or_create_waiting(path, Duration::ZERO)
    }

    /// Whether a file exists at `path` (the log of a database created before it had one).
    pub fn exists(path: &Path) -> bool {
        path.exists()
    }

    /// Opens an existing file at `path` for reading only, with a shared lock (see the module
    /// docs): coexists with other read-only opens, excludes a read-write one.
    pub fn open_read_only(path: &Path) -> Result<FileStorage> {
        FileStorage::open_read_only_waiting(path, Duration::ZERO)
    }

    /// [`FileStorage::open`], waiting up to `wait` for another handle to release the lock
    /// (then `Error::Locked`, naming the holder's pid when it is known).
    pub fn open_waiting(path: &Path, wait: Duration) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(open_error(path, false))?;
        FileStorage::lock_waiting(file, path, false, wait)
    }

    /// [`FileStorage::open_or_create`], waiting up to `wait` for the lock.
    pub fn open_or_create_waiting(path: &Path, wait: Duration) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(open_error(path, false))?;
        FileStorage::lock_waiting(file, path, false, wait)
    }

    /// [`FileStorage::open_read_only`], waiting up to `wait` for the lock.
    pub fn open_read_only_waiting(path: &Path, wait: Duration) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(open_error(path, true))?;
        FileStorage::lock_waiting(file, path, true, wait)
    }

    /// Opens an existing file at `path` for reading only, taking no lock: a reader beside a
    /// writer of another process, whose pages it reads are kept by the readers file
    /// (`io/readers.rs`).
    pub fn open_read_only_unlocked(path: &Path) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(open_error(path, true))?;
        let metadata = file.metadata().map_err(open_error(path, true))?;
        check_regular(&metadata, path, true)?;
        Ok(FileStorage {
            file,
            path: path.to_path_buf(),
            temporary: parking_lot::Mutex::new(None),
        })
    }

    /// Gives up this handle's lock (and its pid record) while keeping the file open: a
    /// reader that opened under a shared lock and needs it no longer.
    pub fn release_lock(&self) {
        let record = holder_record(libc::F_UNLCK);
        // SAFETY: fcntl on a descriptor we own with a pointer to a live, initialized `flock`.
        let _ = unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETLK, &record) };
        // SAFETY: flock on a descriptor we own; no memory is passed.
        let _ = unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }

    /// Every byte of the file at `path`, read without a lock (`None`: no such file).
    pub fn read_all_unlocked(path: &Path) -> Result<Option<Vec<u8>>> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(Error::Open {
                path: path.to_path_buf(),
                read_only: true,
                source,
            }),
        }
    }

    fn lock(file: File, path: &Path, shared: bool) -> Result<FileStorage> {
        FileStorage::lock_waiting(file, path, shared, Duration::ZERO)
    }

    /// Takes the `flock` (module docs), retrying with growing pauses until `wait` has passed.
    /// Once held, a record lock on [`HOLDER_LOCK_AT`] tells waiters this process's pid.
    fn lock_waiting(file: File, path: &Path, shared: bool, wait: Duration) -> Result<FileStorage> {
        let metadata = file.metadata().map_err(open_error(path, shared))?;
        check_regular(&metadata, path, shared)?;
        let operation = if shared { libc::LOCK_SH } else { libc::LOCK_EX };
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            // SAFETY: flock on a descriptor we own; no memory is passed.
            let status = unsafe { libc::flock(file.as_raw_fd(), operation | libc::LOCK_NB) };
            if status == 0 {
                break;
            }
            let source = io::Error::last_os_error();
            let busy = matches!(
                source.raw_os_error(),
                Some(code) if code == libc::EWOULDBLOCK || code == libc::EAGAIN
            );
            if !busy {
                return Err(Error::Io {
                    op: "lock the database file",
                    source,
                });
            }
            let waited = start.elapsed();
            if waited >= wait {
                return Err(Error::Locked {
                    path: path.to_path_buf(),
                    holder_pid: holder_pid(&file),
                    waited_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
                });
            }
            std::thread::sleep(pause.min(wait - waited));
            pause = (pause * 2).min(LOCK_PAUSE_MAX);
        }
        announce_holder(&file, shared);
        Ok(FileStorage {
            file,
            path: path.to_path_buf(),
            temporary: parking_lot::Mutex::new(None),
        })
    }

    /// The path this storage was opened at (its final name while it is being created).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Longest pause between two tries of a lock that another handle holds.
const LOCK_PAUSE_MAX: Duration = Duration::from_millis(50);

/// The byte (far past any real file length, so it covers no data) on which a lock holder takes
/// an `fcntl` record lock whose only job is to tell a waiter its pid (`F_GETLK` reports it;
/// `flock` cannot). Record locks belong to the process and go when any of its descriptors of the
/// file closes, so the pid can be missing; the `flock` alone decides who holds the file.
const HOLDER_LOCK_AT: i64 = i64::MAX - 1;

fn holder_record(kind: libc::c_int) -> libc::flock {
    // SAFETY: `flock` is a plain C struct of integers, for which all zeros is a valid value.
    let mut record: libc::flock = unsafe { std::mem::zeroed() };
    record.l_type = kind as libc::c_short;
    record.l_whence = libc::SEEK_SET as libc::c_short;
    record.l_start = HOLDER_LOCK_AT as libc::off_t;
    record.l_len = 1;
    record
}

/// Best effort: a failure only means waiters will not learn the pid.
fn announce_holder(file: &File, shared: bool) {
    let kind = if shared { libc::F_RDLCK } else { libc::F_WRLCK };
    let record = holder_record(kind);
    // SAFETY: fcntl on a descriptor we own with a pointer to a live, initialized `flock`.
    let _ = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &record) };
}

/// The pid of a process holding the record lock of [`HOLDER_LOCK_AT`], if one does.
fn holder_pid(file: &File) -> Option<u32> {
    let mut record = holder_record(libc::F_WRLCK);
    // SAFETY: fcntl on a descriptor we own with a pointer to a live `flock` it fills in.
    let status = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut record) };
    if status != 0 || record.l_type == libc::F_UNLCK as libc::c_short {
        return None;
    }
    u32::try_from(record.l_pid).ok().filter(|&pid| pid != 0)
}

impl Drop for FileStorage {
    fn drop(&mut self) {
        // A create that failed before `persist`: its file never had the database's name.
        if let Some(temporary) = self.temporary.get_mut().take() {
            let _ = std::fs::remove_file(temporary);
        }
    }
}

impl Storage for FileStorage {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return Ok(()); // a hint: nothing to start for a range no file can have
        };
        // SAFETY: sync_file_range on a descriptor we own; no memory is passed.
        let status = unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                offset,
                len,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        if status == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn map(&self, len: u64) -> io::Result<Map> {
        let len_usize =
            usize::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::ENOMEM))?;
        if len_usize == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map zero bytes",
            ));
        }
        // SAFETY: the map is read-only and shared; the store never reads past the file's length
        // or a byte being rewritten (the io module contract, point 3): a writer rewrites only
        // pages that no snapshot of its own or of a reader slot (io/readers.rs) can reach.
        let map = unsafe { memmap2::MmapOptions::new().len(len_usize).map(&self.file)? };
        // Ask for huge pages when the file fits in a quarter of the machine's memory: where the
        // kernel caches the file in large folios (ext4 since Linux 6.16, xfs since 5.18) a fault
        // then reads ahead and maps a whole 2 MiB folio at once, so a lookup's pages rarely miss
        // the TLB (as the heap tree's, whose images come from huge-page chunks: artdb-art's image
        // arena). A larger file keeps 4 KiB faults: a cold random lookup in a file that does not
        // stay cached would read 2-4 MiB around each fault instead of the default read-around.
        // A hint: ignored where unsupported, and correctness never depends on it.
        #[cfg(target_os = "linux")]
        if huge_pages_suit(len) {
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        let pointer = map.as_ptr();
        let owner = Arc::new(map);
        // SAFETY: `owner` keeps the mapping of `len_usize` bytes alive; see above for writes.
        Ok(unsafe { Map::from_raw_parts(pointer, len_usize, owner) })
    }
}

/// Whether a file of `len` bytes is mapped with huge pages: at most a quarter of the physical
/// memory (a file that can stay in the page cache).
#[cfg(target_os = "linux")]
fn huge_pages_suit(len: u64) -> bool {
    // SAFETY: sysconf takes no pointers.
    let (pages, page_len) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page_len <= 0 {
        return false;
    }
    let memory = (pages as u64).saturating_mul(page_len as u64);
    len <= memory / 4
}

/// Asks the kernel to drop the cached pages of the file at `path` (for cold-read benchmarks).
/// Works without root; pages still mapped by a live map may stay cached.
pub fn evict_from_page_cache(path: &Path) -> io::Result<()> {
    let file = File::open(path)?;
    // SAFETY: fadvise on a descriptor we own; no memory is passed.
    let status = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if status != 0 {
        return Err(io::Error::from_raw_os_error(status));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_only_for_files_that_fit_in_memory() {
        assert!(
            huge_pages_suit(1 << 20),
            "a 1 MiB file stays cached on any test machine"
        );
        assert!(!huge_pages_suit(u64::MAX));
        assert!(
            !huge_pages_suit(1 << 60),
            "an exabyte is more than a quarter of memory"
        );
    }

    #[test]
    fn second_open_is_locked_and_lock_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let first = FileStorage::create_temporary(&path).unwrap();
        first.persist().unwrap();
        assert!(matches!(
            FileStorage::open(&path),
            Err(Error::Locked { .. })
        ));
        assert!(matches!(
            FileStorage::open_read_only(&path),
            Err(Error::Locked { .. })
        ));
        assert!(matches!(
            FileStorage::create_temporary(&path),
            Err(Error::AlreadyExists { .. })
        ));
        first.write_at(0, b"abc").unwrap();
        let map = first.map(1 << 20).unwrap();
        first.write_at(1, b"X").unwrap();
        assert_eq!(map.bytes(0, 3).unwrap(), b"aXc");
        drop(map);
        drop(first);
        let second = FileStorage::open_read_only(&path).unwrap();
        let third = FileStorage::open_read_only(&path).unwrap();
        assert_eq!(second.len().unwrap(), 3);
        assert!(third.write_at(0, b"x").is_err(), "opened for reading only");
        assert!(matches!(
            FileStorage::open(&path),
            Err(Error::Locked { .. })
        ));
        drop((second, third));
        let fourth = FileStorage::open(&path).unwrap();
        assert_eq!(fourth.len().unwrap(), 3);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
    }
}
