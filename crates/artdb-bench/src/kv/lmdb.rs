//! kv/lmdb: LMDB through `heed` behind the [`Kv`] interface (default, synced commits; a 64 GiB
//! address-space reservation that the file only grows into).

use super::{KeyGen, Kv, Outcome, PairGen, Res, Snap};
use heed::types::Bytes;
use heed::{CommitOrAbort, CompactionOption, Database, Env, EnvOpenOptions, PutFlags};
use std::ops::Bound;
use std::path::Path;

const MAP_SIZE: usize = 64 << 30;

/// LMDB's main (unnamed) database with byte keys and values, usable for as long as its
/// environment is open (heed hands out the `'static` handle once the transaction that opened it
/// has committed).
pub type MainDatabase = Database<'static, Bytes, Bytes>;

/// The main database of `env` if it exists, opened in a read transaction (nothing is written).
pub fn open_main(env: &Env) -> Res<Option<MainDatabase>> {
    let rtxn = env.read_txn()?;
    let opened = env.open_databases_and_commit(rtxn, |opener, rtxn| {
        let db = opener.open_database::<Bytes, Bytes>(rtxn, None)?;
        Ok::<_, heed::Error>(CommitOrAbort::<_, ()>::Commit(db))
    })?;
    Ok(opened.commit().flatten())
}

/// Creates the main database of `env` in one write transaction that first runs `fill` on it
/// (so that a load and the creation are one commit, as LMDB allows).
pub fn create_main(
    env: &Env,
    fill: impl FnOnce(&Database<'_, Bytes, Bytes>, &mut heed::RwTxn<'_>) -> Res<()>,
) -> Res<MainDatabase> {
    let wtxn = env.write_txn()?;
    let created = env.create_databases_and_commit(wtxn, |opener, wtxn| {
        let db = opener.create_database::<Bytes, Bytes>(wtxn, None)?;
        fill(&db, wtxn)?;
        Ok::<_, super::BoxError>(CommitOrAbort::<_, ()>::Commit(db))
    })?;
    created
        .commit()
        .ok_or_else(|| "LMDB: creating the main database was aborted".into())
}

/// An open LMDB environment with its main database.
pub struct LmdbKv {
    env: Env,
    db: MainDatabase,
    dir: std::path::PathBuf,
}

impl LmdbKv {
    /// Opens (or creates) the environment in `dir`.
    pub fn open(dir: &Path) -> Res<LmdbKv> {
        let mut options = EnvOpenOptions::new();
        options.map_size(MAP_SIZE).max_dbs(1).max_readers(256);
        // SAFETY: heed requires that an environment is not opened twice in one process at once
        // and that its files are not changed by others: each benchmark directory is private to
        // this run and every environment is closed (`close` waits for it) before its directory
        // is opened again.
        let env = unsafe { options.open(dir) }?;
        // Create the main database only if it is not there (an open must not commit).
        let db = match open_main(&env)? {
            Some(db) => db,
            None => create_main(&env, |_, _| Ok(()))?,
        };
        Ok(LmdbKv {
            env,
            db,
            dir: dir.to_path_buf(),
        })
    }
}

struct LmdbSnap<'a> {
    db: MainDatabase,
    txn: &'a heed::RoTxn<'a>,
}

impl Snap for LmdbSnap<'_> {
    fn get(&mut self, key: &[u8]) -> Res<Option<u64>> {
        Ok(self.db.get(self.txn, key)?.map(super::word))
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Res<(usize, u64)> {
        let range = (Bound::Included(start), Bound::Unbounded);
        let mut seen = 0;
        let mut sum = 0u64;
        for item in self.db.range(self.txn, &range)?.take(count) {
            let (_, value) = item?;
            sum = sum.wrapping_add(super::word(value));
            seen += 1;
        }
        Ok((seen, sum))
    }
}

impl Kv for LmdbKv {
    fn load_sorted(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        let mut txn = self.env.write_txn()?;
        let mut key = Vec::new();
        let mut value = Vec::new();
        for i in 0..count {
            pairs(i, &mut key, &mut value);
            self.db
                .put_with_flags(&mut txn, PutFlags::APPEND, &key, &value)?;
        }
        txn.commit()?;
        Ok(())
    }

    fn write(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        let mut txn = self.env.write_txn()?;
        let mut key = Vec::new();
        let mut value = Vec::new();
        for i in 0..count {
            pairs(i, &mut key, &mut value);
            self.db.put(&mut txn, &key, &value)?;
        }
        txn.commit()?;
        Ok(())
    }

    fn remove(&self, count: u64, keys: &mut KeyGen<'_>) -> Res<()> {
        let mut txn = self.env.write_txn()?;
        let mut key = Vec::new();
        for i in 0..count {
            keys(i, &mut key);
            self.db.delete(&mut txn, &key)?;
        }
        txn.commit()?;
        Ok(())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Res<Outcome> {
        let mut txn = self.env.write_txn()?;
        self.db.put(&mut txn, key, value)?;
        txn.commit()?;
        Ok(Outcome::Committed)
    }

    fn rmw(&self, key: &[u8], other: &[u8]) -> Res<Outcome> {
        let mut txn = self.env.write_txn()?;
        let old = self.db.get(&txn, key)?.map_or(0, super::word);
        let next = old.wrapping_add(1).to_le_bytes();
        self.db.put(&mut txn, key, &next)?;
        self.db.put(&mut txn, other, &next)?;
        txn.commit()?;
        Ok(Outcome::Committed)
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Snap) -> Res<()>) -> Res<()> {
        let txn = self.env.read_txn()?;
        let mut snap = LmdbSnap {
            db: self.db,
            txn: &txn,
        };
        body(&mut snap)
    }

    fn checkpoint(&self) -> Res<bool> {
        Ok(false)
    }

    fn compact(&mut self) -> Res<Option<u64>> {
        let copy = self.dir.with_extension("compacted.mdb");
        let file = self.env.copy_to_path(&copy, CompactionOption::Enabled)?;
        file.sync_all()?;
        let bytes = file.metadata()?.len();
        drop(file);
        std::fs::remove_file(&copy)?;
        Ok(Some(bytes))
    }

    fn close(self: Box<Self>) -> Res<()> {
        let LmdbKv { env, .. } = *self;
        env.prepare_for_closing().wait();
        Ok(())
    }
}
