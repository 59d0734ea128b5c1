//! raw: the unsafe part of the in-memory storage, an anonymous memory region of fixed capacity
//! whose address never changes, so views ([`super::Map`]) into it stay valid while it grows.
//!
//! The region is reserved with `mmap(MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)`: untouched
//! pages cost nothing, touched pages read zero until written. Writers copy bytes in under the
//! storage's lock; readers read through views. The storage's contract (module `io`, point 3) and
//! the store's reuse rule keep a reader and a writer off the same bytes at the same time.

use std::io;

/// A fixed-capacity anonymous region. Dropping it unmaps it.
pub(crate) struct Region {
    pointer: *mut u8,
    capacity: usize,
}

// SAFETY: the region is plain memory; all writes go through `write`, which the owner serializes
// under a lock, and reads of bytes are coordinated by the store (see the module docs).
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    /// Reserves `capacity` bytes of address space.
    pub(crate) fn reserve(capacity: usize) -> io::Result<Region> {
        if capacity == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "capacity must be > 0",
            ));
        }
        // SAFETY: an anonymous private mapping at an address the kernel chooses touches no
        // existing memory; the arguments are valid for mmap.
        let pointer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                capacity,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if pointer == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Region {
            pointer: pointer.cast(),
            capacity,
        })
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.pointer
    }

    /// Copies `data` to `offset`. Callers serialize writes (the storage's lock).
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> io::Result<()> {
        let end = offset
            .checked_add(data.len())
            .filter(|&end| end <= self.capacity);
        if end.is_none() {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        // SAFETY: `offset..offset + data.len()` is inside the region (checked above); `data` is
        // a separate allocation, so the ranges do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.pointer.add(offset), data.len())
        };
        Ok(())
    }

    /// Copies `buf.len()` bytes at `offset` into `buf`.
    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len())
            .filter(|&end| end <= self.capacity);
        if end.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the region",
            ));
        }
        // SAFETY: the source range is inside the region (checked above) and `buf` is a separate
        // allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(self.pointer.add(offset), buf.as_mut_ptr(), buf.len())
        };
        Ok(())
    }

    /// Zeroes `offset..offset + len` (used when the file shrinks, so a later growth reads zero).
    pub(crate) fn zero(&self, offset: usize, len: usize) {
        if offset
            .checked_add(len)
            .is_some_and(|end| end <= self.capacity)
        {
            // SAFETY: the range is inside the region (checked above).
            unsafe { std::ptr::write_bytes(self.pointer.add(offset), 0, len) };
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `pointer`/`capacity` are exactly what mmap returned; every view holds an Arc
        // to the owner of this region, so none outlives it.
        unsafe { libc::munmap(self.pointer.cast(), self.capacity) };
    }
}
