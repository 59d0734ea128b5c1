//! Property tests of artdb-key's invariants: byte order equals value order for every type and for
//! tuples (tagged and untagged), decoding an encoding returns the value bit for bit, truncated or
//! corrupted encodings are typed errors, and decoding arbitrary bytes never panics.
//!
//! Scale: `ARTDB_TEST_SCALE` (default 1) multiplies the number of cases of every property. A
//! failing case is printed by proptest with the seed to replay it (see docs/testing.md).

use std::cmp::Ordering;

use artdb_key::{decode_tuple, encode_tuple, scalar, Error, KeyBuilder, KeyReader, Value};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    let scale: u32 = std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    ProptestConfig::with_cases(512 * scale.max(1))
}

/// Every f64 bit pattern, with the landmarks (zeros, infinities, NaNs, subnormals) made likely.
fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        prop::sample::select(vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(1),
            f64::from_bits(0x8000_0000_0000_0001),
            f64::MIN,
            f64::MAX,
        ]),
        (-4i32..4).prop_map(f64::from),
    ]
}

fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        prop::sample::select(vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN
        ]),
        (-4i16..4).prop_map(f32::from),
    ]
}

/// Byte strings rich in the bytes the escaping treats specially (0x00, 0xFF, 0x01).
fn tricky_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![Just(0u8), Just(0xFF), Just(1), Just(b'a'), any::<u8>()],
        0..10,
    )
}

fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof!["[\\x00\\x01a\\u{FF}\\u{10000}]{0,8}", any::<String>()]
}

fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u8>().prop_map(Value::U8),
        any::<u16>().prop_map(Value::U16),
        any::<u32>().prop_map(Value::U32),
        any::<u64>().prop_map(Value::U64),
        any::<u128>().prop_map(Value::U128),
        any::<i8>().prop_map(Value::I8),
        any::<i16>().prop_map(Value::I16),
        any::<i32>().prop_map(Value::I32),
        any::<i64>().prop_map(Value::I64),
        any::<i128>().prop_map(Value::I128),
        any_f32().prop_map(Value::F32),
        any_f64().prop_map(Value::F64),
        tricky_bytes().prop_map(Value::Bytes),
        tricky_string().prop_map(Value::Str),
    ]
}

/// Values from a small domain, so that two random tuples often share a prefix of equal values
/// and the comparison reaches later fields.
fn small_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0u8..3).prop_map(Value::U8),
        (-2i64..2).prop_map(Value::I64),
        prop::sample::select(vec![-0.0, 0.0, 1.0, f64::NAN]).prop_map(Value::F64),
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xFF]), 0..3)
            .prop_map(Value::Bytes),
        "[\\x00a]{0,2}".prop_map(Value::Str),
    ]
}

fn small_tuple() -> impl Strategy<Value = Vec<Value>> {
    prop::collection::vec(small_value(), 0..4)
}

/// One property per scalar type: order, round trip, and the encoded width.
macro_rules! scalar_properties {
    ($name:ident, $strategy:expr, $encode:path, $decode:path, $cmp:expr, $same:expr) => {
        proptest! {
            #![proptest_config(config())]
            #[test]
            fn $name(a in $strategy, b in $strategy) {
                let (encoded_a, encoded_b) = ($encode(a), $encode(b));
                prop_assert_eq!(encoded_a.cmp(&encoded_b), $cmp(&a, &b));
                prop_assert!($same($decode(encoded_a), a));
                let mut builder = KeyBuilder::new();
                prop_assert_eq!(builder.value(&Value::from_scalar(a)).len(), 1 + encoded_a.len());
            }
        }
    };
}

/// Test-only conversion from a scalar to its [`Value`] variant.
trait FromScalar<T> {
    fn from_scalar(value: T) -> Value;
}

macro_rules! from_scalar {
    ($($ty:ty => $variant:ident),*) => {$(
        impl FromScalar<$ty> for Value {
            fn from_scalar(value: $ty) -> Value {
                Value::$variant(value)
            }
        }
    )*};
}

from_scalar!(u8 => U8, u16 => U16, u32 => U32, u64 => U64, u128 => U128, i8 => I8, i16 => I16,
    i32 => I32, i64 => I64, i128 => I128, f32 => F32, f64 => F64);

fn same<T: PartialEq>(a: T, b: T) -> bool {
    a == b
}

scalar_properties!(
    u8_order,
    any::<u8>(),
    scalar::encode_u8,
    scalar::decode_u8,
    Ord::cmp,
    same
);
scalar_properties!(
    u16_order,
    any::<u16>(),
    scalar::encode_u16,
    scalar::decode_u16,
    Ord::cmp,
    same
);
scalar_properties!(
    u32_order,
    any::<u32>(),
    scalar::encode_u32,
    scalar::decode_u32,
    Ord::cmp,
    same
);
scalar_properties!(
    u64_order,
    any::<u64>(),
    scalar::encode_u64,
    scalar::decode_u64,
    Ord::cmp,
    same
);
scalar_properties!(
    u128_order,
    any::<u128>(),
    scalar::encode_u128,
    scalar::decode_u128,
    Ord::cmp,
    same
);
scalar_properties!(
    i8_order,
    any::<i8>(),
    scalar::encode_i8,
    scalar::decode_i8,
    Ord::cmp,
    same
);
scalar_properties!(
    i16_order,
    any::<i16>(),
    scalar::encode_i16,
    scalar::decode_i16,
    Ord::cmp,
    same
);
scalar_properties!(
    i32_order,
    any::<i32>(),
    scalar::encode_i32,
    scalar::decode_i32,
    Ord::cmp,
    same
);
scalar_properties!(
    i64_order,
    any::<i64>(),
    scalar::encode_i64,
    scalar::decode_i64,
    Ord::cmp,
    same
);
scalar_properties!(
    i128_order,
    any::<i128>(),
    scalar::encode_i128,
    scalar::decode_i128,
    Ord::cmp,
    same
);
scalar_properties!(
    f32_order,
    any_f32(),
    scalar::encode_f32,
    scalar::decode_f32,
    f32::total_cmp,
    |x: f32, y: f32| x.to_bits() == y.to_bits()
);
scalar_properties!(
    f64_order,
    any_f64(),
    scalar::encode_f64,
    scalar::decode_f64,
    f64::total_cmp,
    |x: f64, y: f64| x.to_bits() == y.to_bits()
);

/// The four fields of a typical secondary-index key, compared as a tuple.
type Row = (bool, i32, String, Vec<u8>, f64);

fn row() -> impl Strategy<Value = Row> {
    (
        any::<bool>(),
        -2i32..2,
        "[\\x00ab]{0,3}",
        prop::collection::vec(prop::sample::select(vec![0u8, 1, 0xFF]), 0..3),
        prop::sample::select(vec![-0.0, 0.0, -1.0, f64::NAN, f64::NEG_INFINITY]),
    )
}

fn build_row(row: &Row) -> Vec<u8> {
    KeyBuilder::new()
        .bool(row.0)
        .i32(row.1)
        .str(&row.2)
        .bytes(&row.3)
        .f64(row.4)
        .finish()
}

fn cmp_row(a: &Row, b: &Row) -> Ordering {
    (a.0, a.1, &a.2, &a.3)
        .cmp(&(b.0, b.1, &b.2, &b.3))
        .then_with(|| a.4.total_cmp(&b.4))
}

/// Offsets of the value boundaries in a tagged tuple's encoding (0 and the total length included).
fn boundaries(values: &[Value]) -> Vec<usize> {
    let mut offsets = vec![0];
    let mut total = 0;
    for value in values {
        total += value.encode().len();
        offsets.push(total);
    }
    offsets
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn byte_string_order_and_round_trip(a in tricky_bytes(), b in tricky_bytes()) {
        let encoded_a = KeyBuilder::new().bytes(&a).finish();
        let encoded_b = KeyBuilder::new().bytes(&b).finish();
        prop_assert_eq!(encoded_a.cmp(&encoded_b), a.cmp(&b));
        let mut reader = KeyReader::new(&encoded_a);
        prop_assert_eq!(&*reader.bytes().unwrap(), &a[..]);
        prop_assert_eq!(reader.finish(), Ok(()));
    }

    #[test]
    fn string_order_and_round_trip(a in tricky_string(), b in tricky_string()) {
        let encoded_a = KeyBuilder::new().str(&a).finish();
        let encoded_b = KeyBuilder::new().str(&b).finish();
        prop_assert_eq!(encoded_a.cmp(&encoded_b), a.cmp(&b));
        let mut reader = KeyReader::new(&encoded_a);
        prop_assert_eq!(&*reader.str().unwrap(), &a[..]);
        prop_assert_eq!(reader.finish(), Ok(()));
    }

    /// Tuples of strings of different arity: the case that breaks naive concatenation.
    #[test]
    fn string_tuples_keep_order(a in prop::collection::vec("[\\x00\\x01a]{0,3}", 0..4),
                                b in prop::collection::vec("[\\x00\\x01a]{0,3}", 0..4)) {
        let encode = |fields: &[String]| {
            let mut builder = KeyBuilder::new();
            for field in fields {
                builder.str(field);
            }
            builder.finish()
        };
        prop_assert_eq!(encode(&a).cmp(&encode(&b)), a.cmp(&b));
    }

    #[test]
    fn untagged_rows_keep_order_and_round_trip(a in row(), b in row()) {
        prop_assert_eq!(build_row(&a).cmp(&build_row(&b)), cmp_row(&a, &b));
        let encoded = build_row(&a);
        let mut reader = KeyReader::new(&encoded);
        prop_assert_eq!(reader.bool().unwrap(), a.0);
        prop_assert_eq!(reader.i32().unwrap(), a.1);
        prop_assert_eq!(&*reader.str().unwrap(), &a.2[..]);
        prop_assert_eq!(&*reader.bytes().unwrap(), &a.3[..]);
        prop_assert_eq!(reader.f64().unwrap().to_bits(), a.4.to_bits());
        prop_assert_eq!(reader.finish(), Ok(()));
    }

    #[test]
    fn value_order_matches_encoding(a in any_value(), b in any_value()) {
        prop_assert_eq!(a.encode().cmp(&b.encode()), a.cmp(&b));
        prop_assert_eq!(Value::decode(&a.encode()), Ok(a));
    }

    #[test]
    fn tuple_order_matches_encoding(a in small_tuple(), b in small_tuple()) {
        prop_assert_eq!(encode_tuple(&a).cmp(&encode_tuple(&b)), a.cmp(&b));
    }

    #[test]
    fn tuples_round_trip(values in prop::collection::vec(any_value(), 0..6)) {
        prop_assert_eq!(decode_tuple(&encode_tuple(&values)), Ok(values));
    }

    /// Cutting a tuple's encoding anywhere but at a value boundary is an error, never a panic.
    #[test]
    fn truncated_tuples_are_errors(values in prop::collection::vec(any_value(), 1..5)) {
        let encoded = encode_tuple(&values);
        let boundaries = boundaries(&values);
        for cut in 0..encoded.len() {
            let decoded = decode_tuple(&encoded[..cut]);
            if let Ok(position) = boundaries.binary_search(&cut) {
                prop_assert_eq!(decoded, Ok(values[..position].to_vec()));
            } else {
                prop_assert!(decoded.is_err(), "cut at {} decoded as {:?}", cut, decoded);
            }
        }
    }

    /// Arbitrary bytes: every decoder returns a value or a typed error and never panics; what it
    /// accepts re-encodes to exactly the bytes it consumed (the encoding is canonical).
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..40),
                                   schema in prop::collection::vec(0u8..8, 0..6)) {
        if let Ok(values) = decode_tuple(&bytes) {
            prop_assert_eq!(encode_tuple(&values), bytes.clone());
        }
        let _ = Value::decode(&bytes);
        let mut reader = KeyReader::new(&bytes);
        for field in schema {
            let before = reader.position();
            let ok = match field {
                0 => reader.u8().is_ok(),
                1 => reader.i64().is_ok(),
                2 => reader.f32().is_ok(),
                3 => reader.bool().is_ok(),
                4 => reader.str().is_ok(),
                5 => reader.bytes().is_ok(),
                6 => reader.u128().is_ok(),
                _ => reader.value().is_ok(),
            };
            prop_assert!(reader.position() <= bytes.len());
            if !ok {
                prop_assert_eq!(reader.position(), before, "a failed read moved the reader");
            }
        }
        let _ = reader.finish();
    }
}

#[test]
fn corrupt_encodings_are_typed_errors() {
    assert_eq!(
        decode_tuple(&[0x7E]),
        Err(Error::UnknownTag { at: 0, tag: 0x7E })
    );
    assert_eq!(
        decode_tuple(&[0x02, 0x05]),
        Err(Error::InvalidBool { at: 1, byte: 5 })
    );
    assert_eq!(
        decode_tuple(&[0x13, 1, 2]),
        Err(Error::UnexpectedEnd { at: 1, needed: 6 })
    );
    assert_eq!(
        decode_tuple(&[0x01, 0x30, b'a', 0, 0x10]),
        Err(Error::InvalidEscape { at: 4, byte: 0x10 })
    );
    assert_eq!(
        decode_tuple(&[0x31, 0xC3, 0x28, 0, 0]),
        Err(Error::InvalidUtf8 { at: 1 })
    );
    assert_eq!(
        decode_tuple(&[0x30, b'a']),
        Err(Error::Unterminated { at: 1 })
    );
    assert_eq!(
        Value::decode(&[0x01, 0x01]),
        Err(Error::TrailingBytes { at: 1, len: 1 })
    );
    assert_eq!(
        KeyReader::new(&[1, 2]).finish(),
        Err(Error::TrailingBytes { at: 0, len: 2 })
    );
    for error in [
        Error::UnknownTag { at: 3, tag: 9 },
        Error::Unterminated { at: 0 },
    ] {
        assert!(error.to_string().contains("offset"), "{error}");
    }
}

#[test]
fn builder_is_reusable_after_finish() {
    let mut builder = KeyBuilder::with_capacity(16);
    let first = builder.u16(1).finish();
    assert!(builder.is_empty());
    let second = builder.u16(2).finish();
    assert_eq!((first, second), (vec![0, 1], vec![0, 2]));
}
