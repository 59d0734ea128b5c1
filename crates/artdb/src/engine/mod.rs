//! engine: the state a database's handles, transactions and readers share, and what acts on
//! it as a whole, below the transactions (`txn`) and the public API (`db`), over the store and
//! the log.
//!
//! - `state.rs`: [`Shared`] (both locks, the pins, the live snapshots, the commit pipeline) and
//!   [`WriterState`] (behind the writer lock: the store, the trees, the history, the log).
//! - `live.rs` (with `shards.rs`): the snapshots in use, the epochs they pin, and the write
//!   transactions' starts.
//! - `history.rs` (with `keys.rs`): what committed transactions wrote, for `txn`'s validation.
//! - `checkpoint.rs`: the checkpoint (blocking, beside commits, at close, for a bypassing
//!   commit) and compaction.
//! - `recovery.rs`: open's replay of the log records the checkpoint does not cover.
//! - `bulk.rs`: the bulk load.
//! - `catalog.rs`: the table catalog's bytes.

mod bulk;
pub(crate) mod catalog;
mod checkpoint;
mod history;
pub(crate) mod keys;
mod live;
mod recovery;
mod shards;
mod state;

pub(crate) use checkpoint::checkpoint_beside_commits;
pub use checkpoint::{CheckpointStats, Compaction};
pub(crate) use history::{indexed_total, History, Record, Written};
pub(crate) use live::{Live, LiveGuard, Pin};
#[cfg(test)]
pub(crate) use state::CheckpointHook;
#[cfg(test)]
pub(crate) use state::CheckpointStep;
pub(crate) use state::{
    check_table_name, prune_history, thread_token, Published, Settings, Shared, TableState,
    WriterState,
};

/// When a commit returns, relative to stable storage.
///
/// ```
/// use artdb::{Durability, WriteOptions};
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// // One commit that need not wait for the disk, in a database whose default is `Sync`.
/// let options = WriteOptions::default().durability(Durability::NoSync);
/// db.transact_with(options, |txn| txn.insert("t", b"k", b"v"))?;
/// db.sync()?; // now on stable storage too
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Commit returns after its log record is on stable storage (one log sync, shared by
    /// concurrent committers). No reader ever sees a commit a crash could take back. Default.
    #[default]
    Sync,
    /// Commit returns after its log record is written (in the page cache): it survives the
    /// process being killed but not power loss, until the next sync, checkpoint or close.
    NoSync,
}
