//! Tagged values and self-describing tuples: [`Value`], [`encode_tuple`], [`decode_tuple`].
//!
//! Byte format of one value: a tag byte, then the value's untagged encoding (see
//! [`crate::builder`]). A tuple is its values' encodings concatenated, with no count or end marker.
//!
//! | variant   | tag  | then                          |
//! | --------- | ---- | ----------------------------- |
//! | `Null`    | 0x01 | nothing                       |
//! | `Bool`    | 0x02 | 1 byte, 0x00 or 0x01          |
//! | `U8`..`U128` | 0x10..0x14 | 1, 2, 4, 8, 16 bytes  |
//! | `I8`..`I128` | 0x18..0x1C | 1, 2, 4, 8, 16 bytes  |
//! | `F32`     | 0x20 | 4 bytes                       |
//! | `F64`     | 0x21 | 8 bytes                       |
//! | `Bytes`   | 0x30 | escaped, terminated           |
//! | `Str`     | 0x31 | escaped, terminated           |
//!
//! Order: values of different variants compare by tag (the table's order; `Null` first, as SQL
//! indexes usually want); values of one variant by their value, floats by `total_cmp`. Tuples
//! compare lexicographically, a proper prefix first. Invariant, tested by property tests:
//! `encode_tuple(a).cmp(&encode_tuple(b)) == a.cmp(b)` and `decode_tuple(&encode_tuple(a)) == a`.
//!
//! Tags of different integer widths differ, so `U8(1)` and `U64(1)` are different values that sort
//! by width first. The road not taken: one variable-width integer encoding that orders across
//! widths (FoundationDB's tuple layer) costs a length byte per integer and a branchier decoder;
//! artdb's tables have typed columns, so a column's values always share one width.

use std::cmp::Ordering;

use crate::{Error, KeyBuilder, KeyReader};

/// One field of a self-describing key: a typed value that remembers its type in the encoding.
///
/// Equality and order are total and agree with the encoding: floats are compared by
/// [`f64::total_cmp`], so `F64(NaN) == F64(NaN)` (same bits) and `F64(-0.0) < F64(0.0)`.
#[derive(Debug, Clone)]
pub enum Value {
    /// The absent value; sorts before every other value.
    Null,
    /// A boolean; `false` < `true`.
    Bool(bool),
    /// An 8-bit unsigned integer.
    U8(u8),
    /// A 16-bit unsigned integer.
    U16(u16),
    /// A 32-bit unsigned integer.
    U32(u32),
    /// A 64-bit unsigned integer.
    U64(u64),
    /// A 128-bit unsigned integer.
    U128(u128),
    /// An 8-bit signed integer.
    I8(i8),
    /// A 16-bit signed integer.
    I16(i16),
    /// A 32-bit signed integer.
    I32(i32),
    /// A 64-bit signed integer.
    I64(i64),
    /// A 128-bit signed integer.
    I128(i128),
    /// A 32-bit float, ordered by `total_cmp`; every bit pattern round-trips.
    F32(f32),
    /// A 64-bit float, ordered by `total_cmp`; every bit pattern round-trips.
    F64(f64),
    /// A byte string, ordered byte-wise (a proper prefix first).
    Bytes(Vec<u8>),
    /// A string, ordered by its UTF-8 bytes (which is code-point order).
    Str(String),
}

/// Type tags, in sort order.
mod tag {
    pub const NULL: u8 = 0x01;
    pub const BOOL: u8 = 0x02;
    pub const U8: u8 = 0x10;
    pub const U16: u8 = 0x11;
    pub const U32: u8 = 0x12;
    pub const U64: u8 = 0x13;
    pub const U128: u8 = 0x14;
    pub const I8: u8 = 0x18;
    pub const I16: u8 = 0x19;
    pub const I32: u8 = 0x1A;
    pub const I64: u8 = 0x1B;
    pub const I128: u8 = 0x1C;
    pub const F32: u8 = 0x20;
    pub const F64: u8 = 0x21;
    pub const BYTES: u8 = 0x30;
    pub const STR: u8 = 0x31;
}

impl Value {
    /// The tag byte that starts this value's encoding.
    pub fn tag(&self) -> u8 {
        match self {
            Value::Null => tag::NULL,
            Value::Bool(_) => tag::BOOL,
            Value::U8(_) => tag::U8,
            Value::U16(_) => tag::U16,
            Value::U32(_) => tag::U32,
            Value::U64(_) => tag::U64,
            Value::U128(_) => tag::U128,
            Value::I8(_) => tag::I8,
            Value::I16(_) => tag::I16,
            Value::I32(_) => tag::I32,
            Value::I64(_) => tag::I64,
            Value::I128(_) => tag::I128,
            Value::F32(_) => tag::F32,
            Value::F64(_) => tag::F64,
            Value::Bytes(_) => tag::BYTES,
            Value::Str(_) => tag::STR,
        }
    }

    /// Appends this value's tagged encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(self.tag());
        let mut builder = KeyBuilder {
            bytes: std::mem::take(out),
        };
        match self {
            Value::Null => &mut builder,
            Value::Bool(value) => builder.bool(*value),
            Value::U8(value) => builder.u8(*value),
            Value::U16(value) => builder.u16(*value),
            Value::U32(value) => builder.u32(*value),
            Value::U64(value) => builder.u64(*value),
            Value::U128(value) => builder.u128(*value),
            Value::I8(value) => builder.i8(*value),
            Value::I16(value) => builder.i16(*value),
            Value::I32(value) => builder.i32(*value),
            Value::I64(value) => builder.i64(*value),
            Value::I128(value) => builder.i128(*value),
            Value::F32(value) => builder.f32(*value),
            Value::F64(value) => builder.f64(*value),
            Value::Bytes(value) => builder.bytes(value),
            Value::Str(value) => builder.str(value),
        };
        *out = builder.finish();
    }

    /// This value's tagged encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Reads one tagged value at the reader's position (used by [`KeyReader::value`]).
    pub(crate) fn decode_from(reader: &mut KeyReader<'_>) -> Result<Value, Error> {
        let at = reader.position();
        let value = match reader.u8()? {
            tag::NULL => Value::Null,
            tag::BOOL => Value::Bool(reader.bool()?),
            tag::U8 => Value::U8(reader.u8()?),
            tag::U16 => Value::U16(reader.u16()?),
            tag::U32 => Value::U32(reader.u32()?),
            tag::U64 => Value::U64(reader.u64()?),
            tag::U128 => Value::U128(reader.u128()?),
            tag::I8 => Value::I8(reader.i8()?),
            tag::I16 => Value::I16(reader.i16()?),
            tag::I32 => Value::I32(reader.i32()?),
            tag::I64 => Value::I64(reader.i64()?),
            tag::I128 => Value::I128(reader.i128()?),
            tag::F32 => Value::F32(reader.f32()?),
            tag::F64 => Value::F64(reader.f64()?),
            tag::BYTES => Value::Bytes(reader.bytes()?.into_owned()),
            tag::STR => Value::Str(reader.str()?.into_owned()),
            unknown => return Err(Error::UnknownTag { at, tag: unknown }),
        };
        Ok(value)
    }

    /// Decodes exactly one tagged value that fills all of `input`.
    pub fn decode(input: &[u8]) -> Result<Value, Error> {
        let mut reader = KeyReader::new(input);
        let value = reader.value()?;
        reader.finish()?;
        Ok(value)
    }

    /// Compares two values of the same variant; `None` for different variants.
    fn cmp_same_variant(&self, other: &Value) -> Option<Ordering> {
        let ordering = match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::U8(a), Value::U8(b)) => a.cmp(b),
            (Value::U16(a), Value::U16(b)) => a.cmp(b),
            (Value::U32(a), Value::U32(b)) => a.cmp(b),
            (Value::U64(a), Value::U64(b)) => a.cmp(b),
            (Value::U128(a), Value::U128(b)) => a.cmp(b),
            (Value::I8(a), Value::I8(b)) => a.cmp(b),
            (Value::I16(a), Value::I16(b)) => a.cmp(b),
            (Value::I32(a), Value::I32(b)) => a.cmp(b),
            (Value::I64(a), Value::I64(b)) => a.cmp(b),
            (Value::I128(a), Value::I128(b)) => a.cmp(b),
            (Value::F32(a), Value::F32(b)) => a.total_cmp(b),
            (Value::F64(a), Value::F64(b)) => a.total_cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            _ => return None,
        };
        Some(ordering)
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Value) -> Ordering {
        self.cmp_same_variant(other)
            .unwrap_or_else(|| self.tag().cmp(&other.tag()))
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

/// Appends the encoding of a tuple of tagged values to `out` (see the module docs for the format).
pub fn encode_tuple_into(values: &[Value], out: &mut Vec<u8>) {
    for value in values {
        value.encode_into(out);
    }
}

/// The encoding of a tuple of tagged values: byte order equals tuple order.
///
/// ```
/// use artdb_key::{decode_tuple, encode_tuple, Value};
/// let a = encode_tuple(&[Value::I32(-5), Value::Str("b".into())]);
/// let b = encode_tuple(&[Value::I32(3), Value::Str("a".into())]);
/// assert!(a < b);
/// assert_eq!(decode_tuple(&a)?, [Value::I32(-5), Value::Str("b".into())]);
/// # Ok::<(), artdb_key::Error>(())
/// ```
pub fn encode_tuple(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_tuple_into(values, &mut out);
    out
}

/// Decodes a tuple written by [`encode_tuple`]; every byte of `input` must belong to a value.
pub fn decode_tuple(input: &[u8]) -> Result<Vec<Value>, Error> {
    let mut reader = KeyReader::new(input);
    let mut values = Vec::new();
    while !reader.is_empty() {
        values.push(reader.value()?);
    }
    Ok(values)
}
