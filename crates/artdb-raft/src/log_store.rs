//! log_store: openraft's `RaftLogStorage` on the node's database: the log in `raft_log`, the
//! vote, committed id and purged id in `raft_meta`.
//!
//! Every write here is one artdb transaction committed with [`Durability::Sync`], so it is on
//! stable storage when the call returns (invariants 1 to 3 of the crate docs), but for the
//! committed id (see `save_committed` for why it need not be). Concurrent
//! committers (this store, the state machine, the snapshot builder) share one fsync through the
//! engine's group commit. The log store and the state machine write disjoint tables, so their
//! transactions never conflict; `transact` retries if one ever does.
//!
//! Why the purged id is stored and not derived from the first entry: after a purge of every
//! entry (or of entries a snapshot install already dropped) there is no first entry, and
//! openraft still needs the id of the last one purged.

use crate::codec::{decode, encode, log_index, log_key, storage_error, RaftStoreError};
use crate::{NodeId, TypeConfig, TABLE_LOG, TABLE_RAFT_META};
use artdb::{Db, Durability, WriteOptions};
use openraft::storage::{LogFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::{
    Entry, ErrorSubject, ErrorVerb, LogId, OptionalSend, RaftLogId, StorageError, Vote,
};
use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

const KEY_VOTE: &[u8] = b"vote";
const KEY_COMMITTED: &[u8] = b"committed";
const KEY_PURGED: &[u8] = b"purged";

type StoreResult<T> = Result<T, StorageError<NodeId>>;

/// The raft log, vote and committed id of one node (see the module docs). Cloning shares the
/// database: a clone is the log reader openraft's replication tasks use.
#[derive(Clone)]
pub struct LogStore {
    db: Arc<Db>,
}

fn sync_options() -> WriteOptions {
    WriteOptions::default().durability(Durability::Sync)
}

impl LogStore {
    /// The log store on `db`, whose raft tables exist.
    pub fn new(db: Arc<Db>) -> LogStore {
        LogStore { db }
    }

    /// The database this store writes.
    pub fn db(&self) -> &Arc<Db> {
        &self.db
    }

    fn read_meta<T: serde::de::DeserializeOwned>(
        &self,
        key: &[u8],
    ) -> Result<Option<T>, RaftStoreError> {
        let read = self.db.read();
        read.get(TABLE_RAFT_META, key)?
            .map(|bytes| decode(TABLE_RAFT_META, bytes))
            .transpose()
    }

    fn write_meta<T: serde::Serialize>(
        &self,
        key: &[u8],
        value: &T,
        durability: Durability,
    ) -> Result<(), RaftStoreError> {
        let bytes = encode(TABLE_RAFT_META, value)?;
        let options = WriteOptions::default().durability(durability);
        self.db
            .transact_with(options, |txn| txn.insert(TABLE_RAFT_META, key, &bytes))?;
        Ok(())
    }

    /// Removes the entries whose index is in `range`, and writes `purged` (if given), in one
    /// transaction.
    fn remove_entries(
        &self,
        range: (Bound<u64>, Bound<u64>),
        purged: Option<&LogId<NodeId>>,
    ) -> Result<(), RaftStoreError> {
        let start = range.0.map(log_key);
        let end = range.1.map(log_key);
        let purged_bytes = purged.map(|id| encode(TABLE_RAFT_META, id)).transpose()?;
        self.db.transact_with(sync_options(), |txn| {
            let keys = txn
                .range::<[u8; 8], _>(TABLE_LOG, (start, end))?
                .map(|pair| pair.map(|(key, _)| key))
                .collect::<artdb::Result<Vec<Vec<u8>>>>()?;
            for key in keys {
                txn.remove(TABLE_LOG, &key)?;
            }
            if let Some(bytes) = &purged_bytes {
                txn.insert(TABLE_RAFT_META, KEY_PURGED, bytes)?;
            }
            Ok(())
        })?;
        Ok(())
    }

    fn last_entry_id(&self) -> Result<Option<LogId<NodeId>>, RaftStoreError> {
        let read = self.db.read();
        let Some((key, bytes)) = read.table(TABLE_LOG)?.last()? else {
            return Ok(None);
        };
        let entry: Entry<TypeConfig> = decode(TABLE_LOG, bytes)?;
        let index = log_index(&key)?;
        if index != entry.log_id.index {
            return Err(RaftStoreError::Decode {
                table: TABLE_LOG,
                reason: format!(
                    "the entry under index {index} is entry {}",
                    entry.log_id.index
                ),
            });
        }
        Ok(Some(entry.log_id))
    }
}

fn logs_error(verb: ErrorVerb) -> impl Fn(RaftStoreError) -> StorageError<NodeId> {
    move |e| storage_error(ErrorSubject::Logs, verb, e)
}

fn bound_key(bound: Bound<&u64>) -> Bound<[u8; 8]> {
    match bound {
        Bound::Included(index) => Bound::Included(log_key(*index)),
        Bound::Excluded(index) => Bound::Excluded(log_key(*index)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> StoreResult<Vec<Entry<TypeConfig>>> {
        let read_error = |e: RaftStoreError| storage_error(ErrorSubject::Logs, ErrorVerb::Read, e);
        let read = self.db.read();
        let table = read.table(TABLE_LOG).map_err(|e| read_error(e.into()))?;
        let bounds = (bound_key(range.start_bound()), bound_key(range.end_bound()));
        let mut entries = Vec::new();
        for pair in table.range::<[u8; 8], _>(bounds) {
            let (_, bytes) = pair.map_err(|e| read_error(e.into()))?;
            entries.push(decode(TABLE_LOG, bytes).map_err(read_error)?);
        }
        Ok(entries)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> StoreResult<LogState<TypeConfig>> {
        let last_purged_log_id: Option<LogId<NodeId>> = self
            .read_meta(KEY_PURGED)
            .map_err(logs_error(ErrorVerb::Read))?;
        let last_log_id = self
            .last_entry_id()
            .map_err(logs_error(ErrorVerb::Read))?
            .or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> StoreResult<()> {
        self.write_meta(KEY_VOTE, vote, Durability::Sync)
            .map_err(|e| storage_error(ErrorSubject::Vote, ErrorVerb::Write, e))
    }

    async fn read_vote(&mut self) -> StoreResult<Option<Vote<NodeId>>> {
        self.read_meta(KEY_VOTE)
            .map_err(|e| storage_error(ErrorSubject::Vote, ErrorVerb::Read, e))
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> StoreResult<()> {
        // NoSync: the committed id only spares openraft re-deriving it after a restart (it
        // applies the log up to it at start); a lost one costs a quorum round, not safety, and
        // a Sync write here would add an fsync to every commit of every entry.
        self.write_meta(KEY_COMMITTED, &committed, Durability::NoSync)
            .map_err(|e| storage_error(ErrorSubject::Store, ErrorVerb::Write, e))
    }

    async fn read_committed(&mut self) -> StoreResult<Option<LogId<NodeId>>> {
        let committed: Option<Option<LogId<NodeId>>> = self
            .read_meta(KEY_COMMITTED)
            .map_err(|e| storage_error(ErrorSubject::Store, ErrorVerb::Read, e))?;
        Ok(committed.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> StoreResult<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut records = Vec::new();
        for entry in entries {
            let bytes = encode(TABLE_LOG, &entry).map_err(|e| {
                storage_error(ErrorSubject::Log(*entry.get_log_id()), ErrorVerb::Write, e)
            })?;
            records.push((log_key(entry.log_id.index), bytes));
        }
        let committed = self.db.transact_with(sync_options(), |txn| {
            for (key, bytes) in &records {
                txn.insert(TABLE_LOG, key, bytes)?;
            }
            Ok(())
        });
        // The callback is told only after the Sync commit returned: the entries are durable.
        match committed {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(error) => {
                callback.log_io_completed(Err(std::io::Error::other(error.to_string())));
                Err(storage_error(ErrorSubject::Logs, ErrorVerb::Write, error))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> StoreResult<()> {
        self.remove_entries((Bound::Included(log_id.index), Bound::Unbounded), None)
            .map_err(logs_error(ErrorVerb::Delete))
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> StoreResult<()> {
        self.remove_entries(
            (Bound::Unbounded, Bound::Included(log_id.index)),
            Some(&log_id),
        )
        .map_err(logs_error(ErrorVerb::Delete))
    }
}
