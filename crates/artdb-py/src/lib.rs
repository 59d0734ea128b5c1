//! artdb-py: the Python package `artdb` (this crate is its extension module `artdb._artdb`).
//!
//! Built by maturin with PyO3's stable ABI (abi3, CPython >= 3.9): `pip install ./crates/artdb-py`.
//! The Python side (`python/artdb/`) adds the exception classes, the `keys` and `bitable`
//! modules, type stubs and the `MutableMapping` registration. Modules here:
//! - `core`: the shared state of an open database; what `close` ends;
//! - `database`: `artdb.open`, `Database` (tables, read/write/transact, checkpoint, stats, verify);
//! - `table`: `Table`, a mapping of bytes to bytes in key order, and its views;
//! - `iter`: the lazy batched iterators (GIL released per batch);
//! - `txn`: write transactions and read snapshots;
//! - `keys`: `pack`/`unpack` over artdb-key's tuple encoding;
//! - `bitable`: `build`/`open` of bitable files;
//! - `buffer`, `errors`, `messages`: bytes in, exceptions out (their text in Python terms).
//!
//! No `unsafe` here: every borrow of the engine's memory lives inside one call (iterators re-seek
//! instead of holding a borrowed engine iterator across calls).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
mod bitable;
mod buffer;
mod core;
mod database;
mod errors;
mod iter;
mod keys;
mod messages;
mod table;
mod txn;

use pyo3::prelude::*;

/// The extension module `artdb._artdb`.
#[pymodule]
fn _artdb(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(database::open, module)?)?;
    module.add_class::<database::Database>()?;
    module.add_class::<table::Table>()?;
    module.add_class::<table::TableView>()?;
    module.add_class::<iter::PairIter>()?;
    module.add_class::<txn::WriteTransaction>()?;
    module.add_class::<txn::ReadSnapshot>()?;
    module.add_function(wrap_pyfunction!(keys::pack, module)?)?;
    module.add_function(wrap_pyfunction!(keys::unpack, module)?)?;
    module.add_function(wrap_pyfunction!(bitable::build, module)?)?;
    module.add_function(wrap_pyfunction!(bitable::open, module)?)?;
    module.add_class::<bitable::BitableTable>()?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
