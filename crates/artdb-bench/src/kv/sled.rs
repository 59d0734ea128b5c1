//! kv/sled: sled behind the [`Kv`] interface (W6 only). As in redb's published table, sled is
//! used without transactions: a write is a batch applied then `flush` (fsync); reads see the
//! latest state (sled has no read snapshots); it has no compaction call.

use super::{KeyGen, Kv, Outcome, PairGen, Res, Snap};
use std::path::Path;

/// An open sled database.
pub struct SledKv {
    db: sled::Db,
}

impl SledKv {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path, cache_bytes: u64) -> Res<SledKv> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(cache_bytes)
            .open()?;
        Ok(SledKv { db })
    }
}

struct SledSnap<'a> {
    db: &'a sled::Db,
}

impl Snap for SledSnap<'_> {
    fn get(&mut self, key: &[u8]) -> Res<Option<u64>> {
        Ok(self.db.get(key)?.map(|v| super::word(&v)))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Res<(usize, u64)> {
        let mut seen = 0;
        let mut sum = 0u64;
        for item in self.db.range(start..).take(count) {
            let (_, value) = item?;
            sum = sum.wrapping_add(super::word(&value));
            seen += 1;
        }
        Ok((seen, sum))
    }
}

impl Kv for SledKv {
    fn write(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        let mut batch = sled::Batch::default();
        let mut key = Vec::new();
        let mut value = Vec::new();
        for i in 0..count {
            pairs(i, &mut key, &mut value);
            batch.insert(key.as_slice(), value.as_slice());
        }
        self.db.apply_batch(batch)?;
        self.db.flush()?;
        Ok(())
    }

    fn remove(&self, count: u64, keys: &mut KeyGen<'_>) -> Res<()> {
        let mut batch = sled::Batch::default();
        let mut key = Vec::new();
        for i in 0..count {
            keys(i, &mut key);
            batch.remove(key.as_slice());
        }
        self.db.apply_batch(batch)?;
        self.db.flush()?;
        Ok(())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Res<Outcome> {
        self.db.insert(key, value)?;
        self.db.flush()?;
        Ok(Outcome::Committed)
    }

    fn rmw(&self, key: &[u8], other: &[u8]) -> Res<Outcome> {
        let result: sled::transaction::TransactionResult<(), ()> = self.db.transaction(|tx| {
            let old = tx.get(key)?.map_or(0, |v| super::word(&v));
            let next = old.wrapping_add(1).to_le_bytes();
            tx.insert(key, next.as_slice())?;
            tx.insert(other, next.as_slice())?;
            Ok(())
        });
        result.map_err(|error| format!("sled transaction: {error:?}"))?;
        self.db.flush()?;
        Ok(Outcome::Committed)
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Snap) -> Res<()>) -> Res<()> {
        body(&mut SledSnap { db: &self.db })
    }

    fn checkpoint(&self) -> Res<bool> {
        Ok(false)
    }

    fn compact(&mut self) -> Res<Option<u64>> {
        Ok(None)
    }

    fn can_compact(&self) -> bool {
        false
    }

    fn close(self: Box<Self>) -> Res<()> {
        self.db.flush()?;
        drop(self);
        Ok(())
    }
}
