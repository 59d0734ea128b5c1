//! Offset bitmaps: the value form of a block whose offsets do not fit the child word (more than
//! five, or four or five with one above 2047: `value::fits_embedded`).
//!
//! A bitmap is a slice of 64-bit words; offset `o` is bit `o % 64` of word `o / 64`. Bit 0 of
//! word 0 stands for offset 0, which is never valid, so it stays clear: keeping the offset as the
//! bit number (rather than `o - 1`) makes a lookup one shift and one mask, and costs a word only
//! when the highest offset is a multiple of 64 minus one.
//!
//! Invariants (checked by `TidStore::verify`):
//! 1. a block's bitmap has exactly `words_for(highest offset)` words: it is sized to its highest
//!    offset, so its last word is never zero;
//! 2. bit 0 of word 0 is clear, and no bit above the store's `max_offset` is set;
//! 3. its offsets do not fit the child word (those that do are embedded).

/// Number of words a bitmap needs to hold offsets up to `highest`.
#[inline]
pub(crate) fn words_for(highest: u16) -> usize {
    usize::from(highest) / 64 + 1
}

/// Whether `offset` is set in `words`; offsets past the end are not.
#[inline]
pub(crate) fn contains(words: &[u64], offset: u16) -> bool {
    match words.get(usize::from(offset) / 64) {
        Some(word) => word >> (offset % 64) & 1 == 1,
        None => false,
    }
}

/// Sets `offset`; returns whether it was newly set. The caller sized `words` to hold it.
#[inline]
pub(crate) fn set(words: &mut [u64], offset: u16) -> bool {
    let index = usize::from(offset) / 64;
    debug_assert!(
        index < words.len(),
        "bitmap of {} words cannot hold offset {offset}",
        words.len()
    );
    match words.get_mut(index) {
        Some(word) => {
            let bit = 1u64 << (offset % 64);
            let was_clear = *word & bit == 0;
            *word |= bit;
            was_clear
        }
        None => false,
    }
}

/// Clears `offset`; returns whether it was set.
#[inline]
pub(crate) fn clear(words: &mut [u64], offset: u16) -> bool {
    match words.get_mut(usize::from(offset) / 64) {
        Some(word) => {
            let bit = 1u64 << (offset % 64);
            let was_set = *word & bit != 0;
            *word &= !bit;
            was_set
        }
        None => false,
    }
}

/// Number of offsets set.
#[inline]
pub(crate) fn count(words: &[u64]) -> usize {
    words.iter().map(|word| word.count_ones() as usize).sum()
}

/// The highest offset set, if any.
pub(crate) fn highest(words: &[u64]) -> Option<u16> {
    let (index, word) = words
        .iter()
        .enumerate()
        .rev()
        .find(|(_, word)| **word != 0)?;
    let bit = 63 - word.leading_zeros() as usize;
    u16::try_from(index * 64 + bit).ok()
}

/// The lowest `n` offsets set, in ascending order (fewer if fewer are set).
pub(crate) fn lowest<const N: usize>(words: &[u64]) -> [u16; N] {
    let mut out = [0u16; N];
    for (slot, offset) in out.iter_mut().zip(Offsets::new(words)) {
        *slot = offset;
    }
    out
}

/// Clears `words` and sets every offset of `offsets` (ascending, each within the bitmap).
pub(crate) fn fill(words: &mut [u64], offsets: &[u16]) {
    words.fill(0);
    for &offset in offsets {
        set(words, offset);
    }
}

/// The offsets set in a bitmap, ascending.
#[derive(Clone, Debug)]
pub(crate) struct Offsets<'a> {
    words: &'a [u64],
    /// Index of the word `current` came from.
    index: usize,
    /// The bits of word `index` not yet yielded.
    current: u64,
}

impl<'a> Offsets<'a> {
    pub(crate) fn new(words: &'a [u64]) -> Self {
        Offsets {
            words,
            index: 0,
            current: words.first().copied().unwrap_or(0),
        }
    }
}

impl Iterator for Offsets<'_> {
    type Item = u16;

    #[inline]
    fn next(&mut self) -> Option<u16> {
        while self.current == 0 {
            self.index += 1;
            self.current = *self.words.get(self.index)?;
        }
        let bit = self.current.trailing_zeros() as usize;
        self.current &= self.current - 1;
        // A bitmap has at most 1024 words (offsets are u16), so this always fits.
        u16::try_from(self.index * 64 + bit).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_contains_clear_round_trip() {
        let mut words = vec![0u64; words_for(291)];
        assert_eq!(words.len(), 5);
        for offset in [1u16, 63, 64, 65, 200, 291] {
            assert!(set(&mut words, offset));
            assert!(!set(&mut words, offset));
        }
        assert!(contains(&words, 64) && contains(&words, 291) && !contains(&words, 2));
        assert!(!contains(&words, 5000), "offsets past the end are absent");
        assert_eq!(count(&words), 6);
        assert_eq!(highest(&words), Some(291));
        assert_eq!(
            Offsets::new(&words).collect::<Vec<_>>(),
            [1, 63, 64, 65, 200, 291]
        );
        assert_eq!(lowest::<3>(&words), [1, 63, 64]);
        assert!(clear(&mut words, 291) && !clear(&mut words, 291));
        assert_eq!(highest(&words), Some(200));
        fill(&mut words, &[7, 9]);
        assert_eq!(Offsets::new(&words).collect::<Vec<_>>(), [7, 9]);
        assert_eq!(highest(&[0, 0]), None);
        assert_eq!(lowest::<3>(&[0b10]), [1, 0, 0]);
    }

    #[test]
    fn sizes_at_word_boundaries() {
        assert_eq!(words_for(1), 1);
        assert_eq!(words_for(63), 1);
        assert_eq!(words_for(64), 2);
        assert_eq!(words_for(u16::MAX), 1024);
        let mut words = vec![0u64; words_for(u16::MAX)];
        assert!(set(&mut words, u16::MAX));
        assert_eq!(Offsets::new(&words).collect::<Vec<_>>(), [u16::MAX]);
    }
}
