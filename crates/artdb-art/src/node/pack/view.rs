//! `PackRef`: the read-only view of a pack image of any kind, with the checks a persisted
//! image needs (`PackRef::from_image`); entries, search, block copies and order checks. The
//! wide pack's slot reads are in `wide.rs`.

use std::cmp::Ordering;

use super::dense::{dense_image_len, DENSE_ENTRIES, IDENTITY_FENCE};
use super::{
    compare_equal_len, compare_short, fits, is_wide, pack_capacity_max_for, pack_image_len,
    record_len, version_of, KIND_DENSE, KIND_PACK, KIND_WIDE, PACK_HEADER_LEN,
    PACK_VALUE_WIDTH_MAX, WIDE_SLOT_LEN,
};

/// A read-only view of a pack image.
#[derive(Clone, Copy)]
pub(crate) struct PackRef<'a> {
    pub prefix: &'a [u8],
    pub(super) fence: &'a [u8],
    pub(super) entries: &'a [u8],
    /// A wide pack's value area (`capacity x value_width`); empty for other packs.
    pub(super) values: &'a [u8],
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
    pub(super) fn stride(&self) -> usize {
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
    #[inline]
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
