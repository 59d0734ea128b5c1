//! artdb: an embedded ordered key-value store whose index is an adaptive radix tree, persisted
//! in one database file.
//!
//! Layers (a lower one never names a higher one): [`io`] (the one I/O seam), `store` (header,
//! superblocks, pages, space, checkpoints), [`db`] (the public API). The write-ahead log and
//! transactions come with a later issue.
//!
//! # Durability today
//! There is no write-ahead log yet: a committed write batch is visible to new readers at once and
//! becomes durable at the next [`Db::checkpoint`] (or [`Db::close`], which checkpoints). A crash
//! loses the commits since the last completed checkpoint, never part of a checkpoint.

pub mod db;
mod error;
pub mod io;
mod store;

pub use db::{
    CheckpointStats, Cursor, Db, DbStats, Iter, Options, ReadTxn, Table, TableStats, VerifyReport,
    WriteTxn,
};
pub use error::{CorruptionKind, Error, Result};
