//! The types a typed table stores: [`Value`] (any stored type) and [`Key`] (a type whose
//! encoding sorts like its values), with the built-in implementations.
//!
//! Every encoding is `artdb-key`'s: integers big-endian with the sign bit flipped, floats in
//! `total_cmp` order, booleans one byte, strings and byte strings escaped and terminated when
//! a field follows them. A value that is a whole key or value is written without a terminator
//! (a `String` key is its UTF-8 bytes, as a bytes table would hold it); inside a tuple or array
//! every field but the last is written self-delimiting ([`Key::encode_field`]).
//!
//! Invariant (tested in `tests/typed.rs` against `BTreeMap<K, V>`): for keys `a`, `b` of one key
//! type, `encode(a).cmp(&encode(b)) == a.cmp(&b)` (floats by `total_cmp`), and `decode` returns
//! what was encoded. It holds for tuples because each field but the last is order-preserving and
//! prefix-free, so the first field that differs decides, within its own bytes.

use super::DecodeError;
use artdb_key::{escaped, scalar, KeyReader};

/// A type stored in a typed table's keys or values: how it becomes bytes and back.
///
/// Implement it (and [`Key`], for a key type) for a type of your own; see the example at
/// [`Key`]. `Ref` is what writes and lookups take (it may borrow: `&str` for a string), `Owned`
/// what reads return.
pub trait Value {
    /// What writes and lookups take.
    type Ref<'a>;
    /// What reads return.
    type Owned;

    /// The type's name in messages (`u64`, `(String, u32)`).
    fn type_name() -> String;

    /// Appends the encoding of `value` as a whole key or value (nothing follows it).
    fn encode(value: &Self::Ref<'_>, out: &mut Vec<u8>);

    /// Decodes `bytes`, all of which were written by [`Value::encode`].
    fn decode(bytes: &[u8]) -> Result<Self::Owned, DecodeError>;
}

/// A [`Value`] whose encoding sorts like the values: `encode(a) < encode(b)` exactly when
/// `a < b`. A typed table's keys are of a `Key` type, so its scans run in the order of the
/// values, and a range over typed bounds is a range over their encodings.
///
/// A type of your own, on `artdb-key`'s encodings:
///
/// ```
/// use artdb::typed::{DecodeError, Key, Value};
/// use artdb_key::{KeyBuilder, KeyReader};
///
/// /// A calendar day; sorts by year, then month, then day.
/// #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
/// struct Day { year: i16, month: u8, day: u8 }
///
/// impl Value for Day {
///     type Ref<'a> = Day;
///     type Owned = Day;
///     fn type_name() -> String { "Day".into() }
///     fn encode(value: &Day, out: &mut Vec<u8>) { <Day as Key>::encode_field(value, out) }
///     fn decode(bytes: &[u8]) -> Result<Day, DecodeError> {
///         let (day, used) = <Day as Key>::decode_field(bytes)?;
///         DecodeError::expect_end::<Day>(bytes, used)?;
///         Ok(day)
///     }
/// }
///
/// impl Key for Day {
///     fn encode_field(value: &Day, out: &mut Vec<u8>) {
///         out.extend_from_slice(KeyBuilder::new().i16(value.year).u8(value.month).u8(value.day).as_bytes());
///     }
///     fn decode_field(bytes: &[u8]) -> Result<(Day, usize), DecodeError> {
///         let mut reader = KeyReader::new(bytes);
///         let fields = (|| Ok::<_, artdb_key::Error>((reader.i16()?, reader.u8()?, reader.u8()?)))();
///         let (year, month, day) = fields.map_err(DecodeError::encoding::<Day>)?;
///         if !(1..=12).contains(&month) {
///             return Err(DecodeError::invalid::<Day>(format!("month {month}")));
///         }
///         Ok((Day { year, month, day }, reader.position()))
///     }
/// }
///
/// let mut a = Vec::new();
/// Day::encode(&Day { year: -5, month: 12, day: 31 }, &mut a);
/// let mut b = Vec::new();
/// Day::encode(&Day { year: 2026, month: 1, day: 2 }, &mut b);
/// assert!(a < b);
/// assert_eq!(Day::decode(&b)?, Day { year: 2026, month: 1, day: 2 });
/// # Ok::<(), DecodeError>(())
/// ```
pub trait Key: Value {
    /// Appends a self-delimiting encoding of `value` (a field that others follow in a tuple):
    /// order-preserving and prefix-free (no encoding is a proper prefix of another).
    fn encode_field(value: &Self::Ref<'_>, out: &mut Vec<u8>);

    /// Decodes one field written by [`Key::encode_field`] at the start of `bytes`; returns it
    /// and the number of bytes it took.
    fn decode_field(bytes: &[u8]) -> Result<(Self::Owned, usize), DecodeError>;
}

/// A tuple key, whose first field can select a run of keys: every key whose first field is a
/// given value sorts together (the field is self-delimiting), so [`crate::typed::ReadTable::prefix`]
/// scans them as one range.
pub trait Tuple: Key {
    /// The type of the first field.
    type First: Key;
}

/// The encoded prefix every key whose first field is `first` starts with.
pub(super) fn first_field_prefix<K: Tuple>(first: &<K::First as Value>::Ref<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    K::First::encode_field(first, &mut out);
    out
}

macro_rules! scalar_type {
    ($ty:ty, $width:literal, $encode:path, $decode:path) => {
        impl Value for $ty {
            type Ref<'a> = $ty;
            type Owned = $ty;

            fn type_name() -> String {
                stringify!($ty).to_string()
            }

            fn encode(value: &$ty, out: &mut Vec<u8>) {
                out.extend_from_slice(&$encode(*value));
            }

            fn decode(bytes: &[u8]) -> Result<$ty, DecodeError> {
                let (value, used) = <$ty as Key>::decode_field(bytes)?;
                DecodeError::expect_end::<$ty>(bytes, used)?;
                Ok(value)
            }
        }

        impl Key for $ty {
            fn encode_field(value: &$ty, out: &mut Vec<u8>) {
                out.extend_from_slice(&$encode(*value));
            }

            fn decode_field(bytes: &[u8]) -> Result<($ty, usize), DecodeError> {
                let Some(field) = bytes.get(..$width) else {
                    return Err(DecodeError::length::<$ty>($width, bytes.len()));
                };
                let mut fixed = [0u8; $width];
                fixed.copy_from_slice(field);
                Ok(($decode(fixed), $width))
            }
        }
    };
}

scalar_type!(u8, 1, scalar::encode_u8, scalar::decode_u8);
scalar_type!(u16, 2, scalar::encode_u16, scalar::decode_u16);
scalar_type!(u32, 4, scalar::encode_u32, scalar::decode_u32);
scalar_type!(u64, 8, scalar::encode_u64, scalar::decode_u64);
scalar_type!(u128, 16, scalar::encode_u128, scalar::decode_u128);
scalar_type!(i8, 1, scalar::encode_i8, scalar::decode_i8);
scalar_type!(i16, 2, scalar::encode_i16, scalar::decode_i16);
scalar_type!(i32, 4, scalar::encode_i32, scalar::decode_i32);
scalar_type!(i64, 8, scalar::encode_i64, scalar::decode_i64);
scalar_type!(i128, 16, scalar::encode_i128, scalar::decode_i128);
scalar_type!(f32, 4, scalar::encode_f32, scalar::decode_f32);
scalar_type!(f64, 8, scalar::encode_f64, scalar::decode_f64);

impl Value for bool {
    type Ref<'a> = bool;
    type Owned = bool;

    fn type_name() -> String {
        "bool".to_string()
    }

    fn encode(value: &bool, out: &mut Vec<u8>) {
        out.push(u8::from(*value));
    }

    fn decode(bytes: &[u8]) -> Result<bool, DecodeError> {
        let (value, used) = <bool as Key>::decode_field(bytes)?;
        DecodeError::expect_end::<bool>(bytes, used)?;
        Ok(value)
    }
}

impl Key for bool {
    fn encode_field(value: &bool, out: &mut Vec<u8>) {
        out.push(u8::from(*value));
    }

    fn decode_field(bytes: &[u8]) -> Result<(bool, usize), DecodeError> {
        let mut reader = KeyReader::new(bytes);
        let value = reader.bool().map_err(DecodeError::encoding::<bool>)?;
        Ok((value, 1))
    }
}

impl Value for () {
    type Ref<'a> = ();
    type Owned = ();

    fn type_name() -> String {
        "()".to_string()
    }

    fn encode(_value: &(), _out: &mut Vec<u8>) {}

    fn decode(bytes: &[u8]) -> Result<(), DecodeError> {
        DecodeError::expect_end::<()>(bytes, 0)
    }
}

impl Key for () {
    fn encode_field(_value: &(), _out: &mut Vec<u8>) {}

    fn decode_field(_bytes: &[u8]) -> Result<((), usize), DecodeError> {
        Ok(((), 0))
    }
}

/// Strings and byte strings: whole, their bytes as they are; as a field, escaped and
/// terminated (`artdb_key::escaped`). Both orders are the order of the bytes.
macro_rules! string_type {
    ($marker:ty, $name:literal, $borrowed:ty, $owned:ty, $from_bytes:path) => {
        impl Value for $marker {
            type Ref<'a> = &'a $borrowed;
            type Owned = $owned;

            fn type_name() -> String {
                $name.to_string()
            }

            fn encode(value: &&$borrowed, out: &mut Vec<u8>) {
                out.extend_from_slice(AsRef::<[u8]>::as_ref(*value));
            }

            fn decode(bytes: &[u8]) -> Result<$owned, DecodeError> {
                $from_bytes(bytes.to_vec())
            }
        }

        impl Key for $marker {
            fn encode_field(value: &&$borrowed, out: &mut Vec<u8>) {
                escaped::encode_into(AsRef::<[u8]>::as_ref(*value), out);
            }

            fn decode_field(bytes: &[u8]) -> Result<($owned, usize), DecodeError> {
                let (field, used) =
                    escaped::decode(bytes, 0).map_err(DecodeError::encoding::<$marker>)?;
                Ok(($from_bytes(field.into_owned())?, used))
            }
        }
    };
}

fn string_from(bytes: Vec<u8>) -> Result<String, DecodeError> {
    String::from_utf8(bytes).map_err(|error| {
        DecodeError::invalid::<String>(format!(
            "not UTF-8 (at byte {})",
            error.utf8_error().valid_up_to()
        ))
    })
}

fn bytes_from(bytes: Vec<u8>) -> Result<Vec<u8>, DecodeError> {
    Ok(bytes)
}

string_type!(String, "String", str, String, string_from);
string_type!(&str, "String", str, String, string_from);
string_type!(Vec<u8>, "bytes", [u8], Vec<u8>, bytes_from);
string_type!(&[u8], "bytes", [u8], Vec<u8>, bytes_from);

/// A fixed array: its elements' encodings in order (every element but the last as a field),
/// so arrays sort element by element, as Rust orders them. `[u8; N]` is its N bytes.
impl<T: Key, const N: usize> Value for [T; N] {
    type Ref<'a> = [T::Ref<'a>; N];
    type Owned = [T::Owned; N];

    fn type_name() -> String {
        format!("[{}; {N}]", T::type_name())
    }

    fn encode(value: &[T::Ref<'_>; N], out: &mut Vec<u8>) {
        if let Some((last, init)) = value.split_last() {
            for element in init {
                T::encode_field(element, out);
            }
            T::encode(last, out);
        }
    }

    fn decode(bytes: &[u8]) -> Result<[T::Owned; N], DecodeError> {
        let (array, used) = decode_array::<T, N>(bytes, true)?;
        // Only an empty array can leave bytes over: a last element consumes the rest.
        DecodeError::expect_end::<[T; N]>(bytes, used)?;
        Ok(array)
    }
}

impl<T: Key, const N: usize> Key for [T; N] {
    fn encode_field(value: &[T::Ref<'_>; N], out: &mut Vec<u8>) {
        for element in value {
            T::encode_field(element, out);
        }
    }

    fn decode_field(bytes: &[u8]) -> Result<([T::Owned; N], usize), DecodeError> {
        decode_array::<T, N>(bytes, false)
    }
}

/// Decodes `N` elements; with `whole`, the last one is a whole encoding that ends `bytes`.
fn decode_array<T: Key, const N: usize>(
    bytes: &[u8],
    whole: bool,
) -> Result<([T::Owned; N], usize), DecodeError> {
    let mut elements = Vec::with_capacity(N);
    let mut at = 0usize;
    for index in 0..N {
        let rest = bytes.get(at..).unwrap_or(&[]);
        if whole && index + 1 == N {
            elements.push(T::decode(rest).map_err(|error| error.shifted(at))?);
            at = bytes.len();
        } else {
            let (element, used) = T::decode_field(rest).map_err(|error| error.shifted(at))?;
            elements.push(element);
            at += used;
        }
    }
    // Exactly N elements were pushed, so the conversion succeeds; the error keeps it total.
    let array: [T::Owned; N] = elements
        .try_into()
        .map_err(|_| DecodeError::invalid::<[T; N]>("wrong element count"))?;
    Ok((array, at))
}

/// Tuples: their fields' encodings in order, every field but the last self-delimiting, so
/// tuples sort field by field, as Rust orders them.
macro_rules! tuple_type {
    ($($field:ident $index:tt),+ ; $last:ident $last_index:tt) => {
        impl<$($field: Key,)+ $last: Key> Value for ($($field,)+ $last) {
            type Ref<'a> = ($($field::Ref<'a>,)+ $last::Ref<'a>);
            type Owned = ($($field::Owned,)+ $last::Owned);

            fn type_name() -> String {
                let names = [$($field::type_name(),)+ $last::type_name()];
                format!("({})", names.join(", "))
            }

            fn encode(value: &Self::Ref<'_>, out: &mut Vec<u8>) {
                $($field::encode_field(&value.$index, out);)+
                $last::encode(&value.$last_index, out);
            }

            fn decode(bytes: &[u8]) -> Result<Self::Owned, DecodeError> {
                let mut at = 0usize;
                $(
                    #[allow(non_snake_case)]
                    let $field = {
                        let rest = bytes.get(at..).unwrap_or(&[]);
                        let (field, used) =
                            $field::decode_field(rest).map_err(|error| error.shifted(at))?;
                        at += used;
                        field
                    };
                )+
                let rest = bytes.get(at..).unwrap_or(&[]);
                let last = $last::decode(rest).map_err(|error| error.shifted(at))?;
                Ok(($($field,)+ last))
            }
        }

        impl<$($field: Key,)+ $last: Key> Tuple for ($($field,)+ $last) {
            type First = A;
        }

        impl<$($field: Key,)+ $last: Key> Key for ($($field,)+ $last) {
            fn encode_field(value: &Self::Ref<'_>, out: &mut Vec<u8>) {
                $($field::encode_field(&value.$index, out);)+
                $last::encode_field(&value.$last_index, out);
            }

            fn decode_field(bytes: &[u8]) -> Result<(Self::Owned, usize), DecodeError> {
                let mut at = 0usize;
                $(
                    #[allow(non_snake_case)]
                    let $field = {
                        let rest = bytes.get(at..).unwrap_or(&[]);
                        let (field, used) =
                            $field::decode_field(rest).map_err(|error| error.shifted(at))?;
                        at += used;
                        field
                    };
                )+
                let rest = bytes.get(at..).unwrap_or(&[]);
                let (last, used) = $last::decode_field(rest).map_err(|error| error.shifted(at))?;
                Ok((($($field,)+ last), at + used))
            }
        }
    };
}

tuple_type!(A 0; B 1);
tuple_type!(A 0, B 1; C 2);
tuple_type!(A 0, B 1, C 2; D 3);
tuple_type!(A 0, B 1, C 2, D 3; E 4);
tuple_type!(A 0, B 1, C 2, D 3, E 4; F 5);

/// The whole encoding of `value` (a key or value as the engine stores it).
pub(super) fn encoded<T: Value>(value: &T::Ref<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    T::encode(value, &mut out);
    out
}
