//! follow: a read-only open beside a writer of another process (docs/recovery.md#readers-in-
//! other-processes).
//!
//! A read-only open by path takes a slot in the database's readers file (`io/readers.rs`) and
//! reads one checkpoint plus the log's durable records after it, replayed into memory, as any
//! read-only open does. The slot pins that checkpoint's generation, so the writer reuses no page
//! of it while a snapshot of this process may read it. Each new snapshot ([`Db::read`]) first
//! looks at what the writer last published (the newest durable checkpoint and the durable LSN);
//! when that moved, the view is opened again (under a new slot) and the snapshot shows every
//! commit made durable since. Snapshots of the old view keep their slot until they end.
//!
//! Opening beside a live writer (one holds the database's exclusive lock): read the published
//! state; pin its generation; read the file's newest superblock, catalog and space map and copy
//! the log; then read the published state again. If the generation or the log's rewrite counter
//! changed meanwhile (a checkpoint or a log recycle ran), the reads may mix two states and the
//! open starts over; else the superblock read is the pinned generation's and the copy holds
//! every durable record after it, replayed up to the published durable LSN (later records may
//! be unsynced or half written). With no writer, the open holds the shared lock while it reads
//! (a writer cannot start meanwhile), pins what it read, and lets the lock go.

use super::{log_path, Db, Options};
use crate::error::{Error, Result};
use crate::io::{FileStorage, MemoryStorage, PinnedStorage, PublishedWriter, ReadersFile, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The current view of a reader beside a writer, and how to open the next one.
pub(crate) struct Follower {
    path: PathBuf,
    options: Options,
    readers: Arc<ReadersFile>,
    current: parking_lot::Mutex<View>,
}

struct View {
    db: Arc<Db>,
    /// What the writer had published when this view was opened (`None`: nothing readable).
    seen: Option<PublishedWriter>,
}

/// How many times a refresh tries before it keeps the current view: a writer that checkpoints
/// without pause could otherwise hold a reader's `read` for long.
const REFRESH_TRIES: u32 = 4;

impl Follower {
    /// Opens the first view of the database at `path` (read-only `options`).
    pub(crate) fn open(path: &Path, options: Options, readers: Arc<ReadersFile>) -> Result<Db> {
        let deadline = Instant::now() + options.lock_wait_max.max(Duration::from_millis(100));
        let (db, seen) = open_view(path, &options, &readers, Some(deadline))?;
        let db = Arc::new(db);
        let follower = Follower {
            path: path.to_path_buf(),
            options: options.clone(),
            readers,
            current: parking_lot::Mutex::new(View {
                db: Arc::clone(&db),
                seen,
            }),
        };
        Ok(Db {
            shared: Arc::clone(&db.shared),
            options,
            follower: Some(Arc::new(follower)),
        })
    }

    /// The newest view: opened again first if the writer published a newer state. A refresh
    /// that fails (a writer checkpointing without pause, an I/O error) keeps the current view;
    /// [`Follower::refresh`] reports why.
    pub(crate) fn current(&self) -> Arc<Db> {
        let _ = self.refresh();
        Arc::clone(&self.current.lock().db)
    }

    /// Opens the view again if the writer published a newer state; `Ok(true)` if it did.
    pub(crate) fn refresh(&self) -> Result<bool> {
        let mut view = self.current.lock();
        let Some(now) = self.readers.published() else {
            return Ok(false);
        };
        if Some(now) == view.seen {
            return Ok(false);
        }
        if let Some(seen) = view.seen {
            let same_log = now.generation == seen.generation && now.log_seq == seen.log_seq;
            if same_log && now.durable_lsn > seen.durable_lsn && now.log_seq % 2 == 0 {
                // Only new durable records: replay them onto this view (its slot still pins
                // the same checkpoint). Anything unexpected opens afresh below.
                if self.follow_log(&view.db, now).is_ok() {
                    view.seen = Some(now);
                    return Ok(true);
                }
            }
        }
        let mut last = None;
        for _ in 0..REFRESH_TRIES {
            match open_view(&self.path, &self.options, &self.readers, None) {
                Ok((db, seen)) => {
                    *view = View {
                        db: Arc::new(db),
                        seen,
                    };
                    return Ok(true);
                }
                Err(error) => last = Some(error),
            }
        }
        Err(last.unwrap_or(Error::Closed))
    }
}

/// How much of the log past what a view read a refresh copies first, growing fourfold while
/// the durable records are not all in it: the writer grows the log in zero-filled steps of up
/// to megabytes, so copying to the file's end would copy mostly zeros at every refresh.
const FOLLOW_COPY_BYTES_FIRST: u64 = 64 << 10;

impl Follower {
    /// Appends the log's bytes past what `db` read to its copy of the log (as far as the
    /// records up to `now`'s durable LSN reach), checks that the writer did not rewrite the log
    /// meanwhile, and replays those records into `db`, which publishes them.
    fn follow_log(&self, db: &Db, now: PublishedWriter) -> Result<()> {
        let recovery = {
            let mut state = db.shared.writer.lock();
            let file = FileStorage::open_read_only_unlocked(&log_path(&self.path))?;
            let len = file.len().map_err(Error::io("read the log length"))?;
            let mut copied = crate::wal::LOG_DATA_START + state.wal.bytes();
            let mut step = FOLLOW_COPY_BYTES_FIRST;
            loop {
                if copied >= len {
                    return Err(state.wal.missing_durable(now.durable_lsn));
                }
                let upto = copied.saturating_add(step).min(len);
                let mut tail = vec![0u8; usize::try_from(upto - copied).unwrap_or(0)];
                file.read_at(copied, &mut tail)
                    .map_err(Error::io("read the log"))?;
                let unchanged = self.readers.published().is_some_and(|after| {
                    after.generation == now.generation && after.log_seq == now.log_seq
                });
                if !unchanged {
                    return Err(Error::Closed);
                }
                state
                    .wal
                    .storage()
                    .write_at(copied, &tail)
                    .map_err(Error::io("copy the log into memory"))?;
                copied = upto;
                if let Some(recovery) = state.wal.follow(now.durable_lsn, copied)? {
                    break recovery;
                }
                step = step.saturating_mul(4);
            }
        };
        db.recover(recovery)
    }
}

/// Why one attempt of [`open_view`] gave up: try again, or fail with the error.
enum Attempt {
    Again,
    Failed(Error),
}

impl From<Error> for Attempt {
    fn from(error: Error) -> Attempt {
        Attempt::Failed(error)
    }
}

/// One view of the database (see the module docs), retried until `deadline` while the writer
/// is busy (`None`: a few quick tries).
fn open_view(
    path: &Path,
    options: &Options,
    readers: &Arc<ReadersFile>,
    deadline: Option<Instant>,
) -> Result<(Db, Option<PublishedWriter>)> {
    let mut pause = Duration::from_millis(1);
    let mut tries = 0u32;
    loop {
        tries += 1;
        match attempt(path, options, readers) {
            Ok(view) => return Ok(view),
            Err(Attempt::Failed(error)) => return Err(error),
            Err(Attempt::Again) => {}
        }
        let out_of_time = match deadline {
            Some(deadline) => Instant::now() >= deadline,
            None => tries >= 8,
        };
        if out_of_time {
            return Err(Error::Locked {
                path: path.to_path_buf(),
                holder_pid: None,
                waited_ms: 0,
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

fn attempt(
    path: &Path,
    options: &Options,
    readers: &Arc<ReadersFile>,
) -> std::result::Result<(Db, Option<PublishedWriter>), Attempt> {
    match FileStorage::open_read_only(path) {
        Ok(file) => {
            // No writer: none can start while this handle holds the shared lock.
            let seen = readers.published();
            let guard = readers.claim(1)?;
            let storage = Arc::new(PinnedStorage::new(file, guard));
            let log = copy_log(path)?;
            let db = Db::open_with(
                Arc::clone(&storage) as Arc<dyn Storage>,
                log,
                options.clone(),
                None,
                None,
            )?;
            let generation = db.shared.writer.lock().store.durable().generation;
            storage.guard().set_generation(generation);
            storage.file().release_lock();
            Ok((db, seen))
        }
        Err(Error::Locked { .. }) => {
            let Some(before) = readers.published() else {
                return Err(Attempt::Again);
            };
            if before.generation == 0 || before.log_seq % 2 == 1 {
                return Err(Attempt::Again);
            }
            let guard = readers.claim(before.generation)?;
            if readers.published().map(|now| now.generation) != Some(before.generation) {
                return Err(Attempt::Again);
            }
            let file = FileStorage::open_read_only_unlocked(path)?;
            let storage = Arc::new(PinnedStorage::new(file, guard));
            let log = copy_log(path)?;
            let opened = Db::open_with(
                Arc::clone(&storage) as Arc<dyn Storage>,
                log,
                options.clone(),
                None,
                Some(before.durable_lsn),
            );
            let after = readers.published();
            let unchanged = after.is_some_and(|after| {
                after.generation == before.generation && after.log_seq == before.log_seq
            });
            if !unchanged {
                return Err(Attempt::Again);
            }
            let db = opened?;
            let generation = db.shared.writer.lock().store.durable().generation;
            if generation != before.generation {
                // A superblock written and synced, not yet published: its state comes next.
                return Err(Attempt::Again);
            }
            Ok((db, Some(before)))
        }
        Err(error) => Err(Attempt::Failed(error)),
    }
}

fn copy_log(path: &Path) -> Result<Arc<dyn Storage>> {
    let bytes = FileStorage::read_all_unlocked(&log_path(path))?.unwrap_or_default();
    let log = MemoryStorage::from_image(&bytes).map_err(Error::io("copy the log into memory"))?;
    Ok(Arc::new(log))
}
