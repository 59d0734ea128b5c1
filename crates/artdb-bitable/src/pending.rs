//! The page being filled by the builder, one per level: entries are staged as they arrive and
//! encoded into a page when the next entry no longer fits.
//!
//! Layout choice (see `page.rs` for both layouts): a page stays *fixed* while every entry has the
//! same key length and the same inline value length, and becomes *slotted* at the first entry that
//! differs, if everything still fits as slotted; otherwise the page is written as it is and the
//! entry starts the next page. So tables of fixed-size records pay no per-pair overhead at all,
//! and tables of mixed sizes pay a 2-byte slot and two varints per pair.
//!
//! Invariants: the staged bytes always fit in one page in the page's current layout; a new page
//! always accepts its first entry (the key and inline-value limits guarantee it).

use crate::format::*;

/// Bytes an entry takes in a slotted page: slot, two varints, key, stored value.
#[inline]
fn slotted_entry_len(key_len: usize, stored_len: usize, value_word: u64) -> usize {
    SLOT_LEN + varint_len(key_len as u64) + varint_len(value_word) + key_len + stored_len
}

/// Lengths of one staged entry (kept only once the page is slotted).
#[derive(Clone, Copy)]
struct EntryLens {
    key_len: usize,
    stored_len: usize,
    value_word: u64,
}

/// The fixed-layout geometry of a page whose records all share one shape.
#[derive(Clone, Copy)]
struct Fixed {
    key_len: usize,
    value_len: usize,
    stride: usize,
    value_offset: usize,
    data_start: usize,
}

/// A page being filled.
pub(crate) struct PendingPage {
    page_size: usize,
    level: u16,
    key_align: usize,
    value_align: usize,
    /// Key then stored value of each entry, back to back.
    stage: Vec<u8>,
    count: usize,
    /// `Some` while all entries share one shape.
    fixed: Option<Fixed>,
    /// Entry lengths; filled only once the page is slotted.
    lens: Vec<EntryLens>,
    /// Bytes the page takes in the slotted layout.
    slotted_bytes: usize,
    /// Offset in `stage` and length of the last entry's key.
    last_start: usize,
    last_key_len: usize,
    /// Branch pages: level-relative index of the first child.
    pub first_child: u64,
    /// Branch pages: the first key (implicit in the page, it goes up a level).
    pub first_key: Vec<u8>,
    /// Branch pages: whether the first child was announced (the page has started).
    pub started: bool,
}

impl PendingPage {
    pub(crate) fn new(page_size: usize, level: u16, key_align: usize, value_align: usize) -> Self {
        PendingPage {
            page_size,
            level,
            key_align,
            value_align,
            stage: Vec::with_capacity(page_size),
            count: 0,
            fixed: None,
            lens: Vec::new(),
            slotted_bytes: PAGE_HEADER_LEN,
            last_start: 0,
            last_key_len: 0,
            first_child: 0,
            first_key: Vec::new(),
            started: false,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The key of the first staged entry (leaf pages).
    pub(crate) fn first_entry_key(&self) -> &[u8] {
        match (self.fixed, self.lens.first()) {
            (Some(fixed), _) => &self.stage[..fixed.key_len],
            (None, Some(lens)) => &self.stage[..lens.key_len],
            (None, None) => &[],
        }
    }

    fn fixed_for(&self, key_len: usize, value_len: usize) -> Fixed {
        let align = self.key_align.max(self.value_align);
        let value_offset = key_len.next_multiple_of(self.value_align);
        Fixed {
            key_len,
            value_len,
            stride: (value_offset + value_len).next_multiple_of(align),
            value_offset,
            data_start: PAGE_HEADER_LEN.next_multiple_of(align),
        }
    }

    /// Stages an entry if it fits; `false` if the page must be written first. `stored` is the
    /// inline value or a large-value reference; `value_word` is `length << 1 | large`.
    #[inline]
    pub(crate) fn try_add(&mut self, key: &[u8], stored: &[u8], value_word: u64) -> bool {
        let large = value_word & 1 == 1;
        let same_shape =
            |fixed: &Fixed| !large && fixed.key_len == key.len() && fixed.value_len == stored.len();
        if self.count == 0 {
            self.fixed = (!large).then(|| self.fixed_for(key.len(), stored.len()));
            if self.fixed.is_none() {
                self.push_slotted(key, stored, value_word);
            }
        } else if self.count >= page_count_max(self.page_size) {
            return false;
        } else if let Some(fixed) = self.fixed.filter(same_shape) {
            // The fast path of fixed-size records: one comparison, no length bookkeeping.
            if fixed.data_start + (self.count + 1) * fixed.stride > self.page_size {
                return false;
            }
        } else {
            let staged_bytes = match self.fixed {
                Some(fixed) => {
                    let word = (fixed.value_len as u64) << 1;
                    PAGE_HEADER_LEN
                        + self.count * slotted_entry_len(fixed.key_len, fixed.value_len, word)
                }
                None => self.slotted_bytes,
            };
            let entry = slotted_entry_len(key.len(), stored.len(), value_word);
            if staged_bytes + entry > self.page_size {
                return false;
            }
            self.become_slotted();
            self.slotted_bytes = staged_bytes;
            self.push_slotted(key, stored, value_word);
        }
        self.last_start = self.stage.len();
        self.last_key_len = key.len();
        self.stage.extend_from_slice(key);
        self.stage.extend_from_slice(stored);
        self.count += 1;
        true
    }

    /// Records the lengths of an entry of a slotted page.
    fn push_slotted(&mut self, key: &[u8], stored: &[u8], value_word: u64) {
        self.slotted_bytes += slotted_entry_len(key.len(), stored.len(), value_word);
        self.lens.push(EntryLens {
            key_len: key.len(),
            stored_len: stored.len(),
            value_word,
        });
    }

    /// The key of the last staged entry (the page must not be empty).
    #[inline]
    pub(crate) fn last_key(&self) -> &[u8] {
        &self.stage[self.last_start..self.last_start + self.last_key_len]
    }

    /// Switches a fixed page to slotted, recording the lengths of the entries staged so far.
    fn become_slotted(&mut self) {
        if let Some(fixed) = self.fixed.take() {
            let lens = EntryLens {
                key_len: fixed.key_len,
                stored_len: fixed.value_len,
                value_word: (fixed.value_len as u64) << 1,
            };
            self.lens.extend(std::iter::repeat(lens).take(self.count));
        }
    }

    /// Encodes the staged entries into `page` (zeroed, `page_size` bytes) as page `index` of its
    /// level, checksum included; returns the bytes used. The pending page is then empty.
    pub(crate) fn encode(&mut self, page: &mut [u8], index: u64) -> usize {
        debug_assert!(page.len() == self.page_size, "the page buffer is one page");
        page[P_KIND] = if self.level == 0 {
            KIND_LEAF
        } else {
            KIND_BRANCH
        };
        write_u16(page, P_LEVEL, self.level);
        write_u16(page, P_COUNT, self.count as u16);
        write_u64(
            page,
            P_FIRST_CHILD,
            if self.level == 0 { 0 } else { self.first_child },
        );
        let used = match self.fixed {
            Some(fixed) => self.encode_fixed(page, fixed),
            None => self.encode_slotted(page),
        };
        let checksum = page_checksum(index, page);
        write_u32(page, P_CHECKSUM, checksum);
        self.clear();
        used
    }

    fn encode_fixed(&self, page: &mut [u8], fixed: Fixed) -> usize {
        page[P_LAYOUT] = LAYOUT_FIXED;
        write_u16(page, P_KEY_LEN, fixed.key_len as u16);
        write_u16(page, P_VALUE_LEN, fixed.value_len as u16);
        write_u16(page, P_STRIDE, fixed.stride as u16);
        write_u16(page, P_VALUE_OFFSET, fixed.value_offset as u16);
        write_u16(page, P_DATA_START, fixed.data_start as u16);
        let end = fixed.data_start + self.count * fixed.stride;
        if fixed.stride == fixed.key_len + fixed.value_len && fixed.value_offset == fixed.key_len {
            page[fixed.data_start..end].copy_from_slice(&self.stage);
        } else {
            let record_len = fixed.key_len + fixed.value_len;
            for (index, record) in self.stage.chunks_exact(record_len.max(1)).enumerate() {
                let at = fixed.data_start + index * fixed.stride;
                page[at..at + fixed.key_len].copy_from_slice(&record[..fixed.key_len]);
                let value_at = at + fixed.value_offset;
                page[value_at..value_at + fixed.value_len]
                    .copy_from_slice(&record[fixed.key_len..]);
            }
        }
        end
    }

    fn encode_slotted(&self, page: &mut [u8]) -> usize {
        page[P_LAYOUT] = LAYOUT_SLOTTED;
        let mut back = self.page_size;
        let mut staged = 0usize;
        for (index, lens) in self.lens.iter().enumerate() {
            let entry_len = varint_len(lens.key_len as u64)
                + varint_len(lens.value_word)
                + lens.key_len
                + lens.stored_len;
            back -= entry_len;
            write_u16(page, PAGE_HEADER_LEN + index * SLOT_LEN, back as u16);
            let at = write_varint(page, back, lens.key_len as u64);
            let at = write_varint(page, at, lens.value_word);
            let bytes = lens.key_len + lens.stored_len;
            page[at..at + bytes].copy_from_slice(&self.stage[staged..staged + bytes]);
            staged += bytes;
        }
        self.slotted_bytes
    }

    /// Empties the page for reuse (keeps its buffers).
    pub(crate) fn clear(&mut self) {
        self.stage.clear();
        self.lens.clear();
        self.count = 0;
        self.fixed = None;
        self.slotted_bytes = PAGE_HEADER_LEN;
        self.started = false;
    }
}
