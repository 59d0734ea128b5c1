//! Typed tables: a [`TableDefinition<K, V>`] names a table and the Rust types of its keys and
//! values; views on a read snapshot ([`ReadTxn::typed_table`]) and on a write transaction
//! ([`Transaction::typed_table`]) take and return those types, and scan in the order of the key
//! values, over typed bounds.
//!
//! A typed table is a bytes table whose keys and values were written with `artdb-key`'s
//! order-preserving encodings ([`Key`], [`Value`]; see [`encoding`]'s notes for the bytes):
//! nothing about the types is stored in the file, the same table can be read through the bytes
//! API (`artdb scan` shows a `String` key as its text), and the bytes path is unchanged by this
//! layer. The definition is the schema: reading a table through a definition whose types it
//! was not written with is [`TypedError::Decode`] for a stored pair that does not decode (never
//! a panic), though some bytes decode as more than one type (eight bytes are a `u64` and an
//! `f64`).
//!
//! Built in: integers `u8`..`u128`, `i8`..`i128`; `f32`, `f64` (ordered by `total_cmp`);
//! `bool`; `()`; `String` and `&str` (read as `String`); `Vec<u8>` and `&[u8]` (read as
//! `Vec<u8>`); fixed arrays `[T; N]` of keys; tuples of two to six keys (scanned by their
//! first field with `prefix`, see [`Tuple`]). A type of your own implements [`Value`] (and
//! [`Key`] to be a key): see the example at [`Key`].
//!
//! ```
//! use artdb::typed::TableDefinition;
//! use artdb::{Db, Options};
//!
//! // Orders by (customer, order number), each with its total in cents.
//! const ORDERS: TableDefinition<(&str, u32), u64> = TableDefinition::new("orders");
//!
//! # let dir = tempfile::tempdir()?;
//! let db = Db::open_or_create(dir.path().join("shop.artdb"), Options::default())?;
//! db.create_table_if_missing(ORDERS.name())?;
//! db.transact(|txn| {
//!     let mut orders = txn.typed_table(ORDERS);
//!     orders.insert(("bob", 2), 1_250)?;
//!     orders.insert(("alice", 10), 300)?;
//!     orders.insert(("alice", 9), 4_000)?;
//!     Ok(())
//! })?;
//!
//! let read = db.read();
//! let orders = read.typed_table(ORDERS)?;
//! assert_eq!(orders.get(("bob", 2))?, Some(1_250));
//! // Alice's orders, in order-number order (9 before 10: numbers, not text).
//! let alices: Vec<((String, u32), u64)> = orders
//!     .range(("alice", 0)..=("alice", u32::MAX))
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(alices, [(("alice".into(), 9), 4_000), (("alice".into(), 10), 300)]);
//! // The same, by the first field of the tuple key.
//! assert_eq!(orders.prefix("alice").count(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! In a [`Db::transact`](crate::Db::transact) body, whose error type is [`crate::Error`], `?`
//! converts a typed read's [`TypedError`] to it ([`TypedError::into_db_error`]: a decode
//! failure becomes [`crate::Error::Tree`] with its message, and is not retried):
//!
//! ```
//! # use artdb::{Db, Options, TableDefinition};
//! const STOCK: TableDefinition<&str, u32> = TableDefinition::new("stock");
//! # let dir = tempfile::tempdir()?;
//! # let db = Db::open_or_create(dir.path().join("stock.artdb"), Options::default())?;
//! # db.create_table_if_missing(STOCK.name())?;
//! db.transact(|txn| {
//!     let mut stock = txn.typed_table(STOCK);
//!     let pears = stock.get("pears")?.unwrap_or(0);
//!     stock.insert("pears", pears + 12)
//! })?;
//! assert_eq!(db.read().typed_table(STOCK)?.get("pears")?, Some(12));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod encoding;
mod views;

pub use encoding::{Key, Tuple, Value};
pub use views::{BatchTable, ReadTable, TxnTable, TypedIter};

#[cfg(doc)]
use crate::{ReadTxn, Transaction};

use std::fmt;
use std::marker::PhantomData;

/// A typed table's read result: a value, or a [`TypedError`].
pub type TypedResult<T> = std::result::Result<T, TypedError>;

/// A decoded pair of a table whose keys are `K`s and values `V`s.
pub type TypedPair<K, V> = (<K as Value>::Owned, <V as Value>::Owned);

/// A table's name with the types of its keys and values; `Copy`, so a `const` of it is the
/// usual way to name a table once (see the module docs).
///
/// ```
/// use artdb::TableDefinition;
/// // Sensor readings by (sensor id, time in ms), each a fixed array of three samples.
/// const READINGS: TableDefinition<(u32, i64), [f32; 3]> = TableDefinition::new("readings");
/// assert_eq!(READINGS.name(), "readings");
/// assert_eq!(
///     format!("{READINGS:?}"),
///     r#"TableDefinition<(u32, i64), [f32; 3]>("readings")"#
/// );
/// ```
pub struct TableDefinition<'n, K: Key, V: Value> {
    name: &'n str,
    types: PhantomData<fn() -> (K, V)>,
}

impl<'n, K: Key, V: Value> TableDefinition<'n, K, V> {
    /// A definition of the table `name`, whose keys are `K`s and values `V`s.
    pub const fn new(name: &'n str) -> TableDefinition<'n, K, V> {
        TableDefinition {
            name,
            types: PhantomData,
        }
    }

    /// The table's name (as the bytes API and the CLI know it).
    pub const fn name(&self) -> &'n str {
        self.name
    }
}

impl<K: Key, V: Value> Clone for TableDefinition<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Key, V: Value> Copy for TableDefinition<'_, K, V> {}

impl<K: Key, V: Value> fmt::Debug for TableDefinition<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TableDefinition<{}, {}>({:?})",
            K::type_name(),
            V::type_name(),
            self.name
        )
    }
}

/// What is wrong with bytes that do not decode as a type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeProblem {
    /// Not a valid `artdb-key` encoding (`at` inside it counts from the field's start).
    Encoding(artdb_key::Error),
    /// Fewer bytes than the type's width, or bytes left over after it.
    Length {
        /// Bytes the type takes.
        expected: usize,
        /// Bytes there were.
        found: usize,
    },
    /// Bytes of the right form whose value the type rejects (text that is not UTF-8, a user
    /// type's check).
    Invalid(String),
}

/// Bytes that do not decode as the type a [`TableDefinition`] declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset, in the key or value, of the field that failed.
    pub at: usize,
    /// The type the field was decoded as.
    pub type_name: String,
    /// What was wrong.
    pub problem: DecodeProblem,
}

impl DecodeError {
    /// A field of type `T` that is not a valid `artdb-key` encoding.
    pub fn encoding<T: Value + ?Sized>(error: artdb_key::Error) -> DecodeError {
        DecodeError::new::<T>(DecodeProblem::Encoding(error))
    }

    /// A field of type `T` that took `expected` bytes where `found` were.
    pub fn length<T: Value + ?Sized>(expected: usize, found: usize) -> DecodeError {
        DecodeError::new::<T>(DecodeProblem::Length { expected, found })
    }

    /// A field of type `T` whose value `T` rejects, for `reason`.
    pub fn invalid<T: Value + ?Sized>(reason: impl Into<String>) -> DecodeError {
        DecodeError::new::<T>(DecodeProblem::Invalid(reason.into()))
    }

    /// `Ok` if the `used` bytes of a `T` are all of `bytes`, else a length error.
    pub fn expect_end<T: Value + ?Sized>(bytes: &[u8], used: usize) -> Result<(), DecodeError> {
        if bytes.len() == used {
            Ok(())
        } else {
            Err(DecodeError::length::<T>(used, bytes.len()))
        }
    }

    fn new<T: Value + ?Sized>(problem: DecodeProblem) -> DecodeError {
        DecodeError {
            at: 0,
            type_name: T::type_name(),
            problem,
        }
    }

    /// The same error for a field that starts `offset` bytes into the whole.
    pub(crate) fn shifted(mut self, offset: usize) -> DecodeError {
        self.at += offset;
        self
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let DecodeError {
            at, type_name: ty, ..
        } = self;
        match &self.problem {
            DecodeProblem::Encoding(error) => {
                write!(f, "the {ty} field at byte {at} is not valid: {error}")
            }
            DecodeProblem::Length { expected, found } => write!(
                f,
                "the {ty} field at byte {at} takes {expected} bytes, but {found} are there"
            ),
            DecodeProblem::Invalid(reason) => {
                write!(
                    f,
                    "the {ty} field at byte {at} is not a valid {ty}: {reason}"
                )
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Which half of a stored pair failed to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The key.
    Key,
    /// The value.
    Value,
}

/// The error of a typed table's reads: the engine's, or a stored pair that does not decode as
/// the definition's types.
///
/// ```
/// use artdb::typed::Part;
/// use artdb::{Db, Options, TableDefinition, TypedError};
/// # let dir = tempfile::tempdir()?;
/// let db = Db::open_or_create(dir.path().join("t.artdb"), Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| txn.insert("t", b"k", b"not eight bytes"))?;
/// const AS_U64: TableDefinition<&[u8], u64> = TableDefinition::new("t");
/// match db.read().typed_table(AS_U64)?.get(b"k") {
///     Err(TypedError::Decode { part: Part::Value, error, .. }) => {
///         assert_eq!(error.to_string(), "the u64 field at byte 0 takes 8 bytes, but 15 are there");
///     }
///     other => panic!("{other:?}"), // ok: a doc example's failure
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TypedError {
    /// The engine's error (a missing table, I/O, corruption, a conflict, ...).
    Db(crate::Error),
    /// A stored key or value does not decode as the definition's type.
    Decode {
        /// The table.
        table: String,
        /// Whether the key or the value failed.
        part: Part,
        /// The stored bytes (cut to 64).
        bytes: Vec<u8>,
        /// What was wrong.
        error: DecodeError,
    },
}

/// Stored bytes kept in a [`TypedError::Decode`], at most.
const DECODE_ERROR_BYTES_MAX: usize = 64;

impl TypedError {
    /// The engine's [`crate::Error`] for this error, for a body of [`crate::Db::transact`]: a
    /// decode failure becomes [`crate::Error::Tree`] with this error's message (the transaction
    /// is not retried, since only a conflict is).
    pub fn into_db_error(self) -> crate::Error {
        match self {
            TypedError::Db(error) => error,
            decode @ TypedError::Decode { .. } => crate::Error::Tree(decode.to_string()),
        }
    }

    pub(crate) fn decode(table: &str, part: Part, bytes: &[u8], error: DecodeError) -> TypedError {
        TypedError::Decode {
            table: table.to_string(),
            part,
            bytes: bytes[..bytes.len().min(DECODE_ERROR_BYTES_MAX)].to_vec(),
            error,
        }
    }
}

/// For `?` in a [`crate::Db::transact`] body: see [`TypedError::into_db_error`].
impl From<TypedError> for crate::Error {
    fn from(error: TypedError) -> crate::Error {
        error.into_db_error()
    }
}

impl From<crate::Error> for TypedError {
    fn from(error: crate::Error) -> TypedError {
        TypedError::Db(error)
    }
}

impl fmt::Display for TypedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypedError::Db(error) => error.fmt(f),
            TypedError::Decode {
                table,
                part,
                bytes,
                error,
            } => {
                let part = match part {
                    Part::Key => "key",
                    Part::Value => "value",
                };
                write!(f, "table {table:?}: a stored {part} (")?;
                for byte in bytes {
                    write!(f, "{byte:02x}")?;
                }
                write!(
                    f,
                    ") does not decode: {error}; the table was written with other types than \
                     its TableDefinition declares"
                )
            }
        }
    }
}

impl std::error::Error for TypedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TypedError::Db(error) => Some(error),
            TypedError::Decode { error, .. } => Some(error),
        }
    }
}
