//! kv: one interface over artdb and the embedded stores it is compared with in W5 and W6 (redb,
//! LMDB through `heed`, SQLite through `rusqlite`, fjall, sled and, behind the `rocksdb` feature,
//! RocksDB), so that both workloads drive every system through the same calls.
//!
//! Every write call is one transaction that is durable when it returns (each system's own
//! strongest ordinary setting: redb `Durability::Immediate`, LMDB's default sync commit, SQLite
//! WAL mode with `synchronous=FULL`, fjall and RocksDB a synced journal, sled `flush`). Values are
//! checked on every read through their first 8 bytes ([`word`]), which the workloads choose.
//!
//! What "durable" costs artdb depends on the engine of the day: see `kv/artdb.rs`.

mod artdb;
mod fjall;
pub mod lmdb;
mod redb;
#[cfg(feature = "rocksdb")]
mod rocks;
mod sled;
mod sqlite;

use std::path::Path;

/// Errors of the benchmark harness (`Send`, so worker threads can return them).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// Result of the benchmark harness.
pub type Res<T> = Result<T, BoxError>;

/// How one optimistic transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Committed (and durable).
    Committed,
    /// Refused by the system's conflict check; nothing of it was applied.
    Conflict,
}

/// Generates the `i`-th pair of a write transaction into the two buffers (cleared by the
/// caller's generator as it likes; implementations pass them back unchanged between calls).
pub type PairGen<'a> = dyn FnMut(u64, &mut Vec<u8>, &mut Vec<u8>) + 'a;
/// Generates the `i`-th key of a removal transaction.
pub type KeyGen<'a> = dyn FnMut(u64, &mut Vec<u8>) + 'a;

/// The first 8 bytes of a value, little-endian (what every read returns, so that reads are
/// checked without copying values out).
pub fn word(value: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = value.len().min(8);
    bytes[..n].copy_from_slice(&value[..n]);
    u64::from_le_bytes(bytes)
}

/// One read snapshot of a system.
pub trait Snap {
    /// The [`word`] of `key`'s value, `None` if absent.
    fn get(&mut self, key: &[u8]) -> Res<Option<u64>>;
    /// The first `count` pairs at or after `start`: how many there were and the wrapping sum of
    /// their values' words.
    fn scan(&mut self, start: &[u8], count: usize) -> Res<(usize, u64)>;
}

/// An open database of one system, with one table of byte keys and values.
pub trait Kv: Send + Sync {
    /// Loads `count` pairs given in ascending key order into the empty table, durably. Defaults
    /// to [`Kv::write`]; systems with a faster sorted path (artdb's bulk load, LMDB's append)
    /// use it: W5 does not time the load.
    fn load_sorted(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        self.write(count, pairs)
    }
    /// Inserts or overwrites `count` pairs in one durable transaction.
    fn write(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()>;
    /// The commit before a timed [`Kv::checkpoint`]: like [`Kv::write`] (durable in the
    /// system's log) but not folded into the main files. Defaults to [`Kv::write`]; SQLite
    /// turns its autocheckpoint off for it.
    fn write_before_checkpoint(&self, count: u64, pairs: &mut PairGen<'_>) -> Res<()> {
        self.write(count, pairs)
    }
    /// Removes `count` keys (present or not) in one durable transaction.
    fn remove(&self, count: u64, keys: &mut KeyGen<'_>) -> Res<()>;
    /// One durable transaction writing one pair; systems with optimistic transactions may
    /// report a conflict.
    fn put(&self, key: &[u8], value: &[u8]) -> Res<Outcome>;
    /// One durable read-modify-write transaction: reads `key`'s word `w` (0 if absent), writes
    /// `key` and `other` with the word `w + 1` (8-byte values).
    fn rmw(&self, key: &[u8], other: &[u8]) -> Res<Outcome>;
    /// Runs `body` on one read snapshot.
    fn read(&self, body: &mut dyn FnMut(&mut dyn Snap) -> Res<()>) -> Res<()>;
    /// Bytes of log records not yet folded into the main file, for systems that say
    /// (artdb); `None` otherwise.
    fn log_bytes(&self) -> Res<Option<u64>> {
        Ok(None)
    }
    /// Makes the system fold its log into its main files (artdb's checkpoint, SQLite's
    /// `wal_checkpoint(TRUNCATE)`, an LSM's memtable flush). `Ok(false)` if the system has no
    /// such step (redb and LMDB write their pages in place at every commit).
    fn checkpoint(&self) -> Res<bool>;
    /// Compacts the files (artdb `compact`, redb `compact`, SQLite `VACUUM`, an LSM's major
    /// compaction). Returns the size of the compacted database when it is not the size of the
    /// directory afterwards (LMDB's compacting copy), and `Ok(None)` otherwise.
    fn compact(&mut self) -> Res<Option<u64>>;
    /// Whether [`Kv::compact`] does anything (sled has no compaction call).
    fn can_compact(&self) -> bool {
        true
    }
    /// Closes the database (waits for background work; frees the files for reopening).
    fn close(self: Box<Self>) -> Res<()>;
}

/// The systems of W5 and W6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    /// artdb (this workspace).
    Artdb,
    /// redb.
    Redb,
    /// LMDB through heed.
    Lmdb,
    /// SQLite through rusqlite (bundled), WAL mode, synchronous=FULL.
    Sqlite,
    /// fjall with its optimistic (SSI) transactions.
    Fjall,
    /// sled (W6 only; no transactions used: batches and `flush`).
    Sled,
    /// RocksDB's optimistic transaction database (feature `rocksdb`).
    Rocksdb,
}

impl System {
    /// Every system built into this binary, artdb first.
    pub fn all() -> Vec<System> {
        let mut all = vec![
            System::Artdb,
            System::Redb,
            System::Lmdb,
            System::Sqlite,
            System::Fjall,
            System::Sled,
        ];
        if cfg!(feature = "rocksdb") {
            all.push(System::Rocksdb);
        }
        all
    }

    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            System::Artdb => "artdb",
            System::Redb => "redb",
            System::Lmdb => "lmdb",
            System::Sqlite => "sqlite",
            System::Fjall => "fjall",
            System::Sled => "sled",
            System::Rocksdb => "rocksdb",
        }
    }

    /// Parses a comma-separated list of names; `None` when a name is unknown or not built in.
    pub fn parse_list(list: &str) -> Res<Vec<System>> {
        let all = System::all();
        let mut out = Vec::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match all.iter().find(|s| s.name() == name) {
                Some(system) => out.push(*system),
                None if name == "rocksdb" => {
                    return Err("rocksdb is not built in: build with `--features rocksdb`".into())
                }
                None => return Err(format!("unknown system {name:?}").into()),
            }
        }
        Ok(out)
    }

    /// Opens the database of this system in `dir` (created if absent). `cache_bytes` sizes the
    /// user-space caches of the systems that have one (redb, fjall, sled, SQLite, RocksDB), so
    /// that the working set fits in memory as in redb's published setup.
    pub fn open(self, dir: &Path, cache_bytes: u64) -> Res<Box<dyn Kv>> {
        std::fs::create_dir_all(dir)?;
        Ok(match self {
            System::Artdb => Box::new(artdb::ArtdbKv::open(dir)?),
            System::Redb => Box::new(redb::RedbKv::open(dir, cache_bytes)?),
            System::Lmdb => Box::new(lmdb::LmdbKv::open(dir)?),
            System::Sqlite => Box::new(sqlite::SqliteKv::open(dir, cache_bytes)?),
            System::Fjall => Box::new(fjall::FjallKv::open(dir, cache_bytes)?),
            System::Sled => Box::new(sled::SledKv::open(dir, cache_bytes)?),
            #[cfg(feature = "rocksdb")]
            System::Rocksdb => Box::new(rocks::RocksKv::open(dir, cache_bytes)?),
            #[cfg(not(feature = "rocksdb"))]
            System::Rocksdb => {
                return Err("rocksdb is not built in: build with `--features rocksdb`".into())
            }
        })
    }

    /// Opens (or creates) this system's database in `dir` as the writer that readers in other
    /// processes may share it with ([`System::open_reader`]): redb in its `SingleWriter`
    /// concurrency mode; the others as [`System::open`] does.
    pub fn open_beside_readers(self, dir: &Path, cache_bytes: u64) -> Res<Box<dyn Kv>> {
        match self {
            System::Redb => {
                std::fs::create_dir_all(dir)?;
                Ok(Box::new(redb::RedbKv::open_beside_readers(
                    dir,
                    cache_bytes,
                )?))
            }
            other => other.open(dir, cache_bytes),
        }
    }

    /// Opens this system's database in `dir` as a reader beside a writer in another process
    /// (opened by [`System::open_beside_readers`]): artdb read-only (its readers file), LMDB as
    /// any environment (LMDB readers in any process), redb read-only in its `SingleWriter` mode.
    /// The others cannot ([`System::reader_process_note`]).
    pub fn open_reader(self, dir: &Path, cache_bytes: u64) -> Res<Box<dyn Kv>> {
        Ok(match self {
            System::Artdb => Box::new(artdb::ArtdbKv::open_reader(dir)?),
            System::Lmdb => Box::new(lmdb::LmdbKv::open(dir)?),
            System::Redb => Box::new(redb::RedbKv::open_reader(dir, cache_bytes)?),
            other => return Err(other.reader_process_note().into()),
        })
    }

    /// Whether [`System::open_reader`] can open this system beside its writer process.
    pub fn has_reader_process(self) -> bool {
        matches!(self, System::Artdb | System::Lmdb | System::Redb)
    }

    /// Why a system has no reader process beside its writer process (or how it has one).
    pub fn reader_process_note(self) -> &'static str {
        match self {
            System::Artdb => "artdb: Options::read_only beside the writer (the readers file)",
            System::Lmdb => "lmdb: a second environment on the same files (the reader table)",
            System::Redb => {
                "redb: ConcurrencyMode::SingleWriter writer, open_read_only readers (redb >= 4.5)"
            }
            System::Sqlite => {
                "sqlite: WAL mode allows readers in other processes; W6R leaves it out"
            }
            System::Fjall => {
                "fjall: cannot; the one process that opens a database locks it (fjall has no \
                 read-only or multi-process open)"
            }
            System::Sled => "sled: cannot; the one process that opens a database locks it",
            System::Rocksdb => {
                "rocksdb: not built here (feature `rocksdb`); a secondary instance \
                 (OpenAsSecondary) could follow its writer, W6R does not run one"
            }
        }
    }

    /// This system's version and what "durable" and "transaction" mean for it, for the tables'
    /// notes: `"<version>: <configuration>"`.
    pub fn note(self) -> String {
        format!(
            "{}: {}",
            crate::versions::system(self),
            self.configuration()
        )
    }

    /// How this system is configured here (durability, transactions, options).
    pub fn configuration(self) -> &'static str {
        match self {
            System::Artdb => artdb::CONFIGURATION,
            System::Redb => {
                "Durability::Immediate, ConcurrencyMode::ExclusiveWriter (the default); one writer \
                 at a time"
            }
            System::Lmdb => "heed, default (synced) commits; one writer at a time",
            System::Sqlite => {
                "bundled, journal_mode=WAL, synchronous=FULL, one connection per thread, BEGIN \
                 IMMEDIATE (writers serialize, no aborts)"
            }
            System::Fjall => {
                "OptimisticTxDatabase (SSI transactions), PersistMode::SyncAll on every commit, no \
                 compression"
            }
            System::Sled => "no transactions; batches + flush() after each (as redb's table)",
            System::Rocksdb => {
                "OptimisticTransactionDB, sync writes, no compression (feature `rocksdb`)"
            }
        }
    }
}

/// Bytes in the files under `dir` (recursively).
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return std::fs::metadata(dir).map_or(0, |m| m.len());
    };
    let mut total = 0;
    for entry in entries.flatten() {
        match entry.metadata() {
            Ok(meta) if meta.is_dir() => total += dir_bytes(&entry.path()),
            Ok(meta) => total += meta.len(),
            Err(_) => {}
        }
    }
    total
}

/// Bytes this process caused to be written to storage so far (`write_bytes` of
/// `/proc/self/io`; every thread of the process, background threads included).
pub fn process_write_bytes() -> Res<u64> {
    let text = std::fs::read_to_string("/proc/self/io")?;
    text.lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|rest| rest.trim().parse().ok())
        .ok_or_else(|| "/proc/self/io has no write_bytes line".into())
}

/// Syncs the directory entry of `dir` (after files were created in it).
pub fn sync_dir(dir: &Path) -> Res<()> {
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}
