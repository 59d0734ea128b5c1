//! state_machine: openraft's `RaftStateMachine` on the node's database: the client's map in the
//! data table (`sm_data`, or the `sm_data.<generation>` an install loaded), the applied id,
//! membership, data table name and snapshot in `sm_meta`, the snapshot's bytes in a file of the
//! node's [`SnapshotDir`]; and [`Reader`], through which every read of the node's state is an
//! artdb read.
//!
//! Transitions, each one transaction (invariants 4 and 5 of the crate docs):
//! - `apply`: the entries' effects, the last applied id and the membership (from the last
//!   membership entry among them). Committed [`Durability::NoSync`]: the entries applied are in
//!   the raft log already, durable, and the engine's log is one sequence, so the next `Sync`
//!   commit (an append, a vote, a purge) makes this one durable too. A purge is such a commit
//!   and happens only up to a snapshot, so no entry leaves the log before its effects are
//!   durable; a power loss before that only makes openraft apply the entries again.
//! - `build_snapshot`: streams one artdb read snapshot (applied id, membership, data together,
//!   while applies go on) into a new durable file, then records it unless a newer snapshot is
//!   recorded already (a snapshot installed while this one was being built wins).
//! - `install_snapshot`: bulk loads the received file's pairs into a new data table as they
//!   are decoded and checked (a damaged file abandons the load: nothing changes), makes the file
//!   the node's snapshot file, then in one `Sync` transaction names the new data table, sets the
//!   applied id, the membership and the snapshot, and drops the old data table. Memory stays
//!   bounded by the load's buffers whatever the snapshot's size.
//!
//! Every read and every apply finds the data table's name in `sm_meta` in its own transaction,
//! so it sees the table of its own snapshot, before or after an install, never a dropped one.

use crate::codec::{decode, encode, io_error, storage_error, RaftStoreError};
use crate::command::Response;
use crate::snapshot::{self, Decoder};
use crate::snapshot_dir::{SnapshotDir, BUFFER_BYTES};
use crate::{NodeId, TypeConfig, TABLE_SM_DATA, TABLE_SM_META, TABLE_SM_SNAPSHOT};
use artdb::{Db, Durability, ReadTxn, Transaction, WriteOptions};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend,
    RaftSnapshotBuilder, SnapshotMeta, StorageError, StoredMembership,
};
use std::io::{BufReader, Seek, SeekFrom, Write};
use std::ops::Bound;
use std::sync::Arc;

const KEY_APPLIED: &[u8] = b"applied";
const KEY_MEMBERSHIP: &[u8] = b"membership";
const KEY_SNAPSHOT: &[u8] = b"snapshot";
/// The name of the stored snapshot's file in the snapshot directory (UTF-8).
const KEY_SNAPSHOT_FILE: &[u8] = b"snapshot_file";
/// The name of the data table (UTF-8); absent: [`TABLE_SM_DATA`].
const KEY_DATA_TABLE: &[u8] = b"data_table";

/// Attempts of a state machine transaction that conflicts with a concurrent one.
const CONFLICT_ATTEMPTS_MAX: u32 = 16;

/// Attempts to open the recorded snapshot file, which a concurrent build may replace (and
/// remove) between the read of its name and the open.
const OPEN_ATTEMPTS_MAX: u32 = 8;

type StoreResult<T> = Result<T, StorageError<NodeId>>;
type Membership = StoredMembership<NodeId, BasicNode>;
type Meta = SnapshotMeta<NodeId, BasicNode>;

/// The state machine of one node (see the module docs).
pub struct StateMachine {
    db: Arc<Db>,
    dir: Arc<SnapshotDir>,
}

/// Reads of a node's state machine, each from one artdb read snapshot. Cloning shares the db.
#[derive(Clone)]
pub struct Reader {
    db: Arc<Db>,
}

/// Key-value pairs in key order.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// A state machine's whole state as of one read snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The last applied log id.
    pub applied: Option<LogId<NodeId>>,
    /// The pairs of the data table in key order.
    pub pairs: Pairs,
}

fn sm_error(verb: ErrorVerb) -> impl Fn(RaftStoreError) -> StorageError<NodeId> {
    move |e| storage_error(ErrorSubject::StateMachine, verb, e)
}

fn read_meta<T: serde::de::DeserializeOwned>(
    read: &ReadTxn,
    key: &[u8],
) -> Result<Option<T>, RaftStoreError> {
    read.get(TABLE_SM_META, key)?
        .map(|bytes| decode(TABLE_SM_META, bytes))
        .transpose()
}

/// A name stored in `sm_meta` (a table's or a file's).
fn name_of(bytes: &[u8]) -> Result<&str, RaftStoreError> {
    std::str::from_utf8(bytes).map_err(|_| RaftStoreError::Decode {
        table: TABLE_SM_META,
        reason: "a stored name is not UTF-8".to_string(),
    })
}

/// The data table's name, from `sm_meta`'s `data_table` value.
fn data_table_of(stored: Option<&[u8]>) -> Result<&str, RaftStoreError> {
    stored.map_or(Ok(TABLE_SM_DATA), name_of)
}

/// The data table of `read`'s snapshot.
fn data_table(read: &ReadTxn) -> Result<&str, RaftStoreError> {
    data_table_of(read.get(TABLE_SM_META, KEY_DATA_TABLE)?)
}

/// The generation in a data table's name (`sm_data` is generation 0).
fn generation_of_table(name: &str) -> Option<u64> {
    if name == TABLE_SM_DATA {
        return Some(0);
    }
    name.strip_prefix(TABLE_SM_DATA)?
        .strip_prefix('.')?
        .parse()
        .ok()
}

fn applied_of(read: &ReadTxn) -> Result<(Option<LogId<NodeId>>, Membership), RaftStoreError> {
    let applied: Option<Option<LogId<NodeId>>> = read_meta(read, KEY_APPLIED)?;
    let membership: Option<Membership> = read_meta(read, KEY_MEMBERSHIP)?;
    Ok((applied.flatten(), membership.unwrap_or_default()))
}

/// Runs `body` in a transaction of `durability` and commits it, again on a conflict with a
/// concurrent one (the snapshot builder and an install both write the stored snapshot), up to
/// [`CONFLICT_ATTEMPTS_MAX`] attempts.
fn transact<T>(
    db: &Db,
    durability: Durability,
    mut body: impl FnMut(&mut Transaction) -> Result<T, RaftStoreError>,
) -> Result<T, RaftStoreError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut txn = db.begin_write(WriteOptions::default().durability(durability))?;
        let value = body(&mut txn)?;
        match txn.commit() {
            Ok(_) => return Ok(value),
            Err(artdb::Error::Conflict { .. }) if attempt < CONFLICT_ATTEMPTS_MAX => continue,
            Err(error) => return Err(error.into()),
        }
    }
}

/// The stored snapshot file's name in `txn`, if any.
fn snapshot_file_in(txn: &Transaction) -> Result<Option<String>, RaftStoreError> {
    txn.get(TABLE_SM_META, KEY_SNAPSHOT_FILE)?
        .map(|bytes| name_of(bytes).map(str::to_string))
        .transpose()
}

/// The snapshot file's id for openraft: its last log id, or `empty`.
fn snapshot_id(last_log_id: &Option<LogId<NodeId>>) -> String {
    match last_log_id {
        Some(id) => format!(
            "{}-{}-{}",
            id.leader_id.term, id.leader_id.node_id, id.index
        ),
        None => "empty".to_string(),
    }
}

impl StateMachine {
    /// The state machine on `db`, whose raft tables exist, with its snapshot files in `dir`.
    /// Brings a database of the earlier layout (snapshot bytes in `sm_snapshot`) to this one,
    /// and removes what a crash left half made: data tables and snapshot files the database
    /// does not name.
    pub fn open(db: Arc<Db>, dir: SnapshotDir) -> Result<StateMachine, RaftStoreError> {
        let dir = Arc::new(dir);
        let machine = StateMachine { db, dir };
        machine.migrate_stored_snapshot()?;
        machine.remove_leftovers()?;
        Ok(machine)
    }

    /// A reader of this state machine's tables.
    pub fn reader(&self) -> Reader {
        Reader {
            db: Arc::clone(&self.db),
        }
    }

    /// The database this state machine writes.
    pub fn db(&self) -> &Arc<Db> {
        &self.db
    }

    /// The directory of this node's snapshot files.
    pub fn snapshot_dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// The earlier layout kept the snapshot's bytes in chunks in `sm_snapshot`: they become a
    /// file, and the table goes, in one transaction after the file is durable.
    fn migrate_stored_snapshot(&self) -> Result<(), RaftStoreError> {
        if !self
            .db
            .table_names()
            .iter()
            .any(|name| name == TABLE_SM_SNAPSHOT)
        {
            return Ok(());
        }
        let read = self.db.read();
        let needs_file = read.get(TABLE_SM_META, KEY_SNAPSHOT)?.is_some()
            && read.get(TABLE_SM_META, KEY_SNAPSHOT_FILE)?.is_none();
        let file = if needs_file {
            let generation = self.dir.next_generation();
            Some(self.dir.write_new(generation, |out| {
                for pair in read.table(TABLE_SM_SNAPSHOT)?.iter() {
                    out.write_all(pair?.1)
                        .map_err(io_error("writing the migrated snapshot"))?;
                }
                Ok(())
            })?)
        } else {
            None
        };
        drop(read);
        transact(&self.db, Durability::Sync, |txn| {
            if let Some(file) = &file {
                txn.insert(TABLE_SM_META, KEY_SNAPSHOT_FILE, file.as_bytes())?;
            }
            Ok(txn.drop_table(TABLE_SM_SNAPSHOT)?)
        })
    }

    /// Drops the data tables and removes the snapshot files the database does not name.
    fn remove_leftovers(&self) -> Result<(), RaftStoreError> {
        let (table, file) = {
            let read = self.db.read();
            let table = data_table(&read)?.to_string();
            let file = read
                .get(TABLE_SM_META, KEY_SNAPSHOT_FILE)?
                .map(|bytes| name_of(bytes).map(str::to_string))
                .transpose()?;
            (table, file)
        };
        self.dir.remove_all_but(file.as_deref())?;
        let orphans: Vec<String> = self
            .db
            .table_names()
            .into_iter()
            .filter(|name| *name != table && generation_of_table(name).is_some_and(|g| g > 0))
            .collect();
        if !orphans.is_empty() {
            transact(&self.db, Durability::Sync, |txn| {
                for name in &orphans {
                    txn.drop_table(name)?;
                }
                Ok(())
            })?;
        }
        if let Some(generation) = generation_of_table(&table) {
            self.dir.start_above(generation);
        }
        if table == TABLE_SM_DATA {
            self.db.create_table_if_missing(TABLE_SM_DATA)?;
        }
        Ok(())
    }

    fn apply_entries(
        &self,
        entries: &[Entry<TypeConfig>],
    ) -> Result<Vec<Response>, RaftStoreError> {
        let Some(last) = entries.last() else {
            return Ok(Vec::new());
        };
        let applied = encode(TABLE_SM_META, &Some(last.log_id))?;
        let membership = entries.iter().rev().find_map(|entry| match &entry.payload {
            EntryPayload::Membership(membership) => Some(StoredMembership::new(
                Some(entry.log_id),
                membership.clone(),
            )),
            _ => None,
        });
        let membership = membership
            .map(|membership| encode(TABLE_SM_META, &membership))
            .transpose()?;
        let options = WriteOptions::default().durability(Durability::NoSync);
        let mut bad_name = None;
        let responses = self.db.transact_with(options, |txn| {
            let table = match data_table_of(txn.get(TABLE_SM_META, KEY_DATA_TABLE)?) {
                Ok(table) => table.to_string(),
                Err(error) => {
                    bad_name = Some(error);
                    return Ok(Vec::new());
                }
            };
            let mut responses = Vec::with_capacity(entries.len());
            for entry in entries {
                responses.push(match &entry.payload {
                    EntryPayload::Normal(command) => command.apply(txn, &table)?,
                    EntryPayload::Blank | EntryPayload::Membership(_) => Response::Applied,
                });
            }
            txn.insert(TABLE_SM_META, KEY_APPLIED, &applied)?;
            if let Some(membership) = &membership {
                txn.insert(TABLE_SM_META, KEY_MEMBERSHIP, membership)?;
            }
            Ok(responses)
        });
        if let Some(error) = bad_name {
            return Err(error);
        }
        Ok(responses?)
    }

    fn install(&self, meta: &Meta, mut file: std::fs::File) -> Result<(), RaftStoreError> {
        let generation = self.dir.next_generation();
        let table = format!("{TABLE_SM_DATA}.{generation}");
        file.seek(SeekFrom::Start(0))
            .map_err(io_error("reading a received snapshot"))?;
        let decoder = Decoder::new(BufReader::with_capacity(BUFFER_BYTES, &file))?;
        self.db.bulk_load_new_table_try(&table, decoder)?;
        let name = match self.dir.adopt_received(&mut file, generation) {
            Ok(name) => name,
            Err(error) => {
                // Nothing names the new table yet; the next open would drop it too.
                let _ = self.db.drop_table(&table);
                return Err(error);
            }
        };
        // A failed switch may still have committed (its sync failed after the record reached
        // the log): the table and the file stay, and the next open keeps or removes them by
        // what the database names.
        if let Some(previous) = self.switch_to(meta, &table, &name)? {
            self.dir.remove(&previous);
        }
        Ok(())
    }

    /// The install's one transaction (see the module docs); returns the replaced snapshot file.
    fn switch_to(
        &self,
        meta: &Meta,
        table: &str,
        file: &str,
    ) -> Result<Option<String>, RaftStoreError> {
        let meta_bytes = encode(TABLE_SM_META, meta)?;
        let applied = encode(TABLE_SM_META, &meta.last_log_id)?;
        let membership = encode(TABLE_SM_META, &meta.last_membership)?;
        transact(&self.db, Durability::Sync, |txn| {
            let old_table = data_table_of(txn.get(TABLE_SM_META, KEY_DATA_TABLE)?)?.to_string();
            let old_file = snapshot_file_in(txn)?;
            txn.insert(TABLE_SM_META, KEY_DATA_TABLE, table.as_bytes())?;
            txn.insert(TABLE_SM_META, KEY_APPLIED, &applied)?;
            txn.insert(TABLE_SM_META, KEY_MEMBERSHIP, &membership)?;
            txn.insert(TABLE_SM_META, KEY_SNAPSHOT, &meta_bytes)?;
            txn.insert(TABLE_SM_META, KEY_SNAPSHOT_FILE, file.as_bytes())?;
            if txn.has_table(&old_table) {
                txn.drop_table(&old_table)?;
            }
            Ok(old_file)
        })
    }

    fn current_snapshot(&self) -> Result<Option<Snapshot<TypeConfig>>, RaftStoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (meta, name) = {
                let read = self.db.read();
                let Some(meta) = read_meta::<Meta>(&read, KEY_SNAPSHOT)? else {
                    return Ok(None);
                };
                let name = read
                    .get(TABLE_SM_META, KEY_SNAPSHOT_FILE)?
                    .map(|bytes| name_of(bytes).map(str::to_string))
                    .transpose()?
                    .ok_or_else(|| RaftStoreError::Decode {
                        table: TABLE_SM_META,
                        reason: "a snapshot is recorded without its file".to_string(),
                    })?;
                (meta, name)
            };
            match self.dir.open_file(&name) {
                Ok(file) => {
                    return Ok(Some(Snapshot {
                        meta,
                        snapshot: Box::new(tokio::fs::File::from_std(file)),
                    }))
                }
                Err(error)
                    if error.kind() == std::io::ErrorKind::NotFound
                        && attempt < OPEN_ATTEMPTS_MAX => {}
                Err(error) => {
                    return Err(RaftStoreError::Io {
                        what: format!(
                            "opening the snapshot file {}",
                            self.dir.path().join(&name).display()
                        ),
                        error,
                    })
                }
            }
        }
    }
}

impl Reader {
    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, RaftStoreError> {
        let read = self.db.read();
        Ok(read.get(data_table(&read)?, key)?.map(<[u8]>::to_vec))
    }

    /// Up to `limit` pairs from `start` to `end`, in key order.
    pub fn range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
    ) -> Result<Pairs, RaftStoreError> {
        let read = self.db.read();
        let table = read.table(data_table(&read)?)?;
        let mut pairs = Vec::new();
        for pair in table.range::<[u8], _>((start, end)).take(limit) {
            let (key, value) = pair?;
            pairs.push((key, value.to_vec()));
        }
        Ok(pairs)
    }

    /// Up to `limit` pairs whose keys start with `prefix`, in key order.
    pub fn prefix(&self, prefix: &[u8], limit: usize) -> Result<Pairs, RaftStoreError> {
        let read = self.db.read();
        let table = read.table(data_table(&read)?)?;
        let mut pairs = Vec::new();
        for pair in table.prefix(prefix).take(limit) {
            let (key, value) = pair?;
            pairs.push((key, value.to_vec()));
        }
        Ok(pairs)
    }

    /// The last applied log id.
    pub fn applied(&self) -> Result<Option<LogId<NodeId>>, RaftStoreError> {
        Ok(applied_of(&self.db.read())?.0)
    }

    /// The whole state (applied id and every pair) from one read snapshot.
    pub fn state(&self) -> Result<State, RaftStoreError> {
        let read = self.db.read();
        let applied = applied_of(&read)?.0;
        let mut pairs = Vec::new();
        for pair in read.table(data_table(&read)?)?.iter() {
            let (key, value) = pair?;
            pairs.push((key, value.to_vec()));
        }
        Ok(State { applied, pairs })
    }
}

/// Builds snapshots of a state machine; runs beside it (see the module docs).
pub struct SnapshotBuilder {
    db: Arc<Db>,
    dir: Arc<SnapshotDir>,
}

/// What recording a built snapshot did.
enum Recorded {
    /// It became the stored snapshot, replacing this file (if any).
    Replaced(Option<String>),
    /// A newer snapshot was stored already.
    Superseded,
}

impl SnapshotBuilder {
    fn build(&self) -> Result<Snapshot<TypeConfig>, RaftStoreError> {
        let read = self.db.read();
        let (last_log_id, last_membership) = applied_of(&read)?;
        let generation = self.dir.next_generation();
        let name = self.dir.write_new(generation, |out| {
            let mut encoder = snapshot::Encoder::to_writer(out)?;
            for pair in read.table(data_table(&read)?)?.iter() {
                let (key, value) = pair?;
                encoder.push(&key, value)?;
            }
            encoder.finish().map(|_| ())
        })?;
        drop(read);
        let meta = Meta {
            snapshot_id: snapshot_id(&last_log_id),
            last_log_id,
            last_membership,
        };
        let file = match self.dir.open_file(&name) {
            Ok(file) => file,
            Err(error) => {
                self.dir.remove(&name);
                return Err(RaftStoreError::Io {
                    what: format!(
                        "opening the snapshot file {}",
                        self.dir.path().join(&name).display()
                    ),
                    error,
                });
            }
        };
        // A failed record may still have committed (see `install`): the file stays, and the
        // next open keeps or removes it by what the database names.
        let recorded = self.record(&meta, &name)?;
        // The open file stays readable after its name is removed.
        match recorded {
            Recorded::Replaced(Some(previous)) => self.dir.remove(&previous),
            Recorded::Replaced(None) => {}
            Recorded::Superseded => self.dir.remove(&name),
        }
        Ok(Snapshot {
            meta,
            snapshot: Box::new(tokio::fs::File::from_std(file)),
        })
    }

    fn record(&self, meta: &Meta, name: &str) -> Result<Recorded, RaftStoreError> {
        let meta_bytes = encode(TABLE_SM_META, meta)?;
        transact(&self.db, Durability::Sync, |txn| {
            let stored: Option<Meta> = txn
                .get(TABLE_SM_META, KEY_SNAPSHOT)?
                .map(|bytes| decode(TABLE_SM_META, bytes))
                .transpose()?;
            if stored.is_some_and(|stored| stored.last_log_id >= meta.last_log_id) {
                return Ok(Recorded::Superseded);
            }
            let previous = snapshot_file_in(txn)?;
            txn.insert(TABLE_SM_META, KEY_SNAPSHOT, &meta_bytes)?;
            txn.insert(TABLE_SM_META, KEY_SNAPSHOT_FILE, name.as_bytes())?;
            Ok(Recorded::Replaced(previous))
        })
    }
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> StoreResult<Snapshot<TypeConfig>> {
        self.build()
            .map_err(|e| storage_error(ErrorSubject::Snapshot(None), ErrorVerb::Write, e))
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> StoreResult<(Option<LogId<NodeId>>, Membership)> {
        applied_of(&self.db.read()).map_err(sm_error(ErrorVerb::Read))
    }

    async fn apply<I>(&mut self, entries: I) -> StoreResult<Vec<Response>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        self.apply_entries(&entries)
            .map_err(|e| match entries.last() {
                Some(last) => storage_error(ErrorSubject::Apply(last.log_id), ErrorVerb::Write, e),
                None => storage_error(ErrorSubject::StateMachine, ErrorVerb::Write, e),
            })
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder {
        SnapshotBuilder {
            db: Arc::clone(&self.db),
            dir: Arc::clone(&self.dir),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> StoreResult<Box<tokio::fs::File>> {
        let file = self
            .dir
            .begin_receiving()
            .map_err(|e| storage_error(ErrorSubject::Snapshot(None), ErrorVerb::Write, e))?;
        Ok(Box::new(tokio::fs::File::from_std(file)))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<tokio::fs::File>,
    ) -> StoreResult<()> {
        let file = snapshot.into_std().await;
        self.install(meta, file).map_err(|e| {
            storage_error(
                ErrorSubject::Snapshot(Some(meta.signature())),
                ErrorVerb::Write,
                e,
            )
        })
    }

    async fn get_current_snapshot(&mut self) -> StoreResult<Option<Snapshot<TypeConfig>>> {
        self.current_snapshot().map_err(sm_error(ErrorVerb::Read))
    }
}
