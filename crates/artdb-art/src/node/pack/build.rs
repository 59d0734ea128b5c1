//! Allocating and filling a new heap pack: `PackWriter` takes the entries in order, and
//! `alloc_pack` / `alloc_pack_spare` choose the kind (ordinary, dense or wide), the spare
//! slots, the arena group and the word's hint.

use super::dense::{dense_image_len, DENSE_ENTRIES};
use super::{
    fits, is_wide, pack_capacity_max_for, pack_image_len, record_len, PackRef, KIND_DENSE,
    KIND_PACK, KIND_WIDE, PACK_HEADER_LEN, WIDE_SPARE_DIVISOR, WIDE_SPARE_MIN,
};
use crate::raw;

/// Fills a new pack's entries in order.
pub(crate) struct PackWriter<'b> {
    /// Empty for a dense pack (its fence is implicit).
    pub(super) fence: &'b mut [u8],
    pub(super) records: &'b mut [u8],
    /// A wide pack's value area (empty for other packs).
    pub(super) values: &'b mut [u8],
    pub(super) key_width: usize,
    pub(super) value_width: usize,
    pub(super) index: usize,
    pub(super) dense: bool,
    pub(super) wide: bool,
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
///
/// Inlined into its callers (with [`alloc_pack_spare`]), so that the caller's `fill` is
/// inlined into the writes; a pack's writes are most of an insert that copies it.
#[inline]
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

/// [`alloc_pack`] with `spare` unused entry slots (bulk builds use none: their packs are
/// complete, and persisted images should carry no empty slots). A pack of 256 one-byte
/// suffixes is built dense (no fence, no spare slots: it is full).
#[inline]
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
    let group = if !dense && key_width == 1 && crate::word::inline_sized(value_width) {
        crate::raw::arena::Group::Run
    } else {
        crate::raw::arena::Group::General
    };
    let (address, bytes) = raw::alloc_image_mut(len, group);
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
