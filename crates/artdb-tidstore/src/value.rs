//! The value codec: what a block's value in the tree looks like, in at most 7 bytes so that the
//! tree keeps it inline in the child word (no leaf, no allocation).
//!
//! Byte format (little-endian; the value's length is the tag, so no tag byte is spent):
//!
//! | length | form     | bytes                                                              |
//! | ------ | -------- | ------------------------------------------------------------------ |
//! | 2, 4, 6| embedded | 1 to 3 offsets, `u16` each, strictly ascending, none 0             |
//! | 7      | packed   | 4 or 5 offsets of 11 bits: offset `i` is bits `11i..11i+11` of the  |
//! |        |          | 56-bit little-endian integer, ascending, none 0, unused slots 0;   |
//! |        |          | bit 55 (the top bit of `[6]`) is 0                                 |
//! | 7      | bitmap   | `[0..4]` handle index `u32`, `[4..6]` word count `u16`, `[6]` 0xB7 |
//!
//! Any other length, an embedded list that is not strictly ascending or holds 0, a packed value
//! with fewer than 4 offsets or a nonzero slot after a zero one, a handle with zero words or a
//! wrong marker byte is `Error::CorruptValue`. The marker byte has its top bit set, which no
//! packed value has, so the two 7-byte forms are told apart by that bit; it also catches a value
//! written by someone else.
//!
//! Why five packed offsets where PostgreSQL 17 embeds three `u16`: heap offsets of 8 KiB pages
//! never exceed 291 (2047 for any page size PostgreSQL allows), so 11 bits hold one, and five fit
//! the 55 bits the child word leaves. On W4's random pattern (about 2.9 dead tuples per block) a
//! bitmap is then needed by 8% of the blocks instead of 33%, which saves its 40 bytes and, on a
//! lookup, the cache miss of reading it.
//!
//! Invariant: the representation is canonical ([`fits_embedded`]): 1 to 3 offsets are embedded,
//! 4 or 5 offsets all at most [`PACKED_OFFSET_MAX`] are packed, anything else is a bitmap, so
//! `verify` can check it and equal sets have equal values.

use crate::Error;

/// Most offsets held in the child word: three `u16` (as in PostgreSQL 17's TidStore), or five
/// packed into 11 bits each when none exceeds [`PACKED_OFFSET_MAX`].
pub(crate) const EMBEDDED_OFFSETS_MAX: usize = 5;

/// Offsets held as `u16` in the 2-, 4- and 6-byte forms.
pub(crate) const WIDE_OFFSETS_MAX: usize = 3;

/// Bits of one packed offset.
pub(crate) const PACKED_OFFSET_BITS: u32 = 11;

/// Largest offset the packed form holds.
pub(crate) const PACKED_OFFSET_MAX: u16 = (1 << PACKED_OFFSET_BITS) - 1;

/// Whether `offsets` (ascending, none 0) live in the child word rather than a bitmap.
#[inline]
pub(crate) fn fits_embedded(offsets: &[u16]) -> bool {
    match offsets.len() {
        1..=WIDE_OFFSETS_MAX => true,
        4..=EMBEDDED_OFFSETS_MAX => offsets.last().is_some_and(|&o| o <= PACKED_OFFSET_MAX),
        _ => false,
    }
}

/// Length of an encoded bitmap handle.
pub(crate) const HANDLE_LEN: usize = 7;

/// Marker in the last byte of a handle.
const HANDLE_MARKER: u8 = 0xB7;

/// The longest encoded value.
pub(crate) const VALUE_LEN_MAX: usize = HANDLE_LEN;

const _: () = assert!(
    WIDE_OFFSETS_MAX * 2 < HANDLE_LEN,
    "lengths must tell the wide form apart"
);
const _: () = assert!(
    EMBEDDED_OFFSETS_MAX as u32 * PACKED_OFFSET_BITS < HANDLE_LEN as u32 * 8,
    "the packed form must leave the top bit of its last byte clear"
);
const _: () = assert!(
    HANDLE_MARKER & 0x80 != 0,
    "the marker must have the top bit set"
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
    /// Up to five offsets ([`fits_embedded`]), ascending, padded with 0 (0 is never a valid
    /// offset, so a padded slot never matches a lookup).
    Embedded([u16; EMBEDDED_OFFSETS_MAX]),
    /// A bitmap in the bitmap storage.
    Bitmap(Handle),
}

/// An encoded value: the bytes handed to the tree, in the fixed-width form of artdb-art's
/// `Tree::bulk_build_fixed` (bytes `0..len` the value, zero after it, byte 7 the length `len`),
/// so the append path's vector can be built into the tree as it is.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Encoded([u8; ENCODED_LEN]);

/// Bytes of an [`Encoded`] value.
pub(crate) const ENCODED_LEN: usize = 8;

/// Byte of an [`Encoded`] value that holds its length.
const ENCODED_LEN_AT: usize = 7;

const _: () = assert!(
    VALUE_LEN_MAX == ENCODED_LEN_AT,
    "the length byte follows the longest value"
);

impl Encoded {
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        let len = usize::from(self.0[ENCODED_LEN_AT]).min(VALUE_LEN_MAX);
        &self.0[..len]
    }

    /// The fixed-width form handed to `Tree::bulk_build_fixed`.
    #[inline]
    pub(crate) fn to_fixed(self) -> [u8; ENCODED_LEN] {
        self.0
    }

    /// An encoded value of the form `to_fixed` gave.
    #[inline]
    pub(crate) fn from_fixed(fixed: [u8; ENCODED_LEN]) -> Encoded {
        Encoded(fixed)
    }

    /// The value whose bytes are the little-endian `bits` (zero above `len` bytes), `len` long.
    #[inline]
    pub(crate) fn from_bits(bits: u64, len: usize) -> Encoded {
        debug_assert!(len <= VALUE_LEN_MAX && bits >> (8 * len) == 0);
        Encoded((bits | (len as u64) << (8 * ENCODED_LEN_AT)).to_le_bytes())
    }

    /// The encoding of 1 to 5 offsets that fit the child word ([`fits_embedded`], strictly
    /// ascending, none 0): what `Value::embedded(offsets).encode()` gives, in one step.
    #[inline]
    pub(crate) fn embedded(offsets: &[u16]) -> Encoded {
        debug_assert!(fits_embedded(offsets), "{offsets:?}");
        if offsets.len() > WIDE_OFFSETS_MAX {
            let mut packed = 0u64;
            for (i, &offset) in offsets.iter().enumerate() {
                packed |= u64::from(offset) << (PACKED_OFFSET_BITS * i as u32);
            }
            return Encoded::from_bits(packed, VALUE_LEN_MAX);
        }
        let mut wide = 0u64;
        for (i, &offset) in offsets.iter().enumerate() {
            wide |= u64::from(offset) << (16 * i);
        }
        Encoded::from_bits(wide, offsets.len() * 2)
    }

    /// The encoding of `offsets` if they are valid (strictly ascending, each in
    /// `1..=max_offset`) and fit the child word; `None` otherwise (empty, a bitmap's worth, or
    /// invalid: the caller's ordinary path then checks them and reports the error). One pass,
    /// branch-free per offset: the append path's common case.
    #[inline]
    pub(crate) fn embedded_checked(offsets: &[u16], max_offset: u16) -> Option<Encoded> {
        let count = offsets.len();
        if count == 0 || count > EMBEDDED_OFFSETS_MAX {
            return None;
        }
        let (mut previous, mut valid) = (0u16, true);
        let (mut wide, mut packed) = (0u64, 0u64);
        for (i, &offset) in offsets.iter().enumerate() {
            valid &= (offset > previous) & (offset <= max_offset);
            previous = offset;
            wide |= u64::from(offset) << (16 * (i % 4));
            packed |= u64::from(offset) << (PACKED_OFFSET_BITS * i as u32);
        }
        if !valid {
            return None;
        }
        if count <= WIDE_OFFSETS_MAX {
            return Some(Encoded::from_bits(wide, count * 2));
        }
        // `previous` is the highest offset.
        (previous <= PACKED_OFFSET_MAX).then(|| Encoded::from_bits(packed, VALUE_LEN_MAX))
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
    /// The embedded value of `offsets` (ascending, none 0, [`fits_embedded`]).
    pub(crate) fn embedded(offsets: &[u16]) -> Value {
        debug_assert!(fits_embedded(offsets), "{offsets:?}");
        let mut slots = [0u16; EMBEDDED_OFFSETS_MAX];
        for (slot, &offset) in slots.iter_mut().zip(offsets) {
            *slot = offset;
        }
        Value::Embedded(slots)
    }

    pub(crate) fn encode(&self) -> Encoded {
        match self {
            Value::Embedded(offsets) => Encoded::embedded(&offsets[..embedded_len(offsets)]),
            Value::Bitmap(handle) => {
                let bits = u64::from(handle.index)
                    | u64::from(handle.words) << 32
                    | u64::from(HANDLE_MARKER) << 48;
                Encoded::from_bits(bits, HANDLE_LEN)
            }
        }
    }

    /// Decodes the value stored for `block`.
    #[inline]
    pub(crate) fn decode(block: u32, bytes: &[u8]) -> Result<Value, Error> {
        let corrupt = |kind| Error::CorruptValue { block, kind };
        match *bytes {
            [a0, a1] => embedded_checked([u16::from_le_bytes([a0, a1]), 0, 0, 0, 0], 1)
                .ok_or_else(|| corrupt("an embedded offset is 0")),
            [a0, a1, b0, b1] => embedded_checked(
                [
                    u16::from_le_bytes([a0, a1]),
                    u16::from_le_bytes([b0, b1]),
                    0,
                    0,
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
                    0,
                    0,
                ],
                3,
            )
            .ok_or_else(|| corrupt("embedded offsets are 0 or not ascending")),
            [p0, p1, p2, p3, p4, p5, p6] if p6 & 0x80 == 0 => {
                let packed = u64::from_le_bytes([p0, p1, p2, p3, p4, p5, p6, 0]);
                let mut offsets = [0u16; EMBEDDED_OFFSETS_MAX];
                for (i, slot) in offsets.iter_mut().enumerate() {
                    *slot = (packed >> (PACKED_OFFSET_BITS * i as u32)) as u16 & PACKED_OFFSET_MAX;
                }
                let count = embedded_len(&offsets);
                if count <= WIDE_OFFSETS_MAX || offsets[count..].iter().any(|&o| o != 0) {
                    return Err(corrupt(
                        "a packed value holds fewer than 4 offsets or a gap",
                    ));
                }
                embedded_checked(offsets, count)
                    .ok_or_else(|| corrupt("packed offsets are not ascending"))
            }
            [.., marker] if bytes.len() == 7 && marker & 0x80 != 0 => {
                handle_of(block, bytes).map(Value::Bitmap)
            }
            _ => Err(corrupt("its length is not 2, 4, 6 or 7 bytes")),
        }
    }
}

/// The bitmap handle of a 7-byte value whose last byte has its top bit set (the form
/// [`Value::decode`] and [`lookup`] both read): a wrong marker byte or zero words is
/// `Error::CorruptValue`.
#[inline]
fn handle_of(block: u32, bytes: &[u8]) -> Result<Handle, Error> {
    let corrupt = |kind| Error::CorruptValue { block, kind };
    let [i0, i1, i2, i3, w0, w1, marker] = *bytes else {
        return Err(corrupt("its length is not 2, 4, 6 or 7 bytes"));
    };
    let words = u16::from_le_bytes([w0, w1]);
    if marker != HANDLE_MARKER {
        return Err(corrupt("a bitmap handle has a wrong marker byte"));
    }
    if words == 0 {
        return Err(corrupt("a bitmap handle has zero words"));
    }
    Ok(Handle {
        index: u32::from_le_bytes([i0, i1, i2, i3]),
        words,
    })
}

/// What a block's stored value says about one offset ([`lookup`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// An embedded or packed value: whether it holds the offset.
    Answer(bool),
    /// A bitmap value: the answer is in the bitmap this handle names.
    Bitmap(Handle),
}

/// Whether the value `bytes` stored for `block` holds `offset` (nonzero), read straight from
/// the bytes: each embedded or packed slot compared with `offset` (a padding slot is 0, which
/// no offset is), with none of [`Value::decode`]'s checks that the offsets ascend or that a
/// packed value is canonical. Those checks guard against a bug in this crate, not against
/// outside input (a store's values are only ever written by its encoder), and [`Value::decode`]
/// on every write path and `verify` keep making them; a membership test answers what the bytes
/// hold. A length no form has, a handle with a wrong marker byte or with zero words is still
/// `Error::CorruptValue`. (W4's random lookups: the decode and its checks were a large share
/// of a probe's instructions.)
#[inline]
pub(crate) fn lookup(block: u32, bytes: &[u8], offset: u16) -> Result<Lookup, Error> {
    let corrupt = |kind| Error::CorruptValue { block, kind };
    let is = |a: u8, b: u8| u16::from_le_bytes([a, b]) == offset;
    match *bytes {
        [a0, a1] => Ok(Lookup::Answer(is(a0, a1))),
        [a0, a1, b0, b1] => Ok(Lookup::Answer(is(a0, a1) | is(b0, b1))),
        [a0, a1, b0, b1, c0, c1] => Ok(Lookup::Answer(is(a0, a1) | is(b0, b1) | is(c0, c1))),
        [p0, p1, p2, p3, p4, p5, p6] if p6 & 0x80 == 0 => {
            let packed = u64::from_le_bytes([p0, p1, p2, p3, p4, p5, p6, 0]);
            // An offset above PACKED_OFFSET_MAX matches no slot, as it is in no packed value.
            let mut hit = false;
            for i in 0..EMBEDDED_OFFSETS_MAX as u32 {
                hit |= (packed >> (PACKED_OFFSET_BITS * i)) as u16 & PACKED_OFFSET_MAX == offset;
            }
            Ok(Lookup::Answer(hit))
        }
        [.., marker] if bytes.len() == 7 && marker & 0x80 != 0 => {
            handle_of(block, bytes).map(Lookup::Bitmap)
        }
        _ => Err(corrupt("its length is not 2, 4, 6 or 7 bytes")),
    }
}

/// Whether a padded embedded list holds `offset` (not 0: padding would match it). Branch-free
/// (one compare per slot, or-ed), since a lookup's answer is unpredictable.
#[inline]
pub(crate) fn embedded_contains(offsets: &[u16; EMBEDDED_OFFSETS_MAX], offset: u16) -> bool {
    let hits = offsets
        .iter()
        .fold(0u8, |hits, &slot| hits | u8::from(slot == offset));
    hits != 0 && offset != 0
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
        for offsets in [
            &[1u16][..],
            &[1, 2],
            &[5, 300, u16::MAX],
            &[1, 2, 3, 4],
            &[1, 2, 3, 4, PACKED_OFFSET_MAX],
        ] {
            let direct = Encoded::embedded(offsets);
            assert_eq!(
                direct.as_bytes(),
                Value::embedded(offsets).encode().as_bytes()
            );
        }
        round_trip(Value::embedded(&[1]));
        round_trip(Value::embedded(&[1, 2]));
        round_trip(Value::embedded(&[5, 300, u16::MAX]));
        round_trip(Value::embedded(&[1, 2, 3, 4]));
        round_trip(Value::embedded(&[7, 64, 291, 1000, PACKED_OFFSET_MAX]));
        assert_eq!(Value::embedded(&[1, 2, 3, 4]).encode().as_bytes().len(), 7);
        assert!(!fits_embedded(&[1, 2, 3, u16::MAX]));
        assert!(fits_embedded(&[1, 2, 3, 4, 5]) && !fits_embedded(&[1, 2, 3, 4, 5, 6]));
        assert!(fits_embedded(&[9, 10, u16::MAX]));
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

    /// The append path's one-pass check and encoding against the ordinary path's steps (check
    /// each offset and the order, `fits_embedded`, `Value::embedded(..).encode()`), for every
    /// list of up to 5 offsets drawn from values at the edges, valid or not, and a few longer.
    #[test]
    fn embedded_checked_matches_the_checked_path() {
        let edges = [0u16, 1, 2, 290, 291, 2047, 2048, u16::MAX];
        let reference = |offsets: &[u16], max_offset: u16| {
            let in_range = offsets.iter().all(|&o| (1..=max_offset).contains(&o));
            let ascending = offsets.windows(2).all(|pair| pair[0] < pair[1]);
            (in_range && ascending && fits_embedded(offsets))
                .then(|| Value::embedded(offsets).encode())
        };
        let mut lists: Vec<Vec<u16>> = vec![
            vec![],
            vec![1, 2, 3, 4, 5, 6],
            vec![3, 9, 12, 40, 41, 42, 43],
        ];
        for len in 1..=EMBEDDED_OFFSETS_MAX {
            for code in 0..edges.len().pow(len as u32) {
                let mut rest = code;
                let list = (0..len)
                    .map(|_| {
                        let offset = edges[rest % edges.len()];
                        rest /= edges.len();
                        offset
                    })
                    .collect();
                lists.push(list);
            }
        }
        for max_offset in [291, 2047, 2048, u16::MAX] {
            for list in &lists {
                let fast = Encoded::embedded_checked(list, max_offset);
                let slow = reference(list, max_offset);
                assert_eq!(
                    fast.map(|e| e.as_bytes().to_vec()),
                    slow.map(|e| e.as_bytes().to_vec()),
                    "{list:?} with max_offset {max_offset}"
                );
                if let Some(fast) = fast {
                    assert_eq!(
                        Encoded::from_fixed(fast.to_fixed()).as_bytes(),
                        fast.as_bytes()
                    );
                }
            }
        }
    }

    #[test]
    fn malformed_values_are_corrupt_not_panics() {
        // Packed: three offsets (must be the wide form), a gap (slot 3 zero, slot 4 not), not
        // ascending.
        let three = (1u64 | 2 << 11 | 3 << 22).to_le_bytes();
        let gap = (1u64 | 2 << 11 | 3 << 22 | 5 << 44).to_le_bytes();
        let descending = (1u64 | 2 << 11 | 3 << 22 | 9 << 33 | 8 << 44).to_le_bytes();
        for bytes in [&three[..7], &gap[..7], &descending[..7]] {
            assert!(matches!(
                Value::decode(3, bytes),
                Err(Error::CorruptValue { block: 3, .. })
            ));
        }
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

    /// The answer `Value::decode` then a membership test give for `offset` in `bytes`.
    fn decoded_answer(bytes: &[u8], offset: u16) -> Option<Lookup> {
        match Value::decode(5, bytes).ok()? {
            Value::Embedded(offsets) => Some(Lookup::Answer(embedded_contains(&offsets, offset))),
            Value::Bitmap(handle) => Some(Lookup::Bitmap(handle)),
        }
    }

    #[test]
    fn lookup_agrees_with_decode_on_every_canonical_value() {
        // Every form, from the offsets drawn here, tested at every offset a value can hold and
        // at the ones around the packed form's bound and the top of u16.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let probes: Vec<u16> = (1..=2100)
            .chain([4095, 4096, u16::MAX - 1, u16::MAX])
            .collect();
        for round in 0..600 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let count = 1 + (state % 5) as usize;
            let bound = if round % 3 == 0 {
                u16::MAX
            } else {
                PACKED_OFFSET_MAX
            };
            let mut offsets: Vec<u16> = (0..count)
                .map(|i| 1 + ((state >> (12 * i)) % u64::from(bound)) as u16)
                .collect();
            offsets.sort_unstable();
            offsets.dedup();
            let encoded = if fits_embedded(&offsets) {
                Encoded::embedded(&offsets)
            } else {
                Value::Bitmap(Handle {
                    index: state as u32,
                    words: 1 + (state >> 40) as u16 % 40,
                })
                .encode()
            };
            let bytes = encoded.as_bytes();
            for &offset in &probes {
                assert_eq!(
                    lookup(5, bytes, offset).ok(),
                    decoded_answer(bytes, offset),
                    "{offsets:?} at {offset}"
                );
            }
            for &offset in &offsets {
                if fits_embedded(&offsets) {
                    assert_eq!(lookup(5, bytes, offset).ok(), Some(Lookup::Answer(true)));
                }
            }
        }
    }

    #[test]
    fn lookup_of_a_malformed_length_or_handle_is_corrupt() {
        let bad: [&[u8]; 6] = [
            &[],
            &[1],
            &[1, 0, 2],
            &[1, 0, 2, 0, 3],
            &[0, 0, 0, 0, 0, 0, HANDLE_MARKER],
            &[0, 0, 0, 0, 1, 0, 0x80],
        ];
        for bytes in bad {
            match lookup(3, bytes, 1) {
                Err(Error::CorruptValue { block: 3, .. }) => {}
                other => panic!("{bytes:?} looked up to {other:?}"),
            }
        }
        assert!(matches!(
            lookup(3, &[0; 8], 1),
            Err(Error::CorruptValue { .. })
        ));
    }
}
