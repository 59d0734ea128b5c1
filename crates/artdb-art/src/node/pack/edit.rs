//! `PackMut`: changing a writable heap pack in place (insert into a spare slot, remove,
//! replace a value). The wide pack's value-slot bookkeeping is in `wide.rs`.

use super::{HeapPackState, KIND_DENSE, KIND_WIDE, PACK_HEADER_LEN, WIDE_SLOT_LEN};

/// Changes a heap pack in place.
///
/// Only while no snapshot is alive (nothing but the writer can reach the pack; see write/cow.rs).
pub(crate) struct PackMut<'a> {
    pub(super) image: &'a mut [u8],
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

    /// Fence offset, record offset, count, capacity and record length (a wide pack's records
    /// end in a value slot).
    pub(super) fn layout(&self) -> (usize, usize, usize, usize, usize) {
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
