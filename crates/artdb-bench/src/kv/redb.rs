//! kv/redb: redb behind the [`Kv`] interface (one table, `Durability::Immediate` commits, the
//! default repair on open after an unclean shutdown).
//!
//! W5 and W6 open the file in redb's default `ConcurrencyMode::ExclusiveWriter` (the writer
//! locks the whole file). W6R opens its writer in `ConcurrencyMode::SingleWriter` and its reader
//! with `open_read_only` in the same mode: one writer process, readers in other processes that
//! follow its commits (redb 4.5 and later).

use super::{KeyGen, Kv, Outcome, PairGen, Res, Snap};
use redb::{
    CompactionMode, ConcurrencyMode, Database, Durability, ReadOnlyDatabase, ReadableDatabase,
    ReadableTable, TableDefinition,
};
use std::path::Path;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t");
const FILE: &str = "bench.redb";

/// How this handle opened the file.
enum Handle {
    /// A read-write open (the only one W5 and W6 use).
    Writer(Database),
    /// A read-only open beside a `SingleWriter` writer of another process (W6R's reader).
    Reader(ReadOnlyDatabase),
}

/// An open redb database.
pub struct RedbKv {
    handle: Handle,
}

impl RedbKv {
    /// Opens (or creates) `dir/bench.redb` with a cache of `cache_bytes`, the whole file locked
    /// by this process (redb's default).
    pub fn open(dir: &Path, cache_bytes: u64) -> Res<RedbKv> {
        RedbKv::open_in(dir, cache_bytes, ConcurrencyMode::ExclusiveWriter)
    }

    /// Opens (or creates) `dir/bench.redb` as the one writer that read-only opens in other
    /// processes may share the file with.
    pub fn open_beside_readers(dir: &Path, cache_bytes: u64) -> Res<RedbKv> {
        RedbKv::open_in(dir, cache_bytes, ConcurrencyMode::SingleWriter)
    }

    fn open_in(dir: &Path, cache_bytes: u64, mode: ConcurrencyMode) -> Res<RedbKv> {
        let db = Database::builder()
            .set_cache_size(cache_bytes as usize)
            .set_concurrency_mode(mode)
            .create(dir.join(FILE))?;
        // Create the table only if it is not there (an open must not commit).
        let exists = match db.begin_read()?.open_table(TABLE) {
            Ok(_) => true,
            Err(redb::TableError::TableDoesNotExist(_)) => false,
            Err(error) => return Err(error.into()),
        };
        if !exists {
            let txn = db.begin_write()?;
            txn.open_table(TABLE)?;
            txn.commit()?;
        }
        Ok(RedbKv {
            handle: Handle::Writer(db),
        })
    }

    /// Opens `dir/bench.redb` read-only beside a writer of another process that opened it with
    /// [`RedbKv::open_beside_readers`], with a cache of `cache_bytes`; each read transaction
    /// sees the writer's latest commit.
    pub fn open_reader(dir: &Path, cache_bytes: u64) -> Res<RedbKv> {
        let db = Database::builder()
            .set_cache_size(cache_bytes as usize)
            .set_concurrency_mode(ConcurrencyMode::SingleWriter)
            .open_read_only(dir.join(FILE))?;
        Ok(RedbKv {
            handle: Handle::Reader(db),
        })
    }

    fn writer(&self) -> Res<&Database> {
        match &self.handle {
            Handle::Writer(db) => Ok(db),
            Handle::Reader(_) => Err("redb: this handle was opened read-only".into()),
        }
    }

    fn begin(&self) -> Res<redb::WriteTransaction> {
        let mut txn = self.writer()?.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        Ok(txn)
    }
}

struct RedbSnap {
    table: redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
}

impl Snap for RedbSnap {
    fn get(&mut self, key: &[u8]) -> Res<Option<u64>> {
        Ok(self.table.get(key)?.map(|v| super::word(v.value())))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Res<(usize, u64)> {
        let mut seen = 0;
        let mut sum = 0u64;
        for item in self.table.range(start..)?.take(count) {
            let (_, value) = item?;
            sum = sum.wrapping_add(super::word(value.value()));
            seen += 1;
        }
        Ok((seen, sum))
    }
}

impl Kv for RedbKv {
    fn write(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        let txn = self.begin()?;
        {
            let mut table = txn.open_table(TABLE)?;
            let mut key = Vec::new();
            let mut value = Vec::new();
            for i in 0..count {
                pairs(i, &mut key, &mut value);
                table.insert(key.as_slice(), value.as_slice())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn remove(&self, count: u64, keys: &mut KeyGen<'_>) -> Res<()> {
        let txn = self.begin()?;
        {
            let mut table = txn.open_table(TABLE)?;
            let mut key = Vec::new();
            for i in 0..count {
                keys(i, &mut key);
                table.remove(key.as_slice())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Res<Outcome> {
        let txn = self.begin()?;
        txn.open_table(TABLE)?.insert(key, value)?;
        txn.commit()?;
        Ok(Outcome::Committed)
    }

    fn rmw(&self, key: &[u8], other: &[u8]) -> Res<Outcome> {
        let txn = self.begin()?;
        {
            let mut table = txn.open_table(TABLE)?;
            let old = table.get(key)?.map_or(0, |v| super::word(v.value()));
            let next = old.wrapping_add(1).to_le_bytes();
            table.insert(key, next.as_slice())?;
            table.insert(other, next.as_slice())?;
        }
        txn.commit()?;
        Ok(Outcome::Committed)
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Snap) -> Res<()>) -> Res<()> {
        let txn = match &self.handle {
            Handle::Writer(db) => db.begin_read()?,
            Handle::Reader(db) => db.begin_read()?,
        };
        let mut snap = RedbSnap {
            table: txn.open_table(TABLE)?,
        };
        body(&mut snap)
    }

    fn checkpoint(&self) -> Res<bool> {
        Ok(false)
    }

    fn compact(&mut self) -> Res<Option<u64>> {
        let Handle::Writer(db) = &mut self.handle else {
            return Err("redb: this handle was opened read-only".into());
        };
        // compact() moves pages down; a second pass can free what the first one left. Balanced
        // is redb's ordinary compaction (Maximum also repacks the free space inside pages).
        for _ in 0..10 {
            if !db.compact(CompactionMode::Balanced)? {
                break;
            }
        }
        Ok(None)
    }

    fn close(self: Box<Self>) -> Res<()> {
        drop(self);
        Ok(())
    }
}
