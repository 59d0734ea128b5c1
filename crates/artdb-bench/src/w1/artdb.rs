//! W1's adapter for artdb's ART (`artdb_art::Tree`): fills and deletes through the writer, reads
//! through a `Snapshot` (O(1) to take, `Send + Sync`, shared by the reader threads).
//!
//! Reads use the tree's natural fast paths: `get` borrows the value from the tree's memory,
//! `get_many` looks up [`BATCH_KEYS`] keys at a time so their cache misses overlap, and scans use
//! a `Cursor` (`seek`, then `next`), which allocates nothing per step.

use artdb_art::{Snapshot, Tree};

use super::keys::value_for;
use super::peers::{BenchError, Reader, Structure, Tally};

/// Keys per `get_many` call in `readbatch`.
pub const BATCH_KEYS: usize = 32;

/// artdb's tree as a W1 structure.
pub struct Artdb {
    tree: Tree,
}

impl<const K: usize, const V: usize> Structure<K, V> for Artdb {
    type Reader<'a> = Snapshot;

    fn new() -> Self {
        Artdb { tree: Tree::new() }
    }

    fn fill(&mut self, keys: &[[u8; K]]) -> Result<(), BenchError> {
        for key in keys {
            self.tree.insert(key, &value_for::<K, V>(key))?;
        }
        Ok(())
    }

    fn reader(&mut self) -> Snapshot {
        self.tree.snapshot()
    }

    fn delete(&mut self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(value) = self.tree.remove(key)? {
                tally.add(&value);
            }
        }
        Ok(tally)
    }
}

impl<const K: usize> Reader<K> for Snapshot {
    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn read(&self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(value) = self.get(key)? {
                tally.add(value);
            }
        }
        Ok(tally)
    }

    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn read_batched(&self, keys: &[[u8; K]]) -> Option<Result<Tally, BenchError>> {
        Some(read_batched(self, keys))
    }

    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn scan(&self, starts: &[[u8; K]], count: usize) -> Option<Result<Tally, BenchError>> {
        Some(scan(self, starts, count))
    }
}

fn read_batched<const K: usize>(
    snapshot: &Snapshot,
    keys: &[[u8; K]],
) -> Result<Tally, BenchError> {
    let mut tally = Tally::default();
    let mut batch: Vec<&[u8]> = Vec::with_capacity(BATCH_KEYS);
    let mut found = Vec::with_capacity(BATCH_KEYS);
    for chunk in keys.chunks(BATCH_KEYS) {
        batch.clear();
        batch.extend(chunk.iter().map(|key| &key[..]));
        found.clear();
        snapshot.get_many(&batch, &mut found)?;
        for value in found.iter().flatten() {
            tally.add(value);
        }
    }
    Ok(tally)
}

fn scan<const K: usize>(
    snapshot: &Snapshot,
    starts: &[[u8; K]],
    count: usize,
) -> Result<Tally, BenchError> {
    let mut tally = Tally::default();
    let mut cursor = snapshot.cursor();
    for start in starts {
        let mut valid = cursor.seek(start)?;
        let mut read = 0;
        while valid && read < count {
            tally.add(cursor.value());
            read += 1;
            valid = read < count && cursor.next()?;
        }
    }
    Ok(tally)
}
