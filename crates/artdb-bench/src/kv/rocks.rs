//! kv/rocks: RocksDB's optimistic transaction database behind the [`Kv`] interface (feature
//! `rocksdb`, which CI does not build): sync writes, no compression, a block cache of the run's
//! cache size; a checkpoint is a memtable flush, compaction a full `compact_range`.

use super::{KeyGen, Kv, Outcome, PairGen, Res, Snap};
use rocksdb::{
    BlockBasedOptions, Cache, Direction, ErrorKind, IteratorMode, MultiThreaded,
    OptimisticTransactionDB, OptimisticTransactionOptions, Options, WriteOptions,
};
use std::path::Path;

type Db = OptimisticTransactionDB<MultiThreaded>;

/// An open RocksDB optimistic transaction database.
pub struct RocksKv {
    db: Db,
}

impl RocksKv {
    /// Opens (or creates) the database in `dir`.
    pub fn open(dir: &Path, cache_bytes: u64) -> Res<RocksKv> {
        let cache = Cache::new_lru_cache(cache_bytes as usize);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(10.0, false);
        let mut options = Options::default();
        options.create_if_missing(true);
        options.set_block_based_table_factory(&table);
        options.set_compression_type(rocksdb::DBCompressionType::None);
        options.increase_parallelism(2);
        let db = Db::open(&options, dir)?;
        Ok(RocksKv { db })
    }

    fn begin(&self) -> rocksdb::Transaction<'_, Db> {
        let mut write = WriteOptions::default();
        write.set_sync(true);
        self.db
            .transaction_opt(&write, &OptimisticTransactionOptions::default())
    }
}

fn outcome(result: Result<(), rocksdb::Error>) -> Res<Outcome> {
    match result {
        Ok(()) => Ok(Outcome::Committed),
        Err(error) if matches!(error.kind(), ErrorKind::Busy | ErrorKind::TryAgain) => {
            Ok(Outcome::Conflict)
        }
        Err(error) => Err(error.into()),
    }
}

struct RocksSnap<'a> {
    snapshot: rocksdb::SnapshotWithThreadMode<'a, Db>,
}

impl Snap for RocksSnap<'_> {
    fn get(&mut self, key: &[u8]) -> Res<Option<u64>> {
        Ok(self.snapshot.get_pinned(key)?.map(|v| super::word(&v)))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Res<(usize, u64)> {
        let mut seen = 0;
        let mut sum = 0u64;
        let iter = self
            .snapshot
            .iterator(IteratorMode::From(start, Direction::Forward));
        for item in iter.take(count) {
            let (_, value) = item?;
            sum = sum.wrapping_add(super::word(&value));
            seen += 1;
        }
        Ok((seen, sum))
    }
}

impl Kv for RocksKv {
    fn write(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        let txn = self.begin();
        let mut key = Vec::new();
        let mut value = Vec::new();
        for i in 0..count {
            pairs(i, &mut key, &mut value);
            txn.put(&key, &value)?;
        }
        match outcome(txn.commit())? {
            Outcome::Committed => Ok(()),
            Outcome::Conflict => Err("rocksdb: a blind write transaction conflicted".into()),
        }
    }

    fn remove(&self, count: u64, keys: &mut KeyGen<'_>) -> Res<()> {
        let txn = self.begin();
        let mut key = Vec::new();
        for i in 0..count {
            keys(i, &mut key);
            txn.delete(&key)?;
        }
        match outcome(txn.commit())? {
            Outcome::Committed => Ok(()),
            Outcome::Conflict => Err("rocksdb: a blind removal transaction conflicted".into()),
        }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Res<Outcome> {
        let txn = self.begin();
        txn.put(key, value)?;
        outcome(txn.commit())
    }

    fn rmw(&self, key: &[u8], other: &[u8]) -> Res<Outcome> {
        let txn = self.begin();
        let old = txn
            .get_for_update(key, true)?
            .map_or(0, |v| super::word(&v));
        let next = old.wrapping_add(1).to_le_bytes();
        txn.put(key, next)?;
        txn.put(other, next)?;
        outcome(txn.commit())
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Snap) -> Res<()>) -> Res<()> {
        let mut snap = RocksSnap {
            snapshot: self.db.snapshot(),
        };
        body(&mut snap)
    }

    fn checkpoint(&self) -> Res<bool> {
        self.db.flush()?;
        Ok(true)
    }

    fn compact(&mut self) -> Res<Option<u64>> {
        self.db.flush()?;
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
        Ok(None)
    }

    fn close(self: Box<Self>) -> Res<()> {
        self.db.flush()?;
        drop(self);
        Ok(())
    }
}
