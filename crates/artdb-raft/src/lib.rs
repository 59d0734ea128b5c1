//! artdb-raft: artdb replicated by openraft. One artdb database per node holds everything the
//! node must keep: the raft log, the vote, the committed and purged log ids, and the state
//! machine (a key-value map) with its last-applied log id and membership.
//!
//! Layers: [`command`] (what a client asks the cluster to do, and what it answers), [`codec`]
//! (postcard for raft's own records, typed errors), [`log_store`] (openraft's `RaftLogStorage`),
//! [`state_machine`] (openraft's `RaftStateMachine`, and [`Reader`] for reads) and [`snapshot`]
//! (the byte format of a state machine snapshot). openraft itself, the network and the client
//! API sit above this crate.
//!
//! # Tables of a node's database
//! | table | key | value |
//! | --- | --- | --- |
//! | `raft_log` | log index, `u64` big-endian (artdb-key) | postcard `Entry` |
//! | `raft_meta` | `vote`, `committed`, `purged` | postcard `Vote` / `Option<LogId>` / `LogId` |
//! | `sm_meta` | `applied`, `membership`, `snapshot` | postcard `Option<LogId>` / `StoredMembership` / `SnapshotMeta` |
//! | `sm_data` | the client's key | the client's value |
//! | `sm_snapshot` | chunk number, `u32` big-endian | the bytes of the last built or installed snapshot |
//!
//! # Invariants (each argued where it is kept)
//! 1. An append is durable before openraft is told so: `LogStore::append` commits with
//!    [`artdb::Durability::Sync`] (concurrent committers share one fsync) and only then calls the
//!    callback.
//! 2. The vote and the purged id are written by `Sync` commits (the committed id by a `NoSync`
//!    one: losing it is safe, see `LogStore::save_committed`).
//! 3. A purge removes the entries up to an index and records the purged id in one transaction;
//!    so does a truncation (without the purged id). A crash never leaves a gap at the front nor
//!    a purged id that the remaining entries contradict.
//! 4. Applying a batch of entries writes their effects on `sm_data`, the last applied id and the
//!    membership in one transaction: after a crash the state machine is at some applied id, never
//!    between two.
//! 5. A snapshot is built from one artdb read snapshot (a consistent state, while applies go on)
//!    and installed by one transaction that replaces `sm_data`, the applied id, the membership
//!    and the stored snapshot.
//!
//! Storage calls are blocking artdb calls made from openraft's tasks: each is one transaction,
//! and the Sync ones wait for one shared fsync, as openraft's own RocksDB store does.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
pub mod cli;
pub mod client;
pub mod codec;
pub mod command;
pub mod log_store;
pub mod snapshot;
pub mod state_machine;
pub mod tcp;
pub mod wire;

use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

pub use codec::RaftStoreError;
pub use command::{Command, Condition, Operation, Response};
pub use log_store::LogStore;
pub use state_machine::{Reader, StateMachine};

/// A node's id in the cluster.
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The openraft type configuration of an artdb cluster: commands in, responses out, nodes
    /// named by their address, snapshots as bytes in memory.
    pub TypeConfig:
        D = Command,
        R = Response,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// openraft's `Raft` handle over this crate's type configuration.
pub type Raft = openraft::Raft<TypeConfig>;

/// Table of the raft log.
pub const TABLE_LOG: &str = "raft_log";
/// Table of the vote, committed id and purged id.
pub const TABLE_RAFT_META: &str = "raft_meta";
/// Table of the state machine's applied id, membership and snapshot meta.
pub const TABLE_SM_META: &str = "sm_meta";
/// Table of the state machine's key-value data.
pub const TABLE_SM_DATA: &str = "sm_data";
/// Table of the stored snapshot's bytes, in chunks.
pub const TABLE_SM_SNAPSHOT: &str = "sm_snapshot";

const TABLES: [&str; 5] = [
    TABLE_LOG,
    TABLE_RAFT_META,
    TABLE_SM_META,
    TABLE_SM_DATA,
    TABLE_SM_SNAPSHOT,
];

/// Opens (creating if absent) the database of one node at `path` and returns its log store and
/// state machine, both on that one database.
pub fn open(
    path: impl AsRef<Path>,
    options: artdb::Options,
) -> Result<(LogStore, StateMachine), RaftStoreError> {
    let db = artdb::Db::open_or_create(path, options)?;
    on_db(Arc::new(db))
}

/// The log store and state machine on `db` (its raft tables are created if missing).
pub fn on_db(db: Arc<artdb::Db>) -> Result<(LogStore, StateMachine), RaftStoreError> {
    for table in TABLES {
        db.create_table_if_missing(table)?;
    }
    let log_store = LogStore::new(Arc::clone(&db));
    let state_machine = StateMachine::new(db)?;
    Ok((log_store, state_machine))
}
