//! kv/sqlite: SQLite (rusqlite, bundled) behind the [`Kv`] interface: one `WITHOUT ROWID` table,
//! `journal_mode=WAL`, `synchronous=FULL`, one connection per concurrent caller (a pool), write
//! transactions as `BEGIN IMMEDIATE` (writers wait for each other, so none aborts).

use super::{KeyGen, Kv, Outcome, PairGen, Res, Snap};
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension};
use std::path::{Path, PathBuf};

const FILE: &str = "bench.sqlite";
const UPSERT: &str = "INSERT OR REPLACE INTO t (k, v) VALUES (?1, ?2)";
const SELECT: &str = "SELECT v FROM t WHERE k = ?1";

/// An SQLite database and its idle connections.
pub struct SqliteKv {
    path: PathBuf,
    cache_kib: u64,
    idle: Mutex<Vec<Connection>>,
}

impl SqliteKv {
    /// Opens (or creates) `dir/bench.sqlite`.
    pub fn open(dir: &Path, cache_bytes: u64) -> Res<SqliteKv> {
        let kv = SqliteKv {
            path: dir.join(FILE),
            cache_kib: cache_bytes / 1024,
            idle: Mutex::new(Vec::new()),
        };
        let conn = kv.connect()?;
        let exists: bool = conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 't'",
            [],
            |row| row.get(0),
        )?;
        if !exists {
            conn.execute_batch(
                "CREATE TABLE t (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
            )?;
        }
        kv.idle.lock().push(conn);
        Ok(kv)
    }

    fn connect(&self) -> Res<Connection> {
        let conn = Connection::open(&self.path)?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!("SQLite refused WAL mode (got {mode})").into());
        }
        conn.execute_batch(&format!(
            "PRAGMA synchronous=FULL; PRAGMA busy_timeout=600000; PRAGMA cache_size=-{};",
            self.cache_kib
        ))?;
        Ok(conn)
    }

    /// Runs `body` on an idle connection (opening one if none is idle) and returns it to the pool.
    fn with<T>(&self, body: impl FnOnce(&Connection) -> Res<T>) -> Res<T> {
        let taken = self.idle.lock().pop();
        let conn = match taken {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let result = body(&conn);
        if result.is_err() {
            // Leave no transaction open on a pooled connection.
            let _ = conn.execute_batch("ROLLBACK");
        }
        self.idle.lock().push(conn);
        result
    }

    /// `BEGIN IMMEDIATE`, `body`, `COMMIT`.
    fn write_txn(&self, body: impl FnOnce(&Connection) -> Res<()>) -> Res<()> {
        self.with(|conn| {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            body(conn)?;
            conn.execute_batch("COMMIT")?;
            Ok(())
        })
    }
}

struct SqliteSnap<'a> {
    get: rusqlite::CachedStatement<'a>,
    scan: rusqlite::CachedStatement<'a>,
}

impl Snap for SqliteSnap<'_> {
    fn get(&mut self, key: &[u8]) -> Res<Option<u64>> {
        Ok(self
            .get
            .query_row([key], |row| {
                row.get_ref(0).map(|v| v.as_bytes().map(super::word))
            })
            .optional()?
            .transpose()?)
    }

    fn scan(&mut self, start: &[u8], count: usize) -> Res<(usize, u64)> {
        let mut rows = self.scan.query(rusqlite::params![start, count as i64])?;
        let mut seen = 0;
        let mut sum = 0u64;
        while let Some(row) = rows.next()? {
            sum = sum.wrapping_add(super::word(row.get_ref(0)?.as_bytes()?));
            seen += 1;
        }
        Ok((seen, sum))
    }
}

impl Kv for SqliteKv {
    fn write(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        self.write_txn(|conn| {
            let mut upsert = conn.prepare_cached(UPSERT)?;
            let mut key = Vec::new();
            let mut value = Vec::new();
            for i in 0..count {
                pairs(i, &mut key, &mut value);
                upsert.execute(rusqlite::params![key, value])?;
            }
            Ok(())
        })
    }

    fn write_before_checkpoint(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        // Without this, the commit itself would fold the log into the file (autocheckpoint
        // after 1,000 pages) and the timed checkpoint would have little left to do.
        self.with(|conn| {
            conn.execute_batch("PRAGMA wal_autocheckpoint=0")?;
            Ok(())
        })?;
        let result = self.write(count, pairs);
        self.with(|conn| {
            conn.execute_batch("PRAGMA wal_autocheckpoint=1000")?;
            Ok(())
        })?;
        result
    }

    fn remove(&self, count: u64, keys: &mut KeyGen<'_>) -> Res<()> {
        self.write_txn(|conn| {
            let mut delete = conn.prepare_cached("DELETE FROM t WHERE k = ?1")?;
            let mut key = Vec::new();
            for i in 0..count {
                keys(i, &mut key);
                delete.execute([&key])?;
            }
            Ok(())
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Res<Outcome> {
        self.write_txn(|conn| {
            conn.prepare_cached(UPSERT)?
                .execute(rusqlite::params![key, value])?;
            Ok(())
        })?;
        Ok(Outcome::Committed)
    }

    fn rmw(&self, key: &[u8], other: &[u8]) -> Res<Outcome> {
        self.write_txn(|conn| {
            let old = conn
                .prepare_cached(SELECT)?
                .query_row([key], |row| {
                    row.get_ref(0).map(|v| v.as_bytes().map(super::word))
                })
                .optional()?
                .transpose()?
                .unwrap_or(0);
            let next = old.wrapping_add(1).to_le_bytes();
            let mut upsert = conn.prepare_cached(UPSERT)?;
            upsert.execute(rusqlite::params![key, next])?;
            upsert.execute(rusqlite::params![other, next])?;
            Ok(())
        })?;
        Ok(Outcome::Committed)
    }

    fn read(&self, body: &mut dyn FnMut(&mut dyn Snap) -> Res<()>) -> Res<()> {
        self.with(|conn| {
            conn.execute_batch("BEGIN")?;
            {
                let mut snap = SqliteSnap {
                    get: conn.prepare_cached(SELECT)?,
                    scan: conn
                        .prepare_cached("SELECT v FROM t WHERE k >= ?1 ORDER BY k LIMIT ?2")?,
                };
                body(&mut snap)?;
            }
            conn.execute_batch("COMMIT")?;
            Ok(())
        })
    }

    fn checkpoint(&self) -> Res<bool> {
        // With commits running beside it, TRUNCATE can report busy even under a busy timeout
        // (a writer slips in between its copy and its truncation); a user retries, and so do
        // we: the time measured is the time until a whole checkpoint has run.
        const TRIES: u32 = 1000;
        self.with(|conn| {
            for _ in 0..TRIES {
                let busy: i64 =
                    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))?;
                if busy == 0 {
                    return Ok(true);
                }
                std::thread::yield_now();
            }
            Err(
                format!("SQLite's wal_checkpoint(TRUNCATE) was blocked {TRIES} times in a row")
                    .into(),
            )
        })
    }

    fn compact(&mut self) -> Res<Option<u64>> {
        self.with(|conn| {
            conn.execute_batch("VACUUM")?;
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
                row.get::<_, i64>(0)
            })?;
            Ok(None)
        })
    }

    fn close(self: Box<Self>) -> Res<()> {
        for conn in self.idle.into_inner() {
            conn.close().map_err(|(_, error)| error)?;
        }
        Ok(())
    }
}
