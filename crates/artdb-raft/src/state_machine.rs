//! state_machine: openraft's `RaftStateMachine` on the node's database: the client's map in
//! `sm_data`, the applied id and membership in `sm_meta`, the last snapshot in `sm_snapshot`;
//! and [`Reader`], through which every read of the node's state is an artdb read.
//!
//! Transitions, each one transaction (invariants 4 and 5 of the crate docs):
//! - `apply`: the entries' effects, the last applied id and the membership (from the last
//!   membership entry among them). Committed [`Durability::NoSync`]: the entries applied are in
//!   the raft log already, durable, and the engine's log is one sequence, so the next `Sync`
//!   commit (an append, a vote, a purge) makes this one durable too. A purge is such a commit
//!   and happens only up to a snapshot, so no entry leaves the log before its effects are
//!   durable; a power loss before that only makes openraft apply the entries again.
//! - `build_snapshot`: reads one artdb read snapshot (applied id, membership, data together,
//!   while applies go on), then stores the bytes unless a newer snapshot is stored already (a
//!   snapshot installed while this one was being built wins).
//! - `install_snapshot`: checks the bytes whole first, then in one `Sync` transaction replaces
//!   `sm_data`, the applied id, the membership and the stored snapshot.

use crate::codec::{decode, encode, storage_error, RaftStoreError};
use crate::command::Response;
use crate::snapshot;
use crate::{NodeId, TypeConfig, TABLE_SM_DATA, TABLE_SM_META, TABLE_SM_SNAPSHOT};
use artdb::{Db, Durability, ReadTxn, Transaction, WriteOptions};
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    BasicNode, Entry, EntryPayload, ErrorSubject, ErrorVerb, LogId, OptionalSend,
    RaftSnapshotBuilder, SnapshotMeta, StorageError, StoredMembership,
};
use std::io::Cursor;
use std::ops::Bound;
use std::sync::Arc;

const KEY_APPLIED: &[u8] = b"applied";
const KEY_MEMBERSHIP: &[u8] = b"membership";
const KEY_SNAPSHOT: &[u8] = b"snapshot";

/// Bytes of one stored snapshot chunk: small enough that no chunk is near the engine's value
/// limit, big enough that a snapshot of a large map is few records.
pub const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;

/// Attempts of a state machine transaction that conflicts with a concurrent one.
const CONFLICT_ATTEMPTS_MAX: u32 = 16;

type StoreResult<T> = Result<T, StorageError<NodeId>>;
type Membership = StoredMembership<NodeId, BasicNode>;
type Meta = SnapshotMeta<NodeId, BasicNode>;

/// The state machine of one node (see the module docs).
pub struct StateMachine {
    db: Arc<Db>,
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
    /// The pairs of `sm_data` in key order.
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

/// Writes `bytes` as the stored snapshot with `meta`, replacing the chunks of the one before.
fn store_snapshot(txn: &mut Transaction, meta: &[u8], bytes: &[u8]) -> artdb::Result<()> {
    let old: Vec<Vec<u8>> = txn
        .iter(TABLE_SM_SNAPSHOT)?
        .map(|pair| pair.map(|(key, _)| key))
        .collect::<artdb::Result<_>>()?;
    for key in old {
        txn.remove(TABLE_SM_SNAPSHOT, &key)?;
    }
    for (number, chunk) in bytes.chunks(SNAPSHOT_CHUNK_BYTES).enumerate() {
        let key = artdb_key::scalar::encode_u32(number as u32);
        txn.insert(TABLE_SM_SNAPSHOT, &key, chunk)?;
    }
    txn.insert(TABLE_SM_META, KEY_SNAPSHOT, meta)
}

/// The bytes of `sm_data` in `read`, in the snapshot format.
fn encode_data(read: &ReadTxn) -> Result<Vec<u8>, RaftStoreError> {
    let table = read.table(TABLE_SM_DATA)?;
    let mut encoder = snapshot::Encoder::new();
    for pair in table.iter() {
        let (key, value) = pair?;
        encoder.push(&key, value)?;
    }
    Ok(encoder.finish())
}

impl StateMachine {
    /// The state machine on `db`, whose raft tables exist.
    pub fn new(db: Arc<Db>) -> Result<StateMachine, RaftStoreError> {
        Ok(StateMachine { db })
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
        let responses = self.db.transact_with(options, |txn| {
            let mut responses = Vec::with_capacity(entries.len());
            for entry in entries {
                responses.push(match &entry.payload {
                    EntryPayload::Normal(command) => command.apply(txn)?,
                    EntryPayload::Blank | EntryPayload::Membership(_) => Response::Applied,
                });
            }
            txn.insert(TABLE_SM_META, KEY_APPLIED, &applied)?;
            if let Some(membership) = &membership {
                txn.insert(TABLE_SM_META, KEY_MEMBERSHIP, membership)?;
            }
            Ok(responses)
        })?;
        Ok(responses)
    }

    fn install(&self, meta: &Meta, bytes: &[u8]) -> Result<(), RaftStoreError> {
        snapshot::check(bytes)?;
        let meta_bytes = encode(TABLE_SM_META, meta)?;
        let applied = encode(TABLE_SM_META, &meta.last_log_id)?;
        let membership = encode(TABLE_SM_META, &meta.last_membership)?;
        transact(&self.db, Durability::Sync, |txn| {
            let old: Vec<Vec<u8>> = txn
                .iter(TABLE_SM_DATA)?
                .map(|pair| pair.map(|(key, _)| key))
                .collect::<artdb::Result<_>>()?;
            for key in old {
                txn.remove(TABLE_SM_DATA, &key)?;
            }
            snapshot::pairs(bytes, |key, value| {
                txn.insert(TABLE_SM_DATA, key, value)
                    .map_err(RaftStoreError::from)
            })?;
            txn.insert(TABLE_SM_META, KEY_APPLIED, &applied)?;
            txn.insert(TABLE_SM_META, KEY_MEMBERSHIP, &membership)?;
            Ok(store_snapshot(txn, &meta_bytes, bytes)?)
        })
    }

    fn current_snapshot(&self) -> Result<Option<Snapshot<TypeConfig>>, RaftStoreError> {
        let read = self.db.read();
        let Some(meta) = read_meta::<Meta>(&read, KEY_SNAPSHOT)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        for pair in read.table(TABLE_SM_SNAPSHOT)?.iter() {
            bytes.extend_from_slice(pair?.1);
        }
        snapshot::check(&bytes)?;
        Ok(Some(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        }))
    }
}

impl Reader {
    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, RaftStoreError> {
        let read = self.db.read();
        Ok(read.get(TABLE_SM_DATA, key)?.map(<[u8]>::to_vec))
    }

    /// Up to `limit` pairs from `start` to `end`, in key order.
    pub fn range(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
    ) -> Result<Pairs, RaftStoreError> {
        let read = self.db.read();
        let table = read.table(TABLE_SM_DATA)?;
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
        let table = read.table(TABLE_SM_DATA)?;
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
        for pair in read.table(TABLE_SM_DATA)?.iter() {
            let (key, value) = pair?;
            pairs.push((key, value.to_vec()));
        }
        Ok(State { applied, pairs })
    }
}

/// Builds snapshots of a state machine; runs beside it (see the module docs).
pub struct SnapshotBuilder {
    db: Arc<Db>,
}

impl SnapshotBuilder {
    fn build(&self) -> Result<Snapshot<TypeConfig>, RaftStoreError> {
        let read = self.db.read();
        let (last_log_id, last_membership) = applied_of(&read)?;
        let bytes = encode_data(&read)?;
        drop(read);
        let snapshot_id = match &last_log_id {
            Some(id) => format!(
                "{}-{}-{}",
                id.leader_id.term, id.leader_id.node_id, id.index
            ),
            None => "empty".to_string(),
        };
        let meta = Meta {
            last_log_id,
            last_membership,
            snapshot_id,
        };
        let meta_bytes = encode(TABLE_SM_META, &meta)?;
        transact(&self.db, Durability::Sync, |txn| {
            let stored: Option<Meta> = txn
                .get(TABLE_SM_META, KEY_SNAPSHOT)?
                .map(|bytes| decode(TABLE_SM_META, bytes))
                .transpose()?;
            if stored.is_some_and(|stored| stored.last_log_id >= meta.last_log_id) {
                return Ok(());
            }
            Ok(store_snapshot(txn, &meta_bytes, &bytes)?)
        })?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
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
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> StoreResult<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &Meta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> StoreResult<()> {
        let bytes = snapshot.into_inner();
        self.install(meta, &bytes).map_err(|e| {
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
