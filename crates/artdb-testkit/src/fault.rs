//! FaultStorage: fails the N-th I/O call (counting every call of the `Storage` trait) with
//! `EIO` or `ENOSPC`, once or from then on. Everything else passes through to the inner storage,
//! whose bytes a test then reopens.

use artdb::io::{Map, Storage};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The error a fault produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// An I/O error (`EIO`).
    Io,
    /// The disk is full (`ENOSPC`).
    NoSpace,
}

/// A storage that fails its N-th call (see the module docs).
pub struct FaultStorage<S> {
    inner: S,
    calls: AtomicU64,
    fail_at: AtomicU64,
    kind: std::sync::Mutex<FaultKind>,
    sticky: AtomicBool,
    failed: AtomicBool,
}

impl<S: Storage> FaultStorage<S> {
    /// Wraps `inner` with no fault planned.
    pub fn new(inner: S) -> FaultStorage<S> {
        FaultStorage {
            inner,
            calls: AtomicU64::new(0),
            fail_at: AtomicU64::new(0),
            kind: std::sync::Mutex::new(FaultKind::Io),
            sticky: AtomicBool::new(false),
            failed: AtomicBool::new(false),
        }
    }

    /// Fails call number `call_number` (1-based, counted since creation) with `kind`; if
    /// `sticky`, every later call fails too.
    pub fn fail_call(&self, call_number: u64, kind: FaultKind, sticky: bool) {
        *self.kind.lock().unwrap_or_else(|p| p.into_inner()) = kind;
        self.sticky.store(sticky, Ordering::SeqCst);
        self.fail_at.store(call_number, Ordering::SeqCst);
    }

    /// Calls so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Whether a fault was injected.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// The wrapped storage.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn call(&self) -> io::Result<()> {
        let number = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let fail_at = self.fail_at.load(Ordering::SeqCst);
        let hit = fail_at != 0
            && (number == fail_at || (number > fail_at && self.sticky.load(Ordering::SeqCst)));
        if hit {
            self.failed.store(true, Ordering::SeqCst);
            let code = match *self.kind.lock().unwrap_or_else(|p| p.into_inner()) {
                FaultKind::Io => libc::EIO,
                FaultKind::NoSpace => libc::ENOSPC,
            };
            return Err(io::Error::from_raw_os_error(code));
        }
        Ok(())
    }
}

impl<S: Storage> Storage for FaultStorage<S> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.call()?;
        self.inner.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.call()?;
        self.inner.write_at(offset, data)
    }

    fn sync(&self) -> io::Result<()> {
        self.call()?;
        self.inner.sync()
    }

    fn len(&self) -> io::Result<u64> {
        self.call()?;
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.call()?;
        self.inner.set_len(len)
    }

    fn map(&self, len: u64) -> io::Result<Map> {
        self.call()?;
        self.inner.map(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use artdb::io::MemoryStorage;

    #[test]
    fn fails_exactly_the_nth_call() {
        let storage = FaultStorage::new(MemoryStorage::new().unwrap());
        storage.fail_call(2, FaultKind::NoSpace, false);
        storage.write_at(0, b"a").unwrap();
        let error = storage.write_at(1, b"b").unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::ENOSPC));
        storage.write_at(1, b"c").unwrap();
        assert_eq!(storage.calls(), 3);
        assert_eq!(storage.inner().image(), b"ac");
    }
}
