//! Leaf pack: several (key suffix, value) entries of fixed widths, sorted, in one immutable
//! allocation. The compact leaf of artdb: where a subtree's keys all have the same remaining
//! length and small values of one length (random fixed-size keys, W1), one pack replaces a
//! Node4/Node16/Node48 and its separate leaves: about `key_width + value_width` bytes per key
//! plus 1 fence byte, and a scan reads consecutive memory.
//!
//! | offset        | size                 | field                                        |
//! |---------------|----------------------|----------------------------------------------|
//! | 0             | 1                    | kind = 6                                     |
//! | 1             | 1                    | key_width: suffix bytes per entry (1..=255)   |
//! | 2             | 2                    | count (u16 LE, 2..=capacity max)             |
//! | 4             | 1                    | value_width (0..=16)                          |
//! | 5             | 1                    | spare: unused entry slots (capacity = count + spare) |
//! | 6             | 2                    | prefix_len (u16 LE)                          |
//! | 8             | 8                    | version that created the heap pack (u64 LE); 0 persisted |
//! | 16            | prefix_len           | prefix: key bytes shared by every entry      |
//! | 16+p          | capacity             | fence: the first suffix byte of each entry (`count` used) |
//! | 16+p+capacity | capacity*(kw-1+vw)   | entries: suffix bytes 1.. then the value (`count` used) |
//!
//! The word naming a pack at depth `d` with path `path` holds the keys
//! `path ++ prefix ++ suffix_i`. Entries are sorted by suffix and distinct; `count >= 2`.
//! Like inner nodes, a pack carries the version that created it: the writer changes it in place
//! (inserting into a spare slot, removing, replacing a value) when it was created in the
//! current version or when no snapshot is alive; otherwise an insert or removal builds a new
//! pack (at most [`PACK_AREA_LEN_MAX`] bytes of fence and records are copied) and retires the
//! old one. A key that does not fit (other widths, a prefix mismatch, a full pack) bursts the
//! pack into an inner node.
//!
//! **Capacity is bounded by bytes.** A pack holds at most [`pack_capacity_max`]`(stride)`
//! entries: [`PACK_ENTRIES_MAX`], or fewer when the fence and records (`1 + stride` bytes per
//! entry) would pass [`PACK_AREA_LEN_MAX`]. So long suffixes (up to 255 bytes, the header's u8
//! field) get packs too, of fewer entries, and every pack image, with a
//! prefix of up to `KEY_LEN_MAX` bytes, is at most [`PACK_IMAGE_LEN_MAX`] bytes (the engine
//! checks that this fits one of its pages). The bound is what an in-place insert shifts and a
//! copy copies, so it also bounds the writer's cost per insert.
//!
//! **Dense pack** (kind 7): a full pack of one-byte suffixes (256 entries, every byte
//! once) needs no fence, since entry `b` holds suffix byte `b`. Its image is the pack header
//! (kind 7, key_width 1, count 256, spare 0), the prefix, then 256 values of `value_width` bytes:
//!
//! | offset | size            | field                                             |
//! |--------|-----------------|---------------------------------------------------|
//! | 0      | 8               | kind = 7, key_width = 1, count = 256, value_width, spare = 0, prefix_len |
//! | 8      | 8               | version (as a pack's)                             |
//! | 16     | prefix_len      | prefix                                            |
//! | 16+p   | 256*value_width | value of suffix byte `b` at `16 + p + b * value_width` |
//!
//! At 7-byte values that is 1,808 bytes for 256 keys (a Node256 of inline words: 2,080; a pack
//! with its fence: 2,064), and a lookup is one load at `base + b * value_width`. [`PackRef`]
//! views it like any pack (its fence is the static identity [`IDENTITY_FENCE`]), so cursors,
//! bursts, copies, persist and verify need nothing of their own. Every pack built with 256
//! one-byte entries is built dense ([`alloc_pack_spare`]); it takes no insert (every one-byte
//! suffix is present: an insert of the same widths replaces a value, in place when writable;
//! other widths burst it), and a removal rebuilds it as an ordinary pack of 255 entries with
//! spare slots, which becomes dense again when its 256th entry comes back.
//!
//! **Wide pack** (kind 8): values of more than [`PACK_VALUE_WIDTH_MAX`] bytes (up to
//! [`PACK_WIDE_VALUE_WIDTH_MAX`]) are kept out of the sorted records, so that an insert shifts
//! `key_width + 2` bytes per entry instead of the whole record (~10 KB at 150 entries of
//! 128-byte values). Same header (kind 8), then:
//!
//! | offset                  | size                  | field                                     |
//! |-------------------------|-----------------------|-------------------------------------------|
//! | 16                      | prefix_len            | prefix                                    |
//! | 16+p                    | capacity              | fence (as a pack's, `count` used)         |
//! | 16+p+capacity           | capacity*(kw-1+2)     | records: suffix bytes 1.., then the u16 LE slot of the entry's value |
//! | 16+p+capacity*(kw+2)    | capacity*value_width  | values: slot `s` at `s * value_width`; slots `0..count` used |
//!
//! Records are sorted like a pack's; the slots are a permutation of `0..count`. An in-place
//! insert writes the value into slot `count` and shifts the fence and records; an in-place
//! removal moves the value in slot `count - 1` into the freed slot (and repoints its record);
//! a copy (no spare slot left, or a snapshot reads the pack) gathers the values into key order
//! (slot = index), so a scan reads them in address order until in-place inserts append. At
//! most [`pack_capacity_max_for`] entries: [`PACK_WIDE_AREA_LEN_MAX`] / (key_width + 2 +
//! value_width), so the image still fits one page of the engine. Persisted images are checked
//! like every pack's, plus every slot below the count ([`PackRef::check_slots`], when the
//! resolver first views the image); `verify` checks that the slots are a permutation.
//!
//! The parts, one file each: [`view`] (`PackRef`, the checked read-only view every reader
//! and writer starts from), [`probe`] (the point lookups of heap and persisted packs and the
//! writer's find), [`hinted`] (the lookup that takes its layout from the word's hint),
//! [`dense`] and [`wide`] (what those two kinds do differently), [`build`] (allocating and
//! filling a new pack) and [`edit`] (changing a writable pack in place).

mod build;
mod dense;
mod edit;
mod hinted;
mod probe;
mod view;
mod wide;

use std::cmp::Ordering;

use super::{KIND_DENSE, KIND_PACK, KIND_WIDE};

pub(crate) use build::{alloc_pack, alloc_pack_spare, PackWriter};
pub(crate) use dense::{
    dense_get, dense_image_len, fill_dense_image, probe_dense, DENSE_ENTRIES, DENSE_HEADER_FIXED,
};
pub(crate) use edit::PackMut;
pub(crate) use hinted::{
    hinted_pack_len, probe_hinted, probe_hinted_fence, probe_hinted_records, HintedRun,
};
pub(crate) use probe::{
    heap_pack_find, pack_fence_checked, pack_get_checked, probe, probe_fence, probe_records,
    CheckedPack, HeapPackState, Layout, Probe,
};
pub(crate) use view::PackRef;

/// Bytes before the prefix.
pub(crate) const PACK_HEADER_LEN: usize = 16;
/// Most entries in one pack, whatever their width (random 8-byte keys at 10M keys put ~150
/// under each 2-byte prefix; W1's composite keys put ~625 random u64s under each column value
/// at 10M, which a pack of 256 could not hold: it burst into a Node256 of ~2.4 keys per child,
/// and a scan then met a new allocation every few keys).
pub const PACK_ENTRIES_MAX: usize = 1024;
/// Widest key suffix kept in a pack (the header's u8 field).
pub const PACK_KEY_WIDTH_MAX: usize = 255;
/// Widest value kept in a pack. The header's u8 field could say 255, but packs of wide values
/// cost inserts more than they give scans (128-byte values in packs of up to 27 KiB brought W1's
/// seek + 100 next level with `BTreeMap`, but each in-place insert shifted kilobytes and cost
/// far more CPU time; measured in docs/journal/art.md).
pub const PACK_VALUE_WIDTH_MAX: usize = 16;
/// Most bytes of fence and records (capacity x (1 + stride)) in one pack: bounds what an insert
/// shifts or copies, and (with the prefix) the image, which must fit one page of the engine.
pub const PACK_AREA_LEN_MAX: usize = 16 * 1024;
/// Widest value kept in a wide pack (kind 8: values of more than [`PACK_VALUE_WIDTH_MAX`]
/// bytes, kept apart from the sorted keys so that an insert does not move them; the header's u8
/// field).
pub const PACK_WIDE_VALUE_WIDTH_MAX: usize = 255;
/// Most bytes of fence, key records and values (capacity x (key_width + 2 + value_width)) in one
/// wide pack: ~150 random 8-byte keys with 128-byte values under a 2-byte prefix (W1 at 10M)
/// plus their binomial spread and spare slots. An in-place insert shifts only the fence and key
/// records (`key_width + 2` bytes per entry); a copy copies it all.
pub const PACK_WIDE_AREA_LEN_MAX: usize = 27 * 1024;
/// Longest pack image: header, a prefix of up to `KEY_LEN_MAX` bytes, fence and records (and a
/// wide pack's values).
pub const PACK_IMAGE_LEN_MAX: usize = PACK_HEADER_LEN
    + crate::KEY_LEN_MAX
    + if PACK_WIDE_AREA_LEN_MAX > PACK_AREA_LEN_MAX {
        PACK_WIDE_AREA_LEN_MAX
    } else {
        PACK_AREA_LEN_MAX
    };
/// Bytes of a wide pack's value slot (the index of the entry's value in the value area).
const WIDE_SLOT_LEN: usize = 2;
/// A new wide pack gets count / this many spare slots (ordinary packs: count / 8)...
const WIDE_SPARE_DIVISOR: usize = 4;
/// ...and at least this many.
const WIDE_SPARE_MIN: usize = 2;

// The header's fields hold every width and count the limits allow; the widest entries still
// leave room for two (a pack's minimum) and the spare byte for a new pack's count / 8.
const _: () = assert!(PACK_KEY_WIDTH_MAX <= u8::MAX as usize);
const _: () = assert!(PACK_VALUE_WIDTH_MAX <= u8::MAX as usize);
const _: () = assert!(PACK_ENTRIES_MAX <= u16::MAX as usize);
const _: () = assert!(PACK_ENTRIES_MAX / 8 <= u8::MAX as usize);
const _: () = assert!(PACK_AREA_LEN_MAX / (PACK_KEY_WIDTH_MAX + PACK_VALUE_WIDTH_MAX) >= 2);
const _: () = assert!(PACK_WIDE_VALUE_WIDTH_MAX <= u8::MAX as usize);
const _: () = assert!(
    PACK_WIDE_AREA_LEN_MAX / (PACK_KEY_WIDTH_MAX + WIDE_SLOT_LEN + PACK_WIDE_VALUE_WIDTH_MAX) >= 2
);
// A wide pack's slots (u16) index every entry it can hold.
const _: () = assert!(PACK_ENTRIES_MAX <= 1 << (8 * WIDE_SLOT_LEN));

/// Whether `image` (a heap or persisted leaf-kind image) is a pack, ordinary, dense or wide.
#[inline(always)]
pub(crate) fn is_pack_image(image: &[u8]) -> bool {
    matches!(
        image.first(),
        Some(&KIND_PACK) | Some(&KIND_DENSE) | Some(&KIND_WIDE)
    )
}

/// Whether a pack of values `value_width` bytes wide is a wide pack (kind 8).
#[inline(always)]
pub(crate) fn is_wide(value_width: usize) -> bool {
    value_width > PACK_VALUE_WIDTH_MAX
}

/// Bytes of one record in the sorted record area: suffix bytes after the first, then the value
/// (ordinary pack) or the value's slot (wide pack).
#[inline(always)]
fn record_len(key_width: usize, value_width: usize) -> usize {
    key_width.saturating_sub(1)
        + if is_wide(value_width) {
            WIDE_SLOT_LEN
        } else {
            value_width
        }
}

/// Most entries (spare slots included) of a pack whose records are `stride` bytes (suffix bytes
/// after the first, then the value): [`PACK_ENTRIES_MAX`], or fewer so that the fence and the
/// records stay within [`PACK_AREA_LEN_MAX`].
#[inline]
pub fn pack_capacity_max(stride: usize) -> usize {
    (PACK_AREA_LEN_MAX / (1 + stride)).min(PACK_ENTRIES_MAX)
}

/// Most entries (spare slots included) of a pack of suffixes `key_width` bytes long and values
/// `value_width` bytes long: [`pack_capacity_max`] of its record for an ordinary pack; for a
/// wide pack (values over [`PACK_VALUE_WIDTH_MAX`] bytes) as many as fit
/// [`PACK_WIDE_AREA_LEN_MAX`] at `key_width + 2 + value_width` bytes each, at most
/// [`PACK_ENTRIES_MAX`].
#[inline]
pub fn pack_capacity_max_for(key_width: usize, value_width: usize) -> usize {
    if is_wide(value_width) {
        return (PACK_WIDE_AREA_LEN_MAX / (key_width + WIDE_SLOT_LEN + value_width))
            .min(PACK_ENTRIES_MAX);
    }
    pack_capacity_max(key_width.saturating_sub(1) + value_width)
}

/// Image length of a pack with room for `capacity` entries (a wide pack when `value_width` is
/// over [`PACK_VALUE_WIDTH_MAX`]: its value area after the records).
pub(crate) fn pack_image_len(
    prefix_len: usize,
    key_width: usize,
    value_width: usize,
    capacity: usize,
) -> usize {
    let values = if is_wide(value_width) {
        capacity * value_width
    } else {
        0
    };
    PACK_HEADER_LEN + prefix_len + capacity + capacity * record_len(key_width, value_width) + values
}

/// Image length from the first 8 bytes of a pack image (ordinary or dense).
pub(crate) fn pack_image_len_from_header(header: &[u8; 8]) -> usize {
    let key_width = header[1] as usize;
    let count = u16::from_le_bytes([header[2], header[3]]) as usize;
    let value_width = header[4] as usize;
    let spare = header[5] as usize;
    let prefix_len = u16::from_le_bytes([header[6], header[7]]) as usize;
    if header[0] == KIND_DENSE {
        return dense_image_len(prefix_len, value_width);
    }
    // (The value width says whether the pack is wide: kinds 6 and 8 are told apart by it.)
    pack_image_len(prefix_len, key_width, value_width, count + spare)
}

/// Whether a key suffix and value may live in a pack (a wide pack for values over
/// [`PACK_VALUE_WIDTH_MAX`] bytes).
pub(crate) fn fits(suffix_len: usize, value_len: usize) -> bool {
    (1..=PACK_KEY_WIDTH_MAX).contains(&suffix_len) && value_len <= PACK_WIDE_VALUE_WIDTH_MAX
}

/// The version field of a pack image (0 if the image is too short to hold one).
#[inline]
fn version_of(image: &[u8]) -> u64 {
    image
        .get(8..16)
        .and_then(|v| <[u8; 8]>::try_from(v).ok())
        .map_or(0, u64::from_le_bytes)
}

/// Compares two byte strings of equal length; strings of up to 8 bytes as one big-endian
/// integer (no call to memcmp, which dominates for such short strings).
#[inline]
fn compare_equal_len(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() <= 8 && b.len() == a.len() {
        let mut x = [0u8; 8];
        let mut y = [0u8; 8];
        x[..a.len()].copy_from_slice(a);
        y[..b.len()].copy_from_slice(b);
        return u64::from_be_bytes(x).cmp(&u64::from_be_bytes(y));
    }
    a.cmp(b)
}

/// Lexicographic comparison; strings of up to 8 bytes as zero-padded big-endian integers with
/// the length as tie-break (a proper prefix sorts first), longer ones by `Ord`.
#[inline]
fn compare_short(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() <= 8 && b.len() <= 8 {
        let mut x = [0u8; 8];
        let mut y = [0u8; 8];
        x[..a.len()].copy_from_slice(a);
        y[..b.len()].copy_from_slice(b);
        return u64::from_be_bytes(x)
            .cmp(&u64::from_be_bytes(y))
            .then(a.len().cmp(&b.len()));
    }
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_compares_agree_with_ord() {
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![0, 255],
            vec![255; 8],
            vec![255; 9],
            vec![1, 2, 3, 4, 5, 6, 7, 8],
            vec![1, 2, 3, 4, 5, 6, 7],
            vec![1, 2, 3, 4, 5, 6, 7, 9, 0],
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(compare_short(a, b), a.cmp(b), "{a:?} vs {b:?}");
                if a.len() == b.len() {
                    assert_eq!(compare_equal_len(a, b), a.cmp(b));
                }
            }
        }
    }
}
