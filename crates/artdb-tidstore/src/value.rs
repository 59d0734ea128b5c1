//! The value codec: what a block's value in the tree looks like, in at most 7 bytes so that the
//! tree keeps it inline in the child word (no leaf, no allocation).
//!
//! Byte format (little-endian; the value's length is the tag, so no tag byte is spent):
//!
//! | length | form     | bytes                                                              |
//! | ------ | -------- | ------------------------------------------------------------------ |
//! | 2, 4, 6| embedded | 1 to 3 offsets, `u16` each, strictly ascending, none 0             |
//! | 7      | bitmap   | `[0..4]` handle index `u32`, `[4..6]` word count `u16`, `[6]` 0xB7 |
//!
//! Any other length, an embedded list that is not strictly ascending or holds 0, a handle with
//! zero words or a wrong marker byte is `Error::CorruptValue`. The marker byte costs nothing (the
//! seventh byte is free) and catches a value written by someone else.
//!
//! Invariant: a block with at most [`EMBEDDED_OFFSETS_MAX`] offsets is embedded, one with more is
//! a bitmap (the representation is canonical, so `verify` can check it and equal sets have equal
//! values).

use crate::Error;

/// Offsets that fit in the child word: three `u16`, as in PostgreSQL 17's TidStore.
pub(crate) const EMBEDDED_OFFSETS_MAX: usize = 3;

/// Length of an encoded bitmap handle.
pub(crate) const HANDLE_LEN: usize = 7;

/// Marker in the last byte of a handle.
const HANDLE_MARKER: u8 = 0xB7;

/// The longest encoded value.
pub(crate) const VALUE_LEN_MAX: usize = HANDLE_LEN;

const _: () = assert!(
    EMBEDDED_OFFSETS_MAX * 2 < HANDLE_LEN,
    "lengths must tell the forms apart"
);
const _: () = assert!(
    VALUE_LEN_MAX <= artdb_art::INLINE_VALUE_LEN_MAX,
    "every value must live inline in the child word"
);

/// Where a bitmap lives in the bitmap storage: an index (slab slot, or arena word address) and
/// its length in words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    pub(crate) index: u32,
    pub(crate) words: u16,
}

/// A decoded block value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// Up to three offsets, ascending, padded with 0 (0 is never a valid offset, so a padded
    /// slot never matches a lookup).
    Embedded([u16; EMBEDDED_OFFSETS_MAX]),
    /// A bitmap in the bitmap storage.
    Bitmap(Handle),
}

/// An encoded value: the bytes handed to the tree.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Encoded {
    bytes: [u8; VALUE_LEN_MAX],
    len: u8,
}

impl Encoded {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The encoding of 1 to 3 offsets (strictly ascending, none 0): what
    /// `Value::embedded(offsets).encode()` gives, in one step (the append path's common case).
    #[inline]
    pub(crate) fn embedded(offsets: &[u16]) -> Encoded {
        debug_assert!(
            (1..=EMBEDDED_OFFSETS_MAX).contains(&offsets.len()),
            "{offsets:?}"
        );
        let mut bytes = [0u8; VALUE_LEN_MAX];
        for (chunk, offset) in bytes.chunks_exact_mut(2).zip(offsets) {
            chunk.copy_from_slice(&offset.to_le_bytes());
        }
        Encoded {
            bytes,
            len: (offsets.len().min(EMBEDDED_OFFSETS_MAX) * 2) as u8,
        }
    }

    /// The bytes of a value read from the tree for `block`, checked by decoding them.
    pub(crate) fn from_bytes(block: u32, bytes: &[u8]) -> Result<Encoded, Error> {
        Ok(Value::decode(block, bytes)?.encode())
    }
}

impl AsRef<[u8]> for Encoded {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Value {
    /// The embedded value of `offsets` (1 to 3, ascending, none 0).
    pub(crate) fn embedded(offsets: &[u16]) -> Value {
        debug_assert!(
            (1..=EMBEDDED_OFFSETS_MAX).contains(&offsets.len()),
            "{offsets:?}"
        );
        let mut slots = [0u16; EMBEDDED_OFFSETS_MAX];
        for (slot, &offset) in slots.iter_mut().zip(offsets) {
            *slot = offset;
        }
        Value::Embedded(slots)
    }

    pub(crate) fn encode(&self) -> Encoded {
        let mut bytes = [0u8; VALUE_LEN_MAX];
        let len = match self {
            Value::Embedded(offsets) => {
                let count = embedded_len(offsets);
                for (chunk, offset) in bytes.chunks_exact_mut(2).zip(&offsets[..count]) {
                    chunk.copy_from_slice(&offset.to_le_bytes());
                }
                count * 2
            }
            Value::Bitmap(handle) => {
                bytes[0..4].copy_from_slice(&handle.index.to_le_bytes());
                bytes[4..6].copy_from_slice(&handle.words.to_le_bytes());
                bytes[6] = HANDLE_MARKER;
                HANDLE_LEN
            }
        };
        Encoded {
            bytes,
            len: len as u8,
        }
    }

    /// Decodes the value stored for `block`.
    #[inline]
    pub(crate) fn decode(block: u32, bytes: &[u8]) -> Result<Value, Error> {
        let corrupt = |kind| Error::CorruptValue { block, kind };
        match *bytes {
            [a0, a1] => embedded_checked([u16::from_le_bytes([a0, a1]), 0, 0], 1)
                .ok_or_else(|| corrupt("an embedded offset is 0")),
            [a0, a1, b0, b1] => embedded_checked(
                [
                    u16::from_le_bytes([a0, a1]),
                    u16::from_le_bytes([b0, b1]),
                    0,
                ],
                2,
            )
            .ok_or_else(|| corrupt("embedded offsets are 0 or not ascending")),
            [a0, a1, b0, b1, c0, c1] => embedded_checked(
                [
                    u16::from_le_bytes([a0, a1]),
                    u16::from_le_bytes([b0, b1]),
                    u16::from_le_bytes([c0, c1]),
                ],
                3,
            )
            .ok_or_else(|| corrupt("embedded offsets are 0 or not ascending")),
            [i0, i1, i2, i3, w0, w1, marker] => {
                let words = u16::from_le_bytes([w0, w1]);
                if marker != HANDLE_MARKER {
                    return Err(corrupt("a bitmap handle has a wrong marker byte"));
                }
                if words == 0 {
                    return Err(corrupt("a bitmap handle has zero words"));
                }
                Ok(Value::Bitmap(Handle {
                    index: u32::from_le_bytes([i0, i1, i2, i3]),
                    words,
                }))
            }
            _ => Err(corrupt("its length is not 2, 4, 6 or 7 bytes")),
        }
    }
}

/// Number of offsets in a padded embedded list.
#[inline]
pub(crate) fn embedded_len(offsets: &[u16; EMBEDDED_OFFSETS_MAX]) -> usize {
    offsets.iter().take_while(|&&offset| offset != 0).count()
}

/// The embedded value if its first `count` offsets are nonzero and strictly ascending.
fn embedded_checked(offsets: [u16; EMBEDDED_OFFSETS_MAX], count: usize) -> Option<Value> {
    let live = &offsets[..count];
    let ascending = live.windows(2).all(|pair| pair[0] < pair[1]);
    (live.first().is_some_and(|&first| first != 0) && ascending).then_some(Value::Embedded(offsets))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(value: Value) {
        let encoded = value.encode();
        assert!(encoded.as_bytes().len() <= artdb_art::INLINE_VALUE_LEN_MAX);
        assert_eq!(Value::decode(9, encoded.as_bytes()).unwrap(), value);
    }

    #[test]
    fn every_form_round_trips() {
        for offsets in [&[1u16][..], &[1, 2], &[5, 300, u16::MAX]] {
            let direct = Encoded::embedded(offsets);
            assert_eq!(
                direct.as_bytes(),
                Value::embedded(offsets).encode().as_bytes()
            );
        }
        round_trip(Value::embedded(&[1]));
        round_trip(Value::embedded(&[1, 2]));
        round_trip(Value::embedded(&[5, 300, u16::MAX]));
        round_trip(Value::Bitmap(Handle { index: 0, words: 1 }));
        round_trip(Value::Bitmap(Handle {
            index: u32::MAX,
            words: 1024,
        }));
        assert_eq!(
            Value::embedded(&[5, 300]).encode().as_bytes(),
            [5, 0, 44, 1]
        );
    }

    #[test]
    fn malformed_values_are_corrupt_not_panics() {
        let bad: [&[u8]; 9] = [
            &[],
            &[1],
            &[0, 0],
            &[2, 0, 1, 0],
            &[2, 0, 2, 0],
            &[1, 0, 3, 0, 2, 0],
            &[0, 0, 0, 0, 1, 0, 0],
            &[0, 0, 0, 0, 0, 0, HANDLE_MARKER],
            &[0; 8],
        ];
        for bytes in bad {
            match Value::decode(3, bytes) {
                Err(Error::CorruptValue { block: 3, .. }) => {}
                other => panic!("{bytes:?} decoded to {other:?}"),
            }
        }
    }

    #[test]
    fn every_short_byte_string_decodes_or_is_corrupt() {
        // A fuzz-style sweep: no input of length <= 7 may panic, and whatever decodes encodes
        // back to the same bytes (the codec is canonical).
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 8) as usize;
            let bytes = state.to_le_bytes();
            let mut input = bytes[..len].to_vec();
            if len == 7 && state & 1 == 0 {
                input[6] = HANDLE_MARKER;
            }
            if let Ok(value) = Value::decode(1, &input) {
                assert_eq!(value.encode().as_bytes(), &input[..], "{input:?}");
            }
        }
    }
}
