//! FileStorage: the database file on disk, exclusively locked while open.
//!
//! The lock is `flock(LOCK_EX | LOCK_NB)` on the open file description: it conflicts with any
//! other open of the same file, in this process or another, and the kernel releases it when the
//! descriptor closes (also when the process dies), so a crash never leaves a stale lock.
//! `flock` rather than `fcntl` record locks because fcntl locks belong to the process: a second
//! open in the same process would silently succeed and the first close would drop both.
//!
//! Durability: `sync` is `fdatasync`, which also persists the file length when it changed.
//! Maps are `MAP_SHARED` read-only (memmap2), so they see every later `pwrite` (Linux's unified
//! page cache).

use super::{Map, Storage};
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The database file (see the module docs).
pub struct FileStorage {
    file: File,
    path: PathBuf,
}

impl FileStorage {
    /// Creates a new file at `path` (an error if it exists) and locks it.
    pub fn create(path: &Path) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|source| {
                if source.kind() == io::ErrorKind::AlreadyExists {
                    Error::AlreadyExists {
                        path: path.to_path_buf(),
                    }
                } else {
                    Error::Io {
                        op: "create the database file",
                        source,
                    }
                }
            })?;
        FileStorage::lock(file, path)
    }

    /// Opens an existing file at `path` for reading and writing and locks it.
    pub fn open(path: &Path) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(Error::io("open the database file"))?;
        FileStorage::lock(file, path)
    }

    /// Opens the file at `path` for reading and writing, creating it if absent, and locks it
    /// (the write-ahead log beside a database file).
    pub fn open_or_create(path: &Path) -> Result<FileStorage> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(Error::io("open the log file"))?;
        FileStorage::lock(file, path)
    }

    /// Whether a file exists at `path` (the log of a database created before it had one).
    pub fn exists(path: &Path) -> bool {
        path.exists()
    }

    fn lock(file: File, path: &Path) -> Result<FileStorage> {
        // SAFETY: flock on a descriptor we own; no memory is passed.
        let status = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if status != 0 {
            let source = io::Error::last_os_error();
            return Err(match source.raw_os_error() {
                Some(code) if code == libc::EWOULDBLOCK || code == libc::EAGAIN => Error::Locked {
                    path: path.to_path_buf(),
                },
                _ => Error::Io {
                    op: "lock the database file",
                    source,
                },
            });
        }
        Ok(FileStorage {
            file,
            path: path.to_path_buf(),
        })
    }

    /// The path this storage was opened at.
    pub fn path(&self) -> &Path {
        &self.path
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

    fn map(&self, len: u64) -> io::Result<Map> {
        let len_usize =
            usize::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::ENOMEM))?;
        if len_usize == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map zero bytes",
            ));
        }
        // SAFETY: the map is read-only and shared; the file is locked against other artdb
        // handles, and the store never reads past the file's length or a byte being rewritten
        // (see the io module contract, point 3).
        let map = unsafe { memmap2::MmapOptions::new().len(len_usize).map(&self.file)? };
        let pointer = map.as_ptr();
        let owner = Arc::new(map);
        // SAFETY: `owner` keeps the mapping of `len_usize` bytes alive; see above for writes.
        Ok(unsafe { Map::from_raw_parts(pointer, len_usize, owner) })
    }
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

    #[test]
    fn second_open_is_locked_and_lock_is_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let first = FileStorage::create(&path).unwrap();
        assert!(matches!(
            FileStorage::open(&path),
            Err(Error::Locked { .. })
        ));
        assert!(matches!(
            FileStorage::create(&path),
            Err(Error::AlreadyExists { .. })
        ));
        first.write_at(0, b"abc").unwrap();
        let map = first.map(1 << 20).unwrap();
        first.write_at(1, b"X").unwrap();
        assert_eq!(map.bytes(0, 3).unwrap(), b"aXc");
        drop(map);
        drop(first);
        let second = FileStorage::open(&path).unwrap();
        assert_eq!(second.len().unwrap(), 3);
    }
}
