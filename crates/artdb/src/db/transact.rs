//! transact: starting write and read transactions on a [`Db`], and the retry helper
//! ([`Db::transact`]); the transactions themselves are `txn`'s.

use super::{Db, ReadTxn};
use crate::engine::Live;
use crate::error::{Error, Result};
use crate::txn::{backoff, Transaction, WriteOptions};
use std::sync::Arc;

impl Db {
    /// Starts a write transaction on a snapshot of the last published commit. Never waits for
    /// other transactions: any number run at once; only their commits are serialized.
    pub fn begin_write(&self, options: WriteOptions) -> Result<Transaction> {
        let shared = &self.shared;
        let published = shared.published.read();
        let epoch = published.epoch;
        let pin = Live::pin(&shared.live, epoch);
        let live = Live::register_writer(&shared.live, published.seq);
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
