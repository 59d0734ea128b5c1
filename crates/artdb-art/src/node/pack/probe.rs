//! Point lookups of one pack: the general probe of heap packs (`probe`, or its two steps
//! `probe_fence` and `probe_records` for a group walk that prefetches between them), the
//! checked probe of persisted ordinary packs (`pack_get_checked`, `pack_fence_checked`), and
//! the writer's find of an insert's place (`heap_pack_find`). Every access is bounds-checked:
//! a malformed image gives `None`, never undefined behaviour.

use std::cmp::Ordering;

use super::dense::probe_dense;
use super::{
    compare_equal_len, fits, is_wide, pack_capacity_max_for, pack_image_len, KIND_DENSE, KIND_PACK,
    KIND_WIDE, PACK_AREA_LEN_MAX, PACK_ENTRIES_MAX, PACK_HEADER_LEN, PACK_VALUE_WIDTH_MAX,
    WIDE_SLOT_LEN,
};

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
pub(super) const RUN_BRANCH_FREE_MAX: usize = 4;

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
pub(super) fn tail_be(bytes: &[u8], width: usize) -> u64 {
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
