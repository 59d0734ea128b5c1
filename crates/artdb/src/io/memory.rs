//! MemoryStorage: an in-memory database file, for tests and temporary databases.
//!
//! Bytes live in a fixed-capacity anonymous region ([`super::raw::Region`]) whose address never
//! changes, so maps stay valid as the file grows. Syncs do nothing (memory is as durable as it
//! gets). `image()` copies the file out and `from_image` builds one, so tests can "reopen" bytes.

use super::raw::Region;
use super::{Map, Storage};
use parking_lot::Mutex;
use std::io;
use std::sync::Arc;

/// Default capacity of a [`MemoryStorage`]: address space only, untouched pages cost nothing.
pub const MEMORY_STORAGE_CAPACITY_BYTES_DEFAULT: usize = 1 << 30;

/// An in-memory file (see the module docs).
pub struct MemoryStorage {
    region: Arc<Region>,
    len: Mutex<u64>,
}

impl MemoryStorage {
    /// An empty file of the default capacity.
    pub fn new() -> io::Result<MemoryStorage> {
        MemoryStorage::with_capacity(MEMORY_STORAGE_CAPACITY_BYTES_DEFAULT)
    }

    /// An empty file that can grow to `capacity_bytes` (a write beyond is `ENOSPC`).
    pub fn with_capacity(capacity_bytes: usize) -> io::Result<MemoryStorage> {
        Ok(MemoryStorage {
            region: Arc::new(Region::reserve(capacity_bytes)?),
            len: Mutex::new(0),
        })
    }

    /// A file holding `image`.
    pub fn from_image(image: &[u8]) -> io::Result<MemoryStorage> {
        let storage = MemoryStorage::with_capacity(
            MEMORY_STORAGE_CAPACITY_BYTES_DEFAULT.max(image.len().saturating_mul(2)),
        )?;
        storage.write_at(0, image)?;
        Ok(storage)
    }

    /// A copy of the file's bytes.
    pub fn image(&self) -> Vec<u8> {
        let len = *self.len.lock();
        let mut bytes = vec![0; len as usize];
        // A read inside the current length cannot fail.
        let _ = self.region.read(0, &mut bytes);
        bytes
    }
}

impl Storage for MemoryStorage {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let len = *self.len.lock();
        let end = offset.checked_add(buf.len() as u64);
        if end.map_or(true, |end| end > len) {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past end of file",
            ));
        }
        self.region.read(offset as usize, buf)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut len = self.len.lock();
        let start =
            usize::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        self.region.write(start, data)?;
        *len = (*len).max(offset + data.len() as u64);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn len(&self) -> io::Result<u64> {
        Ok(*self.len.lock())
    }

    fn set_len(&self, new_len: u64) -> io::Result<()> {
        let mut len = self.len.lock();
        if new_len > self.region.capacity() as u64 {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        if new_len < *len {
            self.region
                .zero(new_len as usize, (*len - new_len) as usize);
        }
        *len = new_len;
        Ok(())
    }

    fn map(&self, len: u64) -> io::Result<Map> {
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= self.region.capacity())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        let owner: Arc<Region> = Arc::clone(&self.region);
        // SAFETY: the region's first `len` bytes are mapped for as long as `owner` (an Arc of the
        // region) lives; writers never touch bytes a reader can reach (store reuse rule).
        Ok(unsafe { Map::from_raw_parts(self.region.as_ptr(), len, owner) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_read_grow_shrink_map() {
        let storage = MemoryStorage::with_capacity(1 << 20).unwrap();
        storage.write_at(10, b"hello").unwrap();
        assert_eq!(storage.len().unwrap(), 15);
        let mut buf = [0u8; 15];
        storage.read_at(0, &mut buf).unwrap();
        assert_eq!(&buf[10..], b"hello");
        assert_eq!(&buf[..10], &[0; 10]);
        let map = storage.map(4096).unwrap();
        storage.write_at(12, b"LL").unwrap();
        assert_eq!(map.bytes(10, 5).unwrap(), b"heLLo");
        storage.set_len(11).unwrap();
        storage.set_len(15).unwrap();
        storage.read_at(0, &mut buf).unwrap();
        assert_eq!(&buf[10..], &[b'h', 0, 0, 0, 0]);
        assert!(storage.read_at(14, &mut [0; 2]).is_err());
        assert!(storage.write_at(1 << 20, b"x").is_err());
        assert!(map.bytes(4090, 10).is_none());
    }
}
