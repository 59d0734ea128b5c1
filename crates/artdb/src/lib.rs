//! artdb: an embedded ordered key-value store whose index is an adaptive radix tree, persisted
//! in one database file.
//!
//! Layers (a lower one never names a higher one): [`io`] (the one I/O seam), `store` (header,
//! superblocks, pages, space, checkpoints), [`txn`] (write transactions that run side by side,
//! validated at commit: docs/isolation.md), [`db`] (the public API). The write-ahead log comes
//! with a later issue.
//!
//! # Durability today
//! There is no write-ahead log yet: a committed write batch is visible to new readers at once and
//! becomes durable at the next [`Db::checkpoint`] (or [`Db::close`], which checkpoints). A crash
//! loses the commits since the last completed checkpoint, never part of a checkpoint.

pub mod db;
mod error;
pub mod io;
mod store;
pub mod txn;

pub use db::{
    CheckpointStats, Cursor, Db, DbStats, Iter, Options, ReadTxn, Table, TableStats, TxnStats,
    VerifyReport, WriteTxn,
};
pub use error::{CorruptionKind, Error, Result};
pub use txn::{Isolation, Transaction, TxnCursor, TxnIter, WriteOptions};
