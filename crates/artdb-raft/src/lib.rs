//! artdb-raft: artdb replicated by openraft. One artdb database per node holds everything the
//! node must keep: the raft log, the vote, the committed and purged log ids, and the state
//! machine (a key-value map) with its last-applied log id and membership.
//!
//! Layers: [`command`] (what a client asks the cluster to do, and what it answers), [`codec`]
//! (postcard for raft's own records, typed errors), [`log_store`] (openraft's `RaftLogStorage`),
//! [`state_machine`] (openraft's `RaftStateMachine`, and [`Reader`] for reads), [`snapshot`]
//! (the byte format of a state machine snapshot, streamed) and [`snapshot_dir`] (the files that
//! hold snapshots). openraft itself, the network and the client API sit above this crate.
//!
//! # Tables of a node's database
//! | table | key | value |
//! | --- | --- | --- |
//! | `raft_log` | log index, `u64` big-endian (artdb-key) | postcard `Entry` |
//! | `raft_meta` | `vote`, `committed`, `purged` | postcard `Vote` / `Option<LogId>` / `LogId` |
//! | `sm_meta` | `applied`, `membership`, `snapshot` | postcard `Option<LogId>` / `StoredMembership` / `SnapshotMeta` |
//! | `sm_meta` | `data_table`, `snapshot_file` | the data table's name (absent: `sm_data`) / the snapshot's file name |
//! | `sm_data`, or `sm_data.<generation>` after an install | the client's key | the client's value |
//!
//! Beside the database, a snapshot directory (`<database>.snapshots` for [`open`]) holds the
//! last built or installed snapshot as one file ([`snapshot_dir`]). A database of the earlier
//! layout, with the snapshot's bytes in a `sm_snapshot` table, is brought to this one at open.
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
//!    into a durable file before the database names it; it is installed by a bulk load into a
//!    new data table (abandoned if the bytes are damaged), then one transaction that names the
//!    new table, the applied id, the membership and the stored snapshot, and drops the old
//!    table. Neither holds the snapshot in memory.
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
pub mod snapshot_dir;
pub mod state_machine;
pub mod tcp;
pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use codec::RaftStoreError;
pub use command::{Command, Condition, Operation, Response};
pub use log_store::LogStore;
pub use state_machine::{Reader, StateMachine};

/// A node's id in the cluster.
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The openraft type configuration of an artdb cluster: commands in, responses out, nodes
    /// named by their address, snapshots as files.
    pub TypeConfig:
        D = Command,
        R = Response,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
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
/// Table of the state machine's key-value data, until a snapshot install replaces it with
/// `sm_data.<generation>` (`sm_meta`'s `data_table` names the current one).
pub const TABLE_SM_DATA: &str = "sm_data";
/// Table of the earlier layout's snapshot bytes, in chunks: migrated to a file at open.
pub const TABLE_SM_SNAPSHOT: &str = "sm_snapshot";

const TABLES: [&str; 3] = [TABLE_LOG, TABLE_RAFT_META, TABLE_SM_META];

/// The snapshot directory of the node database at `path`: `<path>.snapshots`.
pub fn snapshot_dir_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".snapshots");
    PathBuf::from(name)
}

/// Opens (creating if absent) the database of one node at `path`, with its snapshot directory
/// beside it ([`snapshot_dir_path`]), and returns its log store and state machine.
pub fn open(
    path: impl AsRef<Path>,
    options: artdb::Options,
) -> Result<(LogStore, StateMachine), RaftStoreError> {
    let path = path.as_ref();
    let db = artdb::Db::open_or_create(path, options)?;
    on_db(Arc::new(db), snapshot_dir_path(path))
}

/// The log store and state machine on `db` (its raft tables are created if missing), with
/// snapshot files in `snapshot_dir` (created if missing; one directory per node).
pub fn on_db(
    db: Arc<artdb::Db>,
    snapshot_dir: impl AsRef<Path>,
) -> Result<(LogStore, StateMachine), RaftStoreError> {
    for table in TABLES {
        db.create_table_if_missing(table)?;
    }
    let dir = snapshot_dir::SnapshotDir::open(snapshot_dir)?;
    let state_machine = StateMachine::open(Arc::clone(&db), dir)?;
    let log_store = LogStore::new(db);
    Ok((log_store, state_machine))
}
