//! artdb: an embedded ordered key-value store whose index is an adaptive radix tree, persisted
//! in one database file.
//!
//! Layers (a lower one never names a higher one): [`io`] (the one I/O seam), `store` (header,
//! superblocks, pages, space, checkpoints), `wal` (the write-ahead log `<file>.wal`), [`txn`]
//! (write transactions that run side by side, validated at commit: docs/isolation.md; and the
//! commit pipeline: group commit, publication in log order), [`db`] (the public API).
//!
//! # Durability
//! Every commit appends one record to the write-ahead log. With [`Durability::Sync`] (the
//! default) `commit` returns after the record is on stable storage (concurrent committers share
//! one fsync), and no reader sees the commit before that: a commit that returned `Ok` survives a
//! crash, and a crash never leaves part of one. With [`Durability::NoSync`] (per database in
//! [`Options`], or per transaction) `commit` returns once the record is written; it survives the
//! process being killed, and power loss only after the next [`Db::sync`], checkpoint or close.
//! A checkpoint writes the changed tree nodes into the database file and recycles the log; it
//! runs when the log passes [`Options::checkpoint_threshold_bytes`], at [`Db::close`], and on
//! [`Db::checkpoint`]. Open replays the log records the last checkpoint does not cover.
//! docs/recovery.md argues each crash point; docs/wal-format.md gives the log's bytes.
//! Databases made with [`Db::create_in`] / [`Db::open_in`] keep their log in memory: their
//! commits are durable only at a checkpoint (the `_with_log` variants take a log storage).

mod bytes;
pub mod db;
mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod io;
mod store;
pub mod txn;
mod wal;

pub use db::{
    CheckpointStats, Cursor, Db, DbStats, Iter, LogStats, Options, ReadTxn, Table, TableStats,
    TxnStats, VerifyReport, WriteTxn,
};
pub use error::{CorruptionKind, Error, Result};
pub use txn::{Durability, Isolation, Transaction, TxnCursor, TxnIter, WriteOptions};
pub use wal::RecoveryMode;
