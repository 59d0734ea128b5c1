//! Byte searches: a byte among a Node16's 16 sorted keys, and the run of a byte in a leaf pack's
//! sorted fence.
//!
//! [`find_byte16`] has two bodies: SSE2 on x86-64 (compare all 16 lanes, mask off the unused
//! ones, take the lowest set bit) and a portable scan. SSE2 is part of the x86-64 baseline, so no
//! runtime detection is needed. Rejected: AVX2 (the array is 16 bytes, a wider register buys
//! nothing) and a binary search (branchy, slower than either for 16 bytes).
//!
//! [`fence_run`] finds where a byte's entries start and end in a pack's fence (sorted bytes, up
//! to `PACK_ENTRIES_MAX`) by counting instead of searching: the bytes below it and the bytes not above it, 16
//! lanes per compare. A pack of random keys has ~150 fence bytes spread evenly over 0..=255, so
//! it first counts a 32-byte window around the byte's expected position (`first * count / 256`);
//! the window's counts are the answer when the window holds the run's edges (a lane below the
//! byte or the fence start; a lane above it or the fence end), which for random keys is all
//! but ~1% of lookups. Otherwise it counts the whole fence. Both are free of data-dependent
//! branches. Rejected: the binary search it replaces (8 steps for 150 bytes; LLVM's cmov
//! conversion turned its selects back into branches that mispredict about half the time, and a
//! mispredict also throws away the work the core had started on the next lookup).

/// Index of `byte` in `keys[..used]`, if present.
#[inline]
pub(crate) fn find_byte16(keys: &[u8; 16], used: usize, byte: u8) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        find_byte16_sse2(keys, used, byte)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        find_byte16_portable(keys, used, byte)
    }
}

/// The portable body: a scan of the used keys.
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
#[inline]
pub(crate) fn find_byte16_portable(keys: &[u8; 16], used: usize, byte: u8) -> Option<usize> {
    keys[..used.min(16)].iter().position(|&k| k == byte)
}

/// The SSE2 body.
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn find_byte16_sse2(keys: &[u8; 16], used: usize, byte: u8) -> Option<usize> {
    use core::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    // SAFETY: `keys` is 16 readable bytes; loadu has no alignment requirement; SSE2 is part of
    // the x86-64 baseline, so the target feature is always present.
    let lanes = unsafe { _mm_loadu_si128(keys.as_ptr().cast::<__m128i>()) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operations.
    let equal = unsafe { _mm_cmpeq_epi8(lanes, _mm_set1_epi8(byte as i8)) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operation.
    let bits = unsafe { _mm_movemask_epi8(equal) } as u32;
    let mask = bits & ((1u32 << used.min(16)) - 1);
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}

/// Window of the fence counted first, in bytes (two SSE2 compares).
const FENCE_WINDOW_LEN: usize = 32;
/// Fences longer than this are counted in a window twice as long: the run's place deviates
/// from its expected one by about sqrt(count) / 2 entries (binomial), ~12 in a pack of 625
/// random keys, where a 32-byte window would miss an edge in a quarter of the lookups.
const FENCE_WIDE_WINDOW_FROM: usize = 256;

/// `(below, through)`: how many bytes of the sorted `fence` are `< first` and `<= first`. The
/// entries whose first suffix byte is `first` are `below..through`.
#[inline(always)]
pub(crate) fn fence_run(fence: &[u8], first: u8) -> (usize, usize) {
    let count = fence.len();
    if count > FENCE_WIDE_WINDOW_FROM {
        if let Some(run) = window_run::<2>(fence, first) {
            return run;
        }
    } else if count >= FENCE_WINDOW_LEN {
        if let Some(run) = window_run::<1>(fence, first) {
            return run;
        }
    }
    count_all(fence, first)
}

/// [`fence_run`] for a fence of `count` bytes at the start of `padded`, which holds the bytes
/// that follow the fence in its image too: a fence shorter than 16 bytes (the packs of a tree of
/// up to ~1M random keys) is counted in one 16-lane compare with the lanes past it masked off,
/// instead of a byte loop. An image too short for 16 bytes there takes [`fence_run`].
#[inline(always)]
pub(crate) fn fence_run_padded(padded: &[u8], count: usize, first: u8) -> (usize, usize) {
    if count < 16 {
        if let Some(lanes) = padded.get(..16) {
            let (below, through) = masks16(lanes, first);
            let used = (1u32 << count) - 1;
            return (low_ones(below & used), low_ones(through & used));
        }
    }
    match padded.get(..count) {
        Some(fence) => fence_run(fence, first),
        None => (0, 0),
    }
}

/// The key's run in a hinted pack's fence found by equality (`count` entries at the start of
/// `padded`, in an area of `capacity` bytes that the records follow), in the 32 bytes (64 when
/// the capacity is over [`FENCE_WIDE_WINDOW_FROM`]) around the place `count_guess` (the count
/// the pack's word suggests) gives it: `Some((start, lane, run))`, the window's first fence
/// index, the run's first lane in it and its length (0 when `first` is absent); `None` when
/// the window does not hold both edges of the run (the caller takes the general probe). The
/// window's place comes from the word, not the header, so its loads do not wait for the
/// header's cache miss; lanes at or past `count` are masked off. One `pcmpeqb` per 16 lanes
/// and a byte compare at each end of the window (the road not taken: two signed compares per
/// 16 lanes counting the bytes below and through `first`): fewer instructions wait for the
/// fence's cache miss (docs/journal/art.md, "Where a random lookup's time goes").
#[inline(always)]
pub(crate) fn window_eq(
    padded: &[u8],
    capacity: usize,
    count: usize,
    count_guess: usize,
    first: u8,
) -> Option<(usize, usize, usize)> {
    if capacity > FENCE_WIDE_WINDOW_FROM {
        eq_in_window::<4>(padded, capacity, count, count_guess, first)
    } else {
        eq_in_window::<2>(padded, capacity, count, count_guess, first)
    }
}

/// [`window_eq`] in a window of `CHUNKS` (2 or 4) 16-byte chunks: `(start, lane, run)`.
#[inline(always)]
fn eq_in_window<const CHUNKS: usize>(
    padded: &[u8],
    capacity: usize,
    count: usize,
    count_guess: usize,
    first: u8,
) -> Option<(usize, usize, usize)> {
    let len = 16 * CHUNKS;
    let guess = (usize::from(first) * count_guess) >> 8;
    let start = guess
        .saturating_sub(len / 2)
        .min(capacity.saturating_sub(len));
    let window = padded.get(start..start + len)?;
    let mut eq = 0u64;
    for chunk in 0..CHUNKS {
        eq |= u64::from(eq16(&window[16 * chunk..], first)) << (16 * chunk);
    }
    // The window's lanes that hold fence entries.
    let lanes = count.saturating_sub(start).min(len);
    let eq = eq & u64::MAX.checked_shr(64 - lanes as u32).unwrap_or(0);
    // The run's edges are in the window when it starts the fence or its first lane is below
    // `first`, and when the fence ends in it or its last lane is above `first` (the fence is
    // sorted, so those lanes are outside the run, whether the run is empty or not).
    let lower_held = start == 0 || (lanes > 0 && window[0] < first);
    let upper_held = start + len >= count || window[len - 1] > first;
    if !(lower_held && upper_held) {
        return None;
    }
    let lane = eq.trailing_zeros();
    // The run's lanes are consecutive: the set bits from `lane` on, up to the first clear one
    // (none when `eq` is 0: then the shifted mask is 0 and its complement has no trailing
    // zeros).
    let run = (!eq.checked_shr(lane).unwrap_or(0)).trailing_zeros() as usize;
    Some((start, lane as usize, run))
}

/// The lanes of the first 16 bytes of `bytes` equal to `first`, as a 16-bit mask.
#[inline(always)]
fn eq16(bytes: &[u8], first: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        eq16_sse2(bytes, first)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        eq16_portable(bytes, first)
    }
}

/// The portable body of [`eq16`].
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
#[inline]
fn eq16_portable(bytes: &[u8], first: u8) -> u32 {
    bytes
        .iter()
        .take(16)
        .enumerate()
        .fold(0, |mask, (i, &byte)| mask | (u32::from(byte == first) << i))
}

/// The SSE2 body of [`eq16`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn eq16_sse2(bytes: &[u8], first: u8) -> u32 {
    use core::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let Some(lanes) = bytes.get(..16) else {
        return eq16_portable(bytes, first);
    };
    // SAFETY: `lanes` is 16 readable bytes; loadu has no alignment requirement; SSE2 is part of
    // the x86-64 baseline, so the target feature is always present.
    let loaded = unsafe { _mm_loadu_si128(lanes.as_ptr().cast::<__m128i>()) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operations.
    let equal = unsafe { _mm_cmpeq_epi8(loaded, _mm_set1_epi8(first as i8)) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operation.
    (unsafe { _mm_movemask_epi8(equal) }) as u32
}

/// How many of the low bits of `mask` (a 16-lane mask) are set before the first clear one. In
/// a sorted fence the lanes below (or not above) a byte are the low lanes, so this is their
/// count: a bit scan, where a count of the set bits would cost ~12 instructions (no popcount in
/// the x86-64 baseline). On a fence that is not sorted (a damaged image) it is still at most the
/// lanes counted, and `below <= through` still holds (every lane below a byte is not above it).
#[inline(always)]
fn low_ones(mask: u32) -> usize {
    (!mask).trailing_zeros() as usize
}

/// The run counted in `HALVES` consecutive windows of [`FENCE_WINDOW_LEN`] bytes around the
/// expected place of `first` (`fence` has at least that many bytes); `None` when the windows do
/// not hold both of the run's edges.
#[inline(always)]
fn window_run<const HALVES: usize>(fence: &[u8], first: u8) -> Option<(usize, usize)> {
    let count = fence.len();
    let len = FENCE_WINDOW_LEN * HALVES;
    let guess = (usize::from(first) * count) >> 8;
    let start = guess.saturating_sub(len / 2).min(count.checked_sub(len)?);
    let (mut below, mut through) = (0usize, 0usize);
    for half in 0..HALVES {
        let at = start + half * FENCE_WINDOW_LEN;
        let (b, t) = count_window(fence.get(at..at + FENCE_WINDOW_LEN)?, first);
        below += b;
        through += t;
    }
    // The windows hold the lower edge when they start the fence or their first lane is below
    // `first` (then so is everything before it: sorted); the upper edge when they end the
    // fence or their last lane is above `first`.
    let lower_held = start == 0 || below > 0;
    let upper_held = start + len == count || through < len;
    (lower_held && upper_held).then_some((start + below, start + through))
}

/// Counts of bytes `< first` and `<= first` in a window of [`FENCE_WINDOW_LEN`] bytes.
#[inline(always)]
fn count_window(window: &[u8], first: u8) -> (usize, usize) {
    #[cfg(target_arch = "x86_64")]
    {
        count_window_sse2(window, first)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        count_window_portable(window, first)
    }
}

/// The SSE2 body of [`count_window`]: the compare results (-1 per matching lane) of both
/// halves are summed lane-wise and then across lanes with one `psadbw` per count (no popcount
/// instruction is in the x86-64 baseline; its software form costs ~15 instructions a mask).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn count_window_sse2(window: &[u8], first: u8) -> (usize, usize) {
    use core::arch::x86_64::{
        __m128i, _mm_add_epi64, _mm_cmpgt_epi8, _mm_cvtsi128_si64, _mm_loadu_si128, _mm_sad_epu8,
        _mm_set1_epi8, _mm_setzero_si128, _mm_srli_si128, _mm_sub_epi8, _mm_unpacklo_epi64,
        _mm_xor_si128,
    };
    let (Some(low), Some(high)) = (window.get(..16), window.get(16..32)) else {
        return count_scalar(window, first);
    };
    // SAFETY: `low` and `high` are 16 readable bytes each; loadu has no alignment requirement;
    // SSE2 is part of the x86-64 baseline, so the target feature is always present.
    let low = unsafe { _mm_loadu_si128(low.as_ptr().cast::<__m128i>()) };
    // SAFETY: as above.
    let high = unsafe { _mm_loadu_si128(high.as_ptr().cast::<__m128i>()) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); the rest are register-only operations.
    let (below, above) = unsafe {
        let flip = _mm_set1_epi8(i8::MIN);
        let target = _mm_set1_epi8((first ^ 0x80) as i8);
        let (low, high) = (_mm_xor_si128(low, flip), _mm_xor_si128(high, flip));
        let zero = _mm_setzero_si128();
        // Lane counts 0..=2 of bytes below and above `first`.
        let below = _mm_sub_epi8(
            _mm_sub_epi8(zero, _mm_cmpgt_epi8(target, low)),
            _mm_cmpgt_epi8(target, high),
        );
        let above = _mm_sub_epi8(
            _mm_sub_epi8(zero, _mm_cmpgt_epi8(low, target)),
            _mm_cmpgt_epi8(high, target),
        );
        // Both lane sums side by side: below in the low 64 bits, above in the high 64 bits.
        let below = _mm_sad_epu8(below, zero);
        let above = _mm_sad_epu8(above, zero);
        let sums = _mm_add_epi64(
            _mm_unpacklo_epi64(below, above),
            _mm_unpacklo_epi64(_mm_srli_si128::<8>(below), _mm_srli_si128::<8>(above)),
        );
        (
            _mm_cvtsi128_si64(sums) as usize,
            _mm_cvtsi128_si64(_mm_srli_si128::<8>(sums)) as usize,
        )
    };
    (below, FENCE_WINDOW_LEN - above)
}

/// The portable body of [`count_window`].
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
#[inline(always)]
fn count_window_portable(window: &[u8], first: u8) -> (usize, usize) {
    let (Some(low), Some(high)) = (window.get(..16), window.get(16..32)) else {
        return count_scalar(window, first);
    };
    let (below_low, through_low) = masks16(low, first);
    let (below_high, through_high) = masks16(high, first);
    let below = below_low | (below_high << 16);
    let through = through_low | (through_high << 16);
    (below.count_ones() as usize, through.count_ones() as usize)
}

/// Counts of bytes `< first` and `<= first` in all of `fence`: 16-byte chunks, the last one
/// overlapping the one before with the overlap masked off; a scalar count under 16 bytes.
#[inline]
fn count_all(fence: &[u8], first: u8) -> (usize, usize) {
    let count = fence.len();
    if count < 16 {
        return count_scalar(fence, first);
    }
    let mut below = 0usize;
    let mut through = 0usize;
    let mut start = 0usize;
    while start + 16 <= count {
        let (b, t) = masks16(&fence[start..start + 16], first);
        below += low_ones(b);
        through += low_ones(t);
        start += 16;
    }
    let rest = count - start;
    if rest > 0 {
        // The last 16 bytes; their first 16 - rest lanes were counted above.
        let (b, t) = masks16(&fence[count - 16..], first);
        below += low_ones(b).saturating_sub(16 - rest);
        through += low_ones(t).saturating_sub(16 - rest);
    }
    (below, through)
}

/// The portable count (also the reference in tests).
#[inline]
fn count_scalar(fence: &[u8], first: u8) -> (usize, usize) {
    fence.iter().fold((0, 0), |(below, through), &byte| {
        (
            below + usize::from(byte < first),
            through + usize::from(byte <= first),
        )
    })
}

/// Lane masks (bit i for byte i) of the first 16 bytes of `bytes` that are `< first` and
/// `<= first`. `bytes` has at least 16 bytes.
#[inline(always)]
fn masks16(bytes: &[u8], first: u8) -> (u32, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        masks16_sse2(bytes, first)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        masks16_portable(bytes, first)
    }
}

/// The portable body of [`masks16`].
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
#[inline]
fn masks16_portable(bytes: &[u8], first: u8) -> (u32, u32) {
    bytes
        .iter()
        .take(16)
        .enumerate()
        .fold((0, 0), |(below, through), (i, &byte)| {
            (
                below | (u32::from(byte < first) << i),
                through | (u32::from(byte <= first) << i),
            )
        })
}

/// The SSE2 body of [`masks16`]: bytes compared as signed after flipping their top bits (SSE2
/// has no unsigned byte compare).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks16_sse2(bytes: &[u8], first: u8) -> (u32, u32) {
    use core::arch::x86_64::{
        __m128i, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8, _mm_xor_si128,
    };
    let Some(lanes) = bytes.get(..16) else {
        return masks16_portable(bytes, first);
    };
    // SAFETY: `lanes` is 16 readable bytes; loadu has no alignment requirement; SSE2 is part of
    // the x86-64 baseline, so the target feature is always present.
    let loaded = unsafe { _mm_loadu_si128(lanes.as_ptr().cast::<__m128i>()) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operations.
    let flipped = unsafe { _mm_xor_si128(loaded, _mm_set1_epi8(i8::MIN)) };
    let target = (first ^ 0x80) as i8;
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operations.
    let below = unsafe { _mm_cmpgt_epi8(_mm_set1_epi8(target), flipped) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operations.
    let above = unsafe { _mm_cmpgt_epi8(flipped, _mm_set1_epi8(target)) };
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operation.
    let below_bits = unsafe { _mm_movemask_epi8(below) } as u32;
    // SAFETY: SSE2 is baseline on x86-64 (as above); register-only operation.
    let above_bits = unsafe { _mm_movemask_epi8(above) } as u32;
    (below_bits, !above_bits & 0xFFFF)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::xorshift;

    #[test]
    /// `window_eq` agrees with the scalar count whenever it answers, for fences of 0..=300
    /// bytes in areas of up to 340 (the bytes past the fence are junk, as a pack's spare slots
    /// and records are), with every place the count guess can put the window; and it answers
    /// for most lookups when the guess is the count.
    fn window_eq_matches_scalar() {
        let mut next = xorshift(0xFE_4CE5);
        let (mut answered, mut asked) = (0usize, 0usize);
        for round in 0..400usize {
            let count = next() as usize % 301;
            let capacity = count + next() as usize % 41;
            let clustered = round % 3 == 0;
            let mut fence: Vec<u8> = (0..count)
                .map(|_| {
                    if clustered {
                        60 + (next() % 20) as u8
                    } else {
                        next() as u8
                    }
                })
                .collect();
            fence.sort_unstable();
            let mut padded = fence.clone();
            padded.extend((count..capacity + 64).map(|_| next() as u8));
            for first in [
                0u8,
                1,
                59,
                60,
                70,
                79,
                80,
                127,
                128,
                200,
                254,
                255,
                next() as u8,
            ] {
                let expected = count_scalar(&fence, first);
                for guess in [count, capacity, 0, next() as usize % (capacity + 1)] {
                    asked += 1;
                    if let Some((start, lane, run)) =
                        window_eq(&padded, capacity, count, guess, first)
                    {
                        // An empty run's place is not reported: only its length is compared.
                        let found = if run == 0 {
                            (expected.0, expected.0)
                        } else {
                            (start + lane, start + lane + run)
                        };
                        assert_eq!(
                            found, expected,
                            "count {count}, first {first}, guess {guess}"
                        );
                        assert_eq!(run, expected.1 - expected.0);
                        answered += 1;
                    }
                }
            }
        }
        assert!(answered * 2 > asked, "{answered} of {asked}");
    }

    #[test]
    fn fence_run_matches_scalar() {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15u64);
        // Every count a pack of 256 can have, and the larger ones of packs bounded by bytes.
        for count in (0..=256usize).chain([300, 511, 625, 700, 1023, 1024]) {
            for round in 0..8 {
                let mut fence: Vec<u8> = (0..count)
                    .map(|_| match round {
                        // Clustered bytes: the window misses the run, the whole count answers.
                        0 => (next() % 4) as u8 + 100,
                        1 => 255,
                        2 => 0,
                        _ => next() as u8,
                    })
                    .collect();
                fence.sort_unstable();
                for first in 0..=255u8 {
                    assert_eq!(
                        fence_run(&fence, first),
                        count_scalar(&fence, first),
                        "count {count} round {round} first {first}"
                    );
                }
            }
        }
    }

    #[test]
    fn fence_run_padded_matches_scalar() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1Du64);
        for count in 0..40usize {
            for round in 0..16 {
                let mut fence: Vec<u8> = (0..count)
                    .map(|_| match round {
                        0 => 0,
                        1 => 255,
                        2 => (next() % 3) as u8 + 7,
                        _ => next() as u8,
                    })
                    .collect();
                fence.sort_unstable();
                // Whatever follows the fence in the image (records) must not be counted.
                let mut padded = fence.clone();
                padded.extend((0..20).map(|_| next() as u8));
                for first in 0..=255u8 {
                    let expected = count_scalar(&fence, first);
                    assert_eq!(fence_run_padded(&padded, count, first), expected);
                    // No bytes after the fence: the unpadded path answers.
                    assert_eq!(fence_run_padded(&fence, count, first), expected);
                }
            }
        }
        // A fence that is not sorted (a damaged image): bounded, below <= through.
        let padded = [9u8, 1, 200, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        for first in 0..=255u8 {
            let (below, through) = fence_run_padded(&padded, 4, first);
            assert!(below <= through && through <= 4);
        }
    }

    #[test]
    fn count_window_matches_scalar() {
        let mut window = [0u8; 32];
        for seed in 0..64u8 {
            for (i, byte) in window.iter_mut().enumerate() {
                *byte = (i as u8).wrapping_mul(seed | 1).wrapping_add(seed);
            }
            window.sort_unstable();
            for first in 0..=255u8 {
                let expected = count_scalar(&window, first);
                assert_eq!(count_window(&window, first), expected);
                assert_eq!(count_window_portable(&window, first), expected);
            }
        }
    }

    #[test]
    fn masks16_sse2_matches_portable() {
        let bytes: Vec<u8> = (0..16u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(3))
            .collect();
        for first in 0..=255u8 {
            #[cfg(target_arch = "x86_64")]
            assert_eq!(masks16_sse2(&bytes, first), masks16_portable(&bytes, first));
            assert_eq!(masks16(&bytes, first), masks16_portable(&bytes, first));
        }
    }

    #[test]
    /// `eq16` matches the byte loop on bytes with repeats (runs of equal bytes, as a fence
    /// has) and on every byte value, from the start of a longer slice and at its end.
    fn eq16_sse2_matches_portable() {
        let bytes: Vec<u8> = (0..24u8).map(|i| (i / 3).wrapping_mul(41)).collect();
        for first in 0..=255u8 {
            for from in [0, 8] {
                let lanes = &bytes[from..];
                #[cfg(target_arch = "x86_64")]
                assert_eq!(eq16_sse2(lanes, first), eq16_portable(lanes, first));
                assert_eq!(eq16(lanes, first), eq16_portable(lanes, first));
            }
        }
        assert_eq!(eq16_portable(&bytes, 0), 0b111);
    }

    #[test]
    fn sse2_matches_portable() {
        let mut keys = [0u8; 16];
        for (i, key) in keys.iter_mut().enumerate() {
            *key = (i as u8) * 13 + 2;
        }
        for used in 0..=16 {
            for byte in 0..=255u8 {
                let expected = find_byte16_portable(&keys, used, byte);
                assert_eq!(
                    find_byte16(&keys, used, byte),
                    expected,
                    "used {used} byte {byte}"
                );
                #[cfg(target_arch = "x86_64")]
                assert_eq!(find_byte16_sse2(&keys, used, byte), expected);
            }
        }
        // Unused lanes that happen to equal the byte must not match.
        let zeros = [0u8; 16];
        assert_eq!(find_byte16(&zeros, 0, 0), None);
        assert_eq!(find_byte16(&zeros, 3, 0), Some(0));
    }
}
