//! kv/fjall: fjall behind the [`Kv`] interface, with its optimistic (SSI) transactions
//! (`OptimisticTxDatabase`) and `PersistMode::SyncAll` on every commit; built without its `lz4`
//! feature, so nothing is compressed. A checkpoint is a memtable flush, compaction a major
//! compaction (its size fjall's own `disk_space`: see [`Kv::compact`] below).

use super::{KeyGen, Kv, Outcome, PairGen, Res, Snap};
use fjall::{
    KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace, OptimisticWriteTx,
    PersistMode, Readable,
};
use std::path::Path;

/// An open fjall database and its keyspace `t`.
pub struct FjallKv {
    db: OptimisticTxDatabase,
    table: OptimisticTxKeyspace,
}

impl FjallKv {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path, cache_bytes: u64) -> Res<FjallKv> {
        let db = OptimisticTxDatabase::builder(dir)
            .cache_size(cache_bytes)
            .open()?;
        let table = db.keyspace("t", KeyspaceCreateOptions::default)?;
        Ok(FjallKv { db, table })
    }

    fn begin(&self) -> Res<OptimisticWriteTx> {
        Ok(self.db.write_tx()?.durability(Some(PersistMode::SyncAll)))
    }
}

/// fjall's commit result: `Err` is its `Conflict`.
fn outcome(result: Result<(), fjall::Conflict>) -> Outcome {
    match result {
        Ok(()) => Outcome::Committed,
        Err(fjall::Conflict) => Outcome::Conflict,
    }
}

struct FjallSnap<'a> {
    snapshot: fjall::Snapshot,
    table: &'a OptimisticTxKeyspace,
}

impl Snap for FjallSnap<'_> {
    fn get(&mut self, key: &[u8]) -> Res<Option<u64>> {
        Ok(self.snapshot.get(self.table, key)?.map(|v| super::word(&v)))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Res<(usize, u64)> {
        let mut seen = 0;
        let mut sum = 0u64;
        for guard in self.snapshot.range(self.table, start..).take(count) {
            let value = guard.value()?;
            sum = sum.wrapping_add(super::word(&value));
            seen += 1;
        }
        Ok((seen, sum))
    }
}

impl Kv for FjallKv {
    fn write(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        let mut txn = self.begin()?;
        let mut key = Vec::new();
        let mut value = Vec::new();
        for i in 0..count {
            pairs(i, &mut key, &mut value);
            txn.insert(&self.table, key.as_slice(), value.as_slice());
        }
        match outcome(txn.commit()?) {
            Outcome::Committed => Ok(()),
            Outcome::Conflict => Err("fjall: a blind write transaction conflicted".into()),
        }
    }

    fn remove(&self, count: u64, keys: &mut KeyGen<'_>) -> Res<()> {
        let mut txn = self.begin()?;
        let mut key = Vec::new();
        for i in 0..count {
            keys(i, &mut key);
            txn.remove(&self.table, key.as_slice());
        }
        match outcome(txn.commit()?) {
            Outcome::Committed => Ok(()),
            Outcome::Conflict => Err("fjall: a blind removal transaction conflicted".into()),
        }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Res<Outcome> {
        let mut txn = self.begin()?;
        txn.insert(&self.table, key, value);
        Ok(outcome(txn.commit()?))
    }

    fn rmw(&self, key: &[u8], other: &[u8]) -> Res<Outcome> {
        let mut txn = self.begin()?;
        let old = txn.get(&self.table, key)?.map_or(0, |v| super::word(&v));
        let next = old.wrapping_add(1).to_le_bytes();
        txn.insert(&self.table, key, next.as_slice());
        txn.insert(&self.table, other, next.as_slice());
        Ok(outcome(txn.commit()?))
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Snap) -> Res<()>) -> Res<()> {
        let mut snap = FjallSnap {
            snapshot: self.db.read_tx(),
            table: &self.table,
        };
        body(&mut snap)
    }

    fn checkpoint(&self) -> Res<bool> {
        self.table.inner().rotate_memtable_and_wait()?;
        Ok(true)
    }

    fn compact(&mut self) -> Res<Option<u64>> {
        self.table.inner().rotate_memtable_and_wait()?;
        self.table.inner().major_compact()?;
        // fjall deletes the tables a compaction replaced only at its next memtable flush, so
        // the directory still holds them (about the size of the table again); its own count of
        // the live files (journal and current tables) is the compacted size.
        Ok(Some(self.db.disk_space()?))
    }

    fn close(self: Box<Self>) -> Res<()> {
        self.db.persist(PersistMode::SyncAll)?;
        drop(self);
        Ok(())
    }
}
