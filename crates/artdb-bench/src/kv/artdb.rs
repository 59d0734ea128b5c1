//! kv/artdb: artdb behind the [`Kv`] interface, on the engine's API of the day.
//!
//! Durable commits go through the engine's write-ahead log: every commit here uses
//! `Durability::Sync` (it returns once its log record is fdatasynced; concurrent committers share
//! a sync: group commit), and the engine checkpoints by itself when the log holds 16 MiB of
//! records. Single-key commits and read-modify-write are `begin_write` transactions (snapshot
//! isolation; a conflict is reported as an abort); bulk writes are one write batch (`Db::write`).
//! The notes printed with the tables say so ([`CONFIGURATION`]).

use super::{KeyGen, Kv, Outcome, PairGen, Res, Snap};
use artdb::{Db, Durability, Options, ReadTxn, Transaction, WriteOptions};
use std::path::Path;

/// How durable commits are made here (printed with the tables).
pub const CONFIGURATION: &str = "Durability::Sync commits through the write-ahead log (group \
     commit), auto checkpoint at 16 MiB of log; single-key commits and rmw are begin_write \
     transactions (snapshot isolation, conflicts counted as aborts), bulk writes one write batch";

const TABLE: &str = "t";
const FILE: &str = "bench.artdb";

/// An open artdb database with the table `t`.
pub struct ArtdbKv {
    db: Db,
}

impl ArtdbKv {
    /// Opens (or creates) `dir/bench.artdb` and its table.
    pub fn open(dir: &Path) -> Res<ArtdbKv> {
        let path = dir.join(FILE);
        let options = Options {
            checkpoint_on_drop: false,
            durability: Durability::Sync,
            ..Options::default()
        };
        let db = if path.exists() {
            Db::open(&path, options)?
        } else {
            let db = Db::create(&path, options)?;
            super::sync_dir(dir)?;
            db
        };
        if !db.table_names().iter().any(|name| name == TABLE) {
            db.create_table(TABLE)?;
            db.checkpoint()?;
        }
        Ok(ArtdbKv { db })
    }
}

impl ArtdbKv {
    /// Opens `dir/bench.artdb` read-only, beside a writer of another process.
    pub fn open_reader(dir: &Path) -> Res<ArtdbKv> {
        let options = Options {
            read_only: true,
            ..Options::default()
        };
        Ok(ArtdbKv {
            db: Db::open(dir.join(FILE), options)?,
        })
    }

    /// Commits `txn` (durable when it returns: `Durability::Sync`); a conflict is an abort.
    fn commit_durably(&self, txn: Transaction) -> Res<Outcome> {
        match txn.commit() {
            Ok(_) => Ok(Outcome::Committed),
            Err(artdb::Error::Conflict { .. }) => Ok(Outcome::Conflict),
            Err(error) => Err(error.into()),
        }
    }
}

struct ArtdbSnap<'a> {
    table: artdb::Table<'a>,
}

impl Snap for ArtdbSnap<'_> {
    fn get(&mut self, key: &[u8]) -> Res<Option<u64>> {
        Ok(self.table.get(key)?.map(super::word))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Res<(usize, u64)> {
        let mut cursor = self.table.cursor();
        let mut seen = 0;
        let mut sum = 0u64;
        let mut valid = cursor.seek(start)?;
        while valid && seen < count {
            sum = sum.wrapping_add(super::word(cursor.value()));
            seen += 1;
            valid = cursor.next()?;
        }
        Ok((seen, sum))
    }
}

impl Kv for ArtdbKv {
    fn load_sorted(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        let mut key = Vec::new();
        let mut value = Vec::new();
        let iter = (0..count).map(|i| {
            pairs(i, &mut key, &mut value);
            (key.clone(), value.clone())
        });
        // bulk_load publishes with its own checkpoint.
        self.db.bulk_load(TABLE, iter)?;
        Ok(())
    }

    fn write(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        let mut key = Vec::new();
        let mut value = Vec::new();
        let mut batch = self.db.write()?;
        for i in 0..count {
            pairs(i, &mut key, &mut value);
            batch.insert(TABLE, &key, &value)?;
        }
        batch.commit()?;
        Ok(())
    }

    fn remove(&self, count: u64, keys: &mut KeyGen<'_>) -> Res<()> {
        let mut key = Vec::new();
        let mut batch = self.db.write()?;
        for i in 0..count {
            keys(i, &mut key);
            batch.remove(TABLE, &key)?;
        }
        batch.commit()?;
        Ok(())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Res<Outcome> {
        let mut txn = self
            .db
            .begin_write(WriteOptions::default().durability(Durability::Sync))?;
        txn.insert(TABLE, key, value)?;
        self.commit_durably(txn)
    }

    fn rmw(&self, key: &[u8], other: &[u8]) -> Res<Outcome> {
        let mut txn = self
            .db
            .begin_write(WriteOptions::default().durability(Durability::Sync))?;
        let next = txn
            .get(TABLE, key)?
            .map_or(0, super::word)
            .wrapping_add(1)
            .to_le_bytes();
        txn.insert(TABLE, key, &next)?;
        txn.insert(TABLE, other, &next)?;
        self.commit_durably(txn)
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Snap) -> Res<()>) -> Res<()> {
        let txn: ReadTxn = self.db.read();
        let mut snap = ArtdbSnap {
            table: txn.table(TABLE)?,
        };
        body(&mut snap)
    }

    fn log_bytes(&self) -> Res<Option<u64>> {
        Ok(Some(self.db.stats()?.log.bytes))
    }

    fn checkpoint(&self) -> Res<bool> {
        self.db.checkpoint()?;
        Ok(true)
    }

    fn compact(&mut self) -> Res<Option<u64>> {
        self.db.compact()?;
        Ok(None)
    }

    fn close(self: Box<Self>) -> Res<()> {
        self.db.close()?;
        Ok(())
    }
}
