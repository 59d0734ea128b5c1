//! Page views for reading: `PageRef` over one leaf or branch page, its validation, and the
//! searches inside a page.
//!
//! Layouts (format table in `format.rs` and `docs/bitable-format.md`):
//! - fixed: every entry of the page has the same key length and the same inline value length;
//!   record `i` is at `data_start + i * stride`, its key at offset 0 and its value at
//!   `value_offset`. No slots and no length fields: the page header says everything.
//! - slotted: `count` u16 slots after the page header give each entry's offset; entries grow from
//!   the back of the page: varint key length, varint value word (`length << 1 | large`), key
//!   bytes, then the value bytes, or for a large value its 12-byte reference (area offset u64,
//!   CRC32C u32).
//!
//! Invariant: `PageRef` methods index only inside the page, and they are called only on a page
//! that `validate` accepted; validation is what makes the indexing infallible. Keys must be
//! strictly increasing within a page; `validate` does not re-check that on first use (it costs more
//! than the checksum) - `Table::verify` does. A page that passes its CRC32C but was crafted with
//! unordered keys yields wrong search results, never a panic or an out-of-bounds access.

use crate::error::{corrupt, CorruptionKind, Result};
use crate::format::*;
use std::cmp::Ordering;

/// A value as stored in a leaf entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoredValue<'a> {
    /// The value bytes, inline in the page.
    Inline(&'a [u8]),
    /// A reference into the large-value area.
    Large {
        offset: u64,
        len: u64,
        checksum: u32,
    },
}

/// Compares two keys in byte order, eight bytes at a time (faster than `memcmp` for the short
/// keys tables hold, because it inlines and avoids the call).
#[inline]
pub(crate) fn compare_keys(mut left: &[u8], mut right: &[u8]) -> Ordering {
    while let (Some((a, left_rest)), Some((b, right_rest))) = (
        left.split_first_chunk::<8>(),
        right.split_first_chunk::<8>(),
    ) {
        if a != b {
            return u64::from_be_bytes(*a).cmp(&u64::from_be_bytes(*b));
        }
        (left, right) = (left_rest, right_rest);
    }
    // Fewer than eight bytes left on one side: a byte loop, not a `memcmp` call.
    for (a, b) in left.iter().zip(right) {
        if a != b {
            return a.cmp(b);
        }
    }
    left.len().cmp(&right.len())
}

/// A searched key with its first eight bytes read once, as a big-endian integer (zero-padded
/// past the key's end), so that most comparisons against a fixed page's keys are one load and one
/// integer compare instead of a byte loop.
///
/// Why the shortcut is exact: zero padding keeps byte order (`window_at`), so when two keys'
/// padded heads differ, their order is the order of the heads; a key that ends inside the head
/// and another that continues it with zero bytes have equal heads, and only then the whole keys
/// are compared. A descent reads the head once and compares it against three or four pages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe<'k> {
    key: &'k [u8],
    head: u64,
}

impl<'k> Probe<'k> {
    /// The probe for `key`.
    #[inline]
    pub(crate) fn new(key: &'k [u8]) -> Probe<'k> {
        Probe {
            key,
            head: window_at(key, 0),
        }
    }

    /// The key looked for.
    #[inline(always)]
    pub(crate) fn key(&self) -> &'k [u8] {
        self.key
    }

    /// The key's first eight bytes ([`head_of`]).
    #[inline(always)]
    pub(crate) fn head(&self) -> u64 {
        self.head
    }
}

/// The first eight bytes of `key` as a big-endian integer, zero-padded past its end: keys whose
/// heads differ are ordered as their heads are (padding with zeros keeps byte order); keys
/// whose heads are equal must be compared in full.
#[inline(always)]
pub(crate) fn head_of(key: &[u8]) -> u64 {
    window_at(key, 0)
}

/// Samples the first round of a fixed page's search looks at (at most; see `sample_step`).
const SAMPLES: usize = 16;
/// Bytes of a cache line.
const CACHE_LINE: usize = 64;

/// Records between two samples of a fixed page of `count` records: the smallest power of two
/// that leaves at most `SAMPLES` samples.
#[inline]
fn sample_step(count: usize) -> usize {
    count.div_ceil(SAMPLES).next_power_of_two().max(1)
}

/// Where a descent expects a key inside the page it enters, as a fraction of the page's entries.
///
/// The level above has bounded the page: every key of a leaf or branch page reached by a search
/// for `key` lies in `[low, high)`, where `low` is the separator that chose the page (the page's
/// own first key) and `high` the next one, and `low <= key < high`. Reading the first eight bytes
/// from the first byte where `low` and `high` differ, as big-endian integers, maps the three keys
/// to numbers with the same order; the page's keys are expected spread evenly between them, so
/// `key` is expected at `(key - low) / (high - low)` of the page. For keys whose distribution is
/// smooth at the scale of one page (timestamps, coordinates, sequence numbers, hashes) the guess
/// lands within an entry or two, and the search loads only the lines around it, in the same round
/// as the page header: one round of cache misses per page instead of two. A guess is only a hint:
/// `PageRef::search_guided` checks the entries at both ends of its window and falls back to the
/// full search when the answer is outside, so the result never depends on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Guess {
    /// In `0..=GUESS_ONE`: a binary fraction with 32 bits after the point (integer arithmetic
    /// keeps the lookup free of float conversions, which cost more instructions than the rest).
    fraction: u64,
}

/// The fraction 1 of a `Guess`.
const GUESS_ONE: u64 = 1 << 32;

impl Guess {
    /// The guess for `key` in a page bounded by `low <= key < high`; `None` when the bounds give
    /// no spread (equal after their common prefix, as with `a` and `a\0`).
    #[inline(always)]
    pub(crate) fn between(low: &[u8], high: &[u8], key: &[u8]) -> Option<Guess> {
        let at = first_difference(low, high)?;
        let (low, high, key) = (window_at(low, at), window_at(high, at), window_at(key, at));
        if high <= low {
            return None;
        }
        Some(Guess::of_windows(low, high, key))
    }

    /// `between(low, high, probe.key())`, from the keys' heads where they differ by at least
    /// 2^32: the 32 significant bits the guess keeps then all lie in the heads, which are the
    /// windows `between` would read (their first difference is in the first four bytes), so
    /// the guess is the same up to a borrow from the bytes past the heads, without looking for
    /// the first difference and with one window read fewer. Descents use this.
    #[inline(always)]
    pub(crate) fn between_probe(low: &[u8], high: &[u8], probe: Probe<'_>) -> Option<Guess> {
        let (low_head, high_head) = (window_at(low, 0), window_at(high, 0));
        if high_head > low_head && high_head - low_head >= 1 << 32 {
            return Some(Guess::of_windows(low_head, high_head, probe.head));
        }
        Guess::between(low, high, probe.key)
    }

    /// The guess for the window `key` between windows `low < high` (keys read as integers).
    #[inline(always)]
    fn of_windows(low: u64, high: u64, key: u64) -> Guess {
        debug_assert!(low < high, "callers check that the bounds spread");
        let range = high - low;
        let offset = key.clamp(low, high) - low;
        // The top 32 significant bits of the range (>= 2^31) and the offset shifted alike
        // (offset <= range): their quotient, scaled by 2^32, is within `0..=GUESS_ONE`.
        let shift = range.leading_zeros();
        let range = (range << shift) >> 32;
        let offset = (offset << shift) >> 32;
        Guess {
            fraction: ((offset << 32) / range).min(GUESS_ONE),
        }
    }

    /// A guess at a given fraction (tests: a search must give the same answer for any guess).
    #[cfg(test)]
    pub(crate) fn at(fraction: f64) -> Guess {
        Guess {
            fraction: (fraction.clamp(0.0, 1.0) * GUESS_ONE as f64) as u64,
        }
    }

    /// Which of `parts` equal parts of the range the guess falls in (`0..parts`; 0 if `parts` is
    /// 0), and the guess within that part.
    #[inline(always)]
    pub(crate) fn split(self, parts: u64) -> (u64, Guess) {
        let position = u128::from(self.fraction) * u128::from(parts);
        let part = ((position >> 32) as u64).min(parts.saturating_sub(1));
        let within = (position - (u128::from(part) << 32)).min(u128::from(GUESS_ONE)) as u64;
        (part, Guess { fraction: within })
    }

    /// The guessed position in `0..=span` (the fraction scaled, rounded down).
    #[inline(always)]
    pub(crate) fn scale(self, span: usize) -> usize {
        let position = (u128::from(self.fraction) * span as u128) >> 32;
        // The fraction is at most 1, so the position is at most `span`.
        (position as usize).min(span)
    }
}

/// Offset of the first byte where `left` and `right` differ (the shorter length if one is a
/// prefix of the other); `None` if they are equal.
#[inline(always)]
fn first_difference(left: &[u8], right: &[u8]) -> Option<usize> {
    let common = left.len().min(right.len());
    let mut at = 0;
    while at + 8 <= common {
        let difference = window_at(left, at) ^ window_at(right, at);
        if difference != 0 {
            return Some(at + (difference.leading_zeros() / 8) as usize);
        }
        at += 8;
    }
    while at < common {
        if left[at] != right[at] {
            return Some(at);
        }
        at += 1;
    }
    (left.len() != right.len()).then_some(common)
}

/// The eight bytes of `key` from `at` as a big-endian integer, zero-padded past the key's end
/// (so the map from keys to integers keeps their byte order, ties included).
#[inline(always)]
fn window_at(key: &[u8], at: usize) -> u64 {
    if let Some(&raw) = key.get(at..).and_then(|tail| tail.first_chunk::<8>()) {
        return u64::from_be_bytes(raw);
    }
    let mut raw = [0u8; 8];
    let tail = key.get(at..).unwrap_or(&[]);
    let len = tail.len().min(8);
    raw[..len].copy_from_slice(&tail[..len]);
    u64::from_be_bytes(raw)
}

/// Entries the guided search loads on each side of its guess, at least: prediction errors of an
/// entry or two are the common case for smooth keys. Short records get a whole line each side.
const GUESS_REACH_ENTRIES: usize = 2;

// `PageRef::new` reads the u16 fields of the page header as two words from `P_COUNT`.
const _: () = assert!(
    P_COUNT % 2 == 0
        && P_KEY_LEN > P_COUNT
        && P_VALUE_LEN > P_COUNT
        && P_STRIDE > P_COUNT
        && P_VALUE_OFFSET > P_COUNT
        && P_DATA_START > P_COUNT
        && P_DATA_START + 2 <= P_COUNT + 16
        && P_COUNT + 16 <= PAGE_HEADER_LEN
);

/// A validated leaf or branch page, its header decoded once.
#[derive(Clone, Copy)]
pub(crate) struct PageRef<'a> {
    bytes: &'a [u8],
    count: usize,
    fixed: bool,
    /// Fixed layout with keys of at least eight bytes, and every record inside the page
    /// (`data_start + count * stride <= bytes.len()`, `key_len <= stride`): a comparison can
    /// start from the key's head, read as one integer without a range check (`Probe`, `order`).
    heads: bool,
    key_len: usize,
    stride: usize,
    data_start: usize,
    first_child: u64,
}

impl<'a> PageRef<'a> {
    /// A view of a page that `validate` accepted.
    #[inline(always)]
    pub(crate) fn new(bytes: &'a [u8]) -> PageRef<'a> {
        // One length check for the whole header, then constant offsets into an array (no check
        // per field). Pages are at least `PAGE_SIZE_MIN` bytes, so the fallback never runs for a
        // page that passed `validate`; it would read as an empty slotted page.
        let header: &[u8; PAGE_HEADER_LEN] = bytes.first_chunk().unwrap_or(&[0; PAGE_HEADER_LEN]);
        // The u16 fields at 8..24 as two little-endian words (two loads instead of six).
        let word = |at: usize| {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(&header[at..at + 8]);
            u64::from_le_bytes(raw)
        };
        let (low, high) = (word(P_COUNT), word(P_COUNT + 8));
        let field = |at: usize| {
            let word = if at < P_COUNT + 8 { low } else { high };
            usize::from((word >> (8 * ((at - P_COUNT) % 8))) as u16)
        };
        let fixed = header[P_LAYOUT] == LAYOUT_FIXED;
        let (count, key_len, stride, data_start) = (
            field(P_COUNT),
            field(P_KEY_LEN),
            field(P_STRIDE),
            field(P_DATA_START),
        );
        // `validate` checked these bounds already; they are checked again here, for a few
        // instructions per page, so that `order`'s unchecked head reads rest on this view alone
        // (fields below 2^16: no overflow).
        let heads = fixed
            && key_len >= 8
            && key_len <= stride
            && data_start + count * stride <= bytes.len();
        PageRef {
            bytes,
            count,
            fixed,
            heads,
            key_len,
            stride,
            data_start,
            first_child: word(P_FIRST_CHILD),
        }
    }

    /// Entries of the page: pairs of a leaf, keys of a branch.
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// A branch page's first child, level-relative.
    #[inline]
    pub(crate) fn first_child(&self) -> u64 {
        self.first_child
    }

    /// Key of entry `index` (< count).
    #[inline(always)]
    pub(crate) fn key(&self, index: usize) -> &'a [u8] {
        if self.fixed {
            let at = self.data_start + index * self.stride;
            &self.bytes[at..at + self.key_len]
        } else {
            self.slotted_entry(index).0
        }
    }

    /// Byte offset of entry `index` (< count) in the page: where a cursor moving forward reads
    /// next (`Cursor::next` prefetches ahead of it).
    #[inline]
    pub(crate) fn entry_offset(&self, index: usize) -> usize {
        if self.fixed {
            self.data_start + index * self.stride
        } else {
            usize::from(read_u16(self.bytes, PAGE_HEADER_LEN + index * SLOT_LEN))
        }
    }

    /// Value of entry `index` (< count) of a leaf.
    #[inline]
    pub(crate) fn value(&self, index: usize) -> StoredValue<'a> {
        if self.fixed {
            // Read here, once per lookup, rather than decoded with the header on every page
            // a descent visits (fewer live values in the search loops).
            let value_offset = usize::from(read_u16(self.bytes, P_VALUE_OFFSET));
            let value_len = usize::from(read_u16(self.bytes, P_VALUE_LEN));
            let at = self.data_start + index * self.stride + value_offset;
            StoredValue::Inline(&self.bytes[at..at + value_len])
        } else {
            self.slotted_entry(index).1
        }
    }

    fn slotted_entry(&self, index: usize) -> (&'a [u8], StoredValue<'a>) {
        let at = usize::from(read_u16(self.bytes, PAGE_HEADER_LEN + index * SLOT_LEN));
        // Validation decoded this entry inside the page; the fallbacks are unreachable.
        let (key_len, at) = read_varint(self.bytes, at).unwrap_or((0, at));
        let (word, at) = read_varint(self.bytes, at).unwrap_or((0, at));
        let key_end = at + key_len as usize;
        let key = &self.bytes[at..key_end];
        let value = if word & 1 == 0 {
            StoredValue::Inline(&self.bytes[key_end..key_end + (word >> 1) as usize])
        } else {
            StoredValue::Large {
                offset: read_u64(self.bytes, key_end),
                len: word >> 1,
                checksum: read_u32(self.bytes, key_end + 8),
            }
        };
        (key, value)
    }

    /// Whether entry `index`'s key (< count) equals the probe's key.
    #[inline(always)]
    pub(crate) fn holds(&self, index: usize, probe: Probe<'_>) -> bool {
        self.order::<false>(index, probe).is_eq()
    }

    /// Order of entry `index`'s key (< count) against the probe's key. `FIXED`: the caller knows
    /// the page has the fixed layout (the searches of fixed pages), so the layout is not tested
    /// again per comparison.
    #[inline(always)]
    fn order<const FIXED: bool>(&self, index: usize, probe: Probe<'_>) -> Ordering {
        if !FIXED && !self.fixed {
            return compare_keys(self.slotted_entry(index).0, probe.key);
        }
        debug_assert!(index < self.count, "searches compare entries of the page");
        let at = self.data_start + index * self.stride;
        if self.heads {
            // SAFETY: `read_head_unchecked` needs `at + 8 <= bytes.len()`. `heads` was set by
            // `new` only if `8 <= key_len <= stride` and `data_start + count * stride <=
            // bytes.len()`, and every caller passes `index < count` (the searches' ranges lie
            // in `0..count`; `holds` is called on a slot its caller checked). So
            // `at + 8 <= data_start + index * stride + stride <= data_start + count * stride`.
            let head = unsafe { crate::raw::read_head_unchecked(self.bytes, at) };
            if head != probe.head {
                return head.cmp(&probe.head);
            }
            // Equal heads of two keys of at least eight bytes are equal first eight bytes.
            if let Some((_, rest)) = probe.key.split_first_chunk::<8>() {
                return compare_keys(&self.bytes[at + 8..at + self.key_len], rest);
            }
        }
        compare_keys(&self.bytes[at..at + self.key_len], probe.key)
    }

    /// Index of the first entry whose key is `>= key` (or `> key` when `strict`); `count` if none.
    /// A fixed page is searched in two rounds of cache misses (`search_fixed`). Lookups use
    /// `search_guided`, which falls back to this; tests compare the two.
    #[cfg(test)]
    pub(crate) fn search(&self, probe: Probe<'_>, strict: bool) -> usize {
        if self.fixed {
            return self.search_fixed(probe, strict);
        }
        self.search_range::<false>(probe, strict, 0, self.count)
    }

    /// `search(key, strict)`, starting from where `guess` expects the answer: in a fixed page the
    /// entries around the guess are loaded at once (`Table::page_guided` started them with the
    /// header) and, if the first sorts before `key` and the last does not, searched alone. When
    /// the answer is outside that window (the keys are not spread evenly) it falls back to
    /// `search`, or with `cached` (the page's level is small enough to stay in the CPU's caches,
    /// `Table::page_guided`) to a plain binary search, which skips the sampled search's
    /// prefetches. The result is always exactly `search`'s: the two checked ends only narrow the
    /// range, as the samples of `search_fixed` do.
    #[inline(always)]
    pub(crate) fn search_guided(
        &self,
        probe: Probe<'_>,
        strict: bool,
        guess: Option<Guess>,
        cached: bool,
    ) -> usize {
        if !self.fixed {
            return self.search_range::<false>(probe, strict, 0, self.count);
        }
        if let Some(guess) = guess {
            if let Some(slot) = self.search_window(probe, strict, guess) {
                return slot;
            }
        }
        if cached {
            return self.search_range::<true>(probe, strict, 0, self.count);
        }
        self.search_fixed(probe, strict)
    }

    /// The guided search's window in a fixed page, or `None` if the answer is not inside it.
    ///
    /// Walks from the guessed entry towards the answer, one entry at a time, at most `reach`
    /// entries: where the guess is right to an entry or two (the case it exists for) that is two
    /// or three key comparisons, against five or six for a binary search of the whole window.
    /// If entry `center` sorts before `key`, so do all before it, and the answer is the first
    /// entry after it that does not; if it does not, neither do the entries after it, and the
    /// answer is the entry after the last one before it that does.
    #[inline(always)]
    pub(crate) fn search_window(
        &self,
        probe: Probe<'_>,
        strict: bool,
        guess: Guess,
    ) -> Option<usize> {
        debug_assert!(self.fixed, "guided windows are for fixed pages");
        let last = self.count.checked_sub(1)?;
        let center = guess.scale(self.count).min(last);
        // Strides over a third of a line give the two entries; shorter ones a line each side.
        let reach = if self.stride * 3 > CACHE_LINE {
            GUESS_REACH_ENTRIES
        } else {
            GUESS_REACH_ENTRIES.max(CACHE_LINE / self.stride.max(1))
        };
        if Self::before(self.order::<true>(center, probe), strict) {
            let end = (center + reach).min(last);
            for slot in center + 1..=end {
                if !Self::before(self.order::<true>(slot, probe), strict) {
                    return Some(slot);
                }
            }
            // Every entry up to `end` sorts before `key`: the answer is past the window unless
            // the window reached the end of the page.
            return (end == last).then_some(self.count);
        }
        let start = center.saturating_sub(reach);
        for slot in (start..center).rev() {
            if Self::before(self.order::<true>(slot, probe), strict) {
                return Some(slot + 1);
            }
        }
        // No entry from `start` to `center` sorts before `key`: the answer is `start` if that is
        // the first entry, else before the window.
        (start == 0).then_some(0)
    }

    /// The search of a fixed page, in two rounds of cache misses instead of one per probe.
    ///
    /// Round 1 loads every `step`-th record's line at once (about `SAMPLES` lines, in parallel;
    /// `Table::page` already started the ones on a 1/16-page grid) and searches those samples;
    /// the answer then lies in one group of `step` records. Round 2 loads that group's lines at
    /// once and searches it. A plain binary search over 127 records would instead wait for about
    /// seven dependent misses. The answer is exactly `search_range` over the whole page: the
    /// samples only narrow the range (keys are increasing, so every record before the last
    /// sample that sorts before `key` does too, and none from the next sample on does).
    #[inline]
    fn search_fixed(&self, probe: Probe<'_>, strict: bool) -> usize {
        let count = self.count;
        let step = sample_step(count);
        let samples = count.div_ceil(step);
        for sample in 0..samples {
            self.prefetch_record(sample * step);
        }
        // The last sample (or 0) that sorts before `key`: branch-light, log2(samples) probes.
        let mut base = 0usize;
        let mut size = samples;
        while size > 1 {
            let half = size / 2;
            let middle = base + half;
            if Self::before(self.order::<true>(middle * step, probe), strict) {
                base = middle;
            }
            size -= half;
        }
        let low = base * step;
        let high = (low + step).min(count);
        let group_end = self.data_start + high * self.stride;
        crate::raw::prefetch_lines(self.bytes, self.data_start + low * self.stride, group_end);
        self.search_range::<true>(probe, strict, low, high)
    }

    /// Index of the first entry in `low..high` whose key is `>= key` (`> key` when `strict`), or
    /// `high`; the caller knows that entries before `low` sort before `key` and entries from
    /// `high` on do not. `FIXED` as for `order`.
    #[inline(always)]
    fn search_range<const FIXED: bool>(
        &self,
        probe: Probe<'_>,
        strict: bool,
        low: usize,
        high: usize,
    ) -> usize {
        let mut base = low;
        let mut size = high - low;
        if size == 0 {
            return low;
        }
        // Branch-light binary search: the loop runs log2(size) times whatever the keys.
        while size > 1 {
            let half = size / 2;
            let middle = base + half;
            if Self::before(self.order::<FIXED>(middle, probe), strict) {
                base = middle;
            }
            size -= half;
        }
        base + usize::from(Self::before(self.order::<FIXED>(base, probe), strict))
    }

    #[inline(always)]
    fn prefetch_record(&self, index: usize) {
        crate::raw::prefetch(self.bytes, self.data_start + index * self.stride);
    }

    /// Whether an entry that compares `order` to the key comes before the answer: it sorts
    /// before the key, or (`strict`) equals it. `Ordering` is -1, 0, 1, so this is one compare.
    #[inline(always)]
    fn before(order: Ordering, strict: bool) -> bool {
        (order as i8) < i8::from(strict)
    }
}

/// What the reader expects of a page at a given place.
pub(crate) struct Expect {
    /// Absolute page number (for error reports).
    pub page_number: u64,
    /// Level-relative index (part of the checksum).
    pub index: u64,
    /// Level of the page (0 = leaf).
    pub level: usize,
    /// Pages in the level below (branch pages' children must be inside it).
    pub children_available: u64,
    /// Bytes of the large-value area.
    pub large_len: u64,
}

/// Checks a page's checksum and that every field points inside the page (and, for a branch, inside
/// the level below). After this, `PageRef` methods cannot index out of range.
pub(crate) fn validate(bytes: &[u8], expect: &Expect) -> Result<()> {
    let page = expect.page_number;
    if read_u32(bytes, P_CHECKSUM) != page_checksum(expect.index, bytes) {
        return corrupt(page, CorruptionKind::PageChecksum);
    }
    let kind = if expect.level == 0 {
        KIND_LEAF
    } else {
        KIND_BRANCH
    };
    if bytes[P_KIND] != kind || usize::from(read_u16(bytes, P_LEVEL)) != expect.level {
        return corrupt(page, CorruptionKind::PageKind);
    }
    let count = usize::from(read_u16(bytes, P_COUNT));
    if kind == KIND_LEAF && count == 0 {
        return corrupt(page, CorruptionKind::PageLayout("count"));
    }
    if kind == KIND_BRANCH {
        let first_child = read_u64(bytes, P_FIRST_CHILD);
        let end = first_child.checked_add(count as u64 + 1);
        if end.map_or(true, |end| end > expect.children_available) {
            return corrupt(page, CorruptionKind::PageLayout("first_child"));
        }
    }
    match bytes[P_LAYOUT] {
        LAYOUT_FIXED => validate_fixed(bytes, page, count, kind),
        LAYOUT_SLOTTED => validate_slotted(bytes, page, count, kind, expect.large_len),
        _ => corrupt(page, CorruptionKind::PageLayout("layout")),
    }
}

fn validate_fixed(bytes: &[u8], page: u64, count: usize, kind: u8) -> Result<()> {
    let key_len = usize::from(read_u16(bytes, P_KEY_LEN));
    let value_len = usize::from(read_u16(bytes, P_VALUE_LEN));
    let stride = usize::from(read_u16(bytes, P_STRIDE));
    let value_offset = usize::from(read_u16(bytes, P_VALUE_OFFSET));
    let data_start = usize::from(read_u16(bytes, P_DATA_START));
    let layout = |field| corrupt(page, CorruptionKind::PageLayout(field));
    if kind == KIND_BRANCH && value_len != 0 {
        return layout("value_len");
    }
    if value_offset < key_len || value_offset + value_len > stride {
        return layout("stride");
    }
    if data_start < PAGE_HEADER_LEN || data_start + count * stride > bytes.len() {
        return layout("count");
    }
    Ok(())
}

fn validate_slotted(bytes: &[u8], page: u64, count: usize, kind: u8, large_len: u64) -> Result<()> {
    let layout = |field| corrupt(page, CorruptionKind::PageLayout(field));
    let slots_end = PAGE_HEADER_LEN + count * SLOT_LEN;
    if slots_end > bytes.len() {
        return layout("count");
    }
    for index in 0..count {
        let at = usize::from(read_u16(bytes, PAGE_HEADER_LEN + index * SLOT_LEN));
        if at < slots_end {
            return layout("slot");
        }
        let Some((key_len, at)) = read_varint(bytes, at) else {
            return layout("key_len");
        };
        let Some((word, at)) = read_varint(bytes, at) else {
            return layout("value_len");
        };
        let large = word & 1 == 1;
        if kind == KIND_BRANCH && word != 0 {
            return layout("value_len");
        }
        let stored_len = if large {
            LARGE_REF_LEN as u64
        } else {
            word >> 1
        };
        let end = (at as u64)
            .saturating_add(key_len)
            .saturating_add(stored_len);
        if end > bytes.len() as u64 {
            return layout("entry");
        }
        if large {
            let value_at = at + key_len as usize;
            let offset = read_u64(bytes, value_at);
            if offset
                .checked_add(word >> 1)
                .map_or(true, |end| end > large_len)
            {
                return corrupt(page, CorruptionKind::LargeValue);
            }
        }
    }
    Ok(())
}
