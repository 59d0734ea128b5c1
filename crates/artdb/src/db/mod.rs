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
//! checkpoint does not cover and checkpoints them (`recovery.rs`). docs/recovery.md.
//!
//! Checkpoint (one place: `WriterState::checkpoint`): persist each changed table's heap nodes
//! post-order through the store's page writer, commit the store (blobs, sync, superblock, sync),
//! then switch each tree onto its persisted root and republish, advancing the epoch in the same
//! step as the publish (see `txn/pins.rs` for why). A failure before the store commit leaves the trees
//! as they were; an I/O failure poisons the store. A checkpoint first flushes the pipeline (every
//! commit durable and published), and after its superblock is durable recycles the log.
//! `Db::checkpoint` and the automatic checkpoint (`checkpoint_beside_commits`) adopt and
//! publish before the store commit and release the writer lock during its two syncs, so commits
//! go on; then an ordinary checkpoint covers the commits made meanwhile and recycles the log
//! (docs/recovery.md, "Commits beside a checkpoint").

mod backup;
mod catalog;
mod follow;
mod read;
mod recovery;
mod transact;
mod write;

pub use catalog::TABLE_NAME_LEN_MAX;
pub use read::{Cursor, Iter, ReadTxn, Table};
pub use write::WriteTxn;

use crate::error::{from_tree, CorruptionKind, Error, FileRole, Result};
use crate::io::{FileStorage, MemoryStorage, ReadersFile, Storage};
use crate::store::{OpenMode, Store, StoreStats, TreeSink, WriteCounts};
pub(crate) use crate::txn::{CheckpointStep, Published, Shared, TableState, WriterState};
use crate::txn::{Durability, Pins};
use crate::wal::group::{Pipeline, WaitFor};
use crate::wal::{RecoveryMode, Wal};
use artdb_art::{ChildWord, NodeSource, Tree};
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Growth in pages below which no compaction happens (small databases).
const COMPACT_SLACK_PAGES: u64 = 32;

/// What a checkpoint did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Generation of the checkpoint now durable.
    pub generation: u64,
    /// Node images written.
    pub images_written: u64,
    /// Node pages written (metadata blobs not included).
    pub pages_written: u64,
    /// Bytes written: node pages, catalog and space blobs and the superblock.
    pub bytes_written: u64,
    /// Tables whose trees were written.
    pub tables_written: u64,
    /// Whether the tables were rewritten densely, and if `Db::compact` did not, why.
    pub compaction: Compaction,
}

/// Whether a checkpoint rewrote the tables densely ([`CheckpointStats::compaction`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Compaction {
    /// Not rewritten: an ordinary checkpoint.
    #[default]
    None,
    /// Rewritten densely (by `Db::compact`, or by a checkpoint when the pages in use had
    /// grown by half since the last compaction).
    Rewritten,
    /// `Db::compact` left the file as it was: a dense copy would take at least as many pages
    /// as the file has (`page_count`; `estimated_page_count`: the pages after a compaction,
    /// the dense copy beside the current and the previous checkpoint's catalog and space map).
    NothingToGain {
        /// Pages of the file now.
        page_count: u64,
        /// Pages the file would have after compacting.
        estimated_page_count: u64,
    },
    /// `Db::compact` left the file as it was: a live snapshot (or write transaction) reaches
    /// the pages of the current version, so none could be freed and the copy would only add
    /// to the file. Compact again once it has ended.
    SnapshotHeld,
}

/// A table in [`DbStats`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStats {
    /// The table's name.
    pub name: String,
    /// Number of keys (committed).
    pub keys: u64,
    /// Changed since the last checkpoint.
    pub dirty: bool,
}

/// Figures about the database.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let stats = db.stats()?;
/// assert_eq!(stats.tables[0].name, "t");
/// assert_eq!(stats.tables[0].keys, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbStats {
    /// Tables in name order.
    pub tables: Vec<TableStats>,
    /// The file.
    pub store: StoreStats,
    /// Transactions: live snapshots, the oldest one, the commit history kept.
    pub txn: TxnStats,
    /// The write-ahead log.
    pub log: LogStats,
}

/// Figures about the write-ahead log in [`DbStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Bytes of records not yet covered by a checkpoint (the current cycle).
    pub bytes: u64,
    /// Records in the current cycle.
    pub records: u64,
    /// LSN of the newest record (0: none yet).
    pub last_lsn: u64,
    /// LSN covered by the newest durable checkpoint.
    pub covered_lsn: u64,
    /// Length of the log file, preallocated space included.
    pub file_bytes: u64,
    /// Commits through the log since open.
    pub commits: u64,
    /// Log syncs since open (fewer than commits when group commit shares them).
    pub syncs: u64,
}

/// The transaction figures of [`DbStats`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnStats {
    /// Write transactions open now.
    pub live_writers: u64,
    /// Age of the oldest live snapshot (read or write transaction), if any.
    pub oldest_snapshot_age: Option<std::time::Duration>,
    /// Pages freed by checkpoints that the oldest snapshot keeps from reuse (they become
    /// reusable at the first checkpoint after it ends).
    pub oldest_snapshot_pinned_pages: u64,
    /// Commit records kept for validating live write transactions (pruned as soon as no live
    /// transaction is older).
    pub history_records: u64,
    /// The last commit sequence number.
    pub commit_seq: u64,
    /// Tables a write transaction's commit changed by installing the transaction's own tree
    /// (its copy-on-write fork of its snapshot, or its inserts into an empty table): nothing
    /// was copied again at commit. Since open.
    pub tables_installed_at_commit: u64,
    /// Tables into which a commit applied its changes again (another commit had changed the
    /// table since the transaction's snapshot). Since open.
    pub tables_reapplied_at_commit: u64,
    /// Commits that bypassed the log (bigger than [`Options::wal_bypass_threshold_bytes`], and
    /// bulk loads): written to the database file by a checkpoint, logged as a reference. Since
    /// open.
    pub commits_bypassing_log: u64,
    /// Live readers of this database through its readers file: read-only opens of other
    /// processes beside this writer (and read-only handles of this process), each counted once
    /// per checkpoint its snapshots read. 0 for a database not opened by path.
    pub other_process_readers: u64,
    /// The oldest checkpoint generation such a reader reads, if any: while it lives, pages
    /// that checkpoint reaches are not reused (`artdb readers FILE` lists the readers).
    pub other_process_oldest_generation: Option<u64>,
    /// Pages freed by checkpoints that those readers keep from reuse.
    pub other_process_pinned_pages: u64,
}

/// What [`Db::verify`] found.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let report = db.verify()?;
/// assert!(report.is_ok(), "{report}");
/// assert_eq!(report.keys_checked, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Every violated invariant and checksum failure, each as the error that names it.
    pub problems: Vec<Error>,
    /// Findings that are not damage for sure: an older superblock slot that fails its checksum
    /// (a write torn by a crash, or damage; the next checkpoint rewrites it).
    pub notes: Vec<String>,
    /// Tables checked.
    pub tables_checked: u64,
    /// Keys seen while walking the tables.
    pub keys_checked: u64,
}

impl VerifyReport {
    /// Whether nothing was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
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

pub(crate) use crate::txn::state::check_table_name;

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
        mut tables: BTreeMap<String, TableState>,
        wal: Wal,
        options: Options,
    ) -> Db {
        let published = Arc::new(Published {
            tables: tables
                .iter_mut()
                .map(|(name, t)| (name.clone(), t.tree.snapshot()))
                .collect(),
            epoch: 1,
            seq: 0,
        });
        let source = Arc::clone(store.source());
        let pipeline = Pipeline::new(wal.last_lsn());
        let log_storage = Arc::clone(wal.storage());
        let log_bytes = AtomicU64::new(wal.bytes());
        let state = WriterState {
            store,
            tables,
            dropped_trees: Vec::new(),
            released: Vec::new(),
            catalog_dirty: false,
            closed: false,
            compact_baseline_pages: None,
            history: crate::txn::History::new(),
            counters: Default::default(),
            wal,
            committed: Arc::clone(&published),
            wal_needs_recycle: false,
            checkpoint_generations: BTreeMap::new(),
        };
        let shared = Shared {
            writer: Mutex::new(state),
            published: RwLock::new(published),
            pins: Arc::new(Pins::default()),
            source,
            live: Arc::default(),
            pipeline,
            log_storage,
            log_bytes,
            abort_generation: AtomicU64::new(0),
            durability: options.durability,
            checkpoint_threshold_bytes: options.checkpoint_threshold_bytes,
            wal_bypass_threshold_bytes: options.wal_bypass_threshold_bytes,
            checkpoint: checkpoint_after_commit,
            checkpoint_locked: checkpoint_for_bypass,
            checkpoint_lock: Mutex::new(()),
            batch_thread: AtomicU64::new(0),
            readers: std::sync::OnceLock::new(),
            #[cfg(test)]
            hook: Mutex::new(None),
        };
        Db {
            shared: Arc::new(shared),
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
        self.shared.refuse_on_batch_thread("Db::compact")?;
        let _checkpointing = self.shared.checkpoint_lock.lock();
        let mut state = self.shared.writer.lock();
        self.shared.check_writable(&state)?;
        let mut total = CheckpointStats {
            generation: state.store.durable().generation,
            ..CheckpointStats::default()
        };
        if state.needs_checkpoint() {
            total = state.checkpoint(&self.shared, false)?;
        }
        if self.shared.pins.min().is_some() || self.shared.other_process_oldest().is_some() {
            total.compaction = Compaction::SnapshotHeld;
            return Ok(total);
        }
        let dense_pages = {
            let state = &mut *state;
            let tables = &state.tables;
            state.store.dense_copy_pages(|writer| {
                for table in tables.values().filter(|table| !table.tree.is_empty()) {
                    rewrite_table(&table.tree, writer)?;
                }
                Ok(())
            })?
        };
        let (page_count, estimated_page_count) = state.store.compaction_estimate(dense_pages)?;
        if estimated_page_count >= page_count {
            total.compaction = Compaction::NothingToGain {
                page_count,
                estimated_page_count,
            };
            return Ok(total);
        }
        state.store.set_allocation_floor(page_count)?;
        let first = state.checkpoint(&self.shared, true);
        state.store.set_allocation_floor(0)?;
        let add = |total: &mut CheckpointStats, step: CheckpointStats| {
            total.generation = step.generation;
            total.images_written += step.images_written;
            total.pages_written += step.pages_written;
            total.bytes_written += step.bytes_written;
            total.tables_written = total.tables_written.max(step.tables_written);
        };
        add(&mut total, first?);
        total.compaction = Compaction::Rewritten;
        // Frees the old version (what no snapshot reaches) and cuts the free tail.
        let step = state.checkpoint(&self.shared, false)?;
        add(&mut total, step);
        if self.shared.pins.min().is_some() || self.shared.other_process_oldest().is_some() {
            // A snapshot taken before the first copy was published: the old version stays
            // until it ends, and a later checkpoint frees and cuts it.
            return Ok(total);
        }
        let step = state.checkpoint(&self.shared, true)?;
        add(&mut total, step);
        let step = state.checkpoint(&self.shared, false)?;
        add(&mut total, step);
        Ok(total)
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

    /// Figures about the tables and the file (cheap: reads no node).
    pub fn stats(&self) -> Result<DbStats> {
        if let Some(view) = self.followed() {
            return view.stats();
        }
        self.shared.refuse_on_batch_thread("Db::stats")?;
        let _checkpointing = self.shared.checkpoint_lock.lock();
        let state = self.shared.writer.lock();
        let published = Arc::clone(&self.shared.published.read());
        let tables = published
            .tables
            .iter()
            .map(|(name, snapshot)| TableStats {
                name: name.clone(),
                keys: snapshot.len(),
                dirty: state.tables.get(name).is_some_and(|t| t.dirty),
            })
            .collect();
        let oldest = self.shared.live.oldest();
        let txn = TxnStats {
            live_writers: self.shared.live.writers() as u64,
            oldest_snapshot_age: oldest.map(|oldest| oldest.age),
            oldest_snapshot_pinned_pages: oldest
                .map_or(0, |oldest| state.store.pages_pinned_at(oldest.epoch)),
            history_records: state.history.len() as u64,
            commit_seq: state.history.seq(),
            tables_installed_at_commit: state.counters.installed,
            tables_reapplied_at_commit: state.counters.applied,
            commits_bypassing_log: state.counters.bypassed,
            other_process_readers: 0,
            other_process_oldest_generation: None,
            other_process_pinned_pages: 0,
        };
        let mut txn = txn;
        if let Some(readers) = self.shared.readers.get() {
            let live: Vec<u64> = readers
                .list()?
                .into_iter()
                .filter(|slot| slot.alive)
                .map(|slot| slot.generation)
                .collect();
            txn.other_process_readers = live.len() as u64;
            txn.other_process_oldest_generation = live.iter().copied().min();
            if let Some(pin) = self.shared.other_process_pin(&state) {
                txn.other_process_pinned_pages = state.store.pages_pinned_at(pin);
            }
        }
        let pipeline = self.shared.pipeline.stats();
        let log = LogStats {
            bytes: state.wal.bytes(),
            records: state.wal.records(),
            last_lsn: state.wal.last_lsn(),
            covered_lsn: state.store.durable().wal_position,
            file_bytes: state.wal.file_bytes(),
            commits: pipeline.commits,
            syncs: pipeline.syncs,
        };
        Ok(DbStats {
            tables,
            store: state.store.stats()?,
            txn,
            log,
        })
    }

    /// The tree shape of one table (walks the whole table: reads every node).
    pub fn table_tree_stats(&self, name: &str) -> Result<artdb_art::Stats> {
        if let Some(view) = self.followed() {
            return view.table_tree_stats(name);
        }
        let published = Arc::clone(&self.shared.published.read());
        let snapshot = published
            .tables
            .get(name)
            .ok_or_else(|| Error::TableNotFound {
                name: name.to_string(),
            })?;
        Ok(snapshot.stats())
    }

    /// Checks every invariant the database can check: both metadata blobs, the checksum of
    /// every page that holds nodes, and every table's tree (order, shapes, lengths).
    pub fn verify(&self) -> Result<VerifyReport> {
        if let Some(view) = self.followed() {
            return view.verify();
        }
        self.shared.refuse_on_batch_thread("Db::verify")?;
        let mut report = VerifyReport::default();
        {
            let _checkpointing = self.shared.checkpoint_lock.lock();
            let mut state = self.shared.writer.lock();
            let (problems, notes) = state.store.verify_superblocks()?;
            report.problems.extend(problems);
            report.notes.extend(notes);
            report.problems.extend(state.store.verify_pages()?);
            if !state.needs_checkpoint() {
                report.problems.extend(state.verify_space_accounting()?);
            }
        }
        let published = Arc::clone(&self.shared.published.read());
        for (name, snapshot) in &published.tables {
            report.tables_checked += 1;
            report.keys_checked += snapshot.len();
            if let Err(violations) = snapshot.verify() {
                for violation in violations {
                    report.problems.push(Error::Corruption {
                        at: 0,
                        kind: CorruptionKind::Invariant(format!("table {name:?}: {violation}")),
                    });
                }
            }
        }
        Ok(report)
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
        self.bulk_load_abandonable(table, pairs, false, &|| false)
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
        let loaded =
            self.bulk_load_abandonable(table, pairs, create, &|| failure.borrow().is_some());
        match (failure.into_inner(), loaded) {
            (Some(error), _) => Err(error),
            (None, Ok(loaded)) => Ok(loaded.unwrap_or(0)),
            (None, Err(error)) => Err(E::from(error)),
        }
    }

    /// The bulk load; after the input ends, `input_failed()` true abandons the written pages
    /// (returning `Ok(None)`) instead of publishing them. `create`: `table` must not exist, and
    /// is added to the tables only once its tree is built, just before the commit that makes
    /// both durable (the bypass record and its checkpoint, which writes the catalog).
    fn bulk_load_abandonable<I, K, V>(
        &self,
        table: &str,
        pairs: I,
        create: bool,
        input_failed: &dyn Fn() -> bool,
    ) -> Result<Option<u64>>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        self.shared.refuse_on_batch_thread("Db::bulk_load")?;
        let _checkpointing = self.shared.checkpoint_lock.lock();
        let mut state = self.shared.writer.lock();
        self.shared.check_writable(&state)?;
        self.shared.flush_log(&state)?;
        if create {
            check_table_name(table)?;
            if state.tables.contains_key(table) {
                return Err(Error::TableExists {
                    name: table.to_string(),
                });
            }
        } else {
            let entry = state
                .tables
                .get(table)
                .ok_or_else(|| Error::TableNotFound {
                    name: table.to_string(),
                })?;
            if !entry.tree.is_empty() {
                return Err(Error::TableNotEmpty {
                    name: table.to_string(),
                });
            }
        }
        let built = {
            let mut writer = state.store.begin_bulk()?;
            let mut sink = TreeSink::new(&mut writer);
            match Tree::bulk_persist(pairs, &mut sink) {
                Ok(_) if input_failed() => {
                    writer.abandon();
                    return Ok(None);
                }
                Ok(built) => writer.finish().map(|counts| (built, counts.pages)),
                Err(error) => {
                    let error = sink.convert(error);
                    writer.abandon();
                    Err(error)
                }
            }
        };
        let ((root, len), pages_written) = built.map_err(|error| state.fail(error))?;
        // The loaded tree is dense already: its pages count toward the compaction baseline,
        // or the load's own checkpoint would see the growth and rewrite what it just wrote.
        if let Some(baseline) = state.compact_baseline_pages.as_mut() {
            *baseline += pages_written;
        }
        let tree = Tree::open(root, len, self.shared.tree_source()).map_err(from_tree)?;
        let state = &mut *state;
        if create {
            let mut entry = TableState::empty();
            entry.tree = tree;
            state.tables.insert(table.to_string(), entry);
            state.catalog_dirty = true;
        } else if let Some(entry) = state.tables.get_mut(table) {
            let mut old = std::mem::replace(&mut entry.tree, tree);
            state.released.extend(old.take_released_persisted());
        }
        // The load commits like a transaction that bypasses the log (its pages are written
        // once): a reference record, then the checkpoint that makes it durable and publishes
        // it. The record also moves the LSN, so the load's checkpoint covers an LSN no earlier
        // checkpoint covers and the log cycle after it starts past it: should the newest
        // superblock be damaged so that it looks torn, open finds the log ahead of the
        // previous checkpoint and reports the damage instead of silently opening that
        // checkpoint, which lacks the load (tests/torn_or_damaged.rs). Written once the input
        // is known good, so a failed load leaves the log as it was.
        let tables = [table.to_string()];
        state.commit_bypass(&self.shared, &tables, |state| {
            state.history.push_whole([table])
        })?;
        crate::txn::prune_history(&self.shared, state);
        Ok(Some(len))
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

impl Shared {
    /// A read transaction: the published version and a pin of *its* epoch, taken together
    /// under the publish lock's read side (see `txn/pins.rs`). Every way of taking a snapshot of the
    /// published state for a reader must go through here.
    pub(crate) fn read(&self) -> ReadTxn {
        let published = self.published.read();
        let pin = Pins::pin(&self.pins, published.epoch);
        let live = crate::txn::Live::register(&self.live, published.seq, published.epoch, false);
        ReadTxn::new(Arc::clone(&published), pin, live)
    }

    /// The epoch of the published version (the one a checkpoint running now tags its released
    /// pages with).
    fn epoch(&self) -> u64 {
        self.published.read().epoch
    }

    /// Calls the test hook, if any, at `step` of a checkpoint.
    #[inline]
    fn at_step(&self, step: CheckpointStep) {
        #[cfg(test)]
        {
            let hook = self.hook.lock().clone();
            if let Some(hook) = hook {
                hook(self, step);
            }
        }
        #[cfg(not(test))]
        let _ = step;
    }
}

/// The checkpoint a commit triggers once the log passed its threshold ([`Shared::checkpoint`],
/// called after the commit is durable and published, with no lock held).
///
/// Its error is not the commit's: the commit was durable in the log before this began (a
/// `NoSync` commit promised no more than the log's page cache, which it reached), and reopening
/// replays it whatever the checkpoint did, so that commit returns `Ok`. Failing it
/// would tell its caller that a durable commit did not happen (a retry would apply it twice).
/// The failure poisons the database instead, and the poison keeps it as the first cause: the
/// committer's next call, and every later one, gets `Error::Poisoned` naming the operation, the
/// file and the operating system's error (docs/recovery.md, "The checkpoint, step by step").
fn checkpoint_after_commit(shared: &Shared) {
    // One checkpoint at a time; a commit during a running one does not wait for it (the
    // running one recycles the log, or the next commit triggers again).
    let Some(_checkpointing) = shared.checkpoint_lock.try_lock() else {
        return;
    };
    let state = shared.writer.lock();
    if state.wal.bytes() > shared.checkpoint_threshold_bytes && !state.closed {
        // Kept by the poison (every failure that leaves the file unknown poisons it), which is
        // how the error reaches the next caller; a failure that poisons nothing (the writer
        // refusing, say, after a poison already kept) has nothing more to tell.
        let _ = checkpoint_beside_commits(shared, state);
    }
}

/// The checkpoint of a commit that bypasses the log (`WriterState::commit_bypass`): the
/// ordinary one, holding the writer lock throughout (no record may follow the bypass record
/// until the checkpoint that makes it durable is). Called with both locks held.
///
/// The pages it writes hold the transaction's changes, densely: they count toward the compaction
/// baseline (as a bulk load's do), or the next checkpoint would see them as growth and rewrite
/// every table (W6: the 5M-pair load, then an automatic checkpoint during the batch writes).
fn checkpoint_for_bypass(shared: &Shared, state: &mut WriterState) -> Result<()> {
    let baseline = state.compact_baseline_pages;
    let stats = state.checkpoint(shared, false)?;
    if let Some(now) = state.compact_baseline_pages.as_mut() {
        if Some(*now) == baseline {
            *now += stats.pages_written;
        }
    }
    Ok(())
}

impl WriterState {
    /// The checkpoint of `close` (and of a drop that checkpoints): covers every commit and says
    /// in its superblock that the log is closed, so a log deleted afterwards loses nothing
    /// (docs/recovery.md, Missing log). With nothing to checkpoint, only that flag is written
    /// (one superblock), if it is not said already; then a read-only or poisoned database
    /// writes nothing.
    fn checkpoint_at_close(&mut self, shared: &Shared) -> Result<()> {
        if self.store.is_read_only() {
            return Ok(());
        }
        if !self.needs_checkpoint() {
            if shared.check_writable(self).is_err() {
                return Ok(());
            }
            return self.store.mark_log(true);
        }
        self.store.set_log_closed(true);
        let result = self.checkpoint(shared, false).map(drop);
        self.store.set_log_closed(false);
        result
    }

    fn needs_checkpoint(&self) -> bool {
        self.wal.records() > 0
            || self.wal_needs_recycle
            || self.catalog_dirty
            || !self.dropped_trees.is_empty()
            || self.tables.values().any(|table| table.dirty)
    }

    /// The checkpoint (see the module docs), holding the writer lock throughout.
    fn checkpoint(&mut self, shared: &Shared, force_compact: bool) -> Result<CheckpointStats> {
        let written = self.checkpoint_pages(shared, force_compact)?;
        let superblock = self.store.commit(
            &written.catalog_bytes,
            written.released.iter().copied(),
            written.epoch,
        )?;
        shared.at_step(CheckpointStep::StoreCommitted);
        self.note_compaction_baseline(written.compact)?;
        self.adopt_and_publish(shared, &written.roots)?;
        self.recycle_log(shared, written.covered_lsn)?;
        Ok(checkpoint_stats(
            superblock.generation,
            written.counts,
            &written.catalog_bytes,
            written.roots.len(),
            written.compact,
        ))
    }

    /// Steps 1 and 2 of a checkpoint (module docs): flushes the pipeline, notes the covered
    /// LSN, writes every changed table's nodes; returns what the store commit needs.
    fn checkpoint_pages(&mut self, shared: &Shared, force_compact: bool) -> Result<Written> {
        shared.check_writable(self)?;
        shared.flush_log(self)?;
        let covered_lsn = self.wal.last_lsn();
        self.store.set_covered(covered_lsn, self.wal.epoch());
        shared.at_step(CheckpointStep::Start);
        // The epoch of the published version. Only checkpoints end an epoch, and they hold the
        // writer lock, so it stays the same until this checkpoint publishes.
        let epoch = shared.epoch();
        let pinned_epoch_min = shared.pinned_epoch_min(self);
        let written_generation = self.store.durable().generation + 1;
        let pending_min = self.store.space_map()?.pending_epoch_min();
        let kept_from = pending_min.unwrap_or(epoch).min(epoch);
        self.checkpoint_generations
            .retain(|old, _| *old >= kept_from);
        self.checkpoint_generations
            .insert(epoch, written_generation);
        let compact = self.should_compact()? || force_compact;
        let mut roots: Vec<(String, ChildWord, u64)> = Vec::new();
        let mut compacted_released: Vec<u64> = Vec::new();
        let counts = {
            let mut writer = self.store.begin_checkpoint(pinned_epoch_min)?;
            shared.at_step(CheckpointStep::SpaceOpened);
            let mut failure = None;
            for (name, table) in self.tables.iter() {
                let rewrite = compact && !table.tree.is_empty();
                if !(table.dirty || rewrite) {
                    continue;
                }
                let written = if rewrite {
                    rewrite_table(&table.tree, &mut writer)
                } else {
                    let mut sink = TreeSink::new(&mut writer);
                    table
                        .tree
                        .persist(&mut sink)
                        .map_err(|error| sink.convert(error))
                };
                match written {
                    Ok(root) => roots.push((name.clone(), root, table.tree.len())),
                    Err(error) => {
                        failure = Some(error);
                        break;
                    }
                }
                if rewrite {
                    // Every node of the old version goes; a node that cannot be read stays
                    // allocated (a leak, not a loss).
                    let _ = table
                        .tree
                        .for_each_persisted(|offset| compacted_released.push(offset));
                }
            }
            match failure {
                Some(error) => {
                    writer.abandon();
                    return Err(self.fail(error));
                }
                None => writer.finish().map_err(|error| self.fail(error))?,
            }
        };
        shared.at_step(CheckpointStep::TablesWritten);
        let catalog_bytes = self.catalog_with(&roots);
        let mut released = self.take_released();
        released.extend(compacted_released);
        Ok(Written {
            covered_lsn,
            epoch,
            compact,
            roots,
            counts,
            catalog_bytes,
            released,
        })
    }

    /// Switches each written table onto its persisted root and publishes the new version as
    /// the first of the next epoch.
    fn adopt_and_publish(
        &mut self,
        shared: &Shared,
        roots: &[(String, ChildWord, u64)],
    ) -> Result<()> {
        let source = shared.tree_source();
        let mut touched = Vec::new();
        for (name, root, len) in roots {
            if let Some(table) = self.tables.get_mut(name) {
                let adopted = table.tree.adopt_persisted(*root, *len, Arc::clone(&source));
                if let Err(error) = adopted {
                    // The released pages are pending with `epoch` but the published version
                    // may still reach them: refuse every later checkpoint (which could reuse
                    // them) until the database is reopened.
                    let error = from_tree(error);
                    let during = "switch a table onto its checkpointed root";
                    self.store.poison(&error, during, FileRole::Database);
                    return Err(error);
                }
                table.persisted_root = *root;
                table.persisted_len = *len;
                table.dirty = false;
                touched.push(name.clone());
            }
        }
        self.catalog_dirty = false;
        shared.at_step(CheckpointStep::Adopted);
        // Ends the epoch in the same step as the publish: a reader that pinned `epoch` may hold
        // the version from before this checkpoint (which reaches the pages released above, tagged
        // `epoch`); every reader of a later epoch holds this version or a later one, which does
        // not. The pages become reusable once no pin `<= epoch` is live (space.rs).
        shared.publish_with(self, &touched, true);
        shared.at_step(CheckpointStep::Published);
        Ok(())
    }

    /// Whether this checkpoint rewrites every table compactly: when the pages in use have grown
    /// past 1.5 times what they were after the last compaction (or the first checkpoint of this
    /// process). Random updates leave most pages partly live, and a page is reusable only when
    /// all its nodes are gone; without this the file would settle at many times its data.
    /// Amortized, each compaction's full rewrite is paid for by the growth that triggered it.
    fn should_compact(&mut self) -> Result<bool> {
        let used = self.store.usage()?.used_pages();
        match self.compact_baseline_pages {
            // The first checkpoint of this process sets the baseline when it is done
            // (`note_compaction_baseline`), so what it writes is not counted as growth.
            None => Ok(false),
            Some(baseline) => Ok(used > baseline + baseline / 2 + COMPACT_SLACK_PAGES),
        }
    }

    /// After a checkpoint's superblock is durable: a compacting checkpoint, or the first of
    /// this process, sets the baseline of `should_compact` to the pages in use now. (Set at the
    /// start of the first checkpoint instead, a first checkpoint that wrote a big transaction or
    /// a load into a small file made the next checkpoint rewrite it all: W2's 10M-key insert
    /// batch, then `checkpoint`, spent seconds on a checkpoint with nothing to write.)
    fn note_compaction_baseline(&mut self, compacted: bool) -> Result<()> {
        if compacted || self.compact_baseline_pages.is_none() {
            self.compact_baseline_pages = Some(self.store.usage()?.used_pages());
        }
        Ok(())
    }

    /// Right after a checkpoint (nothing changed since), the space map's node count of every
    /// page must equal the number of persisted nodes the tables reach in it: more is a leak,
    /// fewer a page that could be reused while still in use.
    fn verify_space_accounting(&mut self) -> Result<Vec<Error>> {
        let mut reached: BTreeMap<u64, u64> = BTreeMap::new();
        let mut problems = Vec::new();
        for table in self.tables.values() {
            let walk = table.tree.for_each_persisted(|offset| {
                *reached.entry(offset / crate::store::PAGE_SIZE).or_insert(0) += 1;
            });
            if let Err(error) = walk {
                problems.push(from_tree(error));
                return Ok(problems);
            }
        }
        // An unreadable space map is already among `verify_pages`'s problems.
        let Ok(entries) = self.store.space_entries() else {
            return Ok(problems);
        };
        for (page, &entry) in entries.iter().enumerate() {
            let counted = u64::from(entry);
            let is_node_page = entry != 0 && entry <= crate::store::NODES_PER_PAGE_MAX;
            let expected = if is_node_page { counted } else { 0 };
            let found = reached.remove(&(page as u64)).unwrap_or(0);
            if found != expected {
                problems.push(Error::Corruption {
                    at: page as u64 * crate::store::PAGE_SIZE,
                    kind: CorruptionKind::Invariant(format!(
                        "page {page}: the space map counts {expected} nodes, the tables reach {found}"
                    )),
                });
            }
        }
        for (page, found) in reached {
            problems.push(Error::Corruption {
                at: page * crate::store::PAGE_SIZE,
                kind: CorruptionKind::Invariant(format!(
                    "page {page} past the space map holds {found} reachable nodes"
                )),
            });
        }
        Ok(problems)
    }

    /// Every persisted node unlinked since the last checkpoint: by the tables' trees, by trees
    /// replaced wholesale, and all nodes of dropped tables.
    fn take_released(&mut self) -> Vec<u64> {
        let mut released = std::mem::take(&mut self.released);
        for table in self.tables.values_mut() {
            released.extend(table.tree.take_released_persisted());
        }
        for mut tree in std::mem::take(&mut self.dropped_trees) {
            released.extend(tree.take_released_persisted());
            let mut reachable = Vec::new();
            // A dropped table whose nodes cannot be read keeps its pages (a leak, not a loss):
            // the checkpoint must not fail because of a table nobody can use any more.
            if tree
                .for_each_persisted(|offset| reachable.push(offset))
                .is_ok()
            {
                released.extend(reachable);
            }
        }
        released
    }

    /// Starts a new log cycle once the superblock covering `covered_lsn` is durable. A
    /// failure poisons the database (the log header's state is unknown).
    fn recycle_log(&mut self, shared: &Shared, covered_lsn: u64) -> Result<()> {
        if self.wal.records() == 0 && !self.wal_needs_recycle {
            return Ok(());
        }
        let keep_bytes = shared.checkpoint_threshold_bytes.saturating_mul(2);
        // Readers of other processes copy the log: one whose copy spans this rewrite copies
        // again (left odd on failure: the log's state is unknown until a writer reopens).
        let readers = shared.readers.get();
        if let Some(readers) = readers {
            readers.log_rewrite(true);
        }
        if let Err(error) = self.wal.recycle(covered_lsn, keep_bytes) {
            self.store.poison(&error, "recycle the log", FileRole::Log);
            return Err(error);
        }
        if let Some(readers) = readers {
            readers.log_rewrite(false);
        }
        self.wal_needs_recycle = false;
        shared.log_bytes.store(0, Ordering::Release);
        Ok(())
    }

    fn fail(&mut self, error: Error) -> Error {
        if matches!(error, Error::Io { .. }) {
            self.store
                .poison(&error, "write a checkpoint's pages", FileRole::Database);
        }
        error
    }

    fn catalog_with(&self, roots: &[(String, ChildWord, u64)]) -> Vec<u8> {
        let entries = self.tables.iter().map(|(name, table)| {
            match roots.iter().find(|(root_name, _, _)| root_name == name) {
                Some((_, root, len)) => (name.as_str(), *root, *len),
                None => (name.as_str(), table.persisted_root, table.persisted_len),
            }
        });
        catalog::encode(entries)
    }
}

/// What [`WriterState::checkpoint_pages`] wrote, for the store commit and the adoption.
struct Written {
    covered_lsn: u64,
    epoch: u64,
    compact: bool,
    roots: Vec<(String, ChildWord, u64)>,
    counts: WriteCounts,
    catalog_bytes: Vec<u8>,
    released: Vec<u64>,
}

/// The checkpoint of `Db::checkpoint` and of the automatic trigger: commits go on during its two
/// syncs (docs/recovery.md, "Commits beside a checkpoint"). Call with the checkpoint lock held
/// and the writer lock in `state`.
///
/// 1. Under the writer lock: flush, write the pages of the version at LSN `L` (the blocking
///    checkpoint's steps 1 to 3), write the blobs, then switch the trees onto the new roots and
///    publish them as the next epoch (their pages are in the page cache; a failed sync later
///    poisons the database, and a page that cannot be read back is `Corruption`, never another
///    value: pages are checksummed).
/// 2. Without it: sync the pages. Under it: write the superblock covering `L`. Without it: sync.
///    Commits meanwhile append records after `L` to the log and change the adopted trees.
/// 3. Under it: the superblock is the durable one. If no record came after `L`, recycle the log;
///    else run the blocking checkpoint for those commits only (few pages), which recycles it:
///    commits wait for that short one.
fn checkpoint_beside_commits(
    shared: &Shared,
    mut state: parking_lot::MutexGuard<'_, WriterState>,
) -> Result<CheckpointStats> {
    if state.store.durable().log_closed {
        // The first record after a clean close writes a superblock of its own (Missing log):
        // not while this checkpoint's superblock is being made.
        return state.checkpoint(shared, false);
    }
    let written = state.checkpoint_pages(shared, false)?;
    let prepared = state.store.commit_prepare(
        &written.catalog_bytes,
        written.released.iter().copied(),
        written.epoch,
    )?;
    state.adopt_and_publish(shared, &written.roots)?;
    let storage = Arc::clone(state.store.storage());
    drop(state);
    let synced = storage.sync();
    let mut state = shared.writer.lock();
    if let Err(source) = synced {
        let error = Error::io("sync the checkpoint's pages")(source);
        state.store.commit_failed(&error);
        return Err(error);
    }
    state.store.commit_write_superblock(&prepared)?;
    drop(state);
    let synced = storage.sync();
    let mut state = shared.writer.lock();
    if let Err(source) = synced {
        let error = Error::io("sync the superblock")(source);
        state.store.commit_failed(&error);
        return Err(error);
    }
    let superblock = state.store.commit_finish(prepared)?;
    shared.at_step(CheckpointStep::StoreCommitted);
    state.note_compaction_baseline(written.compact)?;
    if state.wal.last_lsn() == written.covered_lsn {
        state.recycle_log(shared, written.covered_lsn)?;
    } else {
        state.checkpoint(shared, false)?;
    }
    Ok(checkpoint_stats(
        superblock.generation,
        written.counts,
        &written.catalog_bytes,
        written.roots.len(),
        written.compact,
    ))
}

/// Writes `tree`'s current version afresh, densely packed, through `writer` (a streaming bulk
/// build from its own iteration: O(depth) memory); returns the new root.
fn rewrite_table(tree: &Tree, writer: &mut crate::store::PageWriter<'_>) -> Result<ChildWord> {
    let mut failure = None;
    let pairs = tree.iter().map_while(|item| match item {
        Ok(pair) => Some(pair),
        Err(error) => {
            failure = Some(error);
            None
        }
    });
    let mut sink = TreeSink::new(writer);
    let built = Tree::bulk_persist(pairs, &mut sink).map_err(|error| sink.convert(error));
    if let Some(error) = failure {
        return Err(from_tree(error));
    }
    built.map(|(root, _)| root)
}

fn checkpoint_stats(
    generation: u64,
    counts: WriteCounts,
    catalog: &[u8],
    tables_written: usize,
    compacted: bool,
) -> CheckpointStats {
    CheckpointStats {
        generation,
        images_written: counts.images,
        pages_written: counts.pages,
        bytes_written: counts.pages * crate::store::PAGE_SIZE + catalog.len() as u64,
        tables_written: tables_written as u64,
        compaction: if compacted {
            Compaction::Rewritten
        } else {
            Compaction::None
        },
    }
}

#[cfg(test)]
mod tests;
