//! txn: write transactions that run side by side (optimistic multi-version concurrency
//! control), their validation at commit, and the commit history validation needs.
//!
//! - [`Transaction`] (`transaction.rs`): `Db::begin_write` takes a snapshot of every table and
//!   never waits; changes are buffered privately per table (`write_set.rs`) and every read
//!   merges them with the snapshot (`merge.rs`).
//! - Commit (`commit.rs`): under the short commit lock, validate against the commits since the
//!   snapshot (`history.rs`), apply by copy-on-write, record, publish.
//! - Isolation (docs/isolation.md): snapshot isolation by default (first committer wins on
//!   written keys); serializable per transaction (also validates point reads and scanned key
//!   ranges, so phantoms count). Read transactions (`Db::begin_read`) never abort or wait.
//! - [`Db::transact`] runs a closure in a transaction and retries it on [`Error::Conflict`].
//! - The pipeline (`pipeline.rs`): after the commit lock, wait until the commit's log record is
//!   durable (group commit) and publish in LSN order.

mod commit;
mod history;
mod keys;
mod live;
mod merge;
pub(crate) mod pipeline;
mod transaction;
mod write_set;

pub(crate) use commit::prune as prune_history;
pub(crate) use history::History;
pub(crate) use live::{Live, LiveGuard};
pub use merge::{TxnCursor, TxnIter};
pub use transaction::Transaction;

use crate::db::pins::Pins;
use crate::db::{Db, ReadTxn};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::Duration;

/// How a write transaction is validated at commit (docs/isolation.md).
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

/// When a commit returns, relative to stable storage.
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

/// Options of [`Db::begin_write`] and [`Db::transact_with`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Isolation level. Default: [`Isolation::Snapshot`].
    pub isolation: Isolation,
    /// Attempts [`Db::transact_with`] makes before returning the conflict. Default: 16.
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

impl Db {
    /// Starts a write transaction on a snapshot of the last published commit. Never waits for
    /// other transactions: any number run at once; only their commits are serialized.
    pub fn begin_write(&self, options: WriteOptions) -> Result<Transaction> {
        let shared = &self.shared;
        let published = shared.published.read();
        let epoch = published.epoch;
        let pin = Pins::pin(&shared.pins, epoch);
        let live = Live::register(&shared.live, published.seq, epoch, true);
        let snapshot = Arc::clone(&published);
        drop(published);
        Ok(Transaction::new(
            Arc::clone(shared),
            snapshot,
            pin,
            live,
            options,
        ))
    }

    /// Starts a read transaction: one snapshot, never blocked, never aborted (the same as
    /// [`Db::read`]).
    pub fn begin_read(&self) -> ReadTxn {
        self.read()
    }

    /// Runs `body` in a snapshot-isolation transaction and commits it; on
    /// [`Error::Conflict`] (from `body` or the commit) runs it again on a new snapshot, up to
    /// 16 attempts with growing randomized pauses. Returns what `body` returned.
    pub fn transact<T>(&self, body: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        self.transact_with(WriteOptions::default(), body)
    }

    /// [`Db::transact`] with options (isolation, attempts).
    pub fn transact_with<T>(
        &self,
        options: WriteOptions,
        mut body: impl FnMut(&mut Transaction) -> Result<T>,
    ) -> Result<T> {
        let attempts = options.max_attempts.max(1);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut txn = self.begin_write(options.clone())?;
            let result = body(&mut txn).and_then(|value| txn.commit().map(|_| value));
            match result {
                Err(Error::Conflict { .. }) if attempt < attempts => backoff(attempt),
                other => return other,
            }
        }
    }
}

/// Sleeps about 50us * 2^attempt (capped at ~10 ms), randomized so that transactions that
/// conflicted once do not collide again in step.
fn backoff(attempt: u32) {
    let base_micros = 50u64 << attempt.min(8);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::from(elapsed.subsec_nanos()));
    let jitter = nanos.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33;
    let micros = base_micros / 2 + jitter % base_micros.max(1);
    std::thread::sleep(Duration::from_micros(micros.min(10_000)));
}
