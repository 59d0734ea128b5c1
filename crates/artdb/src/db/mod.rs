//! db: the public API. [`Db`] (create, open, tables, read, write, checkpoint, close, stats,
//! verify, bulk load) over the store.
//!
//! Concurrency: any number of write transactions ([`crate::Transaction`], `Db::begin_write`,
//! see `txn`) run at once and take the writer lock only for their short commit; a write batch
//! ([`WriteTxn`], `Db::write`) holds it throughout, a checkpoint all but its syncs (below); any
//! number of readers, each
//! a [`ReadTxn`] snapshot taken in O(tables) under a read lock and never blocked afterwards. What readers see is the *published* state: a tree snapshot per
//! table, replaced at every commit and checkpoint.
//!
//! Durability: a commit appends its record to the write-ahead log under the writer lock, then
//! releases the lock and waits in the commit pipeline (`wal/group.rs`) until the log is
//! durable (group commit), which publishes the views in LSN order. Open replays the records the
//! checkpoint does not cover and checkpoints them (`engine/recovery.rs`). docs/recovery.md.
//!
//! The shared state, the checkpoint (`engine/checkpoint.rs`), recovery, bulk load and the
//! catalog are the engine's (`engine/`); this module opens, hands out transactions and
//! snapshots, and reports (`stats.rs`).

mod backup;
mod follow;
mod read;
mod stats;
mod transact;
mod write;

pub use crate::engine::{CheckpointStats, Compaction};
pub use crate::error::TABLE_NAME_LEN_MAX;
pub use read::{Cursor, Iter, ReadTxn, Table};
pub use stats::{DbStats, LogStats, TableStats, TxnStats, VerifyReport};
pub use write::WriteTxn;

use crate::engine::catalog;
pub(crate) use crate::engine::{
    check_table_name, checkpoint_beside_commits, Live, Published, Settings, Shared, TableState,
    WriterState,
};
use crate::error::{from_tree, CorruptionKind, Error, Result};
use crate::io::{FileStorage, MemoryStorage, ReadersFile, Storage};
use crate::store::{OpenMode, Store};
use crate::txn::Durability;
use crate::wal::group::WaitFor;
use crate::wal::{RecoveryMode, Wal};
use artdb_art::{NodeSource, Tree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Options of [`Db::open`] and [`Db::create`].
///
/// ```
/// use artdb::{Db, Durability, Options};
/// # let dir = tempfile::tempdir()?;
/// // Commits return once written, not synced: fast, and lost only to a power loss.
/// let options = Options { durability: Durability::NoSync, ..Options::default() };
/// let db = Db::open_or_create(dir.path().join("cache.artdb"), options)?;
/// db.close()?;
/// // A second handle that only reads, beside a writer in this or another process.
/// let reader = Db::open(dir.path().join("cache.artdb"), Options { read_only: true, ..Options::default() })?;
/// assert!(reader.table_names().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    /// Checkpoint when the `Db` is dropped without [`Db::close`] (errors are ignored then;
    /// call `close` to see them). Default: true.
    pub checkpoint_on_drop: bool,
    /// Salvage: open the checkpoint *before* the newest, read-only. For a file whose newest
    /// checkpoint is damaged or truncated (open then fails with a `Corruption` of kind
    /// `NewestCheckpoint`): copy out what the previous checkpoint holds. Its pages were intact
    /// when the newest checkpoint was written, but the checkpoint after may have reused some;
    /// those read as `Corruption`, never as other data (each page names the checkpoint that
    /// wrote it). Default: false.
    pub salvage_previous_checkpoint: bool,
    /// Durability of commits unless a transaction sets its own
    /// ([`WriteTxn::set_durability`], [`crate::WriteOptions::durability`]). Default:
    /// [`Durability::Sync`].
    pub durability: Durability,
    /// A checkpoint runs after a commit that leaves more than this many bytes of records in
    /// the log. Default: 16 MiB.
    pub checkpoint_threshold_bytes: u64,
    /// A write transaction whose changes exceed this many bytes (of log record: keys, values
    /// and a few bytes per change) bypasses the log: its commit writes its changed nodes
    /// straight into free pages of the database file through a checkpoint and logs only a
    /// reference record, so its data is written once, not twice (docs/recovery.md, "Big
    /// transactions bypass the log"). Such a commit is durable when it returns, whatever its
    /// durability, and other commits wait for it. `u64::MAX` turns the bypass off (a big
    /// transaction is then one log record of at most 1 GiB). Default: 4 MiB.
    pub wal_bypass_threshold_bytes: u64,
    /// Open for reading only: writes, checkpoints and bulk loads are [`Error::ReadOnly`]. The
    /// file is opened read-only (so a file without write permission opens). Any number of
    /// read-only opens run beside each other and beside one read-write open, in any process:
    /// each snapshot ([`Db::read`]) shows the writer's newest checkpoint and every commit it
    /// made durable since, and the writer reuses no page such a snapshot may read (a slot in
    /// the readers file `<path>.readers`; docs/recovery.md, "Readers in other processes").
    /// Where the readers file cannot be made, the open takes a shared lock instead, which keeps
    /// writers out while it is open. Default: false.
    pub read_only: bool,
    /// Open even though the write-ahead log is missing (or empty) while the database says it
    /// was not closed cleanly, or is refused as damaged (`Corruption` of kind `Log`: a damaged
    /// header, an older copy, a truncated log): the database opens at its last checkpoint and
    /// the commits that only the lost log held are gone. A read-write [`Db::open`] first
    /// renames a damaged log to `<file>.wal.damaged` (never overwrites it); a read-only open
    /// leaves it alone; [`Db::open_in_with_log`] read-write still refuses a damaged log (the
    /// storage is the caller's). Without it such an open fails with [`Error::LogMissing`] or
    /// the `Corruption` and changes nothing. Default: false.
    pub open_without_log: bool,
    /// How recovery treats a damaged or missing end of the write-ahead log: cut it (the
    /// default: what a torn final write leaves) or refuse to open ([`RecoveryMode::Strict`],
    /// for disks whose writes are not trusted). Default: [`RecoveryMode::TolerateTornTail`].
    pub recovery: RecoveryMode,
    /// How long [`Db::open`] waits for another handle (another process's, or this one's) to
    /// close the database before failing with [`Error::Locked`], which names the holder's pid
    /// when it is known. So a command-line write beside a short-lived writer takes its turn
    /// instead of failing. `Duration::ZERO` fails at once. Default: 5 s.
    pub lock_wait_max: std::time::Duration,
}

/// Default of [`Options::lock_wait_max`].
pub const LOCK_WAIT_MAX_DEFAULT: std::time::Duration = std::time::Duration::from_secs(5);

/// Default of [`Options::checkpoint_threshold_bytes`].
pub const CHECKPOINT_THRESHOLD_BYTES_DEFAULT: u64 = 16 << 20;

/// Default of [`Options::wal_bypass_threshold_bytes`]: a quarter of the checkpoint threshold,
/// so a transaction that would fill a good part of a log cycle (and be written again by the
/// checkpoint it triggers) goes to the database file once instead.
pub const WAL_BYPASS_THRESHOLD_BYTES_DEFAULT: u64 = 4 << 20;

impl Default for Options {
    fn default() -> Options {
        Options {
            checkpoint_on_drop: true,
            salvage_previous_checkpoint: false,
            durability: Durability::Sync,
            checkpoint_threshold_bytes: CHECKPOINT_THRESHOLD_BYTES_DEFAULT,
            wal_bypass_threshold_bytes: WAL_BYPASS_THRESHOLD_BYTES_DEFAULT,
            read_only: false,
            open_without_log: false,
            recovery: RecoveryMode::TolerateTornTail,
            lock_wait_max: LOCK_WAIT_MAX_DEFAULT,
        }
    }
}

/// The path of the write-ahead log of the database file at `path`: `<path>.wal`, beside the
/// file a symbolic link `path` names.
pub fn log_path(path: &Path) -> PathBuf {
    // Beside the file a symbolic link names, as `Db::open` opens it, so that every name of
    // the database finds the same log.
    let real = path
        .is_symlink()
        .then(|| std::fs::canonicalize(path).ok())
        .flatten();
    let path = real.as_deref().unwrap_or(path);
    let mut name = path.as_os_str().to_os_string();
    name.push(".wal");
    PathBuf::from(name)
}

/// Whether `error` is the refusal of a damaged, truncated or mismatched write-ahead log, which
/// [`Options::open_without_log`] sets aside.
fn is_log_damage(error: &Error) -> bool {
    matches!(
        error,
        Error::Corruption {
            kind: CorruptionKind::Log { .. },
            ..
        }
    )
}

/// Where a damaged log is moved when [`Options::open_without_log`] opens without it:
/// `<log>.damaged`, or `<log>.damaged.N` for the first N free.
fn damaged_log_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_os_string();
    name.push(".damaged");
    let first = PathBuf::from(&name);
    if !first.exists() {
        return first;
    }
    (1u64..)
        .map(|n| {
            let mut numbered = name.clone();
            numbered.push(format!(".{n}"));
            PathBuf::from(numbered)
        })
        .find(|candidate| !candidate.exists())
        .unwrap_or(first)
}

/// An artdb database: one file of named tables (see the module docs).
///
/// ```
/// use artdb::{Db, Options};
/// # let dir = tempfile::tempdir()?;
/// let db = Db::open_or_create(dir.path().join("app.artdb"), Options::default())?;
/// db.create_table_if_missing("users")?;
/// db.transact(|txn| txn.insert("users", b"ada", b"1815"))?;
/// let read = db.read();
/// assert_eq!(read.get("users", b"ada")?, Some(&b"1815"[..]));
/// drop(read);
/// db.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Db {
    pub(crate) shared: Arc<Shared>,
    options: Options,
    /// A read-only open beside writers of other processes: its views (db/follow.rs).
    follower: Option<Arc<follow::Follower>>,
}

fn memory_log() -> Result<Arc<dyn Storage>> {
    let log = MemoryStorage::new().map_err(Error::io("reserve memory for the log"))?;
    Ok(Arc::new(log))
}

fn new_file_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    let mixed = nanos ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    mixed.wrapping_mul(0xBF58_476D_1CE4_E5B9).rotate_left(31)
}

impl Db {
    /// Creates a new database file at `path` (an error if it exists) and opens it.
    /// Its write-ahead log is `<path>.wal` ([`log_path`]; a stale one there is overwritten).
    pub fn create(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let path = path.as_ref();
        if FileStorage::exists(path) {
            // Before touching the log: it may belong to that database (and be locked by it).
            return Err(Error::AlreadyExists {
                path: path.to_path_buf(),
            });
        }
        // A missing directory would otherwise be reported as a missing log file, a file the
        // caller never named.
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(Error::Open {
                path: path.to_path_buf(),
                read_only: false,
                source: std::io::Error::other(format!(
                    "its directory {} does not exist (or is not a directory); create the \
                     directory first or check the path",
                    dir.display()
                )),
            });
        }
        let log = FileStorage::open_or_create(&log_path(path))?;
        let storage = Arc::new(FileStorage::create_temporary(path)?);
        // Formatted and synced under a temporary name, then linked into place and the
        // directory synced: a crash inside create never leaves a half-made database under its
        // name (io/file.rs).
        let db = Db::create_in_with_log(
            Arc::clone(&storage) as Arc<dyn Storage>,
            Arc::new(log),
            options,
        )?;
        storage.persist()?;
        db.name_files(path);
        let readers = ReadersFile::of(path, true)?;
        if let Some(readers) = readers {
            readers.writer_opening();
            db.attach_readers(&readers);
            db.publish_to_readers();
        }
        Ok(db)
    }

    /// Makes the readers file this writer's: checkpoints honour its readers' pins, and every
    /// durable superblock and log sync is published in it. Before recovery, so that recovery's
    /// checkpoint honours them too.
    fn attach_readers(&self, readers: &Arc<ReadersFile>) {
        let mut state = self.shared.writer.lock();
        let generation = state.store.durable().generation;
        state.checkpoint_generations.insert(0, generation);
        state.store.set_readers(Arc::clone(readers));
        drop(state);
        let _ = self.shared.readers.set(Arc::clone(readers));
        let hook = Arc::clone(readers);
        self.shared
            .pipeline
            .set_durable_hook(Box::new(move |lsn| hook.publish_durable_lsn(lsn)));
    }

    /// Publishes the open writer's durable state: readers of other processes may open now.
    fn publish_to_readers(&self) {
        let Some(readers) = self.shared.readers.get() else {
            return;
        };
        let state = self.shared.writer.lock();
        readers.publish_durable_lsn(self.shared.pipeline.durable_lsn());
        readers.publish_generation(state.store.durable().generation);
    }

    /// Opens the database at `path`, or creates it there when no file is there or the file is
    /// empty (0 bytes, as `tempfile` and `touch` make it: never a database, since create
    /// formats the file under a temporary name first). The call a program that keeps its data
    /// in one database reaches for first; [`Db::create`] (an error if the file exists) and
    /// [`Db::open`] (an error if it does not) are for when either would be a mistake. A
    /// read-only `options` never creates: a missing file is then the open's error.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("app.artdb");
    /// let db = artdb::Db::open_or_create(&path, artdb::Options::default())?;
    /// db.create_table_if_missing("users")?;
    /// db.close()?;
    /// let db = artdb::Db::open_or_create(&path, artdb::Options::default())?; // opens it again
    /// assert_eq!(db.table_names(), ["users"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_or_create(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let path = path.as_ref();
        if options.read_only || options.salvage_previous_checkpoint {
            return Db::open(path, options);
        }
        match std::fs::metadata(path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                match Db::create(path, options.clone()) {
                    // Another process created it in between: open what it made.
                    Err(Error::AlreadyExists { .. }) => Db::open(path, options),
                    created => created,
                }
            }
            Ok(metadata) if metadata.is_file() && metadata.len() == 0 => {
                // An empty file holds nothing to lose; it is replaced by a new database (the
                // name is free only between these two calls: another creator then wins, and
                // this call opens what it made).
                std::fs::remove_file(path).map_err(|source| Error::Open {
                    path: path.to_path_buf(),
                    read_only: false,
                    source,
                })?;
                match Db::create(path, options.clone()) {
                    Err(Error::AlreadyExists { .. }) => Db::open(path, options),
                    created => created,
                }
            }
            _ => Db::open(path, options),
        }
    }

    /// Opens the database file at `path`. A read-write open waits up to
    /// [`Options::lock_wait_max`] for another read-write open handle on it, in this process or
    /// another, then fails with [`Error::Locked`]; read-only opens run beside it (see
    /// [`Options::read_only`]).
    /// Replays its write-ahead log `<path>.wal` (created if absent) from the LSN the last
    /// checkpoint covers, then checkpoints what it replayed. A read-only open replays the log
    /// into memory only (from a copy; neither file is written).
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let resolved;
        let mut path = path.as_ref();
        if path.is_symlink() {
            // The log lives beside the file the link names, whatever link opens it: a log
            // beside the link would miss (or hide) commits made through another name.
            resolved = std::fs::canonicalize(path).map_err(|source| Error::Open {
                path: path.to_path_buf(),
                read_only: options.read_only,
                source,
            })?;
            path = &resolved;
        }
        if options.read_only && !options.salvage_previous_checkpoint {
            // Beside writers of other processes, through the readers file; where it cannot be
            // made (a directory this process may not write, with no writer that made it), the
            // shared lock below keeps writers out instead.
            let readers_file = crate::io::readers_path(path);
            let existed = FileStorage::exists(&readers_file);
            let readers = if FileStorage::exists(path) {
                ReadersFile::of(path, true).ok().flatten()
            } else {
                None
            };
            if let Some(readers) = readers {
                let opened = follow::Follower::open(path, options, readers);
                if opened.is_err() && !existed {
                    // Made by this call for a file that did not open: leave the directory as
                    // it was (a writer makes its own).
                    let _ = std::fs::remove_file(&readers_file);
                }
                return opened.map_err(|error| error.at_path(path));
            }
        }
        if options.read_only || options.salvage_previous_checkpoint {
            let storage = FileStorage::open_read_only_waiting(path, options.lock_wait_max)?;
            let log_file = log_path(path);
            let log: Arc<dyn Storage> = if FileStorage::exists(&log_file) {
                let file = FileStorage::open_read_only_waiting(&log_file, options.lock_wait_max)?;
                let len = file.len().map_err(Error::io("read the log length"))?;
                let mut bytes = vec![0u8; len as usize];
                file.read_at(0, &mut bytes)
                    .map_err(Error::io("read the log"))?;
                Arc::new(
                    MemoryStorage::from_image(&bytes)
                        .map_err(Error::io("copy the log into memory"))?,
                )
            } else {
                memory_log()?
            };
            return Db::open_in_with_log(Arc::new(storage), log, options)
                .map_err(|error| error.at_path(path));
        }
        let log_file = log_path(path);
        let opened = Db::open_read_write(path, &log_file, options.clone());
        match opened {
            Err(error) if options.open_without_log && is_log_damage(&error) => {
                // The damaged log is kept (renamed), never overwritten: it may still be read
                // by hand or restored over later; the database opens at its last checkpoint.
                let aside = damaged_log_path(&log_file);
                std::fs::rename(&log_file, &aside).map_err(|source| Error::Open {
                    path: log_file.clone(),
                    read_only: false,
                    source,
                })?;
                Db::open_read_write(path, &log_file, options)
            }
            opened => opened,
        }
        .map_err(|error| error.at_path(path))
    }

    fn open_read_write(path: &Path, log_file: &Path, options: Options) -> Result<Db> {
        let storage = FileStorage::open_waiting(path, options.lock_wait_max)?;
        let readers = ReadersFile::of(path, true)?;
        if let Some(readers) = &readers {
            readers.writer_opening();
        }
        let log_existed = FileStorage::exists(log_file);
        let log = FileStorage::open_or_create_waiting(log_file, options.lock_wait_max)?;
        let opened = Db::open_with(Arc::new(storage), Arc::new(log), options, readers, None);
        if opened.is_err() && !log_existed {
            // Leave the directory as it was: the log was made by this call, and no commit can
            // be in it (a file that is no database, a missing log, damage found at open).
            let _ = std::fs::remove_file(log_file);
        }
        let db = opened?;
        db.name_files(path);
        db.publish_to_readers();
        Ok(db)
    }

    /// Names the database file and its log where a failure that poisons the database is
    /// kept, so that every later `Error::Poisoned` names the file that failed.
    fn name_files(&self, path: &Path) {
        let log = log_path(path);
        self.shared.pipeline.name_log(log.clone());
        self.shared
            .writer
            .lock()
            .store
            .name_files(path.to_path_buf(), log);
    }

    /// Creates a database in an empty `storage` with its log in memory: commits are durable
    /// only at a checkpoint (for tests and temporary databases).
    pub fn create_in(storage: Arc<dyn Storage>, options: Options) -> Result<Db> {
        Db::create_in_with_log(storage, memory_log()?, options)
    }

    /// Opens the database in `storage` with a fresh log in memory (see [`Db::create_in`]).
    pub fn open_in(storage: Arc<dyn Storage>, options: Options) -> Result<Db> {
        let options = Options {
            open_without_log: true,
            ..options
        };
        Db::open_in_with_log(storage, memory_log()?, options)
    }

    /// Creates a database in an empty `storage` with its write-ahead log in `log` (empty or
    /// stale). The log is formatted and synced before the database's first superblock, so a
    /// database file that opens always has a log header that names it.
    pub fn create_in_with_log(
        storage: Arc<dyn Storage>,
        log: Arc<dyn Storage>,
        options: Options,
    ) -> Result<Db> {
        let file_id = new_file_id();
        let wal = Wal::create(log, file_id, 1, 1)?;
        let store = Store::create(storage, file_id, &catalog::encode([]))?;
        Ok(Db::assemble(store, BTreeMap::new(), wal, options))
    }

    /// Opens the database in `storage` and recovers from its write-ahead log in `log`: replays
    /// the records the last checkpoint does not cover, then checkpoints them (docs/recovery.md).
    pub fn open_in_with_log(
        storage: Arc<dyn Storage>,
        log: Arc<dyn Storage>,
        options: Options,
    ) -> Result<Db> {
        Db::open_with(storage, log, options, None, None)
    }

    /// [`Db::open_in_with_log`] for a writer with its readers file, or for a reader whose
    /// replay stops at `lsn_limit` (what the writer published as durable).
    fn open_with(
        storage: Arc<dyn Storage>,
        log: Arc<dyn Storage>,
        options: Options,
        readers: Option<Arc<ReadersFile>>,
        lsn_limit: Option<u64>,
    ) -> Result<Db> {
        let mode = OpenMode {
            read_only: options.read_only,
            salvage_previous_checkpoint: options.salvage_previous_checkpoint,
        };
        let (mut store, catalog_bytes) = Store::open(storage, mode)?;
        if let Some(readers) = &readers {
            // Pages free in this checkpoint's space map may still be reached from an older
            // checkpoint that a reader of another process reads.
            let generation = store.durable().generation;
            if readers
                .oldest_live()?
                .is_some_and(|oldest| oldest < generation)
            {
                store.space_map()?.hold_free_pages();
            }
        }
        let entries = catalog::decode(&catalog_bytes, store.durable().catalog.offset)?;
        let source: Arc<dyn NodeSource> = Arc::clone(store.source()) as Arc<dyn NodeSource>;
        let mut tables = BTreeMap::new();
        for entry in entries {
            let tree = Tree::open(entry.root, entry.len, Arc::clone(&source)).map_err(from_tree)?;
            let table = TableState {
                tree,
                dirty: false,
                persisted_root: entry.root,
                persisted_len: entry.len,
            };
            tables.insert(entry.name, table);
        }
        let covered_lsn = store.durable().wal_position;
        let file_id = store.durable().file_id;
        // A log that was ever made holds a header (create writes and syncs it before the
        // database file exists), so a log without one was deleted or lost (docs/recovery.md,
        // Missing log). Unless the last checkpoint was written at close, commits may be lost
        // with it.
        if !store.durable().log_closed
            && !options.open_without_log
            && !options.salvage_previous_checkpoint
            && crate::wal::is_lost(&*log)?
        {
            if store.newer_superblock_unreadable() {
                // Both the log and the newer superblock are gone: report the damage to the
                // database file first (with the log, a torn superblock write would be told
                // from a damaged checkpoint; without it, neither can be ruled out).
                return Err(Error::corruption(
                    crate::store::SUPERBLOCK_OFFSETS
                        [crate::store::Superblock::slot(store.durable().generation + 1)],
                    CorruptionKind::NewestCheckpoint {
                        generation: store.durable().generation + 1,
                        problem: Box::new(CorruptionKind::SuperblockField(
                            "seal (neither copy has a valid magic and checksum) while the \
                             write-ahead log is missing too",
                        )),
                    },
                ));
            }
            return Err(Error::LogMissing {
                path: None,
                covered_lsn,
            });
        }
        let (wal, recovery) = if options.salvage_previous_checkpoint {
            // Salvage opens an older checkpoint read-only: the log (which follows the newest)
            // does not apply to it and nothing may be written, so it is left alone.
            let wal = Wal::create(memory_log()?, file_id, covered_lsn + 1, 1)?;
            (wal, crate::wal::Recovery::default())
        } else {
            let checkpoint = crate::wal::LogCheckpoint {
                covered_lsn,
                closed_cleanly: store.durable().log_closed,
                log_epoch: store.durable().log_epoch,
                recovery: options.recovery,
                lsn_limit,
            };
            match Wal::open(log, file_id, &checkpoint) {
                // Asked for deliberately: a damaged log is set aside for the last checkpoint.
                // Read-only, nothing is written, so the log is simply not used; read-write,
                // `Db::open` has moved the file aside first (a storage given here is the
                // caller's, and is not overwritten).
                Err(error)
                    if options.open_without_log && options.read_only && is_log_damage(&error) =>
                {
                    let epoch = store.durable().log_epoch + 1;
                    let wal = Wal::create(memory_log()?, file_id, covered_lsn + 1, epoch)?;
                    (wal, crate::wal::Recovery::default())
                }
                opened => opened?,
            }
        };
        let db = Db::assemble(store, tables, wal, options);
        if let Some(readers) = &readers {
            db.attach_readers(readers);
        }
        db.recover(recovery)?;
        Ok(db)
    }

    fn assemble(
        store: Store,
        tables: BTreeMap<String, TableState>,
        wal: Wal,
        options: Options,
    ) -> Db {
        let settings = Settings {
            durability: options.durability,
            checkpoint_threshold_bytes: options.checkpoint_threshold_bytes,
            wal_bypass_threshold_bytes: options.wal_bypass_threshold_bytes,
        };
        Db {
            shared: Arc::new(Shared::new(store, tables, wal, settings)),
            options,
            follower: None,
        }
    }

    /// A snapshot of every table as of the last commit (never blocks on writers). Opened
    /// read-only beside a writer of another process: as of the last commit that writer made
    /// durable (see [`Db::refresh`]).
    pub fn read(&self) -> ReadTxn {
        match &self.follower {
            None => self.shared.read(),
            Some(follower) => follower.current().shared.read(),
        }
    }

    /// A read-only open beside a writer of another process: opens the view again if that
    /// writer made a checkpoint or a commit durable since; `Ok(true)` if it did. [`Db::read`]
    /// does this first by itself and keeps the view it has when it fails; this reports why.
    /// Other opens: `Ok(false)` (they always see their own commits).
    pub fn refresh(&self) -> Result<bool> {
        match &self.follower {
            None => Ok(false),
            Some(follower) => follower.refresh(),
        }
    }

    /// The current view of a read-only open beside a writer (db/follow.rs), else `None`.
    fn followed(&self) -> Option<Arc<Db>> {
        self.follower.as_ref().map(|follower| follower.current())
    }

    /// Starts the write batch; waits while another batch or a checkpoint runs.
    pub fn write(&self) -> Result<WriteTxn<'_>> {
        self.shared.refuse_on_batch_thread("Db::write")?;
        let state = self.shared.writer.lock();
        self.shared.check_writable(&state)?;
        Ok(WriteTxn::new(&self.shared, state))
    }

    /// Creates an empty table (a one-operation write batch).
    pub fn create_table(&self, name: &str) -> Result<()> {
        let mut batch = self.write()?;
        batch.create_table(name)?;
        batch.commit()
    }

    /// Creates the empty table `name` unless it exists; returns whether it was created. The
    /// check and the creation are one write batch, so two callers racing create it once.
    pub fn create_table_if_missing(&self, name: &str) -> Result<bool> {
        let mut batch = self.write()?;
        if batch.has_table(name) {
            return Ok(false);
        }
        batch.create_table(name)?;
        batch.commit()?;
        Ok(true)
    }

    /// Drops a table (a one-operation write batch).
    pub fn drop_table(&self, name: &str) -> Result<()> {
        let mut batch = self.write()?;
        batch.drop_table(name)?;
        batch.commit()
    }

    /// Names of the tables (committed), in order.
    pub fn table_names(&self) -> Vec<String> {
        if let Some(view) = self.followed() {
            return view.table_names();
        }
        self.shared
            .published
            .read()
            .tables
            .keys()
            .cloned()
            .collect()
    }

    /// Writes the changed nodes of every commit so far and a new superblock that covers the
    /// whole log, then recycles the log. Waits for a write batch in progress ([`Db::write`]) to
    /// finish. Write transactions of [`Db::begin_write`] need no waiting for: they hold no lock
    /// until their short commit and change nothing shared before it, so the checkpoint persists
    /// the state committed so far and their later commit goes to the log as usual.
    ///
    /// Commits go on while it syncs its pages and its superblock; they wait while it writes
    /// its pages into the page cache and while a short second checkpoint covers the commits
    /// made meanwhile (docs/recovery.md, "Commits beside a checkpoint").
    pub fn checkpoint(&self) -> Result<CheckpointStats> {
        self.shared.refuse_on_batch_thread("Db::checkpoint")?;
        let _checkpointing = self.shared.checkpoint_lock.lock();
        let state = self.shared.writer.lock();
        checkpoint_beside_commits(&self.shared, state)
    }

    /// A checkpoint that does not wait for a write batch in progress: that batch, and every
    /// write transaction of [`Db::begin_write`] begun before this call, gets [`Error::Aborted`]
    /// at its next call (or at commit) and is rolled back when dropped; then the checkpoint
    /// runs.
    pub fn force_checkpoint(&self) -> Result<CheckpointStats> {
        self.shared.refuse_on_batch_thread("Db::force_checkpoint")?;
        self.shared.abort_generation.fetch_add(1, Ordering::AcqRel);
        let _checkpointing = self.shared.checkpoint_lock.lock();
        let mut state = self.shared.writer.lock();
        state.checkpoint(&self.shared, false)
    }

    /// Makes every commit so far durable in the log (one log sync), `NoSync` ones included.
    pub fn sync(&self) -> Result<()> {
        self.shared.refuse_on_batch_thread("Db::sync")?;
        let state = self.shared.writer.lock();
        self.shared.check_writable(&state)?;
        let last_lsn = state.wal.last_lsn();
        drop(state);
        self.shared.wait_log(last_lsn, WaitFor::DurableAll)
    }

    /// A checkpoint that also rewrites every table densely (what checkpoints do by themselves
    /// when the pages in use have grown by half since the last compaction), then shrinks the
    /// file to about the size of its data in the same call. It never leaves the file larger
    /// than it was (once the commits since the last checkpoint are in it): when nothing can be
    /// gained it leaves the file as it is and says why in [`CheckpointStats::compaction`].
    ///
    /// A dense copy cannot go where the old version is: those pages are freed only once the new
    /// superblock is durable and no snapshot reaches them. So `compact` writes a first dense copy
    /// above the whole old file, frees the old version with a plain checkpoint (the low end of
    /// the file is then one free run), writes a second dense copy there (lowest pages first),
    /// and frees the first copy with one more checkpoint, which cuts the file's free tail. Every
    /// step is an ordinary checkpoint, crash-safe as each is; the file grows by one copy of the
    /// data meanwhile. The figures returned add up all the steps.
    ///
    /// When it would not shrink, it does none of that: a file whose pages are about all in
    /// use ends no smaller (the copy, the checkpoint's catalog and space map, and the previous
    /// checkpoint's, which stay until the next: [`Compaction::NothingToGain`]), and while a
    /// snapshot is alive the old version's pages cannot be freed ([`Compaction::SnapshotHeld`]).
    /// Commits not yet checkpointed are checkpointed first in either case.
    pub fn compact(&self) -> Result<CheckpointStats> {
        self.shared.compact()
    }

    /// Checkpoints if anything changed, then closes the database.
    ///
    /// `Ok` means the file is released: every commit is in the checkpoint and the path can be
    /// opened again at once, by this process or another. A read snapshot ([`ReadTxn`]) or
    /// write transaction still alive holds the file (its pages are read through the file's
    /// map) and so its lock; `close` does not end it (it may be reading on another thread,
    /// and nothing but its own drop can make that safe). Then `close` still checkpoints and
    /// closes, and returns [`Error::SnapshotsAlive`] with their count: the data is safe, but
    /// the file stays locked until they are dropped. Snapshots keep reading their version. (A
    /// snapshot taken before anything was checkpointed reads only memory and holds no file; a
    /// database in a storage the caller passed, `Db::open_in`, holds no lock.)
    pub fn close(self) -> Result<()> {
        let (result, file, live) = {
            let _checkpointing = self.shared.checkpoint_lock.lock();
            let mut state = self.shared.writer.lock();
            let result = state.checkpoint_at_close(&self.shared);
            state.closed = true;
            // Only a file opened by path is locked; a storage the caller passed
            // (`Db::open_in`) is the caller's to reopen.
            let file = state
                .store
                .is_named()
                .then(|| Arc::downgrade(state.store.storage()));
            (result, file, Arc::clone(&self.shared.live))
        };
        drop(self);
        result?;
        // What still holds the file now is what `Ok` would wrongly promise is gone. A snapshot
        // whose trees have no persisted node holds nothing of the file and is no obstacle.
        let count = live.count() as u64;
        let held = file.is_some_and(|file| file.strong_count() > 0);
        if count == 0 || !held {
            return Ok(());
        }
        Err(Error::SnapshotsAlive { count })
    }

    /// Loads sorted `pairs` into the empty table `table` and checkpoints. Unsorted or duplicate
    /// input is [`Error::Unsorted`] / [`Error::Duplicate`] and leaves the table as it was.
    /// Returns the number of pairs loaded.
    pub fn bulk_load<I, K, V>(&self, table: &str, pairs: I) -> Result<u64>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.shared
            .bulk_load(table, pairs, false, &|| false)
            .map(|loaded| loaded.unwrap_or(0))
    }

    /// [`Db::bulk_load`] from fallible input (a parser, a reader): the first `Err` item stops
    /// the load, everything written so far is abandoned (the table stays empty, nothing is
    /// published or checkpointed) and that error is returned. Engine errors come back as
    /// `E::from(Error)`.
    pub fn bulk_load_try<I, K, V, E>(&self, table: &str, pairs: I) -> std::result::Result<u64, E>
    where
        I: IntoIterator<Item = std::result::Result<(K, V), E>>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        E: From<Error>,
    {
        self.bulk_load_try_into(table, pairs, false)
    }

    /// [`Db::bulk_load_try`] into a table that does not exist yet, created by the load itself:
    /// the table and its pairs become durable and visible together, in the load's checkpoint.
    /// An error (bad input, unsorted pairs, a failed write) or a crash before that checkpoint
    /// is durable leaves no table behind, where [`Db::create_table`] then a bulk load would
    /// leave an empty one. An existing `table` is [`Error::TableExists`]; a bad name is
    /// [`Error::InvalidTableName`].
    pub fn bulk_load_new_table_try<I, K, V, E>(
        &self,
        table: &str,
        pairs: I,
    ) -> std::result::Result<u64, E>
    where
        I: IntoIterator<Item = std::result::Result<(K, V), E>>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        E: From<Error>,
    {
        self.bulk_load_try_into(table, pairs, true)
    }

    fn bulk_load_try_into<I, K, V, E>(
        &self,
        table: &str,
        pairs: I,
        create: bool,
    ) -> std::result::Result<u64, E>
    where
        I: IntoIterator<Item = std::result::Result<(K, V), E>>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
        E: From<Error>,
    {
        let failure = std::cell::RefCell::new(None);
        let pairs = pairs.into_iter().map_while(|item| match item {
            Ok(pair) => Some(pair),
            Err(error) => {
                *failure.borrow_mut() = Some(error);
                None
            }
        });
        let loaded = self
            .shared
            .bulk_load(table, pairs, create, &|| failure.borrow().is_some());
        match (failure.into_inner(), loaded) {
            (Some(error), _) => Err(error),
            (None, Ok(loaded)) => Ok(loaded.unwrap_or(0)),
            (None, Err(error)) => Err(E::from(error)),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _checkpointing = self.shared.checkpoint_lock.lock();
        let mut state = self.shared.writer.lock();
        if self.options.checkpoint_on_drop && !state.closed {
            // Errors cannot be reported from drop; `close` reports them.
            let _ = state.checkpoint_at_close(&self.shared);
        }
    }
}

impl Db {
    /// Replays `recovery` onto the trees (`engine/recovery.rs`).
    fn recover(&self, recovery: crate::wal::Recovery) -> Result<()> {
        self.shared.recover(recovery)
    }
}

impl Shared {
    /// A read transaction: the published version and a pin of *its* epoch, taken together
    /// under the publish lock's read side (see `engine/live.rs`). Every way of taking a snapshot of the
    /// published state for a reader must go through here.
    pub(crate) fn read(&self) -> ReadTxn {
        let published = self.published.read();
        let pin = Live::pin(&self.live, published.epoch);
        ReadTxn::new(Arc::clone(&published), pin)
    }
}

#[cfg(test)]
mod tests;
