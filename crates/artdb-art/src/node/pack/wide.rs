//! What a wide pack (kind 8, the format in `mod.rs`) does differently from an ordinary one:
//! its records end in a value slot, and its values sit in an area of their own. The view's
//! slot reads, the writer's pushes of a wide pack, and the in-place removal's freeing of a
//! value slot.

use super::{PackMut, PackRef, PackWriter, WIDE_SLOT_LEN};

impl<'a> PackRef<'a> {
    /// The value a wide pack's record slot names (empty if the slot is out of range, which
    /// [`PackRef::check_slots`] rules out for persisted images and this crate never writes).
    #[inline]
    pub(super) fn slot_value(&self, slot: &[u8]) -> &'a [u8] {
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
    pub(super) fn slot(&self, index: usize) -> usize {
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
}

impl PackWriter<'_> {
    /// [`PackWriter::push`] into a wide pack: the record gets the suffix and the slot of the
    /// entry's own index, the value goes to that slot (a new pack keeps its values in key
    /// order, so a scan reads them in address order).
    pub(super) fn push_wide(&mut self, first: u8, rest: &[u8], value: &[u8]) {
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

    /// Appends entries `start..end` of the wide pack `pack` (of this writer's widths): the fence
    /// and the records in two block copies, then each record's slot renumbered to its new index
    /// and its value gathered there, so the copy's values are in key order again (a scan reads
    /// them in address order; the writer's copies are when this happens, see write/pack.rs).
    pub(super) fn push_wide_block(&mut self, pack: &PackRef<'_>, start: usize, end: usize) {
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
}

impl PackMut<'_> {
    /// A wide pack's value width and value area offset.
    pub(super) fn wide_values(&self) -> (usize, usize) {
        let (_, entries_at, _, capacity, stride) = self.layout();
        (self.image[4] as usize, entries_at + capacity * stride)
    }

    /// The value slot in the record at byte `at` of the image.
    pub(super) fn slot_at(&self, at: usize) -> usize {
        match self.image.get(at..at + WIDE_SLOT_LEN) {
            Some([low, high]) => usize::from(u16::from_le_bytes([*low, *high])),
            _ => usize::MAX,
        }
    }

    /// Frees the value slot of entry `index` of a wide pack before the entry is removed: the
    /// last used value (slot `count - 1`) moves into it and its record is pointed there, so the
    /// used slots stay `0..count - 1`.
    pub(super) fn free_wide_value(
        &mut self,
        index: usize,
        entries_at: usize,
        count: usize,
        stride: usize,
    ) {
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
}
