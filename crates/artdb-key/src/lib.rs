//! artdb-key: order-preserving encodings of typed values to byte strings, so that comparing the
//! bytes (as the ART and every sorted file do) compares the values.
//!
//! This is the only crate in artdb that writes big-endian bytes; everything else is little-endian.
//! It depends on nothing and is usable alone.
//!
//! Three layers, each built on the one before:
//! - [`scalar`]: fixed-width encodings of integers (`u8`..`u128`, `i8`..`i128`: big-endian, sign
//!   bit flipped) and floats (`f32`, `f64`: `total_cmp` order, exact bits kept), as arrays.
//! - [`KeyBuilder`] / [`KeyReader`]: untagged tuples of those plus booleans, strings and byte
//!   strings (escaped and terminated, see [`escaped`]); the reader must know the field types.
//!   This is the compact form for a table whose columns have fixed types.
//! - [`Value`], [`encode_tuple`], [`decode_tuple`]: self-describing tuples whose every field
//!   carries a type tag, decodable without a schema.
//!
//! Invariant (checked by the property tests in `tests/properties.rs`): for values `a`, `b` of one
//! type, or tuples built with one sequence of field types, `encode(a).cmp(&encode(b)) ==
//! a.cmp(&b)`; decoding an encoding returns the value bit for bit; decoding any other byte string
//! returns an [`Error`] or some value, and never panics or reads out of bounds.
//!
//! ```
//! use artdb_key::{scalar, KeyBuilder};
//! assert!(scalar::encode_i32(-1) < scalar::encode_i32(0));
//! assert!(scalar::encode_f64(-0.0) < scalar::encode_f64(0.0));
//! let a = KeyBuilder::new().str("ab").u8(9).finish();
//! let b = KeyBuilder::new().str("ab\0").u8(0).finish();
//! assert!(a < b); // "ab" < "ab\0", whatever follows
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
mod builder;
mod error;
pub mod escaped;
pub mod scalar;
mod value;

pub use builder::{KeyBuilder, KeyReader};
pub use error::Error;
pub use value::{decode_tuple, encode_tuple, encode_tuple_into, Value};
