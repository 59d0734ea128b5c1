//! The dense pack (kind 7, the format in `mod.rs`): 256 one-byte suffixes, no fence. Its
//! image length, its lookups (persisted, `dense_get`; heap, `probe_dense`) and filling its
//! image in a caller's buffer (`fill_dense_image`).

use super::{
    PackWriter, KIND_DENSE, PACK_AREA_LEN_MAX, PACK_ENTRIES_MAX, PACK_HEADER_LEN,
    PACK_VALUE_WIDTH_MAX,
};

/// Entries of a dense pack: every one-byte suffix.
pub(crate) const DENSE_ENTRIES: usize = 256;

/// The fence a dense pack does not store: entry `b` has first suffix byte `b`.
pub(super) static IDENTITY_FENCE: [u8; DENSE_ENTRIES] = {
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
