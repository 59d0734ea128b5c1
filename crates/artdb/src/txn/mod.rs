//! txn: write transactions that run side by side (optimistic multi-version concurrency
//! control), their validation at commit, and the commit history validation needs.
//!
//! - [`Transaction`] (`transaction.rs`): `Db::begin_write` takes a snapshot of every table and
//!   never waits; changes are buffered privately per table (`write_set.rs`) and every read
//!   merges them with the snapshot (`merge.rs`).
//! - Commit (`commit.rs`): under the short commit lock, validate against the commits since the
//!   snapshot (`validate.rs`, over the engine's `history.rs`), apply by copy-on-write,
//!   record, publish.
//! - Isolation (docs/isolation.md): snapshot isolation by default (first committer wins on
//!   written keys); serializable per transaction (also validates point reads and scanned key
//!   ranges, so phantoms count). Read transactions (`Db::begin_read`) never abort or wait.
//! - `Db::transact` (db/transact.rs) runs a closure in a transaction and retries it on a
//!   conflict, pausing with `backoff`.
//! - The shared state (what readers see, the writer's state, the locks, the pins of live
//!   readers) is the engine's (`engine/state.rs`), below this layer.
//! - After the commit lock, the commit waits in the log's pipeline (`wal/group.rs`) until its
//!   record is durable (group commit); the pipeline publishes in LSN order.

mod commit;
mod merge;
mod transaction;
mod validate;
mod write_set;

pub use crate::engine::Durability;
pub use merge::{TxnCursor, TxnIter};
pub use transaction::Transaction;

use std::time::Duration;

/// How a write transaction is validated at commit (docs/isolation.md).
///
/// ```
/// use artdb::{Error, WriteOptions};
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// // Write skew: each reads both keys and writes one. Snapshot isolation commits both;
/// // serializable refuses the second, whose read the first overwrote.
/// let mut first = db.begin_write(WriteOptions::serializable())?;
/// let mut second = db.begin_write(WriteOptions::serializable())?;
/// for txn in [&mut first, &mut second] {
///     txn.get("t", b"a")?;
///     txn.get("t", b"b")?;
/// }
/// first.insert("t", b"a", b"0")?;
/// second.insert("t", b"b", b"0")?;
/// first.commit()?;
/// assert!(matches!(second.commit(), Err(Error::Conflict { .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Snapshot isolation: reads see one snapshot; commit fails if a key it wrote was written
    /// by a transaction that committed after it started (first committer wins). Allows write
    /// skew (G2-item, G2).
    #[default]
    Snapshot,
    /// Serializable: also fails if anything it read (point reads, scanned ranges, prefixes and
    /// cursor spans) was written by a transaction that committed after it started.
    Serializable,
}

/// Options of [`Db::begin_write`](crate::Db::begin_write) and
/// [`Db::transact_with`](crate::Db::transact_with).
///
/// ```
/// use artdb::WriteOptions;
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// let options = WriteOptions::serializable().max_attempts(4);
/// let value = db.transact_with(options, |txn| {
///     txn.insert("t", b"k", b"v")?;
///     Ok(txn.len("t")?)
/// })?;
/// assert_eq!(value, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Isolation level. Default: [`Isolation::Snapshot`].
    pub isolation: Isolation,
    /// Attempts [`Db::transact_with`](crate::Db::transact_with) makes before returning the conflict. Default: 16.
    pub max_attempts: u32,
    /// Durability of the commit; `None`: the database's ([`crate::Options::durability`]).
    pub durability: Option<Durability>,
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions {
            isolation: Isolation::Snapshot,
            max_attempts: 16,
            durability: None,
        }
    }
}

impl WriteOptions {
    /// Default options at `isolation`.
    pub fn with_isolation(isolation: Isolation) -> WriteOptions {
        WriteOptions {
            isolation,
            ..WriteOptions::default()
        }
    }

    /// Serializable, other options default.
    pub fn serializable() -> WriteOptions {
        WriteOptions::with_isolation(Isolation::Serializable)
    }

    /// These options with `durability` for the commit.
    pub fn durability(mut self, durability: Durability) -> WriteOptions {
        self.durability = Some(durability);
        self
    }

    /// These options with `max_attempts` (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> WriteOptions {
        self.max_attempts = attempts.max(1);
        self
    }
}

/// Sleeps a pause that doubles with each attempt (up to the cap below), randomized so that
/// transactions that conflicted once do not collide again in step.
pub(crate) fn backoff(attempt: u32) {
    let base_micros = 50u64 << attempt.min(8);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::from(elapsed.subsec_nanos()));
    let jitter = nanos.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33;
    let micros = base_micros / 2 + jitter % base_micros.max(1);
    std::thread::sleep(Duration::from_micros(micros.min(10_000)));
}
