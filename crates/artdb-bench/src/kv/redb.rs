//! kv/redb: redb behind the [`Kv`] interface (one table, `Durability::Immediate` commits, the
//! default repair on open after an unclean shutdown).

use super::{KeyGen, Kv, Outcome, PairGen, Res, Snap};
use redb::{Database, Durability, ReadableTable, TableDefinition};
use std::path::Path;

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("t");
const FILE: &str = "bench.redb";

/// An open redb database.
pub struct RedbKv {
    db: Database,
}

impl RedbKv {
    /// Opens (or creates) `dir/bench.redb` with a cache of `cache_bytes`.
    pub fn open(dir: &Path, cache_bytes: u64) -> Res<RedbKv> {
        let db = Database::builder()
            .set_cache_size(cache_bytes as usize)
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
        Ok(RedbKv { db })
    }

    fn begin(&self) -> Res<redb::WriteTransaction> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate);
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
        let txn = self.db.begin_read()?;
        let mut snap = RedbSnap {
            table: txn.open_table(TABLE)?,
        };
        body(&mut snap)
    }

    fn checkpoint(&self) -> Res<bool> {
        Ok(false)
    }

    fn compact(&mut self) -> Res<Option<u64>> {
        // compact() moves pages down; a second pass can free what the first one left.
        for _ in 0..10 {
            if !self.db.compact()? {
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
