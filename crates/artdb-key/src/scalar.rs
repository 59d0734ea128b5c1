//! Fixed-width, order-preserving encodings of integers and floats.
//!
//! Byte format (each function pair below is an instance of one of these rules):
//!
//! | type              | width     | bytes                                                        |
//! | ----------------- | --------- | ------------------------------------------------------------ |
//! | `u8` .. `u128`    | 1 .. 16   | the value, big-endian                                        |
//! | `i8` .. `i128`    | 1 .. 16   | the value's two's-complement bits with the sign bit flipped, big-endian |
//! | `f32`, `f64`      | 4, 8      | if the sign bit is clear, the bits with the sign bit set; if set, all bits inverted; big-endian |
//!
//! Invariant: for any two values `a`, `b` of one type, `encode(a).cmp(&encode(b)) == a.cmp(&b)`,
//! where floats are ordered by [`f64::total_cmp`]: negative NaNs < -inf < ... < -0.0 < +0.0 < ...
//! < +inf < positive NaNs. Decoding returns exactly the bits that were encoded (NaN payloads and
//! the sign of zero survive). Big-endian is what makes byte order equal numeric order: the most
//! significant byte is compared first. Flipping the sign bit moves negatives below positives; for
//! floats, inverting every bit of a negative number also reverses the order of the magnitudes.
//!
//! Decoding a fixed-width array cannot fail (every bit pattern is some value); decoding from an
//! arbitrary slice, with its length checks, is [`crate::KeyReader`]'s job.

macro_rules! unsigned_encoding {
    ($ty:ty, $width:literal, $encode:ident, $decode:ident) => {
        #[doc = concat!("Encodes a `", stringify!($ty), "` as ", stringify!($width),
            " big-endian bytes whose byte order is the numeric order.")]
        #[inline]
        pub fn $encode(value: $ty) -> [u8; $width] {
            value.to_be_bytes()
        }

        #[doc = concat!("Decodes the ", stringify!($width), " bytes written by [`", stringify!($encode),
            "`].")]
        #[inline]
        pub fn $decode(bytes: [u8; $width]) -> $ty {
            <$ty>::from_be_bytes(bytes)
        }
    };
}

macro_rules! signed_encoding {
    ($ty:ty, $unsigned:ty, $width:literal, $encode:ident, $decode:ident) => {
        #[doc = concat!("Encodes an `", stringify!($ty), "` as ", stringify!($width),
            " big-endian bytes with the sign bit flipped, so that byte order is numeric order",
            " (`", stringify!($ty), "::MIN` encodes as all zeros).")]
        #[inline]
        pub fn $encode(value: $ty) -> [u8; $width] {
            ((value as $unsigned) ^ (1 << (<$unsigned>::BITS - 1))).to_be_bytes()
        }

        #[doc = concat!("Decodes the ", stringify!($width), " bytes written by [`", stringify!($encode),
            "`].")]
        #[inline]
        pub fn $decode(bytes: [u8; $width]) -> $ty {
            (<$unsigned>::from_be_bytes(bytes) ^ (1 << (<$unsigned>::BITS - 1))) as $ty
        }
    };
}

macro_rules! float_encoding {
    ($ty:ty, $bits:ty, $width:literal, $encode:ident, $decode:ident) => {
        #[doc = concat!("Encodes an `", stringify!($ty), "` as ", stringify!($width),
            " bytes in `total_cmp` order: -NaN < -inf < negatives < -0.0 < +0.0 < positives",
            " < +inf < +NaN. Every bit (NaN payload, sign of zero) is kept.")]
        #[inline]
        pub fn $encode(value: $ty) -> [u8; $width] {
            let bits = value.to_bits();
            let sign = 1 << (<$bits>::BITS - 1);
            let ordered = if bits & sign != 0 { !bits } else { bits | sign };
            ordered.to_be_bytes()
        }

        #[doc = concat!("Decodes the ", stringify!($width), " bytes written by [`", stringify!($encode),
            "`], returning exactly the bits that were encoded.")]
        #[inline]
        pub fn $decode(bytes: [u8; $width]) -> $ty {
            let ordered = <$bits>::from_be_bytes(bytes);
            let sign = 1 << (<$bits>::BITS - 1);
            let bits = if ordered & sign != 0 { ordered & !sign } else { !ordered };
            <$ty>::from_bits(bits)
        }
    };
}

unsigned_encoding!(u8, 1, encode_u8, decode_u8);
unsigned_encoding!(u16, 2, encode_u16, decode_u16);
unsigned_encoding!(u32, 4, encode_u32, decode_u32);
unsigned_encoding!(u64, 8, encode_u64, decode_u64);
unsigned_encoding!(u128, 16, encode_u128, decode_u128);

signed_encoding!(i8, u8, 1, encode_i8, decode_i8);
signed_encoding!(i16, u16, 2, encode_i16, decode_i16);
signed_encoding!(i32, u32, 4, encode_i32, decode_i32);
signed_encoding!(i64, u64, 8, encode_i64, decode_i64);
signed_encoding!(i128, u128, 16, encode_i128, decode_i128);

float_encoding!(f32, u32, 4, encode_f32, decode_f32);
float_encoding!(f64, u64, 8, encode_f64, decode_f64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_extremes_map_to_the_ends() {
        assert_eq!(encode_i64(i64::MIN), [0; 8]);
        assert_eq!(encode_i64(i64::MAX), [0xFF; 8]);
        assert_eq!(encode_i8(-1), [0x7F]);
        assert_eq!(encode_i8(0), [0x80]);
    }

    #[test]
    fn float_landmarks_are_ordered() {
        let ladder = [
            f64::from_bits(0xFFF8_0000_0000_0001), // a negative NaN
            f64::NEG_INFINITY,
            -1.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1.5,
            f64::INFINITY,
            f64::NAN,
        ];
        for pair in ladder.windows(2) {
            assert!(encode_f64(pair[0]) < encode_f64(pair[1]), "{pair:?}");
        }
        for value in ladder {
            assert_eq!(decode_f64(encode_f64(value)).to_bits(), value.to_bits());
        }
    }
}
