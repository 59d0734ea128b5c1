//! A big bulk load starts the writeback of what it writes as it goes (`Storage::start_writeback`
//! every 8 MiB written), so its final sync does not find the whole load dirty; and the load
//! reads back whole with the window's bookkeeping in the write path. (The recording storage
//! only notes each hint: that the kernel's writeback changes no bytes is not tested here.)
//!
//! Regression (session 24): the hint was given only for single writes of 1 MiB or more, and the
//! writer's runs had become shorter (a 50M-key load wrote 416-448 KiB runs between its extents),
//! so a load never gave it: its final `fdatasync` took 0.57 s of a 2.3 s load.

use artdb::io::{Map, MemoryStorage, Storage};
use artdb::{Db, Options};
use std::sync::{Arc, Mutex};

/// A memory storage that records the bytes written and each writeback hint.
struct Recording {
    inner: MemoryStorage,
    /// (bytes written before the hint, offset, len) per hint.
    hints: Mutex<Vec<(u64, u64, u64)>>,
    written: Mutex<u64>,
}

impl Storage for Recording {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_at(offset, buf)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        *self.written.lock().unwrap() += data.len() as u64;
        self.inner.write_at(offset, data)
    }
    fn sync(&self) -> std::io::Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
    fn map(&self, len: u64) -> std::io::Result<Map> {
        self.inner.map(len)
    }
    fn start_writeback(&self, offset: u64, len: u64) -> std::io::Result<()> {
        let written = *self.written.lock().unwrap();
        self.hints.lock().unwrap().push((written, offset, len));
        Ok(())
    }
}

fn key(i: u64) -> [u8; 4] {
    (i as u32).to_be_bytes()
}

fn value(i: u64) -> [u8; 7] {
    let b = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes();
    [b[0], b[1], b[2], b[3], b[4], b[5], b[6]]
}

#[test]
fn a_big_bulk_load_starts_writeback_as_it_goes() {
    let storage = Arc::new(Recording {
        inner: MemoryStorage::new().unwrap(),
        hints: Mutex::new(Vec::new()),
        written: Mutex::new(0),
    });
    let db = Db::create_in(Arc::clone(&storage) as Arc<dyn Storage>, Options::default()).unwrap();
    db.create_table("t").unwrap();
    let n = 4_000_000u64;
    assert_eq!(
        db.bulk_load("t", (0..n).map(|i| (key(i), value(i))))
            .unwrap(),
        n
    );
    let written = *storage.written.lock().unwrap();
    let hints = storage.hints.lock().unwrap().clone();
    assert!(written > 24 << 20, "the load wrote {written} bytes");
    // One hint per 8 MiB written, each for a span of the file at least that long, inside the
    // file, in the order the load writes (ascending).
    assert!(
        hints.len() as u64 >= written / (8 << 20) - 1,
        "{} hints for {written} bytes",
        hints.len()
    );
    let file_len = storage.len().unwrap();
    let (mut previous, mut written_at_previous) = (0, 0);
    for &(written_before, offset, len) in &hints {
        assert!(len >= 8 << 20, "a hint of {len} bytes");
        assert!(
            written_before >= 8 << 20,
            "a hint after {written_before} bytes"
        );
        assert!(
            written_before - written_at_previous >= 8 << 20,
            "a hint {} bytes after the one before",
            written_before - written_at_previous
        );
        written_at_previous = written_before;
        assert!(
            offset + len <= file_len,
            "a hint past the file: {offset} + {len}"
        );
        assert!(offset >= previous, "a load writes forward, so do its hints");
        previous = offset;
    }
    // The load reads back.
    let read = db.read();
    let table = read.table("t").unwrap();
    for i in (0..n).step_by(9973).chain([n - 1]) {
        assert_eq!(table.get(&key(i)).unwrap(), Some(&value(i)[..]), "key {i}");
    }
    assert_eq!(table.get(&key(n)).unwrap(), None);
    drop(read);
    assert!(db.verify().unwrap().is_ok());
}
