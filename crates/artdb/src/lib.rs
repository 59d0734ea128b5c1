//! artdb: an embedded ordered key-value store whose index is an adaptive radix tree, persisted
//! in one database file.
//!
//! Layers (a lower one never names a higher one): [`io`] (the one I/O seam), `store` (header,
//! superblocks, pages, space, checkpoints), `wal` (the write-ahead log `<file>.wal`), [`txn`]
//! (write transactions that run side by side, validated at commit: docs/isolation.md; and the
//! commit pipeline: group commit, publication in log order), [`db`] (the public API).
//!
//! # Quick start
//!
//! ```
//! use artdb::{Db, Error, Options};
//!
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("shop.artdb");
//! // Opens the database at `path` (and its log `shop.artdb.wal`), creating it if absent.
//! let db = Db::open_or_create(&path, Options::default())?;
//! db.create_table_if_missing("orders")?;
//!
//! // A write transaction: runs beside others, validated at commit, durable when `commit`
//! // returns. `transact` retries it on a conflict with a concurrent one.
//! db.transact(|txn| {
//!     txn.insert("orders", b"2026-12-02/0001", b"3 apples")?;
//!     txn.insert("orders", b"2026-12-02/0002", b"1 pear")?;
//!     txn.insert("orders", b"2026-12-03/0001", b"2 plums")?;
//!     Ok(())
//! })?;
//!
//! // A read snapshot: one consistent state, never blocked by writers.
//! let read = db.read();
//! let orders = read.table("orders")?;
//! assert_eq!(orders.get(b"2026-12-02/0002")?, Some(&b"1 pear"[..]));
//! let december_2nd: Vec<Vec<u8>> = orders
//!     .prefix(b"2026-12-02/")
//!     .map(|pair| pair.map(|(key, _value)| key))
//!     .collect::<Result<_, Error>>()?;
//! assert_eq!(december_2nd.len(), 2);
//! for pair in orders.range(&b"2026-12-03"[..]..) {
//!     let (key, value) = pair?;
//!     println!("{} = {}", String::from_utf8_lossy(&key), String::from_utf8_lossy(value));
//! }
//!
//! // Errors are typed, and their message says what to do.
//! match read.table("customers") {
//!     Err(Error::TableNotFound { name }) => assert_eq!(name, "customers"),
//!     Err(other) => return Err(other.into()),
//!     Ok(_) => unreachable!("no such table was made"),
//! }
//! drop(read);
//! db.close()?; // a checkpoint: the next open replays nothing
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Which write API: [`Db::transact`] (or [`Db::begin_write`] and [`Transaction::commit`] when
//! the retry is yours to make) for application writes: any number run at once, each on its own
//! snapshot, and a conflict is [`Error::Conflict`] (retry). [`Db::write`] is the *write batch*:
//! it holds the writer lock from its start (so it never conflicts, and other writers wait for
//! it), meant for one loader or maintenance job at a time; [`Db::bulk_load`] for sorted input
//! into an empty table. Python's `db.write()` is Rust's `begin_write`.
//!
//! Typed tables: [`typed`] ([`TableDefinition`]) stores Rust types as keys and values on
//! `artdb-key`'s order-preserving encodings, scanned in the order of the values.
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

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
mod bytes;
pub mod db;
mod engine;
mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod io;
mod store;
pub mod txn;
pub mod typed;
mod verify_report;
mod wal;

pub use db::{
    CheckpointStats, Compaction, Cursor, Db, DbStats, Iter, LogStats, Options, ReadTxn, Table,
    TableStats, TxnStats, VerifyReport, WriteTxn,
};
pub use error::{CorruptionKind, Error, FileRole, PoisonCause, Result};
pub use txn::{Durability, Isolation, Transaction, TxnCursor, TxnIter, WriteOptions};
pub use typed::{TableDefinition, TypedError};
pub use wal::RecoveryMode;

/// The README's Rust example, compiled and run as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExamples;
