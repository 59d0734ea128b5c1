//! Untagged tuples: [`KeyBuilder`] appends fields, [`KeyReader`] reads them back in the same order.
//!
//! Byte format: the fields' encodings concatenated, nothing else (no type tags, no count). Fixed
//! width fields use [`crate::scalar`]'s rules; booleans are one byte `0x00`/`0x01`; strings and
//! byte strings use [`crate::escaped`]'s escaped, terminated form. A tagged field
//! ([`KeyBuilder::value`]) is a [`crate::Value`]'s tag byte followed by its untagged encoding.
//!
//! Invariant: two keys built with the same sequence of field types compare, as bytes, like the
//! tuples of their values compare (field by field, floats by `total_cmp`, a shorter tuple that is
//! a prefix of a longer one first). This holds because every field encoding is order-preserving
//! and prefix-free: fixed-width fields by their width, escaped fields by their terminator.
//!
//! The schema lives with the caller: the reader must ask for the types the builder wrote. A
//! mismatch is not always detectable (eight bytes are a valid `u64` and a valid `f64`), but the
//! reader never panics and never reads past the end; it returns a typed [`Error`] instead.

use std::borrow::Cow;

use crate::{escaped, scalar, Error, Value};

/// Builds an order-preserving key from typed fields.
///
/// ```
/// use artdb_key::{KeyBuilder, KeyReader};
/// let key = KeyBuilder::new().u32(7).str("x").i64(-3).finish();
/// let mut reader = KeyReader::new(&key);
/// assert_eq!(reader.u32()?, 7);
/// assert_eq!(reader.str()?, "x");
/// assert_eq!(reader.i64()?, -3);
/// reader.finish()?;
/// # Ok::<(), artdb_key::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyBuilder {
    pub(crate) bytes: Vec<u8>,
}

macro_rules! builder_fixed {
    ($name:ident, $ty:ty, $encode:path) => {
        #[doc = concat!("Appends a `", stringify!($ty), "` field (see [`", stringify!($encode), "`]).")]
        #[inline]
        pub fn $name(&mut self, value: $ty) -> &mut Self {
            self.bytes.extend_from_slice(&$encode(value));
            self
        }
    };
}

impl KeyBuilder {
    /// An empty key.
    pub fn new() -> KeyBuilder {
        KeyBuilder::default()
    }

    /// An empty key whose buffer holds `capacity_bytes` without reallocating.
    pub fn with_capacity(capacity_bytes: usize) -> KeyBuilder {
        KeyBuilder {
            bytes: Vec::with_capacity(capacity_bytes),
        }
    }

    builder_fixed!(u8, u8, scalar::encode_u8);
    builder_fixed!(u16, u16, scalar::encode_u16);
    builder_fixed!(u32, u32, scalar::encode_u32);
    builder_fixed!(u64, u64, scalar::encode_u64);
    builder_fixed!(u128, u128, scalar::encode_u128);
    builder_fixed!(i8, i8, scalar::encode_i8);
    builder_fixed!(i16, i16, scalar::encode_i16);
    builder_fixed!(i32, i32, scalar::encode_i32);
    builder_fixed!(i64, i64, scalar::encode_i64);
    builder_fixed!(i128, i128, scalar::encode_i128);
    builder_fixed!(f32, f32, scalar::encode_f32);
    builder_fixed!(f64, f64, scalar::encode_f64);

    /// Appends a boolean field: one byte, `false` (0x00) before `true` (0x01).
    #[inline]
    pub fn bool(&mut self, value: bool) -> &mut Self {
        self.bytes.push(u8::from(value));
        self
    }

    /// Appends a byte-string field (escaped and terminated, see [`crate::escaped`]).
    #[inline]
    pub fn bytes(&mut self, value: &[u8]) -> &mut Self {
        escaped::encode_into(value, &mut self.bytes);
        self
    }

    /// Appends a string field: its UTF-8 bytes, escaped and terminated like [`KeyBuilder::bytes`],
    /// so strings sort by their UTF-8 bytes, which is the order of their code points.
    #[inline]
    pub fn str(&mut self, value: &str) -> &mut Self {
        self.bytes(value.as_bytes())
    }

    /// Appends a tagged field: the value's type tag, then its encoding (see [`Value`]). Read it
    /// back with [`KeyReader::value`].
    pub fn value(&mut self, value: &Value) -> &mut Self {
        value.encode_into(&mut self.bytes);
        self
    }

    /// The key built so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Length in bytes of the key built so far.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True if no field has been appended since the builder was made or last finished.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Removes every field, keeping the buffer's capacity (to build many keys with one builder).
    pub fn clear(&mut self) {
        self.bytes.clear();
    }

    /// Returns the key and leaves the builder empty.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }
}

/// Reads the fields of a key built by [`KeyBuilder`], in the order they were appended.
///
/// Every read checks the remaining length and the field's syntax; a read that fails leaves the
/// reader where it was.
#[derive(Debug, Clone)]
pub struct KeyReader<'a> {
    input: &'a [u8],
    position: usize,
}

macro_rules! reader_fixed {
    ($name:ident, $ty:ty, $width:literal, $decode:path) => {
        #[doc = concat!("Reads a `", stringify!($ty), "` field (see [`", stringify!($decode), "`]).")]
        #[inline]
        pub fn $name(&mut self) -> Result<$ty, Error> {
            Ok($decode(self.fixed::<$width>()?))
        }
    };
}

impl<'a> KeyReader<'a> {
    /// A reader positioned at the start of `input`.
    pub fn new(input: &'a [u8]) -> KeyReader<'a> {
        KeyReader { input, position: 0 }
    }

    /// Offset of the next unread byte.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        self.input.get(self.position..).unwrap_or(&[])
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.position >= self.input.len()
    }

    /// Checks that every byte has been read ([`Error::TrailingBytes`] otherwise).
    pub fn finish(&self) -> Result<(), Error> {
        match self.remaining().len() {
            0 => Ok(()),
            len => Err(Error::TrailingBytes {
                at: self.position,
                len,
            }),
        }
    }

    reader_fixed!(u8, u8, 1, scalar::decode_u8);
    reader_fixed!(u16, u16, 2, scalar::decode_u16);
    reader_fixed!(u32, u32, 4, scalar::decode_u32);
    reader_fixed!(u64, u64, 8, scalar::decode_u64);
    reader_fixed!(u128, u128, 16, scalar::decode_u128);
    reader_fixed!(i8, i8, 1, scalar::decode_i8);
    reader_fixed!(i16, i16, 2, scalar::decode_i16);
    reader_fixed!(i32, i32, 4, scalar::decode_i32);
    reader_fixed!(i64, i64, 8, scalar::decode_i64);
    reader_fixed!(i128, i128, 16, scalar::decode_i128);
    reader_fixed!(f32, f32, 4, scalar::decode_f32);
    reader_fixed!(f64, f64, 8, scalar::decode_f64);

    /// Reads a boolean field ([`Error::InvalidBool`] for a byte other than 0 or 1).
    pub fn bool(&mut self) -> Result<bool, Error> {
        let at = self.position;
        match self.fixed::<1>()? {
            [0] => Ok(false),
            [1] => Ok(true),
            [byte] => {
                self.position = at;
                Err(Error::InvalidBool { at, byte })
            }
        }
    }

    /// Reads a byte-string field, borrowed from the input unless it held an escaped zero.
    pub fn bytes(&mut self) -> Result<Cow<'a, [u8]>, Error> {
        let (field, end) = escaped::decode(self.input, self.position)?;
        self.position = end;
        Ok(field)
    }

    /// Reads a string field ([`Error::InvalidUtf8`] if its bytes are not UTF-8).
    pub fn str(&mut self) -> Result<Cow<'a, str>, Error> {
        let at = self.position;
        let (field, end) = escaped::decode(self.input, at)?;
        let text = match field {
            Cow::Borrowed(bytes) => {
                Cow::Borrowed(std::str::from_utf8(bytes).map_err(|_| Error::InvalidUtf8 { at })?)
            }
            Cow::Owned(bytes) => {
                Cow::Owned(String::from_utf8(bytes).map_err(|_| Error::InvalidUtf8 { at })?)
            }
        };
        self.position = end;
        Ok(text)
    }

    /// Reads a tagged field written by [`KeyBuilder::value`].
    pub fn value(&mut self) -> Result<Value, Error> {
        let start = self.position;
        let result = Value::decode_from(self);
        if result.is_err() {
            self.position = start;
        }
        result
    }

    /// Takes the next `WIDTH` bytes.
    fn fixed<const WIDTH: usize>(&mut self) -> Result<[u8; WIDTH], Error> {
        let rest = self.remaining();
        let Some(field) = rest.get(..WIDTH) else {
            return Err(Error::UnexpectedEnd {
                at: self.position,
                needed: WIDTH - rest.len(),
            });
        };
        let mut bytes = [0; WIDTH];
        bytes.copy_from_slice(field);
        self.position += WIDTH;
        Ok(bytes)
    }
}
