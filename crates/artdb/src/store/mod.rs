//! store: the database file. A fixed header, two superblocks written alternately, node pages,
//! and per checkpoint two metadata blobs (the catalog of tables and the space map).
//!
//! ```text
//!  page 0      page 1         page 2         page 3 ...
//! +--------+--------------+--------------+----------------------------------------------+
//! | header | superblock 0 | superblock 1 | node pages, extents, catalog and space blobs  |
//! +--------+--------------+--------------+----------------------------------------------+
//! ```
//!
//! Lifecycle of a checkpoint (one place: [`Store::begin_checkpoint`] then [`Store::commit`]):
//! 1. `begin_checkpoint` promotes freed pages no one can reach any more and hands out a
//!    [`PageWriter`], the sink the trees persist their heap nodes into (post-order);
//! 2. `PageWriter::finish` writes the last pages and makes them readable in this process;
//! 3. `commit` releases replaced nodes and the previous metadata (pending, not yet reusable),
//!    writes the catalog and space blobs, **syncs**, writes the superblock of generation `g + 1`
//!    into slot `(g + 1) % 2` (the slot not holding the newest durable superblock) and
//!    **syncs** again. Only then is the new generation the durable one.
//!
//! Any I/O error during these steps poisons the store: the outcome on disk is unknown (a failed
//! fsync may have dropped writes), so writes are refused until the database is reopened, which
//! finds the newest valid superblock. docs/recovery.md argues each crash point.
//!
//! Open reads the header, both copies of both superblocks, the catalog and space blobs, and maps
//! the file: its cost does not depend on the number of nodes. Which checkpoint it opens
//! ([`open_superblocks`]): the sealed, consistent superblock copy with the highest generation. A
//! torn newest superblock (no copy sealed) falls back to the other slot, as a crash during the
//! superblock write must. But everything a superblock names was synced before it was written, so
//! if the newest sealed superblock names pages past the end of the file, or its catalog or space
//! blob fails its checksum, that is truncation or damage: `Corruption` (kind
//! `NewestCheckpoint`), never a silent fallback. [`OpenMode::salvage_previous_checkpoint`] opens
//! the previous checkpoint read-only instead.

mod format;
/// Little-endian field helpers shared with the catalog.
pub(crate) mod format_helpers {
    pub(crate) use super::format::{get_u16, get_u32, get_u64};
}
mod page;
/// The file's layout constants the fuzz module (`crate::fuzz`) reseals mutated files with.
pub(crate) mod layout {
    pub(crate) use super::format::{
        DATA_PAGE_FIRST, HEADER_CRC_AT, PAGE_SIZE, SB_CATALOG_CRC_AT, SB_CATALOG_LEN_AT,
        SB_CATALOG_OFFSET_AT, SB_CRC_AT, SB_SPACE_CRC_AT, SB_SPACE_LEN_AT, SB_SPACE_OFFSET_AT,
        SUPERBLOCK_COPY_OFFSETS, SUPERBLOCK_MAGIC, SUPERBLOCK_OFFSETS,
    };
    pub(crate) use super::page::{
        PAGE_EXTENT_PAGES_AT, PAGE_KIND_AT, PAGE_KIND_EXTENT, PAGE_KIND_PACKED,
    };
}
mod source;
mod space;
mod writer;

pub use format::{
    BlobRef, Header, Superblock, DATA_OFFSET, PAGE_SIZE, SUPERBLOCK_COPY_OFFSETS,
    SUPERBLOCK_OFFSETS,
};
pub use source::PageSource;
pub use space::{SpaceMap, NODES_PER_PAGE_MAX};
pub use writer::{PageWriter, TreeSink, WriteCounts};

use crate::error::{CorruptionKind, Error, FileRole, PoisonCause, Result};
use crate::io::Storage;
use format::{HEADER_LEN, SUPERBLOCK_LEN};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Figures about the file for `stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Length of the file in bytes.
    pub file_bytes: u64,
    /// Pages up to the high-water mark.
    pub page_count: u64,
    /// Pages free for reuse now (`None` until the space map is loaded).
    pub free_pages: Option<u64>,
    /// Pages freed but still reachable by a snapshot or the previous superblock.
    pub pending_pages: Option<u64>,
    /// Generation of the newest durable checkpoint.
    pub generation: u64,
}

/// Pages of the file by use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpaceUsage {
    /// Pages up to the high-water mark.
    pub page_count: u64,
    /// Free now.
    pub free_pages: u64,
    /// Freed, waiting for readers or the next checkpoint.
    pub pending_pages: u64,
}

impl SpaceUsage {
    /// Pages holding live data (or the header and superblocks).
    pub fn used_pages(&self) -> u64 {
        self.page_count
            .saturating_sub(self.free_pages + self.pending_pages)
    }
}

/// How [`Store::open`] opens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenMode {
    /// Refuse every write ([`Error::ReadOnly`]).
    pub read_only: bool,
    /// Open the checkpoint before the newest (implies `read_only`).
    pub salvage_previous_checkpoint: bool,
}

/// One copy of a superblock as found in the file.
#[derive(Debug)]
enum Copy {
    /// All zero: never written.
    Blank,
    /// Not sealed (magic or checksum fails): a write torn by a crash, or damage.
    Unsealed,
    /// Sealed but inconsistent with the file (slot, file id or fields): damage, not a tear.
    Inconsistent { generation: u64, error: Error },
    /// A valid superblock.
    Valid(Superblock),
}

/// The four superblock copies of a file: `[slot][copy]`.
struct Copies([[Copy; 2]; 2]);

impl Copies {
    fn read(storage: &dyn Storage, file_id: u64) -> Result<Copies> {
        let read = |slot: usize, copy: usize| -> Result<Copy> {
            let at = SUPERBLOCK_OFFSETS[slot] + SUPERBLOCK_COPY_OFFSETS[copy];
            let mut bytes = [0u8; SUPERBLOCK_LEN];
            storage
                .read_at(at, &mut bytes)
                .map_err(Error::io("read a superblock"))?;
            Ok(if bytes.iter().all(|&byte| byte == 0) {
                Copy::Blank
            } else if !Superblock::is_sealed(&bytes) {
                Copy::Unsealed
            } else {
                match Superblock::decode(&bytes, at, slot, file_id) {
                    Ok(superblock) => Copy::Valid(superblock),
                    Err(error) => Copy::Inconsistent {
                        generation: Superblock::generation_of(&bytes),
                        error,
                    },
                }
            })
        };
        Ok(Copies([
            [read(0, 0)?, read(0, 1)?],
            [read(1, 0)?, read(1, 1)?],
        ]))
    }

    fn valid(&self) -> impl Iterator<Item = &Superblock> {
        self.0.iter().flatten().filter_map(|copy| match copy {
            Copy::Valid(superblock) => Some(superblock),
            _ => None,
        })
    }
}

/// Chooses the checkpoint to open from the superblock copies (see the module docs): the newest
/// valid one, or with `salvage` the newest valid one of an older generation.
fn open_superblocks(
    storage: &dyn Storage,
    file_id: u64,
    file_len: u64,
    salvage: bool,
) -> Result<Chosen> {
    let copies = Copies::read(storage, file_id)?;
    let newest = copies
        .valid()
        .max_by_key(|superblock| superblock.generation)
        .copied();
    let inconsistent = copies.0.iter().flatten().filter_map(|copy| match copy {
        Copy::Inconsistent { generation, error } => Some((*generation, error)),
        _ => None,
    });
    // A sealed copy claiming a newer generation than every valid one: the newest superblock
    // was written whole and damaged since (a torn write is never sealed).
    let newest_generation = newest.map_or(0, |superblock| superblock.generation);
    if let Some((generation, error)) = inconsistent
        .filter(|(generation, _)| *generation > newest_generation)
        .max_by_key(|(generation, _)| *generation)
    {
        if !salvage {
            return Err(newest_damaged(generation, error));
        }
    }
    let Some(newest) = newest else {
        return Err(Error::corruption(
            SUPERBLOCK_OFFSETS[0],
            CorruptionKind::NoValidSuperblock,
        ));
    };
    // When the slot the next generation goes to holds no valid copy but a written one
    // (unsealed or inconsistent), that slot was being written (a crash then) or the newest
    // checkpoint is that damaged one (the write-ahead log proves it durable when its cycle
    // starts past what `newest` covers): the newest valid superblock is then itself the
    // previous checkpoint.
    let next_slot = Superblock::slot(newest.generation + 1);
    let newer_damaged = copies.0[next_slot]
        .iter()
        .all(|copy| !matches!(copy, Copy::Valid(_)))
        && copies.0[next_slot]
            .iter()
            .any(|copy| matches!(copy, Copy::Unsealed | Copy::Inconsistent { .. }));
    let chosen = if salvage {
        let older = copies
            .valid()
            .filter(|superblock| superblock.generation < newest.generation)
            .max_by_key(|superblock| superblock.generation)
            .copied();
        match older {
            _ if newer_damaged => newest,
            Some(older) => older,
            None => {
                return Err(Error::corruption(
                    SUPERBLOCK_OFFSETS[0],
                    CorruptionKind::NoPreviousCheckpoint,
                ))
            }
        }
    } else {
        newest
    };
    let needed = chosen.page_count * PAGE_SIZE;
    if needed > file_len {
        let error = Error::corruption(file_len, CorruptionKind::Truncated { needed });
        return Err(if salvage {
            error
        } else {
            newest_damaged(chosen.generation, &error)
        });
    }
    Ok(Chosen {
        superblock: chosen,
        newer_slot_written: newer_damaged && !salvage,
    })
}

/// The checkpoint [`open_superblocks`] chose, and whether the slot of the generation after it
/// holds written bytes that are no valid superblock (a write torn by a crash, or the newest
/// superblock damaged).
struct Chosen {
    superblock: Superblock,
    newer_slot_written: bool,
}

/// `error`, found in the newest checkpoint (generation `generation`), as the corruption that
/// says a previous checkpoint may be salvaged.
fn newest_damaged(generation: u64, error: &Error) -> Error {
    match error {
        Error::Corruption { at, kind } => Error::corruption(
            *at,
            CorruptionKind::NewestCheckpoint {
                generation,
                problem: Box::new(kind.clone()),
            },
        ),
        Error::Io { op, source } => Error::Io {
            op,
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        other => Error::Tree(other.to_string()),
    }
}

/// The space map was used before it was loaded: unreachable (each use loads it just before), so
/// a programmer error, reported as a value rather than a panic.
fn space_not_loaded() -> Error {
    Error::Tree("the space map was used before it was loaded".to_string())
}

/// The write side of the store (see the module docs). Owned by the database under its writer
/// lock; readers go through the shared [`PageSource`].
pub struct Store {
    storage: Arc<dyn Storage>,
    source: Arc<PageSource>,
    header: Header,
    durable: Superblock,
    space: Option<SpaceMap>,
    /// The first failure that left the file in an unknown state (writes are refused then).
    poisoned: Option<PoisonCause>,
    /// The readers file, told of every superblock that becomes durable (a writer's store).
    readers: Option<Arc<crate::io::ReadersFile>>,
    /// The database file's and the log's paths, for [`PoisonCause`] (`Store::name_files`).
    paths: Option<(PathBuf, PathBuf)>,
    read_only: bool,
    /// The log position (LSN) the next superblock records as covered (`set_covered_lsn`).
    covered_lsn: u64,
    /// Whether the next superblock says the log is closed (`set_log_closed`).
    log_closed: bool,
    /// The log cycle the next superblock records (`set_covered`).
    log_epoch: u64,
    /// At open: the superblock slot after the chosen one held bytes that are no valid
    /// superblock ([`Store::newer_superblock_unreadable`]).
    newer_slot_written: bool,
}

impl Store {
    /// Formats an empty `storage` as a database file and returns the store and its empty catalog
    /// written as checkpoint generation 1.
    pub fn create(storage: Arc<dyn Storage>, file_id: u64, catalog: &[u8]) -> Result<Store> {
        let mut first_pages = vec![0u8; DATA_OFFSET as usize];
        let header = Header { file_id };
        first_pages[..HEADER_LEN].copy_from_slice(&header.encode());
        storage
            .write_at(0, &first_pages)
            .map_err(Error::io("write the header"))?;
        let source = Arc::new(PageSource::new(Arc::clone(&storage), DATA_OFFSET, 0)?);
        let durable = Superblock {
            file_id,
            generation: 0,
            page_count: format::DATA_PAGE_FIRST,
            catalog: BlobRef::default(),
            space: BlobRef::default(),
            wal_position: 0,
            log_closed: false,
            log_epoch: 0,
        };
        let mut store = Store {
            storage,
            source,
            header,
            durable,
            space: Some(SpaceMap::new()),
            poisoned: None,
            readers: None,
            paths: None,
            read_only: false,
            covered_lsn: 0,
            log_closed: false,
            // A new database's log starts in cycle 1 (`Db::create_in_with_log`).
            log_epoch: 1,
            newer_slot_written: false,
        };
        store.begin_checkpoint(None)?.finish()?;
        store.commit(catalog, std::iter::empty(), 0)?;
        Ok(store)
    }

    /// Opens the database file in `storage` (see the module docs for which checkpoint); returns
    /// the store and the catalog blob's bytes.
    pub fn open(storage: Arc<dyn Storage>, mode: OpenMode) -> Result<(Store, Vec<u8>)> {
        let opened = Store::open_chosen(Arc::clone(&storage), mode);
        let Err(Error::Corruption {
            at,
            kind:
                CorruptionKind::NewestCheckpoint {
                    generation,
                    problem,
                },
        }) = opened
        else {
            return opened;
        };
        // The message of a damaged newest checkpoint points at salvage: only when the salvage
        // open gets as far as this one would (a truncation often cuts what both checkpoints
        // need), so that the advice given is advice that works.
        let salvage = OpenMode {
            salvage_previous_checkpoint: true,
            read_only: true,
        };
        let kind = match Store::open_chosen(storage, salvage) {
            Ok(_) => CorruptionKind::NewestCheckpoint {
                generation,
                problem,
            },
            Err(error) => CorruptionKind::NoCheckpointReadable {
                generation,
                problem,
                previous: match error {
                    Error::Corruption { at, kind } => format!("{kind} at byte {at}"),
                    other => other.to_string(),
                },
            },
        };
        Err(Error::corruption(at, kind))
    }

    fn open_chosen(storage: Arc<dyn Storage>, mode: OpenMode) -> Result<(Store, Vec<u8>)> {
        let file_len = storage.len().map_err(Error::io("read the file length"))?;
        let mut header_bytes = [0u8; HEADER_LEN];
        let head_len = file_len.min(HEADER_LEN as u64) as usize;
        storage
            .read_at(0, &mut header_bytes[..head_len])
            .map_err(Error::io("read the header"))?;
        if let Some(found) = not_a_database(&header_bytes[..head_len]) {
            return Err(Error::NotADatabase { path: None, found });
        }
        if file_len < DATA_OFFSET {
            return Err(Error::corruption(file_len, CorruptionKind::FileTooShort));
        }
        let header = Header::decode(&header_bytes)?;
        let salvage = mode.salvage_previous_checkpoint;
        let chosen = open_superblocks(&*storage, header.file_id, file_len, salvage)?;
        let durable = chosen.superblock;
        let in_checkpoint = |error: Error| {
            if salvage {
                error
            } else {
                newest_damaged(durable.generation, &error)
            }
        };
        let catalog =
            read_blob(&*storage, durable.catalog, "catalog checksum").map_err(in_checkpoint)?;
        let space = read_blob(&*storage, durable.space, "space map checksum")
            .and_then(|bytes| SpaceMap::decode(&bytes, durable.space.offset, durable.page_count))
            .map_err(in_checkpoint)?;
        let source = Arc::new(PageSource::new(
            Arc::clone(&storage),
            durable.page_count * PAGE_SIZE,
            durable.generation,
        )?);
        let store = Store {
            storage,
            source,
            header,
            durable,
            space: Some(space),
            poisoned: None,
            readers: None,
            paths: None,
            read_only: mode.read_only || salvage,
            covered_lsn: durable.wal_position,
            log_closed: false,
            log_epoch: durable.log_epoch,
            newer_slot_written: chosen.newer_slot_written,
        };
        Ok((store, catalog))
    }

    /// Whether the store refuses writes because it was opened read-only (or for salvage).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Checks all four superblock copies; returns the problems (certain damage) and notes (a
    /// copy that a crash during a superblock write may have torn, or that was damaged: the two
    /// cannot be told apart by the file alone, and the next checkpoints rewrite it).
    pub fn verify_superblocks(&self) -> Result<(Vec<Error>, Vec<String>)> {
        let copies = Copies::read(&*self.storage, self.header.file_id)?;
        let newest = copies
            .valid()
            .map(|superblock| superblock.generation)
            .max()
            .unwrap_or(0);
        let newest_slot = Superblock::slot(newest);
        let mut problems = Vec::new();
        let mut notes = Vec::new();
        for (slot, pair) in copies.0.iter().enumerate() {
            // Whether this slot held a complete superblock before its last write (generation
            // `newest - 2` in the newest slot, `newest - 1` in the other): then no crash can
            // leave a copy of it all zero.
            let written_before = if slot == newest_slot {
                newest >= 3
            } else {
                newest >= 2
            };
            let other_valid = pair.iter().any(|copy| matches!(copy, Copy::Valid(_)));
            for (index, copy) in pair.iter().enumerate() {
                let at = SUPERBLOCK_OFFSETS[slot] + SUPERBLOCK_COPY_OFFSETS[index];
                let place = format!("superblock slot {slot} copy {index} (byte {at})");
                let torn_or_damaged = |what: &str| {
                    format!(
                        "{place} {what}: a superblock write torn by a crash, or damage (the two \
                         cannot be told apart); the newest checkpoint opens from another copy and \
                         the next checkpoints rewrite this one"
                    )
                };
                match copy {
                    Copy::Valid(superblock) => {
                        if slot == newest_slot && superblock.generation != newest {
                            notes.push(torn_or_damaged(&format!(
                                "holds generation {} beside the newest, {newest}",
                                superblock.generation
                            )));
                        }
                    }
                    Copy::Inconsistent { error, .. } => {
                        problems.push(Error::corruption(
                            at,
                            CorruptionKind::Invariant(format!(
                                "{place} is sealed but inconsistent, so it was damaged after it \
                                 was written: {error}"
                            )),
                        ));
                    }
                    Copy::Unsealed => notes.push(torn_or_damaged("fails its checksum")),
                    Copy::Blank if index == 1 && other_valid => notes.push(format!(
                        "{place} is blank: a file written before superblocks had two copies, or \
                         damage; the next checkpoints rewrite it"
                    )),
                    Copy::Blank if written_before => problems.push(Error::corruption(
                        at,
                        CorruptionKind::Invariant(format!(
                            "{place} is zeroed although a complete superblock was written there \
                             (no crash does that)"
                        )),
                    )),
                    Copy::Blank => {}
                }
            }
        }
        Ok((problems, notes))
    }

    /// The read side, shared with every tree.
    pub fn source(&self) -> &Arc<PageSource> {
        &self.source
    }

    /// Whether, at open, the superblock slot the next generation goes to held written bytes
    /// that are no valid superblock: a superblock write torn by a crash, or a newer checkpoint
    /// damaged since. (Only the log tells which; open uses it to name the damage when the log
    /// is missing too.)
    pub fn newer_superblock_unreadable(&self) -> bool {
        self.newer_slot_written
    }

    /// The newest durable superblock.
    pub fn durable(&self) -> &Superblock {
        &self.durable
    }

    /// Sets the log position (LSN) the next checkpoint's superblock records as covered (every
    /// commit up to it is in the trees that checkpoint writes) and the log's current cycle
    /// (`Superblock::log_epoch`; docs/recovery.md).
    pub fn set_covered(&mut self, lsn: u64, log_epoch: u64) {
        debug_assert!(
            lsn >= self.durable.wal_position,
            "the covered LSN never goes back"
        );
        self.covered_lsn = lsn;
        self.log_epoch = log_epoch;
    }

    /// Whether the next checkpoint's superblock says the log is closed (only the checkpoint at
    /// close: see [`Superblock::log_closed`]).
    pub fn set_log_closed(&mut self, closed: bool) {
        self.log_closed = closed;
    }

    /// Makes durable whether the log is closed ([`Superblock::log_closed`]) when the newest
    /// superblock says otherwise: it is written again (next generation, same catalog, space map
    /// and covered LSN) with the flag, and synced. Before the first log record after an open
    /// (`false`), and at a close that has nothing to checkpoint (`true`: the caller knows the
    /// log holds nothing past the covered LSN). A no-op when the flag is already so.
    pub fn mark_log(&mut self, closed: bool) -> Result<()> {
        if self.durable.log_closed == closed {
            return Ok(());
        }
        self.check_writable()?;
        let superblock = Superblock {
            generation: self.durable.generation + 1,
            log_closed: closed,
            ..self.durable
        };
        let result = write_superblock(&*self.storage, &superblock);
        if let Err(error) = &result {
            self.poison(error, "checkpoint", FileRole::Database);
        }
        result?;
        self.source
            .publish_data_end(superblock.page_count * PAGE_SIZE, superblock.generation);
        self.durable_is(superblock);
        Ok(())
    }

    /// Tells `readers` of every durable superblock from now on.
    pub fn set_readers(&mut self, readers: Arc<crate::io::ReadersFile>) {
        self.readers = Some(readers);
    }

    /// The space map, loaded first if need be.
    pub fn space_map(&mut self) -> Result<&mut SpaceMap> {
        self.space()
    }

    fn durable_is(&mut self, superblock: Superblock) {
        self.durable = superblock;
        if let Some(readers) = &self.readers {
            readers.publish_generation(superblock.generation);
        }
    }

    /// Refuses writes after an I/O failure of unknown outcome.
    pub fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        if let Some(cause) = &self.poisoned {
            return Err(cause.refusal());
        }
        Ok(())
    }

    /// Marks the store as refusing writes until reopened (see the module docs), keeping the
    /// first cause: `error`, met while doing `during` on `file`. Later failures (often only
    /// consequences of the first) leave the cause as it is.
    pub fn poison(&mut self, error: &Error, during: &str, file: FileRole) {
        if self.poisoned.is_none() {
            let path = self.path_of(file);
            self.poisoned = Some(PoisonCause::of(error, during, file, path));
        }
    }

    /// Names the database file and its log, for the causes of [`Error::Poisoned`].
    pub fn name_files(&mut self, database: PathBuf, log: PathBuf) {
        self.paths = Some((database, log));
    }

    /// Whether the files were named ([`Store::name_files`]): the database was opened by path.
    pub fn is_named(&self) -> bool {
        self.paths.is_some()
    }

    fn path_of(&self, file: FileRole) -> Option<&Path> {
        let (database, log) = self.paths.as_ref()?;
        Some(match file {
            FileRole::Database => database,
            FileRole::Log => log,
        })
    }

    fn space(&mut self) -> Result<&mut SpaceMap> {
        if self.space.is_none() {
            let bytes = read_blob(&*self.storage, self.durable.space, "space map checksum")?;
            let map = SpaceMap::decode(&bytes, self.durable.space.offset, self.durable.page_count)?;
            self.space = Some(map);
        }
        // ok: set just above when it was None.
        self.space.as_mut().ok_or_else(space_not_loaded)
    }

    /// Makes every later allocation land at or above `page` (0: anywhere), until set again.
    /// `Db::compact` writes its first dense copy above the old version this way, so that once
    /// the old version is freed the low end of the file is one free run that a second copy
    /// fills, and the first copy becomes a free tail to cut.
    pub fn set_allocation_floor(&mut self, page: u64) -> Result<()> {
        self.space()?.set_floor(page);
        Ok(())
    }

    /// The pages a dense copy takes: `write` writes it through a writer that only counts
    /// ([`PageWriter::dry_run`]), allocating above the file in a copy of the space map, as
    /// `Db::compact`'s first copy does. Nothing is written and the space map is unchanged.
    pub fn dense_copy_pages(
        &mut self,
        write: impl FnOnce(&mut PageWriter<'_>) -> Result<()>,
    ) -> Result<u64> {
        let mut space = self.space()?.clone();
        space.set_floor(space.page_count());
        let generation = self.durable.generation + 1;
        let mut writer = PageWriter::dry_run(&mut space, &*self.storage, &self.source, generation);
        write(&mut writer)?;
        Ok(writer.finish()?.pages)
    }

    /// The file's pages now, and the pages it would have after `Db::compact` wrote a dense
    /// copy of `dense_pages`: the reserved pages, the copy, and the current catalog and space
    /// map twice (the last checkpoint's blobs, and the one's before, which stay until the next
    /// checkpoint; a smaller file needs no larger space map).
    pub fn compaction_estimate(&mut self, dense_pages: u64) -> Result<(u64, u64)> {
        let space = self.space()?;
        let mut estimate = dense_pages;
        for &entry in space.entries() {
            estimate += match entry {
                space::RESERVED => 1,
                space::META => 2,
                _ => 0,
            };
        }
        Ok((space.page_count(), estimate))
    }

    /// The space map's entry for every page (loads it on first use).
    pub fn space_entries(&mut self) -> Result<Vec<u16>> {
        Ok(self.space()?.entries().to_vec())
    }

    /// Pages by use (loads the space map on first use).
    pub fn usage(&mut self) -> Result<SpaceUsage> {
        let space = self.space()?;
        Ok(SpaceUsage {
            page_count: space.page_count(),
            free_pages: space.free_pages(),
            pending_pages: space.pending_pages(),
        })
    }

    /// Step 1 of a checkpoint or bulk load: a sink for node images (see the module docs).
    /// `pinned_epoch_min` is the smallest epoch of a live snapshot.
    pub fn begin_checkpoint(&mut self, pinned_epoch_min: Option<u64>) -> Result<PageWriter<'_>> {
        self.check_writable()?;
        let generation = self.durable.generation + 1;
        if self.space.is_none() {
            self.space()?;
        }
        let storage = &*self.storage;
        let source = &*self.source;
        let space = self.space.as_mut().ok_or_else(space_not_loaded)?;
        space.begin_checkpoint(pinned_epoch_min);
        Ok(PageWriter::new(space, storage, source, generation))
    }

    /// A sink for a bulk load, without promoting pending pages (a checkpoint follows it).
    pub fn begin_bulk(&mut self) -> Result<PageWriter<'_>> {
        self.check_writable()?;
        let generation = self.durable.generation + 1;
        if self.space.is_none() {
            self.space()?;
        }
        let storage = &*self.storage;
        let source = &*self.source;
        let space = self.space.as_mut().ok_or_else(space_not_loaded)?;
        Ok(PageWriter::new(space, storage, source, generation))
    }

    /// Step 3 of a checkpoint: releases `released` node offsets with `epoch`, writes the catalog
    /// and space blobs, syncs, writes the next superblock, syncs. Poisons the store on failure.
    pub fn commit(
        &mut self,
        catalog: &[u8],
        released: impl IntoIterator<Item = u64>,
        epoch: u64,
    ) -> Result<Superblock> {
        let prepared = self.commit_prepare(catalog, released, epoch)?;
        self.commit_sync(Error::io("sync the checkpoint's pages"))?;
        self.commit_write_superblock(&prepared)?;
        self.commit_sync(Error::io("sync the superblock"))?;
        self.commit_finish(prepared)
    }

    /// The first part of [`Store::commit`], for a caller that syncs without holding the lock
    /// that guards the store (`Store::storage` then `sync`, then [`Store::commit_failed`] on an
    /// error): releases the nodes, writes both blobs and extends the file; nothing synced.
    pub fn commit_prepare(
        &mut self,
        catalog: &[u8],
        released: impl IntoIterator<Item = u64>,
        epoch: u64,
    ) -> Result<PreparedCommit> {
        self.check_writable()?;
        let result = self.prepare_inner(catalog, released, epoch);
        if let Err(error) = &result {
            self.poison(error, "checkpoint", FileRole::Database);
        }
        result
    }

    fn commit_sync(&mut self, what: impl FnOnce(std::io::Error) -> Error) -> Result<()> {
        let result = self.storage.sync().map_err(what);
        if let Err(error) = &result {
            self.poison(error, "checkpoint", FileRole::Database);
        }
        result
    }

    /// A sync of a commit's writes failed where the caller synced (`error`): the store refuses
    /// writes.
    pub fn commit_failed(&mut self, error: &Error) {
        self.poison(error, "checkpoint", FileRole::Database);
    }

    /// The file's storage (for the syncs of a commit made without the store's lock).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Writes the prepared superblock into its slot (after the blobs and pages are synced);
    /// not synced.
    pub fn commit_write_superblock(&mut self, prepared: &PreparedCommit) -> Result<()> {
        let result = write_superblock_unsynced(&*self.storage, &prepared.superblock);
        if let Err(error) = &result {
            self.poison(error, "checkpoint", FileRole::Database);
        }
        result
    }

    /// The last part of a commit, once the superblock is synced: the file may shrink, readers
    /// may read up to the new data end, and the superblock is the durable one.
    pub fn commit_finish(&mut self, prepared: PreparedCommit) -> Result<Superblock> {
        let PreparedCommit {
            superblock,
            file_len,
        } = prepared;
        let page_count = superblock.page_count;
        // Only now may the file shrink: the previous superblock's page count no longer matters.
        // No sync: a crash before the next one leaves a longer file, which is harmless.
        if file_len > page_count * PAGE_SIZE {
            if let Err(error) = self.storage.set_len(page_count * PAGE_SIZE) {
                let error = Error::io("shrink the file")(error);
                self.poison(&error, "shrink the file", FileRole::Database);
                return Err(error);
            }
        }
        self.source
            .publish_data_end(page_count * PAGE_SIZE, superblock.generation);
        self.durable_is(superblock);
        Ok(superblock)
    }

    fn prepare_inner(
        &mut self,
        catalog: &[u8],
        released: impl IntoIterator<Item = u64>,
        epoch: u64,
    ) -> Result<PreparedCommit> {
        let previous = self.durable;
        let space = self.space()?;
        for offset in released {
            space.release_node(offset, epoch)?;
        }
        for blob in [previous.catalog, previous.space] {
            if blob.offset != 0 {
                space.release_meta(blob.offset / PAGE_SIZE, blob.page_count());
            }
        }
        space.trim_free_tail();
        let catalog_pages = (catalog.len() as u64).div_ceil(PAGE_SIZE).max(1);
        let catalog_first = space.allocate(catalog_pages, 0);
        space.add_meta(catalog_first, catalog_pages);
        let (space_first, space_bytes) = allocate_space_blob(space);
        let page_count = space.page_count();
        let catalog_ref = BlobRef {
            offset: catalog_first * PAGE_SIZE,
            len: catalog.len() as u64,
            crc: crc32c::crc32c(catalog),
        };
        let space_ref = BlobRef {
            offset: space_first * PAGE_SIZE,
            len: space_bytes.len() as u64,
            crc: crc32c::crc32c(&space_bytes),
        };
        let storage = &*self.storage;
        storage
            .write_at(catalog_ref.offset, catalog)
            .map_err(Error::io("write the catalog"))?;
        storage
            .write_at(space_ref.offset, &space_bytes)
            .map_err(Error::io("write the space map"))?;
        let file_len = storage.len().map_err(Error::io("read the file length"))?;
        if file_len < page_count * PAGE_SIZE {
            storage
                .set_len(page_count * PAGE_SIZE)
                .map_err(Error::io("extend the file"))?;
        }
        let superblock = Superblock {
            file_id: self.header.file_id,
            generation: previous.generation + 1,
            page_count,
            catalog: catalog_ref,
            space: space_ref,
            wal_position: self.covered_lsn,
            log_closed: self.log_closed,
            log_epoch: self.log_epoch,
        };
        Ok(PreparedCommit {
            superblock,
            file_len,
        })
    }

    /// Figures about the file.
    pub fn stats(&self) -> Result<StoreStats> {
        Ok(StoreStats {
            file_bytes: self
                .storage
                .len()
                .map_err(Error::io("read the file length"))?,
            page_count: self.durable.page_count,
            free_pages: self.space.as_ref().map(SpaceMap::free_pages),
            pending_pages: self.space.as_ref().map(SpaceMap::pending_pages),
            generation: self.durable.generation,
        })
    }

    /// Pages freed by checkpoints that a snapshot pinning `epoch` keeps from reuse (0 while
    /// the space map is not loaded: no checkpoint of this process released any).
    pub fn pages_pinned_at(&self, epoch: u64) -> u64 {
        self.space
            .as_ref()
            .map_or(0, |space| space.pages_pinned_at(epoch))
    }

    /// Checks every page the space map says holds nodes, and both metadata blobs; returns the
    /// problems found (empty = fine).
    pub fn verify_pages(&mut self) -> Result<Vec<Error>> {
        let mut problems = Vec::new();
        for blob in [self.durable.catalog, self.durable.space] {
            if let Err(error) = read_blob(&*self.storage, blob, "metadata checksum") {
                problems.push(error);
            }
        }
        let entries = match self.space() {
            Ok(space) => space.entries().to_vec(),
            Err(error) => {
                problems.push(error);
                return Ok(problems);
            }
        };
        for (page, &entry) in entries.iter().enumerate() {
            let holds_nodes = entry != space::FREE && entry <= space::NODES_PER_PAGE_MAX;
            if page as u64 >= format::DATA_PAGE_FIRST && holds_nodes {
                if let Err(error) = self.source.check_page(page as u64) {
                    problems.push(error);
                }
            }
        }
        Ok(problems)
    }
}

/// What the first bytes of a file that is no artdb database look like (`None`: they start like
/// one, so any further problem is damage).
fn not_a_database(head: &[u8]) -> Option<&'static str> {
    const BITABLE_MAGIC: &[u8] = b"artdbBT\0";
    if head.is_empty() {
        return Some("empty");
    }
    let magic = &format::HEADER_MAGIC[..head.len().min(format::HEADER_MAGIC.len())];
    if head.starts_with(magic) {
        return None;
    }
    if head.starts_with(BITABLE_MAGIC) {
        return Some(crate::error::BITABLE);
    }
    let text = head
        .iter()
        .all(|&byte| byte.is_ascii_graphic() || byte.is_ascii_whitespace() || byte >= 0x80);
    // Valid UTF-8 but perhaps for a character cut at the end of the sample.
    let utf8 = std::str::from_utf8(head).map_or_else(|error| error.error_len().is_none(), |_| true);
    if text && utf8 {
        return Some("text");
    }
    Some("in another format (its first bytes are not artdb's)")
}

/// Allocates the space blob's pages; the blob describes its own pages, so its size is computed
/// after its allocation and the allocation retried if the map grew past it.
fn allocate_space_blob(space: &mut SpaceMap) -> (u64, Vec<u8>) {
    let mut pages = SpaceMap::blob_len(space.page_count() + 1).div_ceil(PAGE_SIZE);
    loop {
        let first = space.allocate(pages, 0);
        space.add_meta(first, pages);
        let bytes = space.encode();
        if bytes.len() as u64 <= pages * PAGE_SIZE {
            return (first, bytes);
        }
        space.unallocate(first..first + pages);
        pages = SpaceMap::blob_len(space.page_count() + pages + 1).div_ceil(PAGE_SIZE);
    }
}

fn read_blob(storage: &dyn Storage, blob: BlobRef, what: &'static str) -> Result<Vec<u8>> {
    let mut bytes = vec![0u8; blob.len as usize];
    storage
        .read_at(blob.offset, &mut bytes)
        .map_err(Error::io("read a metadata blob"))?;
    if crc32c::crc32c(&bytes) != blob.crc {
        return Err(Error::corruption(
            blob.offset,
            CorruptionKind::Metadata(what),
        ));
    }
    Ok(bytes)
}

/// A checkpoint's commit between [`Store::commit_prepare`] and [`Store::commit_finish`].
#[derive(Debug)]
pub struct PreparedCommit {
    superblock: Superblock,
    /// The file's length before the commit (it shrinks in `commit_finish` if longer).
    file_len: u64,
}

/// Writes `superblock` (both copies) into its slot and syncs.
fn write_superblock(storage: &dyn Storage, superblock: &Superblock) -> Result<()> {
    write_superblock_unsynced(storage, superblock)?;
    storage.sync().map_err(Error::io("sync the superblock"))
}

/// Writes `superblock` (both copies) into its slot, without a sync.
fn write_superblock_unsynced(storage: &dyn Storage, superblock: &Superblock) -> Result<()> {
    let slot = Superblock::slot(superblock.generation);
    // Both copies in one write (the bytes between them are zero anyway): one call, so a
    // failed write leaves no copy in the page cache; a crash may still tear it anywhere.
    let bytes = superblock.encode();
    let mut both = vec![0u8; (SUPERBLOCK_COPY_OFFSETS[1] as usize) + SUPERBLOCK_LEN];
    for copy in SUPERBLOCK_COPY_OFFSETS {
        both[copy as usize..copy as usize + SUPERBLOCK_LEN].copy_from_slice(&bytes);
    }
    storage
        .write_at(SUPERBLOCK_OFFSETS[slot], &both)
        .map_err(Error::io("write the superblock"))
}
