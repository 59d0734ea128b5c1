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

use std::cmp::Ordering;

use super::{KIND_DENSE, KIND_PACK, KIND_WIDE};
use crate::raw;

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

/// Entries of a dense pack: every one-byte suffix.
pub(crate) const DENSE_ENTRIES: usize = 256;

/// The fence a dense pack does not store: entry `b` has first suffix byte `b`.
static IDENTITY_FENCE: [u8; DENSE_ENTRIES] = {
    let mut fence = [0u8; DENSE_ENTRIES];
    let mut byte = 0;
    while byte < DENSE_ENTRIES {
        fence[byte] = byte as u8;
        byte += 1;
    }
    fence
};

// A dense pack's entries fit a pack's count field, and its image is never larger than the
// ordinary pack of the same entries (so every bound on packs holds for it).
const _: () = assert!(DENSE_ENTRIES <= PACK_ENTRIES_MAX);
const _: () = assert!(DENSE_ENTRIES * (1 + PACK_VALUE_WIDTH_MAX) <= PACK_AREA_LEN_MAX);

/// Image length of a dense pack.
pub(crate) fn dense_image_len(prefix_len: usize, value_width: usize) -> usize {
    PACK_HEADER_LEN + prefix_len + DENSE_ENTRIES * value_width
}

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

/// A read-only view of a pack image.
#[derive(Clone, Copy)]
pub(crate) struct PackRef<'a> {
    pub prefix: &'a [u8],
    fence: &'a [u8],
    entries: &'a [u8],
    /// A wide pack's value area (`capacity x value_width`); empty for other packs.
    values: &'a [u8],
    pub key_width: usize,
    pub value_width: usize,
    /// Version that created the (heap) pack; 0 when persisted.
    pub version: u64,
    /// The whole image.
    pub image: &'a [u8],
    /// A dense pack (kind 7): 256 one-byte suffixes, the fence implicit.
    pub dense: bool,
    /// A wide pack (kind 8): records hold a value slot, values live in their own area.
    pub wide: bool,
}

/// Record lines past a seek's landing entry that [`PackRef::prefetch_scan_from`] starts
/// loading.
const SCAN_PREFETCH_LINES: usize = 4;

impl<'a> PackRef<'a> {
    /// Views `bytes` (at least the image) as a pack, ordinary or dense.
    pub fn from_image(bytes: &'a [u8]) -> Result<PackRef<'a>, &'static str> {
        let header: &[u8; 8] = bytes
            .get(..8)
            .and_then(|h| h.try_into().ok())
            .ok_or("short pack")?;
        let wide = header[0] == KIND_WIDE;
        if header[0] != KIND_PACK && !wide {
            if header[0] == KIND_DENSE {
                return PackRef::from_dense_image(bytes, header);
            }
            return Err("not a pack");
        }
        let key_width = header[1] as usize;
        let count = u16::from_le_bytes([header[2], header[3]]) as usize;
        let value_width = header[4] as usize;
        let capacity = count + header[5] as usize;
        let prefix_len = u16::from_le_bytes([header[6], header[7]]) as usize;
        if !fits(key_width, value_width)
            || wide != is_wide(value_width)
            || count < 2
            || capacity > pack_capacity_max_for(key_width, value_width)
        {
            return Err("pack widths, count or capacity out of range");
        }
        let len = pack_image_len(prefix_len, key_width, value_width, capacity);
        let image = bytes.get(..len).ok_or("pack extends past the image")?;
        let (prefix, rest) = image[PACK_HEADER_LEN..].split_at(prefix_len);
        let (fence, rest) = rest.split_at(capacity);
        let (entries, values) = rest.split_at(capacity * record_len(key_width, value_width));
        let fence = &fence[..count];
        Ok(PackRef {
            prefix,
            fence,
            entries,
            values,
            key_width,
            value_width,
            version: version_of(image),
            image,
            dense: false,
            wide,
        })
    }

    /// [`PackRef::from_image`] of a dense pack (kind 7), whose `header` is `bytes`' first 8.
    fn from_dense_image(bytes: &'a [u8], header: &[u8; 8]) -> Result<PackRef<'a>, &'static str> {
        let value_width = header[4] as usize;
        let prefix_len = u16::from_le_bytes([header[6], header[7]]) as usize;
        if header[1] != 1
            || u16::from_le_bytes([header[2], header[3]]) as usize != DENSE_ENTRIES
            || header[5] != 0
            || value_width > PACK_VALUE_WIDTH_MAX
        {
            return Err("dense pack widths or count out of range");
        }
        let len = dense_image_len(prefix_len, value_width);
        let image = bytes.get(..len).ok_or("pack extends past the image")?;
        let (prefix, entries) = image[PACK_HEADER_LEN..].split_at(prefix_len);
        Ok(PackRef {
            prefix,
            fence: &IDENTITY_FENCE[..],
            entries,
            values: &[],
            key_width: 1,
            value_width,
            version: version_of(image),
            image,
            dense: true,
            wide: false,
        })
    }

    pub fn count(&self) -> usize {
        self.fence.len()
    }

    /// Unused entry slots.
    pub fn spare(&self) -> usize {
        self.image[5] as usize
    }

    /// Bytes of one record in the sorted record area (a wide pack's records end in a slot).
    fn stride(&self) -> usize {
        self.key_width - 1
            + if self.wide {
                WIDE_SLOT_LEN
            } else {
                self.value_width
            }
    }

    /// Whether the hinted pack word `bits` (tag 101) describes this pack as `alloc_pack_spare`
    /// made it and the in-place writes keep it (`word::with_pack_full`): capacity = count +
    /// spare, the record stride, the full bit set exactly when no spare slot is left, no prefix,
    /// not dense (verify.rs).
    pub(crate) fn hint_describes(&self, bits: u64) -> bool {
        let (capacity, stride, full) = crate::word::pack_hint_fields(bits);
        !self.dense
            && self.prefix.is_empty()
            && capacity == self.count() + self.spare()
            && stride == self.stride()
            && full == (self.spare() == 0)
    }

    /// Most entries a pack of these widths may hold ([`pack_capacity_max_for`]; a dense pack
    /// is full).
    pub fn capacity_max(&self) -> usize {
        if self.dense {
            return DENSE_ENTRIES;
        }
        pack_capacity_max_for(self.key_width, self.value_width)
    }

    /// Starts loading the lines a forward scan from entry `index` reads next: the records of
    /// the next few hundred bytes and the fence line after `index`'s (the hardware prefetcher
    /// takes over once the scan streams). No effect on results.
    #[inline]
    pub fn prefetch_scan_from(&self, index: usize) {
        let records = self.entries.as_ptr() as usize + index * self.stride();
        for line in 1..=SCAN_PREFETCH_LINES {
            crate::raw::prefetch(records + 64 * line);
        }
        crate::raw::prefetch(self.fence.as_ptr() as usize + index + 64);
    }

    /// Suffix bytes after the first, and the value, of entry `index`.
    #[inline]
    pub fn entry(&self, index: usize) -> (u8, &'a [u8], &'a [u8]) {
        let stride = self.stride();
        let start = index * stride;
        let record = &self.entries[start..start + stride];
        let (rest, value) = record.split_at(self.key_width - 1);
        if self.wide {
            return (self.fence[index], rest, self.slot_value(value));
        }
        (self.fence[index], rest, value)
    }

    /// The value a wide pack's record slot names (empty if the slot is out of range, which
    /// [`PackRef::check_slots`] rules out for persisted images and this crate never writes).
    #[inline]
    fn slot_value(&self, slot: &[u8]) -> &'a [u8] {
        let slot = match slot {
            [low, high, ..] => usize::from(u16::from_le_bytes([*low, *high])),
            _ => usize::MAX,
        };
        let at = slot.saturating_mul(self.value_width);
        self.values
            .get(at..at.saturating_add(self.value_width))
            .unwrap_or_default()
    }

    /// Value slot of entry `index` of a wide pack.
    fn slot(&self, index: usize) -> usize {
        let stride = self.stride();
        let at = index * stride + self.key_width - 1;
        match self.entries.get(at..at + WIDE_SLOT_LEN) {
            Some([low, high]) => usize::from(u16::from_le_bytes([*low, *high])),
            _ => usize::MAX,
        }
    }

    /// For a wide pack from a file: whether every record's value slot names a used value
    /// (below the count), so that no lookup reads a spare or absent value. O(count); a heap pack
    /// of this crate always passes. `verify` checks more ([`PackRef::is_sorted`]: the slots are
    /// a permutation).
    pub fn check_slots(&self) -> Result<(), &'static str> {
        if !self.wide || (0..self.count()).all(|index| self.slot(index) < self.count()) {
            return Ok(());
        }
        Err("wide pack value slot out of range")
    }

    /// Compares entry `index`'s suffix with `target`.
    #[inline]
    fn compare(&self, index: usize, target: &[u8]) -> Ordering {
        let (first, rest, _) = self.entry(index);
        match target.first() {
            None => Ordering::Greater,
            Some(&byte) => first
                .cmp(&byte)
                .then_with(|| compare_short(rest, &target[1..])),
        }
    }

    /// Index of the entry whose suffix is exactly `suffix`.
    #[inline]
    pub fn find(&self, suffix: &[u8]) -> Option<usize> {
        if suffix.len() != self.key_width {
            return None;
        }
        self.search(suffix).ok()
    }

    /// For a suffix of the pack's key width: `Ok(index)` of the entry equal to it, or
    /// `Err(index)` where it would be inserted. The run of entries sharing its first byte is
    /// counted in the fence (`crate::raw::search::fence_run`, no data-dependent branches) and walked; the
    /// writer's insert needs both answers from one search (it did a `find` and then a branchy
    /// `lower_bound`).
    #[inline]
    pub fn search(&self, suffix: &[u8]) -> Result<usize, usize> {
        let Some((&first, target)) = suffix.split_first() else {
            return Err(0);
        };
        if self.dense && target.is_empty() {
            // Entry `b` holds suffix byte `b`, and every byte is present.
            return Ok(usize::from(first));
        }
        let (below, through) = crate::raw::search::fence_run(self.fence, first);
        let mut index = below;
        while index < through {
            match compare_equal_len(self.entry(index).1, target) {
                Ordering::Less => index += 1,
                Ordering::Equal => return Ok(index),
                Ordering::Greater => break,
            }
        }
        Err(index)
    }

    /// The fence bytes and the records of entries `start..end` (for block copies; not of a wide
    /// pack, whose records hold slots: [`PackWriter::push_entries`] copies any pack).
    pub fn block(&self, start: usize, end: usize) -> (&'a [u8], &'a [u8]) {
        debug_assert!(!self.wide, "block of a wide pack");
        let stride = self.stride();
        let end = end.min(self.count());
        let start = start.min(end);
        (
            &self.fence[start..end],
            &self.entries[start * stride..end * stride],
        )
    }

    /// Index of the first entry whose suffix is `>= target` (`count()` if none).
    pub fn lower_bound(&self, target: &[u8]) -> usize {
        let (mut low, mut high) = (0usize, self.count());
        while low < high {
            let middle = (low + high) / 2;
            if self.compare(middle, target) == Ordering::Less {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// Whether entries are sorted and distinct, and (a wide pack) whether the value slots are
    /// a permutation of `0..count` (for `verify`).
    pub fn is_sorted(&self) -> bool {
        let sorted = (1..self.count()).all(|i| {
            let (a0, a, _) = self.entry(i - 1);
            let (b0, b, _) = self.entry(i);
            (a0, a) < (b0, b)
        });
        if !sorted || !self.wide {
            return sorted;
        }
        let mut seen = vec![false; self.count()];
        (0..self.count()).all(|index| match seen.get_mut(self.slot(index)) {
            Some(seen) if !*seen => {
                *seen = true;
                true
            }
            _ => false,
        })
    }
}

/// A dense pack's first header word with value width 0 and no prefix: kind 7, key width 1,
/// count 256, no spare slot (the value width is byte 4, the prefix length bytes 6..8).
pub(crate) const DENSE_HEADER_FIXED: u64 = {
    let count = (DENSE_ENTRIES as u16).to_le_bytes();
    u64::from_le_bytes([KIND_DENSE, 1, count[0], count[1], 0, 0, 0, 0])
};

/// A lookup of `key` in `bytes` (from a file: nothing is trusted) when they hold a dense pack
/// whose word sits at `depth`: `Some(value or None)` after the checks of
/// [`PackRef::from_image`] and of the resolver's key-length bound; `None` when `bytes` is not a
/// well-formed dense pack (the general path then reads it and reports what is wrong). The
/// persisted lookup path of W2's leaf level: one load at `base + b * value_width`, no view.
#[inline(always)]
pub(crate) fn dense_get<'a>(bytes: &'a [u8], key: &[u8], depth: usize) -> Option<Option<&'a [u8]>> {
    let header = u64::from_le_bytes(*bytes.first_chunk::<8>()?);
    // Kind, key width 1, count 256 and spare 0 (bytes 0, 1, 2..4 and 5) in one compare.
    const FIXED_MASK: u64 = u64::from_le_bytes([0xFF, 0xFF, 0xFF, 0xFF, 0, 0xFF, 0, 0]);
    const FIXED: u64 = DENSE_HEADER_FIXED;
    let value_width = usize::from((header >> 32) as u8);
    let prefix_len = usize::from((header >> 48) as u16);
    if header & FIXED_MASK != FIXED || value_width > PACK_VALUE_WIDTH_MAX {
        return None;
    }
    // W2's leaf level (no prefix, the key's last byte names the entry): `key.len() == depth + 1`
    // also gives the key-length bound below (`depth + 1 <= key.len() <= KEY_LEN_MAX`).
    if prefix_len == 0 && key.len() == depth + 1 {
        let image = bytes.get(..dense_image_len(0, value_width))?;
        let &byte = key.last()?;
        let at = PACK_HEADER_LEN + usize::from(byte) * value_width;
        return Some(image.get(at..at + value_width));
    }
    if depth + prefix_len + 1 > crate::KEY_LEN_MAX {
        return None;
    }
    let image = bytes.get(..dense_image_len(prefix_len, value_width))?;
    let entries_at = PACK_HEADER_LEN + prefix_len;
    let Some((&byte, prefix)) = key.get(depth..).and_then(<[u8]>::split_last) else {
        return Some(None);
    };
    // (No slice compare for the common empty prefix: it costs a `bcmp` call.)
    if prefix.len() != prefix_len
        || (prefix_len != 0 && prefix != image.get(PACK_HEADER_LEN..entries_at)?)
    {
        return Some(None);
    }
    let at = entries_at + usize::from(byte) * value_width;
    Some(image.get(at..at + value_width))
}

/// A lookup of `key` (its bytes from `depth` on are the pack's) in a persisted ordinary pack
/// (kind 6) at the front of `bytes`, for the quick persisted walk (lookup/persisted.rs): the
/// checks that [`PackRef::from_image`] and the resolver make of a persisted pack first (the
/// widths fit an ordinary pack, count at least 2, capacity within the widths' maximum, the image
/// inside `bytes`, the key length it implies within `KEY_LEN_MAX`), then the probe of every
/// pack lookup ([`probe`]'s: fence run, then the run's records; every access bounds-checked).
/// `None` when `bytes` is not such a pack or a check fails: the general path then reads it (and
/// reports what is wrong). It repeats [`pack_fence_checked`] followed by [`probe_records`] in
/// one piece: written as those two calls it cost more instructions on the file's hot path
/// (`w2_hot_profile`'s count and `random_hot`'s `file_pass` both grew).
/// The same answers as the general path's `pack_get`, without its `Entry`, `PackRef` and
/// call through the source (a tree of random keys read from its file: every lookup ends in
/// an ordinary pack).
#[inline(always)]
pub(crate) fn pack_get_checked<'a>(
    bytes: &'a [u8],
    key: &[u8],
    depth: usize,
) -> Option<Option<&'a [u8]>> {
    let image = checked_pack(bytes, depth)?;
    // The probe every point lookup of a pack makes (the heap's general probe, `probe`; the
    // general path's `read::pack_get` too), so that the answers agree even on a damaged image
    // (a fence or records out of order) that no checksum stands behind.
    let layout = layout_of(image)?;
    let Some(rest) = key.get(depth..) else {
        return Some(None);
    };
    Some(match probe_fence_in(image, &layout, rest) {
        Some(probe) => probe_records_in(image, &layout, key, probe),
        None => None,
    })
}

/// [`pack_get_checked`] in two steps, for a group walk that prefetches the record between
/// them: the checks and the fence search, then [`probe_records`] with the layout and probe
/// returned in [`CheckedPack::Records`] (or the answer, when the fence settles it).
#[inline(always)]
pub(crate) fn pack_fence_checked<'a>(
    bytes: &'a [u8],
    key: &[u8],
    depth: usize,
) -> Option<CheckedPack<'a>> {
    let image = checked_pack(bytes, depth)?;
    let layout = layout_of(image)?;
    let Some(rest) = key.get(depth..) else {
        return Some(CheckedPack::Done(None));
    };
    Some(match probe_fence_in(image, &layout, rest) {
        Some(probe) => CheckedPack::Records(image, layout, probe),
        None => CheckedPack::Done(None),
    })
}

/// Where [`pack_fence_checked`] left a lookup.
pub(crate) enum CheckedPack<'a> {
    /// The answer.
    Done(Option<&'a [u8]>),
    /// The pack's image, its layout and the fence's probe: [`probe_records`] finishes it.
    Records(&'a [u8], Layout, Probe),
}

/// The image of the ordinary pack at the front of `bytes` whose word sits at `depth`, after the
/// checks [`pack_get_checked`] names; `None` when it is no such pack or a check fails.
#[inline(always)]
fn checked_pack(bytes: &[u8], depth: usize) -> Option<&[u8]> {
    let header = bytes.first_chunk::<8>()?;
    if header[0] != KIND_PACK {
        return None;
    }
    let key_width = usize::from(header[1]);
    let count = usize::from(u16::from_le_bytes([header[2], header[3]]));
    let value_width = usize::from(header[4]);
    let capacity = count + usize::from(header[5]);
    let prefix_len = usize::from(u16::from_le_bytes([header[6], header[7]]));
    // `PackRef::from_image`'s checks, in cheaper forms: a key width of 1..=255 bytes (a u8) and
    // a value of at most 16 bytes are what `fits` and `!is_wide` ask of an ordinary pack, and
    // `capacity <= pack_capacity_max_for(..)` is `capacity <= PACK_ENTRIES_MAX` and
    // `capacity * (1 + stride) <= PACK_AREA_LEN_MAX` (no division); then the resolver's
    // key-length bound.
    let stride = key_width.wrapping_sub(1) + value_width;
    if key_width == 0
        || value_width > PACK_VALUE_WIDTH_MAX
        || count < 2
        || capacity > PACK_ENTRIES_MAX
        || capacity * (1 + stride) > PACK_AREA_LEN_MAX
        || depth + prefix_len + key_width > crate::KEY_LEN_MAX
    {
        return None;
    }
    debug_assert!(fits(key_width, value_width) && !is_wide(value_width));
    debug_assert!(capacity <= pack_capacity_max_for(key_width, value_width));
    let len = PACK_HEADER_LEN + prefix_len + capacity * (1 + stride);
    debug_assert_eq!(
        len,
        pack_image_len(prefix_len, key_width, value_width, capacity)
    );
    bytes.get(..len)
}

/// Where a heap pack's lookup of one suffix stands after its fence search ([`probe_fence`]).
#[derive(Clone, Copy)]
pub(crate) struct Probe {
    /// Index of the first entry whose first suffix byte equals the key's.
    pub index: usize,
    /// Entries from `index` on with that first byte (at least 1).
    pub run: usize,
    /// Byte offset of that entry's record in the image (to prefetch it).
    pub record_at: usize,
}

/// Records of a run compared without branches (a longer run is walked): for a pack of ~150
/// random keys the run holding a present key has 1 entry 56% of the time, 2 in 33%, 3 in 9%,
/// 4 or more in 2%; a walk's exit branch would mispredict on every run longer than 1.
const RUN_BRANCH_FREE_MAX: usize = 4;

/// The parts of a pack header a lookup needs, read without the checks of
/// [`PackRef::from_image`] (for heap packs, which this crate made; every access stays
/// bounds-checked, so a malformed image gives `None`, never undefined behaviour).
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    key_width: usize,
    count: usize,
    value_width: usize,
    prefix_len: usize,
    fence_at: usize,
    entries_at: usize,
    /// A dense pack: no fence, entries from `fence_at`.
    dense: bool,
    /// A wide pack's value width (0 for other packs, whose records end in the value: then
    /// `value_width` is the record's value part, for a wide pack the 2-byte slot).
    wide_width: usize,
    /// A wide pack's value area.
    values_at: usize,
}

#[inline(always)]
fn layout_of(image: &[u8]) -> Option<Layout> {
    let header: &[u8; 8] = image.get(..8)?.try_into().ok()?;
    let dense = header[0] == KIND_DENSE;
    let wide = header[0] == KIND_WIDE;
    let key_width = header[1] as usize;
    let count = u16::from_le_bytes([header[2], header[3]]) as usize;
    let value_width = header[4] as usize;
    let capacity = count + header[5] as usize;
    let prefix_len = u16::from_le_bytes([header[6], header[7]]) as usize;
    let fence_at = PACK_HEADER_LEN + prefix_len;
    let entries_at = if dense { fence_at } else { fence_at + capacity };
    let record_value = if wide { WIDE_SLOT_LEN } else { value_width };
    Some(Layout {
        key_width,
        count,
        value_width: record_value,
        prefix_len,
        fence_at,
        entries_at,
        dense,
        wide_width: if wide { value_width } else { 0 },
        values_at: entries_at + capacity * (key_width.saturating_sub(1) + record_value),
    })
}

/// The value of the record whose value part (an ordinary pack's value, a wide pack's slot)
/// starts at `at`.
#[inline(always)]
fn record_value<'a>(image: &'a [u8], layout: &Layout, at: usize) -> Option<&'a [u8]> {
    if layout.wide_width == 0 {
        return image.get(at..at + layout.value_width);
    }
    let slot = match image.get(at..at + WIDE_SLOT_LEN)? {
        [low, high] => usize::from(u16::from_le_bytes([*low, *high])),
        _ => return None,
    };
    if slot >= layout.count {
        return None;
    }
    let value_at = layout.values_at + slot * layout.wide_width;
    image.get(value_at..value_at + layout.wide_width)
}

/// First step of a heap pack lookup of `key`, whose bytes from `depth` on are the pack's (its
/// word sits at `depth`): checks the prefix and width and finds the run of entries sharing the
/// key's first suffix byte (counting, free of data-dependent branches: `crate::raw::search::fence_run`).
/// `None`: the key is absent.
/// The header's layout comes back with the probe, for [`probe_records`] to use without
/// reading the header again.
#[inline(always)]
pub(crate) fn probe_fence(image: &[u8], key: &[u8], depth: usize) -> Option<(Layout, Probe)> {
    let layout = layout_of(image)?;
    let probe = probe_fence_in(image, &layout, key.get(depth..)?)?;
    Some((layout, probe))
}

#[inline(always)]
fn probe_fence_in(image: &[u8], layout: &Layout, rest: &[u8]) -> Option<Probe> {
    let suffix = if layout.prefix_len == 0 {
        rest
    } else {
        rest.strip_prefix(image.get(PACK_HEADER_LEN..layout.fence_at)?)?
    };
    if suffix.len() != layout.key_width || layout.count == 0 {
        return None;
    }
    let first = suffix[0];
    let stride = layout.key_width - 1 + layout.value_width;
    if layout.dense {
        // Entry `b` holds suffix byte `b` (a dense pack's key width is 1, checked above).
        return Some(Probe {
            index: usize::from(first),
            run: 1,
            record_at: layout.entries_at + usize::from(first) * stride,
        });
    }
    let padded = image.get(layout.fence_at..)?;
    let fence = padded.get(..layout.count)?;
    if layout.key_width == 1 {
        // One-byte suffixes are distinct, so an entry equal to `first` is the only one: try
        // where a dense pack keeps it (a full pack of dense keys holds byte b at index b).
        let guess = (usize::from(first) * fence.len()) >> 8;
        if fence.get(guess) == Some(&first) {
            return Some(Probe {
                index: guess,
                run: 1,
                record_at: layout.entries_at + guess * stride,
            });
        }
    }
    let (index, through) = crate::raw::search::fence_run_padded(padded, layout.count, first);
    if through == index {
        return None;
    }
    if layout.wide_width != 0 {
        // A wide pack's value is found through the record's slot, one more dependent load:
        // start loading where it most likely is (a copied pack holds its values in key order,
        // slot = index, until in-place inserts append), so that it arrives with the record.
        let at = layout.values_at + index * layout.wide_width;
        crate::raw::prefetch(image.as_ptr() as usize + at.min(image.len().saturating_sub(1)));
    }
    Some(Probe {
        index,
        run: through - index,
        record_at: layout.entries_at + index * stride,
    })
}

/// Where a writer's insert of `rest` (the key after the pack's word) stands in the heap pack
/// `image` (kind 6, made by this crate), read without [`PackRef::from_image`]'s checks (every
/// access stays bounds-checked): `Ok(index)` of the equal entry or `Err(index)` where it would
/// go, with the pack's spare slot count and version. `None` when the key leaves the pack's
/// prefix or has other widths than its entries (`value_len` is the new value's length): the
/// general path's cases.
#[inline(always)]
pub(crate) fn heap_pack_find(
    image: &[u8],
    rest: &[u8],
    value_len: usize,
) -> Option<(Result<usize, usize>, HeapPackState)> {
    // Ordinary packs only: other pack kinds lay their records out otherwise.
    if image.first() != Some(&KIND_PACK) {
        return None;
    }
    let layout = layout_of(image)?;
    let suffix = if layout.prefix_len == 0 {
        rest
    } else {
        rest.strip_prefix(image.get(PACK_HEADER_LEN..layout.fence_at)?)?
    };
    if layout.dense
        || suffix.len() != layout.key_width
        || value_len != layout.value_width
        || layout.count == 0
    {
        return None;
    }
    let version = u64::from_le_bytes(image.get(8..16)?.try_into().ok()?);
    let spare = usize::from(*image.get(5)?);
    let state = HeapPackState {
        count: layout.count,
        spare,
        version,
        key_width: layout.key_width,
        prefix_len: layout.prefix_len,
        stride: layout.key_width - 1 + layout.value_width,
        fence_at: layout.fence_at,
        entries_at: layout.entries_at,
    };
    let (&first, target) = suffix.split_first()?;
    let (below, through) =
        crate::raw::search::fence_run_padded(image.get(layout.fence_at..)?, layout.count, first);
    let width = target.len();
    let stride = width + layout.value_width;
    let mut index = below;
    while index < through {
        let at = layout.entries_at + index * stride;
        match compare_equal_len(image.get(at..at + width)?, target) {
            Ordering::Less => index += 1,
            Ordering::Equal => return Some((Ok(index), state)),
            Ordering::Greater => break,
        }
    }
    Some((Err(index), state))
}

/// What [`heap_pack_find`] read from a heap pack's header besides the key's place.
#[derive(Clone, Copy)]
pub(crate) struct HeapPackState {
    /// Entries.
    pub count: usize,
    /// Spare entry slots.
    pub spare: usize,
    /// Version that created the pack.
    pub version: u64,
    /// Suffix bytes per entry.
    pub key_width: usize,
    /// Prefix bytes (the key's suffix starts after them).
    pub prefix_len: usize,
    /// Record bytes (suffix bytes after the first, then the value).
    pub stride: usize,
    /// Where the fence starts in the image.
    pub fence_at: usize,
    /// Where the records start in the image.
    pub entries_at: usize,
}

/// Second step of a heap pack lookup: finds the key among the `probe.run` records whose first
/// suffix byte matches and returns its value.
/// `layout` is what [`probe_fence`] read from this image's header.
#[inline(always)]
pub(crate) fn probe_records<'a>(
    image: &'a [u8],
    layout: &Layout,
    key: &[u8],
    probe: Probe,
) -> Option<&'a [u8]> {
    probe_records_in(image, layout, key, probe)
}

/// A whole heap pack lookup (both steps, the header read once).
#[inline(always)]
pub(crate) fn probe<'a>(image: &'a [u8], key: &[u8], depth: usize) -> Option<&'a [u8]> {
    if image.first() == Some(&KIND_DENSE) {
        return probe_dense(image, key, depth);
    }
    let layout = layout_of(image)?;
    let probe = probe_fence_in(image, &layout, key.get(depth..)?)?;
    probe_records_in(image, &layout, key, probe)
}

/// The image length of the heap pack whose first 8 bytes are `header`, when its word's hint
/// (`capacity` entry slots, records `stride` bytes apart) describes it and it is an ordinary
/// pack (kind 6, no prefix) of suffixes `key_width` bytes long with 2..=9 bytes (the packs of a
/// large tree of random 8-byte keys): then [`probe_hinted`] answers a lookup of a key whose rest
/// is `key_width` bytes long. `None` for any other pack or width (the general probe's cases).
/// The length is computed from the hint, not the header: a lookup's addresses then do not wait
/// for the header's cache miss (the header's agreement is what this checks, on a predicted
/// branch).
#[inline(always)]
pub(crate) fn hinted_pack_len(
    header: u64,
    capacity: usize,
    stride: usize,
    key_width: usize,
) -> Option<usize> {
    // Bytes of each record's key part (the suffix after its fence byte): 1..=8, one word.
    let width = key_width.wrapping_sub(1);
    let value_width = stride.wrapping_sub(width);
    if width.wrapping_sub(1) >= 8 || value_width > PACK_VALUE_WIDTH_MAX {
        return None;
    }
    // Kind, key width, value width and an empty prefix in one compare; then the slots.
    let expected = u64::from(KIND_PACK) | (key_width as u64) << 8 | (value_width as u64) << 32;
    let count = (header >> 16) & 0xFFFF;
    let spare = (header >> 40) & 0xFF;
    if header & 0xFFFF_00FF_0000_FFFF != expected || count + spare != capacity as u64 {
        return None;
    }
    Some(PACK_HEADER_LEN + capacity * (1 + stride))
}

/// A heap lookup of `key` (its bytes from `depth` on are the pack's) in `image`, a pack for
/// which [`hinted_pack_len`] gave `image`'s length from the same `header`, `capacity` and
/// `stride`, with `count_guess` the count the word's hint suggests: the fence run is found by
/// equality in one 32-byte window placed from the guess
/// ([`crate::raw::search::window_eq`](crate::raw::search::window_eq)), and the run's records (up to
/// [`RUN_BRANCH_FREE_MAX`]) are compared for equality without branches after one bounds check
/// ([`run_match`]; [`run_place`] where the last of those records' words would pass the image).
///
/// Every address here comes from the word, the key or the fence, never from the header; what
/// waits for the pack's cache misses is the fence's and the records' compares, kept short, since
/// the instructions that wait for a miss are what keeps the core from the next lookup's loads
/// (measured in docs/journal/art.md, "Heap pack lookups from the word's hint" and "Where a random
/// lookup's time goes").
///
/// `Some(value)` answers (`Some(None)`: absent); `None` when the window did not hold the run's
/// edges, the run is longer, or the last record's word would pass the image: the caller takes
/// the general probe.
#[inline(always)]
pub(crate) fn probe_hinted<'a>(
    image: &'a [u8],
    header: u64,
    capacity: usize,
    stride: usize,
    count_guess: usize,
    key: &[u8],
    depth: usize,
) -> Option<Option<&'a [u8]>> {
    let Some((below, run, width)) =
        hinted_fence_run(image, header, capacity, count_guess, key, depth)?
    else {
        return Some(None);
    };
    let first_at = PACK_HEADER_LEN + capacity + below * stride;
    let place = match image.get(first_at..first_at + (RUN_BRANCH_FREE_MAX - 1) * stride + 8) {
        // The common case: all RUN_BRANCH_FREE_MAX records' words are inside the image, so they
        // are compared without a clamp to the run (the ones past it are masked off).
        Some(records) => run_match(records, run, stride, width, key),
        // The run's last records end the image: clamp the loads to the run.
        None => run_place(
            image.get(first_at..first_at + (run - 1) * stride + 8)?,
            run,
            stride,
            width,
            key,
        ),
    };
    let Some(place) = place else {
        return Some(None);
    };
    let at = first_at + place * stride + width;
    // In bounds (`place` is inside the run, the run inside the count); a value that were not
    // would go to the general probe, never be answered as absent.
    Some(Some(image.get(at..at + stride - width)?))
}

/// The place of `key` among the `run` (1..=[`RUN_BRANCH_FREE_MAX`]) records that start
/// `records`, `stride` bytes apart, by equality of their first `width` (1..=8) bytes with the
/// key's last `width` bytes: `records` holds at least 8 bytes from each of the first
/// [`RUN_BRANCH_FREE_MAX`] records' starts; `None`: absent. Equality needs no byte swap and no
/// order, so fewer instructions wait for the records' line than in [`run_place`] (a pack's keys
/// are distinct, so at most one record of the run matches).
///
/// A run of one record (56% of present keys' runs in packs of ~150 random keys, and most absent
/// keys' non-empty runs) compares one record, a run of two (33%) two, a longer one all
/// [`RUN_BRANCH_FREE_MAX`]: each record compared is a few instructions that wait for the
/// record's line. The branch on the run's length waits only for the fence's, and a mispredicted
/// one cost less than the compares it saves (the road not taken, four compares always, was
/// slower for absent keys and no faster for `get`: `lookup_profile ... random`, measured in
/// docs/journal/art.md, "Records compared by the run's length").
#[inline(always)]
fn run_match(records: &[u8], run: usize, stride: usize, width: usize, key: &[u8]) -> Option<usize> {
    match run {
        1 => run_match_n::<1>(records, run, stride, width, key),
        2 => run_match_n::<2>(records, run, stride, width, key),
        _ => run_match_n::<RUN_BRANCH_FREE_MAX>(records, run, stride, width, key),
    }
}

/// [`run_match`] comparing the first `N` (at most [`RUN_BRANCH_FREE_MAX`]) records, the ones
/// past the run masked off.
#[inline(always)]
fn run_match_n<const N: usize>(
    records: &[u8],
    run: usize,
    stride: usize,
    width: usize,
    key: &[u8],
) -> Option<usize> {
    const { assert!(N <= RUN_BRANCH_FREE_MAX) };
    let shift = 64 - 8 * width;
    let wanted = tail_le(key, width);
    let mut matches = 0u32;
    for k in 0..N {
        let at = k * stride;
        debug_assert!(at + 8 <= records.len());
        // SAFETY: `at + 8 <= records.len()` for every k < N <= RUN_BRANCH_FREE_MAX (caller);
        // `read_unaligned` needs no alignment.
        let record = unsafe { records.as_ptr().add(at).cast::<[u8; 8]>().read_unaligned() };
        let differs = (u64::from_le_bytes(record) ^ wanted) << shift;
        matches |= u32::from(differs == 0) << k;
    }
    let matches = matches & ((1u32 << run) - 1);
    (matches != 0).then(|| matches.trailing_zeros() as usize)
}

/// The last `width` (1..=8) bytes of `key` (at least `width` long) as a little-endian integer
/// (the first of them in the low byte): one load when the key has 8 bytes or more.
#[inline(always)]
fn tail_le(key: &[u8], width: usize) -> u64 {
    match key.len().checked_sub(8).and_then(|at| key.get(at..)) {
        Some(eight) => {
            let mut word = [0u8; 8];
            word.copy_from_slice(eight);
            u64::from_le_bytes(word) >> (64 - 8 * width)
        }
        None => key[key.len().saturating_sub(width)..]
            .iter()
            .rev()
            .fold(0u64, |word, &byte| word << 8 | u64::from(byte)),
    }
}

/// The fence step that [`probe_hinted`] and [`probe_hinted_fence`] share: the key's run in the
/// window the hint places, as `(first index, length, record key width)`. `Some(None)`: the run
/// is empty (the key is absent); `None`: the general probe's cases (the window missed an edge,
/// a run longer than [`RUN_BRANCH_FREE_MAX`], a record key width outside 1..=8).
#[inline(always)]
fn hinted_fence_run(
    image: &[u8],
    header: u64,
    capacity: usize,
    count_guess: usize,
    key: &[u8],
    depth: usize,
) -> Option<Option<(usize, usize, usize)>> {
    let rest = key.get(depth..)?;
    let width = rest.len().checked_sub(1)?;
    let first = *rest.first()?;
    let count = ((header >> 16) & 0xFFFF) as usize;
    let (start, lane, run) = crate::raw::search::window_eq(
        image.get(PACK_HEADER_LEN..)?,
        capacity,
        count,
        count_guess,
        first,
    )?;
    if run == 0 {
        return Some(None);
    }
    if run > RUN_BRANCH_FREE_MAX || width == 0 || width > 8 {
        return None;
    }
    Some(Some((start + lane, run, width)))
}

/// The place of `key` among the records of a run (`run` records, 1..=[`RUN_BRANCH_FREE_MAX`],
/// `stride` bytes apart from the start of `records`, which holds at least 8 bytes from each),
/// compared as big-endian words of their first `width` (1..=8) bytes without branches; `None`:
/// absent.
#[inline(always)]
fn run_place(records: &[u8], run: usize, stride: usize, width: usize, key: &[u8]) -> Option<usize> {
    let span = run - 1;
    let shift = 64 - 8 * width;
    let record = |k: usize| -> u64 {
        let at = k.min(span) * stride;
        debug_assert!(at + 8 <= records.len());
        // SAFETY: `at <= span * stride` and `records` holds at least 8 bytes from each of the
        // run's records (caller), so the 8 bytes at `at` are inside it; `read_unaligned` needs
        // no alignment.
        let bytes = unsafe { records.as_ptr().add(at).cast::<[u8; 8]>().read_unaligned() };
        u64::from_be_bytes(bytes) >> shift
    };
    // The key's bytes after its fence byte: the last `width` bytes of `key` (its width was
    // checked by `hinted_pack_len`), one load when the key has 8 bytes.
    let wanted = tail_be(key, width);
    // The run is sorted: the key's place in it is the number of its records below the key
    // (the loads past the run read its last record again, masked off by `k + 1 < run`).
    let mut place = 0usize;
    for k in 0..RUN_BRANCH_FREE_MAX - 1 {
        place += usize::from(k + 1 < run) & usize::from(record(k) < wanted);
    }
    (record(place) == wanted).then_some(place)
}

/// The run of records that [`probe_hinted_fence`] found for a key: the records a lookup
/// compares next ([`probe_hinted_records`]).
#[derive(Clone, Copy)]
pub(crate) struct HintedRun<'a> {
    /// The image from the run's first record to the end of its last, and at least 8 bytes
    /// from each record's start (the compare's loads); to the fourth record's word's end when
    /// the image has it ([`run_match`]'s loads past the run).
    records: &'a [u8],
    /// Records in the run (1..=[`RUN_BRANCH_FREE_MAX`]).
    run: usize,
    /// Bytes from one record to the next.
    stride: usize,
    /// Key bytes of a record after its fence byte (1..=8).
    width: usize,
}

impl HintedRun<'_> {
    /// Where the run's first record starts in memory (for a prefetch).
    #[inline(always)]
    pub(crate) fn address(&self) -> usize {
        self.records.as_ptr() as usize
    }
}

/// The first step of [`probe_hinted`] (same arguments and preconditions), for a group walk
/// that prefetches the record before comparing it: `Some(None)`: the key is absent (its run is
/// empty); `Some(Some(run))`: compare the run's records next ([`probe_hinted_records`]; every
/// bound of that compare is checked here); `None`: the caller takes the general probe.
#[inline(always)]
pub(crate) fn probe_hinted_fence<'a>(
    image: &'a [u8],
    header: u64,
    capacity: usize,
    stride: usize,
    count_guess: usize,
    key: &[u8],
    depth: usize,
) -> Option<Option<HintedRun<'a>>> {
    let Some((below, run, width)) =
        hinted_fence_run(image, header, capacity, count_guess, key, depth)?
    else {
        return Some(None);
    };
    let first_at = PACK_HEADER_LEN + capacity + below * stride;
    // Every record the compare reads starts at most `(RUN_BRANCH_FREE_MAX - 1) * stride` bytes
    // into `records` and reads 8 bytes, and the value ends a record, so this one check bounds
    // them all; where those records pass the image, the run's records only (and the compare
    // clamps its loads to the run).
    let whole = first_at + (RUN_BRANCH_FREE_MAX - 1) * stride + stride.max(8);
    let records = match image.get(first_at..whole) {
        Some(records) => records,
        None => image.get(first_at..first_at + (run - 1) * stride + stride.max(8))?,
    };
    Some(Some(HintedRun {
        records,
        run,
        stride,
        width,
    }))
}

/// The second step of [`probe_hinted`]: the value of `key` among `run`'s records (`None`:
/// absent).
#[inline(always)]
pub(crate) fn probe_hinted_records<'a>(run: HintedRun<'a>, key: &[u8]) -> Option<&'a [u8]> {
    let place = if run.records.len() >= (RUN_BRANCH_FREE_MAX - 1) * run.stride + 8 {
        run_match(run.records, run.run, run.stride, run.width, key)
    } else {
        run_place(run.records, run.run, run.stride, run.width, key)
    }?;
    let at = place * run.stride + run.width;
    // In bounds: `place` is inside the run, and `records` holds the run's last record whole
    // (`probe_hinted_fence`); the record's value is its bytes after the key part.
    run.records.get(at..at + run.stride.wrapping_sub(run.width))
}

/// A heap dense pack lookup: the prefix compared, then one load at `base + b * value_width`
/// (no fence, no record compare: fewer instructions than the general probe).
#[inline(always)]
pub(crate) fn probe_dense<'a>(image: &'a [u8], key: &[u8], depth: usize) -> Option<&'a [u8]> {
    let header: &[u8; 8] = image.get(..8)?.try_into().ok()?;
    let value_width = header[4] as usize;
    let prefix_len = u16::from_le_bytes([header[6], header[7]]) as usize;
    let rest = key.get(depth..)?;
    let (&byte, prefix) = rest.split_last()?;
    if prefix.len() != prefix_len
        || (prefix_len != 0
            && prefix != image.get(PACK_HEADER_LEN..PACK_HEADER_LEN + prefix_len)?)
    {
        return None;
    }
    let at = PACK_HEADER_LEN + prefix_len + usize::from(byte) * value_width;
    image.get(at..at + value_width)
}

#[inline(always)]
fn probe_records_in<'a>(
    image: &'a [u8],
    layout: &Layout,
    rest: &[u8],
    probe: Probe,
) -> Option<&'a [u8]> {
    // `rest` is the whole key (or any slice ending where it ends): the suffix is the end of the
    // key (its width was checked by the fence step), so its bytes after the first are the last
    // `width` bytes of `rest`, loaded as one word when the key has 8 bytes.
    let width = layout.key_width - 1;
    let target = rest.get(rest.len().checked_sub(width)?..)?;
    let stride = width + layout.value_width;
    let end = (probe.index + probe.run).min(layout.count);
    if width == 0 {
        // One-byte suffixes (dense keys): the fence byte was the whole suffix.
        return record_value(image, layout, probe.record_at);
    }
    if width <= 8 {
        // Compare as big-endian integers of `width` bytes: one load per record.
        let wanted = tail_be(rest, width);
        let (index, record) = if probe.run <= RUN_BRANCH_FREE_MAX {
            // The run is sorted: the key's place in it is the number of its records below the
            // key. Load the first RUN_BRANCH_FREE_MAX records (clamped to the run's last, so no
            // line past the run is touched: with 13-byte records, four from the run's start
            // reach into the next line about as often as not) and count, masking the ones past
            // the run, so no branch depends on the records.
            let span = probe.run.checked_sub(1)?;
            let mut records = [0u64; RUN_BRANCH_FREE_MAX];
            for (k, record) in records.iter_mut().enumerate() {
                let at = layout.entries_at + (probe.index + k.min(span)) * stride;
                *record = record_key(image, at, width)?;
            }
            let mut place = 0usize;
            for (k, &record) in records.iter().enumerate().take(RUN_BRANCH_FREE_MAX - 1) {
                place += usize::from(k + 1 < probe.run) & usize::from(record < wanted);
            }
            (
                probe.index + place,
                records[place.min(RUN_BRANCH_FREE_MAX - 1)],
            )
        } else {
            let mut index = probe.index;
            let mut record = record_key(image, layout.entries_at + index * stride, width)?;
            while record < wanted && index + 1 < end {
                index += 1;
                record = record_key(image, layout.entries_at + index * stride, width)?;
            }
            (index, record)
        };
        if record != wanted {
            return None;
        }
        let at = layout.entries_at + index * stride;
        return record_value(image, layout, at + width);
    }
    let mut at = probe.record_at;
    for _ in probe.index..end {
        let record = image.get(at..at + width)?;
        match record.cmp(target) {
            Ordering::Less => {}
            Ordering::Equal => return record_value(image, layout, at + width),
            Ordering::Greater => return None,
        }
        at += stride;
    }
    None
}

/// The `width` (0..=8) key bytes of the record at `at` as a big-endian integer: one load when 8
/// bytes are readable there.
#[inline(always)]
fn record_key(image: &[u8], at: usize, width: usize) -> Option<u64> {
    Some(match image.get(at..at + 8) {
        Some(eight) => be_prefix(eight, width),
        None => be_prefix_slice(image.get(at..at + width)?),
    })
}

/// The last `width` (0..=8) bytes of `bytes` (at least `width` long) as a big-endian integer:
/// one load when `bytes` has 8 bytes.
#[inline(always)]
fn tail_be(bytes: &[u8], width: usize) -> u64 {
    match bytes.len().checked_sub(8).and_then(|at| bytes.get(at..)) {
        Some(eight) if width > 0 => {
            let mut word = [0u8; 8];
            word.copy_from_slice(eight);
            u64::from_be_bytes(word) & (u64::MAX >> (64 - 8 * width.min(8)))
        }
        _ => be_prefix_slice(&bytes[bytes.len().saturating_sub(width)..]),
    }
}

/// The first `width` (0..=8) bytes of `eight` (at least 8 bytes) as a big-endian integer.
#[inline(always)]
fn be_prefix(eight: &[u8], width: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&eight[..8]);
    let all = u64::from_be_bytes(bytes);
    if width == 0 {
        0
    } else {
        all >> (64 - 8 * width.min(8))
    }
}

/// Up to 8 bytes as a big-endian integer.
#[inline(always)]
fn be_prefix_slice(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
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

/// Fills a new pack's entries in order.
pub(crate) struct PackWriter<'b> {
    /// Empty for a dense pack (its fence is implicit).
    fence: &'b mut [u8],
    records: &'b mut [u8],
    /// A wide pack's value area (empty for other packs).
    values: &'b mut [u8],
    key_width: usize,
    value_width: usize,
    index: usize,
    dense: bool,
    wide: bool,
}

impl PackWriter<'_> {
    /// Appends an entry: suffix `first ++ rest` (`1 + rest.len() == key_width`) and `value`.
    pub fn push(&mut self, first: u8, rest: &[u8], value: &[u8]) {
        debug_assert!(rest.len() + 1 == self.key_width, "pack entry key width");
        debug_assert!(value.len() == self.value_width, "pack entry value width");
        debug_assert!(
            !self.dense || usize::from(first) == self.index,
            "dense pack entry {first} pushed at index {}",
            self.index
        );
        if self.wide {
            self.push_wide(first, rest, value);
            return;
        }
        let stride = self.key_width - 1 + self.value_width;
        let Some(record) = self
            .records
            .get_mut(self.index * stride..(self.index + 1) * stride)
        else {
            debug_assert!(false, "more pack entries than announced");
            return;
        };
        // A dense writer's fence is empty (implicit); an ordinary one has a slot per record.
        match self.fence.get_mut(self.index) {
            Some(fence) => *fence = first,
            None => debug_assert!(self.dense, "more pack entries than announced"),
        }
        record[..rest.len()].copy_from_slice(rest);
        record[rest.len()..].copy_from_slice(value);
        self.index += 1;
    }
}

impl PackWriter<'_> {
    /// [`PackWriter::push`] into a wide pack: the record gets the suffix and the slot of the
    /// entry's own index, the value goes to that slot (a new pack keeps its values in key
    /// order, so a scan reads them in address order).
    fn push_wide(&mut self, first: u8, rest: &[u8], value: &[u8]) {
        let stride = self.key_width - 1 + WIDE_SLOT_LEN;
        let index = self.index;
        let (Some(record), Some(fence), Some(value_to)) = (
            self.records.get_mut(index * stride..(index + 1) * stride),
            self.fence.get_mut(index),
            self.values
                .get_mut(index * self.value_width..(index + 1) * self.value_width),
        ) else {
            debug_assert!(false, "more pack entries than announced");
            return;
        };
        *fence = first;
        record[..rest.len()].copy_from_slice(rest);
        record[rest.len()..].copy_from_slice(&(index as u16).to_le_bytes());
        value_to.copy_from_slice(value);
        self.index += 1;
    }

    /// Appends entries `start..end` of `pack` (of this writer's widths): block copies between
    /// ordinary packs and between wide ones ([`PackWriter::push_wide_block`]).
    pub fn push_entries(&mut self, pack: &PackRef<'_>, start: usize, end: usize) {
        if !pack.wide && !self.wide {
            self.push_block(pack.block(start, end));
            return;
        }
        let end = end.min(pack.count());
        if pack.wide
            && self.wide
            && pack.key_width == self.key_width
            && pack.value_width == self.value_width
        {
            self.push_wide_block(pack, start.min(end), end);
            return;
        }
        for index in start..end {
            let (first, rest, value) = pack.entry(index);
            self.push(first, rest, value);
        }
    }

    /// Appends entries `start..end` of the wide pack `pack` (of this writer's widths): the fence
    /// and the records in two block copies, then each record's slot renumbered to its new index
    /// and its value gathered there, so the copy's values are in key order again (a scan reads
    /// them in address order; the writer's copies are when this happens, see write/pack.rs).
    fn push_wide_block(&mut self, pack: &PackRef<'_>, start: usize, end: usize) {
        let stride = self.key_width - 1 + WIDE_SLOT_LEN;
        let width = self.value_width;
        let (to, count) = (self.index, end - start);
        let (Some(fence_to), Some(records_to), Some(values_to), Some(fence), Some(records)) = (
            self.fence.get_mut(to..to + count),
            self.records.get_mut(to * stride..(to + count) * stride),
            self.values.get_mut(to * width..(to + count) * width),
            pack.fence.get(start..end),
            pack.entries.get(start * stride..end * stride),
        ) else {
            debug_assert!(false, "more pack entries than announced");
            return;
        };
        fence_to.copy_from_slice(fence);
        records_to.copy_from_slice(records);
        let slots = records_to.chunks_exact_mut(stride);
        for (index, (record, value_to)) in (to..).zip(slots.zip(values_to.chunks_exact_mut(width)))
        {
            let (_, slot) = record.split_at_mut(stride - WIDE_SLOT_LEN);
            let old = usize::from(u16::from_le_bytes([slot[0], slot[1]]));
            slot.copy_from_slice(&(index as u16).to_le_bytes());
            if let Some(value) = pack.values.get(old * width..(old + 1) * width) {
                value_to.copy_from_slice(value);
            }
        }
        self.index += count;
    }

    /// Appends the values of a dense run given as inline child words, in byte order (a dense
    /// writer of values under 8 bytes): one store per entry instead of `push`'s two copies of
    /// unknown length (W2's bulk load closes 195,313 dense packs at 50M keys).
    pub fn push_inline_words(&mut self, words: impl Iterator<Item = u64>) {
        let width = self.value_width;
        debug_assert!(
            self.dense && self.key_width == 1 && width < 8,
            "inline words go to a dense writer"
        );
        for bits in words {
            let at = self.index * width;
            // The value is bytes 1..1 + width of the little-endian word: one 8-byte store, whose
            // bytes past the value the next record overwrites (records are written in order).
            let value = (bits >> 8).to_le_bytes();
            match self.records.get_mut(at..at + 8) {
                Some(eight) => eight.copy_from_slice(&value),
                None => match (self.records.get_mut(at..at + width), value.get(..width)) {
                    (Some(record), Some(value)) => record.copy_from_slice(value),
                    _ => {
                        debug_assert!(false, "more pack entries than announced");
                        return;
                    }
                },
            }
            self.index += 1;
        }
    }

    /// Appends a block of entries: their fence bytes and their records (`PackRef::block` of a
    /// pack of the same widths, or records laid out as an ordinary pack's: suffix bytes after
    /// the first, then the value), with two copies instead of one push per entry (a wide writer
    /// pushes them one by one).
    pub fn push_block(&mut self, (fence, records): (&[u8], &[u8])) {
        let stride = self.key_width - 1 + self.value_width;
        if self.wide {
            for (&first, record) in fence.iter().zip(records.chunks_exact(stride.max(1))) {
                let (rest, value) = record.split_at(self.key_width - 1);
                self.push_wide(first, rest, value);
            }
            return;
        }
        let end = self.index + fence.len();
        debug_assert!(
            !self.dense
                || fence
                    .iter()
                    .zip(self.index..)
                    .all(|(&b, i)| usize::from(b) == i),
            "dense pack block out of place"
        );
        let fence_to = if self.dense {
            None
        } else {
            let Some(fence_to) = self.fence.get_mut(self.index..end) else {
                debug_assert!(false, "more pack entries than announced");
                return;
            };
            Some(fence_to)
        };
        let Some(records_to) = self.records.get_mut(self.index * stride..end * stride) else {
            debug_assert!(false, "more pack entries than announced");
            return;
        };
        if records_to.len() != records.len() {
            debug_assert!(false, "pack block of another stride");
            return;
        }
        if let Some(fence_to) = fence_to {
            fence_to.copy_from_slice(fence);
        }
        records_to.copy_from_slice(records);
        self.index = end;
    }
}

/// Allocates a heap pack of `count` entries, filled in sorted order by `fill`; returns its word.
pub(crate) fn alloc_pack(
    prefix: &[u8],
    key_width: usize,
    value_width: usize,
    count: usize,
    version: u64,
    fill: impl FnOnce(&mut PackWriter<'_>),
) -> u64 {
    let spare = if is_wide(value_width) {
        // A wide pack's copy moves every value (a 150-entry pack of 128-byte values: ~20 KB),
        // so it gets twice the spare slots: half the copies, for a few bytes per key more
        // (`lookup_profile` fill with 128-byte values, and W1's memory row; docs/benchmarks.md).
        // More (count / 2) strays further from the hint's count guess (word.rs: capacity -
        // capacity / 16), so more of a lookup's prefetches miss.
        // (Wide packs are never dense, so the one-byte-suffix doubling below is not theirs.)
        (count / WIDE_SPARE_DIVISOR).max(WIDE_SPARE_MIN)
    } else if key_width == 1 {
        // One-byte-suffix packs double (up to the 256 entries a dense pack holds): dense keys
        // inserted in random order fill every such pack, so the copies a growth of count / 8
        // makes on the way (about 40 per run of 256 keys) were a fifth of a dense fill's
        // instructions; a pack that stays partial spends at most half its slots. Other packs
        // keep count / 8, the memory figure W1 holds them to.
        // Capacities are powers of two (4, 8, ..., 128, 256), so a run of inline-sized values
        // meets a full pack of exactly 64 entries, where the next insert makes it a Node256
        // of inline words instead (write/pack.rs, `bursts_to_inline`).
        (count + 1)
            .next_power_of_two()
            .min(DENSE_ENTRIES)
            .saturating_sub(count)
    } else {
        count / 8
    };
    let spare = spare.clamp(1, u8::MAX as usize);
    alloc_pack_spare(prefix, key_width, value_width, count, spare, version, fill)
}

/// Writes a dense pack into `bytes` (exactly [`dense_image_len`] bytes): header and prefix, then
/// the 256 entries `fill` pushes in byte order (0..=255, each once, rest empty). The bulk
/// builder composes persisted images this way in a reused buffer; [`alloc_pack_spare`] on the
/// heap.
pub(crate) fn fill_dense_image(
    bytes: &mut [u8],
    prefix: &[u8],
    value_width: usize,
    version: u64,
    fill: impl FnOnce(&mut PackWriter<'_>),
) {
    debug_assert_eq!(
        bytes.len(),
        dense_image_len(prefix.len(), value_width),
        "dense pack buffer length"
    );
    debug_assert!(
        value_width <= PACK_VALUE_WIDTH_MAX,
        "dense pack value width"
    );
    let Some((header, rest)) = bytes.split_at_mut_checked(PACK_HEADER_LEN) else {
        return;
    };
    header[0] = KIND_DENSE;
    header[1] = 1;
    header[2..4].copy_from_slice(&(DENSE_ENTRIES as u16).to_le_bytes());
    header[4] = value_width as u8;
    header[5] = 0;
    header[6..8].copy_from_slice(&(prefix.len() as u16).to_le_bytes());
    header[8..16].copy_from_slice(&version.to_le_bytes());
    let Some((prefix_bytes, records)) = rest.split_at_mut_checked(prefix.len()) else {
        return;
    };
    prefix_bytes.copy_from_slice(prefix);
    let mut writer = PackWriter {
        fence: &mut [],
        records,
        values: &mut [],
        key_width: 1,
        value_width,
        index: 0,
        dense: true,
        wide: false,
    };
    fill(&mut writer);
    debug_assert_eq!(
        writer.index, DENSE_ENTRIES,
        "dense pack filled with 256 entries"
    );
}

/// [`alloc_pack`] with `spare` unused entry slots (bulk builds use none: their packs are
/// complete, and persisted images should carry no empty slots). A pack of 256 one-byte
/// suffixes is built dense (no fence, no spare slots: it is full).
pub(crate) fn alloc_pack_spare(
    prefix: &[u8],
    key_width: usize,
    value_width: usize,
    count: usize,
    spare: usize,
    version: u64,
    fill: impl FnOnce(&mut PackWriter<'_>),
) -> u64 {
    debug_assert!(
        fits(key_width, value_width),
        "pack widths {key_width}, {value_width} out of range"
    );
    let capacity_max = pack_capacity_max_for(key_width, value_width);
    debug_assert!(
        count <= capacity_max,
        "pack of {count} entries over its capacity"
    );
    // A full run of one-byte suffixes is built dense: no fence, no spare slots. (One writer and
    // one call of `fill` for both layouts, so the caller's closure is inlined once.)
    // (Not for wide values: a dense pack holds values of up to 16 bytes; 256 one-byte suffixes
    // with wider values stay a wide pack with its fence.)
    let wide = is_wide(value_width);
    let dense = key_width == 1 && count == DENSE_ENTRIES && !wide;
    let spare = if dense {
        0
    } else {
        spare
            .min(capacity_max.saturating_sub(count))
            .min(u8::MAX as usize)
    };
    let capacity = count + spare;
    let len = if dense {
        dense_image_len(prefix.len(), value_width)
    } else {
        pack_image_len(prefix.len(), key_width, value_width, capacity)
    };
    // A one-byte-suffix pack of 6- or 7-byte values that is not dense belongs to a dense run
    // being filled: it is copied into larger packs, then bursts into a Node256 of inline words
    // (write/pack.rs, `bursts_to_inline`) that the run's 256th key makes a dense pack. Until
    // then the run's images keep to the image arena's run chunks (raw/arena.rs, `Group::Run`).
    let group = if !dense && key_width == 1 && crate::write::pack::inline_sized(value_width) {
        crate::raw::arena::Group::Run
    } else {
        crate::raw::arena::Group::General
    };
    let address = raw::alloc_image_in(len, group);
    // SAFETY: just allocated with `len` bytes; only this function uses it until it returns.
    let bytes = unsafe { raw::image_mut(address, len) };
    let (header, rest) = bytes.split_at_mut(PACK_HEADER_LEN);
    header[0] = if dense { KIND_DENSE } else { KIND_PACK };
    header[1] = key_width as u8;
    header[2..4].copy_from_slice(&(count as u16).to_le_bytes());
    header[4] = value_width as u8;
    header[5] = spare as u8;
    header[6..8].copy_from_slice(&(prefix.len() as u16).to_le_bytes());
    header[8..16].copy_from_slice(&version.to_le_bytes());
    let (prefix_bytes, rest) = rest.split_at_mut(prefix.len());
    prefix_bytes.copy_from_slice(prefix);
    let (fence, records) = rest.split_at_mut(if dense { 0 } else { capacity });
    let (records, values) = records.split_at_mut(if wide {
        capacity * record_len(key_width, value_width)
    } else {
        records.len()
    });
    if wide {
        header[0] = KIND_WIDE;
    }
    let mut writer = PackWriter {
        fence,
        records,
        values,
        key_width,
        value_width,
        index: 0,
        dense,
        wide,
    };
    fill(&mut writer);
    debug_assert_eq!(writer.index, count, "pack filled with the announced count");
    if key_width == 1 {
        // One-byte suffixes (dense keys, and dense packs) get no hint: their lookups are found by the direct
        // guess and run many at once in the core's window, so the hint's prefetch arithmetic
        // cost more than the record miss it hides (`lookup_profile` on dense keys was slower
        // with the hint).
        return crate::word::heap_leaf(address);
    }
    // A wide pack's hint describes its records (suffix bytes and slot): the prefetch of the
    // guessed record brings the slot, and the fence step prefetches the value it likely names.
    let hint = crate::word::PackHint {
        capacity,
        stride: record_len(key_width, value_width),
        prefix_len: prefix.len(),
        full: spare == 0,
    };
    crate::word::heap_pack(address, hint)
}

/// Changes a heap pack in place.
///
/// Only while no snapshot is alive (nothing but the writer can reach the pack; see write/cow.rs).
pub(crate) struct PackMut<'a> {
    image: &'a mut [u8],
}

impl<'a> PackMut<'a> {
    /// Views a pack image made by this crate mutably.
    pub fn new(image: &'a mut [u8]) -> PackMut<'a> {
        PackMut { image }
    }

    /// Whether the pack is dense (takes no in-place insert or removal: the writer rebuilds it).
    fn is_dense(&self) -> bool {
        self.image[0] == KIND_DENSE
    }

    /// Whether the pack is wide (records hold value slots).
    fn is_wide(&self) -> bool {
        self.image[0] == KIND_WIDE
    }

    /// A wide pack's value width and value area offset.
    fn wide_values(&self) -> (usize, usize) {
        let (_, entries_at, _, capacity, stride) = self.layout();
        (self.image[4] as usize, entries_at + capacity * stride)
    }

    /// The value slot in the record at byte `at` of the image.
    fn slot_at(&self, at: usize) -> usize {
        match self.image.get(at..at + WIDE_SLOT_LEN) {
            Some([low, high]) => usize::from(u16::from_le_bytes([*low, *high])),
            _ => usize::MAX,
        }
    }

    /// Fence offset, record offset, count, capacity and record length (a wide pack's records
    /// end in a value slot).
    fn layout(&self) -> (usize, usize, usize, usize, usize) {
        let key_width = self.image[1] as usize;
        let count = u16::from_le_bytes([self.image[2], self.image[3]]) as usize;
        let value_width = if self.is_wide() {
            WIDE_SLOT_LEN
        } else {
            self.image[4] as usize
        };
        let capacity = count + self.image[5] as usize;
        let prefix_len = u16::from_le_bytes([self.image[6], self.image[7]]) as usize;
        let fence_at = PACK_HEADER_LEN + prefix_len;
        let entries_at = if self.is_dense() {
            fence_at
        } else {
            fence_at + capacity
        };
        (
            fence_at,
            entries_at,
            count,
            capacity,
            key_width - 1 + value_width,
        )
    }

    fn set_count(&mut self, count: usize, capacity: usize) {
        debug_assert!(capacity - count <= u8::MAX as usize, "pack spare over 255");
        self.image[2..4].copy_from_slice(&(count as u16).to_le_bytes());
        self.image[5] = (capacity - count) as u8;
    }

    /// Inserts an entry at `index` into a spare slot (the caller checked there is one).
    pub fn insert(&mut self, index: usize, suffix: &[u8], value: &[u8]) {
        let (fence_at, entries_at, count, capacity, stride) = self.layout();
        debug_assert!(count < capacity, "in-place pack insert needs a spare slot");
        debug_assert!(!self.is_dense(), "in-place insert into a dense pack");
        if count >= capacity || index > count || self.is_dense() {
            return;
        }
        let wide = self.is_wide();
        if wide {
            // The value goes to the first unused slot (the used ones are `0..count`); only the
            // fence and the records (suffix bytes and slot) move.
            let (value_width, values_at) = self.wide_values();
            let at = values_at + count * value_width;
            if value.len() != value_width || at + value_width > self.image.len() {
                return;
            }
            self.image[at..at + value_width].copy_from_slice(value);
        }
        let Some((&first, rest)) = suffix.split_first() else {
            return;
        };
        let slot = (count as u16).to_le_bytes();
        let tail = if wide { &slot[..] } else { value };
        let opened = self.open_entry(
            (fence_at, entries_at, count, capacity, stride),
            index,
            first,
            rest,
            tail,
        );
        debug_assert!(opened, "pack insert outside the pack ({index} of {count})");
    }

    /// [`PackMut::insert`] with the layout [`heap_pack_find`] read from this pack (`state`),
    /// for the writer's fast path: inserts `suffix` (of the pack's key width) and `value` (of
    /// its value width) at entry `index` into a spare slot. Does nothing when the state says
    /// there is no spare slot or the index or the areas do not fit the image (the caller checked
    /// both; a debug build asserts).
    pub fn insert_found(
        &mut self,
        state: &HeapPackState,
        index: usize,
        suffix: &[u8],
        value: &[u8],
    ) {
        let (count, stride) = (state.count, state.stride);
        let ok = self.insert_found_in(state, index, suffix, value);
        debug_assert!(
            ok,
            "pack insert_found outside the pack ({index} of {count}, stride {stride})"
        );
    }

    #[inline(always)]
    fn insert_found_in(
        &mut self,
        state: &HeapPackState,
        index: usize,
        suffix: &[u8],
        value: &[u8],
    ) -> bool {
        let Some((&first, rest)) = suffix.split_first() else {
            return false;
        };
        let layout = (
            state.fence_at,
            state.entries_at,
            state.count,
            state.count + state.spare,
            state.stride,
        );
        self.open_entry(layout, index, first, rest, value)
    }

    /// The shift both in-place inserts share: opens entry `index` of a pack laid out as
    /// `(fence_at, entries_at, count, capacity, stride)` with a spare slot, writes its fence byte
    /// `first`, suffix bytes `rest` and record tail `tail` (the value, or a wide pack's slot),
    /// and counts it in the header. `false`, with nothing written, when there is no spare slot
    /// or the entry or the areas do not fit.
    #[inline(always)]
    fn open_entry(
        &mut self,
        (fence_at, entries_at, count, capacity, stride): (usize, usize, usize, usize, usize),
        index: usize,
        first: u8,
        rest: &[u8],
        tail: &[u8],
    ) -> bool {
        if count >= capacity || index > count || rest.len() + tail.len() != stride {
            return false;
        }
        let records_at = entries_at + index * stride;
        let records_end = entries_at + (count + 1) * stride;
        if fence_at + count + 1 > entries_at || records_end > self.image.len() {
            return false;
        }
        let fence = &mut self.image[fence_at + index..fence_at + count + 1];
        fence.copy_within(..count - index, 1);
        fence[0] = first;
        let records = &mut self.image[records_at..records_end];
        records.copy_within(..(count - index) * stride, stride);
        let (key, record_tail) = records[..stride].split_at_mut(rest.len());
        key.copy_from_slice(rest);
        record_tail.copy_from_slice(tail);
        self.set_count(count + 1, capacity);
        true
    }

    /// Removes entry `index` (the caller keeps at least two entries and checked that the spare
    /// count, one more afterwards, still fits its byte).
    pub fn remove(&mut self, index: usize) {
        let (fence_at, entries_at, count, capacity, stride) = self.layout();
        debug_assert!(!self.is_dense(), "in-place removal from a dense pack");
        if index >= count || self.is_dense() {
            return;
        }
        if self.is_wide() {
            self.free_wide_value(index, entries_at, count, stride);
        }
        let fence = &mut self.image[fence_at..entries_at];
        fence.copy_within(index + 1..count, index);
        fence[count - 1] = 0;
        let entries = &mut self.image[entries_at..entries_at + capacity * stride];
        entries.copy_within((index + 1) * stride..count * stride, index * stride);
        entries[(count - 1) * stride..count * stride].fill(0);
        self.set_count(count - 1, capacity);
    }

    /// Frees the value slot of entry `index` of a wide pack before the entry is removed: the
    /// last used value (slot `count - 1`) moves into it and its record is pointed there, so the
    /// used slots stay `0..count - 1`.
    fn free_wide_value(&mut self, index: usize, entries_at: usize, count: usize, stride: usize) {
        let (value_width, values_at) = self.wide_values();
        let slot_in = |entry: usize| entries_at + entry * stride + stride - WIDE_SLOT_LEN;
        let freed = self.slot_at(slot_in(index));
        let last = count - 1;
        if freed != last && freed < count {
            let from = values_at + last * value_width;
            let to = values_at + freed * value_width;
            if from + value_width > self.image.len() {
                return;
            }
            self.image.copy_within(from..from + value_width, to);
            if let Some(owner) = (0..count).find(|&entry| self.slot_at(slot_in(entry)) == last) {
                let at = slot_in(owner);
                self.image[at..at + WIDE_SLOT_LEN].copy_from_slice(&(freed as u16).to_le_bytes());
            }
        }
        let at = values_at + last * value_width;
        if let Some(value) = self.image.get_mut(at..at + value_width) {
            value.fill(0);
        }
    }

    /// Replaces the value of entry `index` (same width).
    pub fn set_value(&mut self, index: usize, value: &[u8]) {
        let (_, entries_at, count, _, stride) = self.layout();
        if self.is_wide() {
            let (value_width, values_at) = self.wide_values();
            let slot = self.slot_at(entries_at + (index + 1) * stride - WIDE_SLOT_LEN);
            let at = values_at + slot.saturating_mul(value_width);
            if index >= count || slot >= count || value.len() != value_width {
                return;
            }
            if let Some(to) = self.image.get_mut(at..at + value_width) {
                to.copy_from_slice(value);
            }
            return;
        }
        if index >= count || value.len() > stride {
            return;
        }
        let end = entries_at + (index + 1) * stride;
        self.image[end - value.len()..end].copy_from_slice(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `probe_hinted`, with the layout taken from the pack's word as a lookup takes it, answers
    /// as the general `probe` does whenever it answers: every key width it takes (2..=9), value
    /// widths 0..=16, packs of 1..=600 entries with and without spare slots, first bytes spread
    /// or clustered (runs longer than four, windows that miss an edge), the count guessed from
    /// the hint or far off; every present key and absent keys beside, between and around them.
    /// `hinted_pack_len` gives the image's length, and refuses a hint or key width the header
    /// does not match.
    #[test]
    fn hinted_probe_agrees_with_probe() {
        let mut next = crate::test_support::xorshift(0x5EED_1234_ABCD);
        let (mut answered, mut handed_on) = (0usize, 0usize);
        for round in 0..240usize {
            let key_width = 2 + round % 8;
            let value_width = (round / 8) % 17;
            let stride = key_width - 1 + value_width;
            let slots_max = pack_capacity_max(stride);
            let count = 1 + (next() as usize) % slots_max.min(600);
            let spare = match round % 3 {
                0 => 0,
                // Up to count / 8 + 1, the spare slots `alloc_pack` gives.
                _ => (1 + next() as usize % (count / 8 + 1)).min(slots_max - count),
            };
            let clustered = round % 4 == 1;
            let mut suffixes = std::collections::BTreeSet::new();
            while suffixes.len() < count {
                let mut suffix: Vec<u8> = (0..key_width).map(|_| next() as u8).collect();
                if clustered {
                    suffix[0] = 100 + (next() % 6) as u8;
                }
                suffixes.insert(suffix);
            }
            let entries: Vec<(Vec<u8>, Vec<u8>)> = suffixes
                .into_iter()
                .enumerate()
                .map(|(i, suffix)| {
                    let value = (0..value_width).map(|j| (i * 7 + j) as u8).collect();
                    (suffix, value)
                })
                .collect();
            let word = alloc_pack_spare(&[], key_width, value_width, count, spare, 1, |w| {
                for (suffix, value) in &entries {
                    w.push(suffix[0], &suffix[1..], value);
                }
            });
            assert_eq!(
                word & crate::word::TAG_MASK,
                crate::word::TAG_HEAP_PACK_HINTED
            );
            let address = crate::word::heap_leaf_address(word);
            // SAFETY: the live pack just allocated, freed only below.
            let image = unsafe { super::super::heap_leaf_image(address) };
            let header = u64::from_le_bytes(image[..8].try_into().unwrap());
            let (capacity, hint_stride, full) = crate::word::pack_hint_fields(word);
            assert_eq!((capacity, hint_stride), (count + spare, stride));
            assert_eq!(
                hinted_pack_len(header, capacity, hint_stride, key_width),
                Some(image.len())
            );
            // A hint or key width the header does not match is refused.
            assert_eq!(
                hinted_pack_len(header, capacity + 1, hint_stride, key_width),
                None
            );
            assert_eq!(
                hinted_pack_len(header, capacity, hint_stride + 1, key_width),
                None
            );
            assert_eq!(
                hinted_pack_len(header, capacity, hint_stride, key_width + 1),
                None
            );
            let guessed = crate::word::pack_count_guess(capacity, full);
            let guesses = [guessed, 0, capacity, next() as usize % (capacity + 1)];
            let mut probes: Vec<Vec<u8>> = Vec::new();
            for (suffix, _) in &entries {
                probes.push(suffix.clone());
                let mut above = suffix.clone();
                *above.last_mut().unwrap() ^= 1;
                probes.push(above);
                let mut other_first = suffix.clone();
                other_first[0] = other_first[0].wrapping_add(1);
                probes.push(other_first);
            }
            for _ in 0..64 {
                probes.push((0..key_width).map(|_| next() as u8).collect());
            }
            let depth = 1 + round % 3;
            for suffix in &probes {
                let mut key: Vec<u8> = (0..depth).map(|i| i as u8 + 40).collect();
                key.extend_from_slice(suffix);
                let expected = probe(image, &key, depth);
                for &guess in &guesses {
                    match probe_hinted(image, header, capacity, stride, guess, &key, depth) {
                        Some(found) => {
                            assert_eq!(found, expected, "round {round}, key {key:?}");
                            answered += usize::from(guess == guessed && !clustered);
                        }
                        None => handed_on += usize::from(guess == guessed && !clustered),
                    }
                    // The group walk's two steps answer as the whole probe and hand the same
                    // lookups on, and the run they prefetch lies inside the pack.
                    let whole = probe_hinted(image, header, capacity, stride, guess, &key, depth);
                    let steps = match probe_hinted_fence(
                        image, header, capacity, stride, guess, &key, depth,
                    ) {
                        Some(Some(run)) => {
                            let start = image.as_ptr() as usize;
                            assert!((start..start + image.len()).contains(&run.address()));
                            Some(probe_hinted_records(run, &key))
                        }
                        other => other.map(|_| None),
                    };
                    assert_eq!(steps, whole, "round {round}, key {key:?}, two steps");
                }
            }
            // SAFETY: allocated above, no longer reachable.
            unsafe { super::super::free_heap_leaf(address) };
        }
        // With the hint's guess and spread first bytes, the general probe takes over only at a
        // window missing an edge (mostly where the spare slots make the guessed count ~1/16
        // off), a longer run or the last record of a pack of short records: a small fraction
        // here, and a smaller one of the lookups in a tree of random keys with ~150 per pack.
        assert!(
            answered > 10 * handed_on,
            "{answered} answered, {handed_on} handed on"
        );
    }

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
