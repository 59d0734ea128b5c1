//! The heap pack lookup that takes the pack's layout from its word's hint (`word.rs`), so
//! that its addresses do not wait for the header's cache miss: `hinted_pack_len` checks the
//! header agrees, `probe_hinted` (or its two steps for a group walk) answers or hands the
//! lookup to the general probe.

use super::probe::{tail_be, RUN_BRANCH_FREE_MAX};
use super::{KIND_PACK, PACK_HEADER_LEN, PACK_VALUE_WIDTH_MAX};

/// The image length of the heap pack whose first 8 bytes are `header`, when its word's hint
/// (`capacity` entry slots, records `stride` bytes apart) describes it and it is an ordinary
/// pack (kind 6, no prefix) of suffixes `key_width` bytes long with 2..=9 bytes (the packs of a
/// large tree of random 8-byte keys): then [`probe_hinted`] answers a lookup of a key whose rest
/// is `key_width` bytes long. `None` for any other pack or width (the general probe's cases).
/// The length is computed from the hint, not the header: a lookup's addresses then do not wait
/// for the header's cache miss (the header's agreement is what this checks, on a predicted
/// branch).
#[inline(always)]
pub(crate) fn hinted_pack_len(
    header: u64,
    capacity: usize,
    stride: usize,
    key_width: usize,
) -> Option<usize> {
    // Bytes of each record's key part (the suffix after its fence byte): 1..=8, one word.
    let width = key_width.wrapping_sub(1);
    let value_width = stride.wrapping_sub(width);
    if width.wrapping_sub(1) >= 8 || value_width > PACK_VALUE_WIDTH_MAX {
        return None;
    }
    // Kind, key width, value width and an empty prefix in one compare; then the slots.
    let expected = u64::from(KIND_PACK) | (key_width as u64) << 8 | (value_width as u64) << 32;
    let count = (header >> 16) & 0xFFFF;
    let spare = (header >> 40) & 0xFF;
    if header & 0xFFFF_00FF_0000_FFFF != expected || count + spare != capacity as u64 {
        return None;
    }
    Some(PACK_HEADER_LEN + capacity * (1 + stride))
}

/// A heap lookup of `key` (its bytes from `depth` on are the pack's) in `image`, a pack for
/// which [`hinted_pack_len`] gave `image`'s length from the same `header`, `capacity` and
/// `stride`, with `count_guess` the count the word's hint suggests: the fence run is found by
/// equality in one 32-byte window placed from the guess
/// ([`crate::raw::search::window_eq`](crate::raw::search::window_eq)), and the run's records (up to
/// [`RUN_BRANCH_FREE_MAX`]) are compared for equality without branches after one bounds check
/// ([`run_match`]; [`run_place`] where the last of those records' words would pass the image).
///
/// Every address here comes from the word, the key or the fence, never from the header; what
/// waits for the pack's cache misses is the fence's and the records' compares, kept short, since
/// the instructions that wait for a miss are what keeps the core from the next lookup's loads
/// (measured in docs/journal/art.md, "Heap pack lookups from the word's hint" and "Where a random
/// lookup's time goes").
///
/// `Some(value)` answers (`Some(None)`: absent); `None` when the window did not hold the run's
/// edges, the run is longer, or the last record's word would pass the image: the caller takes
/// the general probe.
#[inline(always)]
pub(crate) fn probe_hinted<'a>(
    image: &'a [u8],
    header: u64,
    capacity: usize,
    stride: usize,
    count_guess: usize,
    key: &[u8],
    depth: usize,
) -> Option<Option<&'a [u8]>> {
    let Some((below, run, width)) =
        hinted_fence_run(image, header, capacity, count_guess, key, depth)?
    else {
        return Some(None);
    };
    let first_at = PACK_HEADER_LEN + capacity + below * stride;
    let place = match image.get(first_at..first_at + (RUN_BRANCH_FREE_MAX - 1) * stride + 8) {
        // The common case: all RUN_BRANCH_FREE_MAX records' words are inside the image, so they
        // are compared without a clamp to the run (the ones past it are masked off).
        Some(records) => run_match(records, run, stride, width, key),
        // The run's last records end the image: clamp the loads to the run.
        None => run_place(
            image.get(first_at..first_at + (run - 1) * stride + 8)?,
            run,
            stride,
            width,
            key,
        ),
    };
    let Some(place) = place else {
        return Some(None);
    };
    let at = first_at + place * stride + width;
    // In bounds (`place` is inside the run, the run inside the count); a value that were not
    // would go to the general probe, never be answered as absent.
    Some(Some(image.get(at..at + stride - width)?))
}

/// The place of `key` among the `run` (1..=[`RUN_BRANCH_FREE_MAX`]) records that start
/// `records`, `stride` bytes apart, by equality of their first `width` (1..=8) bytes with the
/// key's last `width` bytes: `records` holds at least 8 bytes from each of the first
/// [`RUN_BRANCH_FREE_MAX`] records' starts; `None`: absent. Equality needs no byte swap and no
/// order, so fewer instructions wait for the records' line than in [`run_place`] (a pack's keys
/// are distinct, so at most one record of the run matches).
///
/// A run of one record (56% of present keys' runs in packs of ~150 random keys, and most absent
/// keys' non-empty runs) compares one record, a run of two (33%) two, a longer one all
/// [`RUN_BRANCH_FREE_MAX`]: each record compared is a few instructions that wait for the
/// record's line. The branch on the run's length waits only for the fence's, and a mispredicted
/// one cost less than the compares it saves (the road not taken, four compares always, was
/// slower for absent keys and no faster for `get`: `lookup_profile ... random`, measured in
/// docs/journal/art.md, "Records compared by the run's length").
#[inline(always)]
fn run_match(records: &[u8], run: usize, stride: usize, width: usize, key: &[u8]) -> Option<usize> {
    match run {
        1 => run_match_n::<1>(records, run, stride, width, key),
        2 => run_match_n::<2>(records, run, stride, width, key),
        _ => run_match_n::<RUN_BRANCH_FREE_MAX>(records, run, stride, width, key),
    }
}

/// [`run_match`] comparing the first `N` (at most [`RUN_BRANCH_FREE_MAX`]) records, the ones
/// past the run masked off.
#[inline(always)]
fn run_match_n<const N: usize>(
    records: &[u8],
    run: usize,
    stride: usize,
    width: usize,
    key: &[u8],
) -> Option<usize> {
    const { assert!(N <= RUN_BRANCH_FREE_MAX) };
    let shift = 64 - 8 * width;
    let wanted = tail_le(key, width);
    let mut matches = 0u32;
    for k in 0..N {
        let at = k * stride;
        debug_assert!(at + 8 <= records.len());
        // SAFETY: `at + 8 <= records.len()` for every k < N <= RUN_BRANCH_FREE_MAX (caller);
        // `read_unaligned` needs no alignment.
        let record = unsafe { records.as_ptr().add(at).cast::<[u8; 8]>().read_unaligned() };
        let differs = (u64::from_le_bytes(record) ^ wanted) << shift;
        matches |= u32::from(differs == 0) << k;
    }
    let matches = matches & ((1u32 << run) - 1);
    (matches != 0).then(|| matches.trailing_zeros() as usize)
}

/// The last `width` (1..=8) bytes of `key` (at least `width` long) as a little-endian integer
/// (the first of them in the low byte): one load when the key has 8 bytes or more.
#[inline(always)]
fn tail_le(key: &[u8], width: usize) -> u64 {
    match key.len().checked_sub(8).and_then(|at| key.get(at..)) {
        Some(eight) => {
            let mut word = [0u8; 8];
            word.copy_from_slice(eight);
            u64::from_le_bytes(word) >> (64 - 8 * width)
        }
        None => key[key.len().saturating_sub(width)..]
            .iter()
            .rev()
            .fold(0u64, |word, &byte| word << 8 | u64::from(byte)),
    }
}

/// The fence step that [`probe_hinted`] and [`probe_hinted_fence`] share: the key's run in the
/// window the hint places, as `(first index, length, record key width)`. `Some(None)`: the run
/// is empty (the key is absent); `None`: the general probe's cases (the window missed an edge,
/// a run longer than [`RUN_BRANCH_FREE_MAX`], a record key width outside 1..=8).
#[inline(always)]
fn hinted_fence_run(
    image: &[u8],
    header: u64,
    capacity: usize,
    count_guess: usize,
    key: &[u8],
    depth: usize,
) -> Option<Option<(usize, usize, usize)>> {
    let rest = key.get(depth..)?;
    let width = rest.len().checked_sub(1)?;
    let first = *rest.first()?;
    let count = ((header >> 16) & 0xFFFF) as usize;
    let (start, lane, run) = crate::raw::search::window_eq(
        image.get(PACK_HEADER_LEN..)?,
        capacity,
        count,
        count_guess,
        first,
    )?;
    if run == 0 {
        return Some(None);
    }
    if run > RUN_BRANCH_FREE_MAX || width == 0 || width > 8 {
        return None;
    }
    Some(Some((start + lane, run, width)))
}

/// The place of `key` among the records of a run (`run` records, 1..=[`RUN_BRANCH_FREE_MAX`],
/// `stride` bytes apart from the start of `records`, which holds at least 8 bytes from each),
/// compared as big-endian words of their first `width` (1..=8) bytes without branches; `None`:
/// absent.
#[inline(always)]
fn run_place(records: &[u8], run: usize, stride: usize, width: usize, key: &[u8]) -> Option<usize> {
    let span = run - 1;
    let shift = 64 - 8 * width;
    let record = |k: usize| -> u64 {
        let at = k.min(span) * stride;
        debug_assert!(at + 8 <= records.len());
        // SAFETY: `at <= span * stride` and `records` holds at least 8 bytes from each of the
        // run's records (caller), so the 8 bytes at `at` are inside it; `read_unaligned` needs
        // no alignment.
        let bytes = unsafe { records.as_ptr().add(at).cast::<[u8; 8]>().read_unaligned() };
        u64::from_be_bytes(bytes) >> shift
    };
    // The key's bytes after its fence byte: the last `width` bytes of `key` (its width was
    // checked by `hinted_pack_len`), one load when the key has 8 bytes.
    let wanted = tail_be(key, width);
    // The run is sorted: the key's place in it is the number of its records below the key
    // (the loads past the run read its last record again, masked off by `k + 1 < run`).
    let mut place = 0usize;
    for k in 0..RUN_BRANCH_FREE_MAX - 1 {
        place += usize::from(k + 1 < run) & usize::from(record(k) < wanted);
    }
    (record(place) == wanted).then_some(place)
}

/// The run of records that [`probe_hinted_fence`] found for a key: the records a lookup
/// compares next ([`probe_hinted_records`]).
#[derive(Clone, Copy)]
pub(crate) struct HintedRun<'a> {
    /// The image from the run's first record to the end of its last, and at least 8 bytes
    /// from each record's start (the compare's loads); to the fourth record's word's end when
    /// the image has it ([`run_match`]'s loads past the run).
    records: &'a [u8],
    /// Records in the run (1..=[`RUN_BRANCH_FREE_MAX`]).
    run: usize,
    /// Bytes from one record to the next.
    stride: usize,
    /// Key bytes of a record after its fence byte (1..=8).
    width: usize,
}

impl HintedRun<'_> {
    /// Where the run's first record starts in memory (for a prefetch).
    #[inline(always)]
    pub(crate) fn address(&self) -> usize {
        self.records.as_ptr() as usize
    }
}

/// The first step of [`probe_hinted`] (same arguments and preconditions), for a group walk
/// that prefetches the record before comparing it: `Some(None)`: the key is absent (its run is
/// empty); `Some(Some(run))`: compare the run's records next ([`probe_hinted_records`]; every
/// bound of that compare is checked here); `None`: the caller takes the general probe.
#[inline(always)]
pub(crate) fn probe_hinted_fence<'a>(
    image: &'a [u8],
    header: u64,
    capacity: usize,
    stride: usize,
    count_guess: usize,
    key: &[u8],
    depth: usize,
) -> Option<Option<HintedRun<'a>>> {
    let Some((below, run, width)) =
        hinted_fence_run(image, header, capacity, count_guess, key, depth)?
    else {
        return Some(None);
    };
    let first_at = PACK_HEADER_LEN + capacity + below * stride;
    // Every record the compare reads starts at most `(RUN_BRANCH_FREE_MAX - 1) * stride` bytes
    // into `records` and reads 8 bytes, and the value ends a record, so this one check bounds
    // them all; where those records pass the image, the run's records only (and the compare
    // clamps its loads to the run).
    let whole = first_at + (RUN_BRANCH_FREE_MAX - 1) * stride + stride.max(8);
    let records = match image.get(first_at..whole) {
        Some(records) => records,
        None => image.get(first_at..first_at + (run - 1) * stride + stride.max(8))?,
    };
    Some(Some(HintedRun {
        records,
        run,
        stride,
        width,
    }))
}

/// The second step of [`probe_hinted`]: the value of `key` among `run`'s records (`None`:
/// absent).
#[inline(always)]
pub(crate) fn probe_hinted_records<'a>(run: HintedRun<'a>, key: &[u8]) -> Option<&'a [u8]> {
    let place = if run.records.len() >= (RUN_BRANCH_FREE_MAX - 1) * run.stride + 8 {
        run_match(run.records, run.run, run.stride, run.width, key)
    } else {
        run_place(run.records, run.run, run.stride, run.width, key)
    }?;
    let at = place * run.stride + run.width;
    // In bounds: `place` is inside the run, and `records` holds the run's last record whole
    // (`probe_hinted_fence`); the record's value is its bytes after the key part.
    run.records.get(at..at + run.stride.wrapping_sub(run.width))
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

    /// `probe_hinted`, with the layout taken from the pack's word as a lookup takes it, answers
    /// as the general `probe` does whenever it answers: every key width it takes (2..=9), value
    /// widths 0..=16, packs of 1..=600 entries with and without spare slots, first bytes spread
    /// or clustered (runs longer than four, windows that miss an edge), the count guessed from
    /// the hint or far off; every present key and absent keys beside, between and around them.
    /// `hinted_pack_len` gives the image's length, and refuses a hint or key width the header
    /// does not match.
    #[test]
    fn hinted_probe_agrees_with_probe() {
        let mut next = crate::test_support::xorshift(0x5EED_1234_ABCD);
        let (mut answered, mut handed_on) = (0usize, 0usize);
        for round in 0..240usize {
            let key_width = 2 + round % 8;
            let value_width = (round / 8) % 17;
            let stride = key_width - 1 + value_width;
            let slots_max = pack_capacity_max(stride);
            let count = 1 + (next() as usize) % slots_max.min(600);
            let spare = match round % 3 {
                0 => 0,
                // Up to count / 8 + 1, the spare slots `alloc_pack` gives.
                _ => (1 + next() as usize % (count / 8 + 1)).min(slots_max - count),
            };
            let clustered = round % 4 == 1;
            let mut suffixes = std::collections::BTreeSet::new();
            while suffixes.len() < count {
                let mut suffix: Vec<u8> = (0..key_width).map(|_| next() as u8).collect();
                if clustered {
                    suffix[0] = 100 + (next() % 6) as u8;
                }
                suffixes.insert(suffix);
            }
            let entries: Vec<(Vec<u8>, Vec<u8>)> = suffixes
                .into_iter()
                .enumerate()
                .map(|(i, suffix)| {
                    let value = (0..value_width).map(|j| (i * 7 + j) as u8).collect();
                    (suffix, value)
                })
                .collect();
            let word = alloc_pack_spare(&[], key_width, value_width, count, spare, 1, |w| {
                for (suffix, value) in &entries {
                    w.push(suffix[0], &suffix[1..], value);
                }
            });
            assert_eq!(
                word & crate::word::TAG_MASK,
                crate::word::TAG_HEAP_PACK_HINTED
            );
            let address = crate::word::heap_leaf_address(word);
            // SAFETY: the live pack just allocated, freed only below.
            let image = unsafe { crate::node::heap_leaf_image(address) };
            let header = u64::from_le_bytes(image[..8].try_into().unwrap());
            let (capacity, hint_stride, full) = crate::word::pack_hint_fields(word);
            assert_eq!((capacity, hint_stride), (count + spare, stride));
            assert_eq!(
                hinted_pack_len(header, capacity, hint_stride, key_width),
                Some(image.len())
            );
            // A hint or key width the header does not match is refused.
            assert_eq!(
                hinted_pack_len(header, capacity + 1, hint_stride, key_width),
                None
            );
            assert_eq!(
                hinted_pack_len(header, capacity, hint_stride + 1, key_width),
                None
            );
            assert_eq!(
                hinted_pack_len(header, capacity, hint_stride, key_width + 1),
                None
            );
            let guessed = crate::word::pack_count_guess(capacity, full);
            let guesses = [guessed, 0, capacity, next() as usize % (capacity + 1)];
            let mut probes: Vec<Vec<u8>> = Vec::new();
            for (suffix, _) in &entries {
                probes.push(suffix.clone());
                let mut above = suffix.clone();
                *above.last_mut().unwrap() ^= 1;
                probes.push(above);
                let mut other_first = suffix.clone();
                other_first[0] = other_first[0].wrapping_add(1);
                probes.push(other_first);
            }
            for _ in 0..64 {
                probes.push((0..key_width).map(|_| next() as u8).collect());
            }
            let depth = 1 + round % 3;
            for suffix in &probes {
                let mut key: Vec<u8> = (0..depth).map(|i| i as u8 + 40).collect();
                key.extend_from_slice(suffix);
                let expected = probe(image, &key, depth);
                for &guess in &guesses {
                    match probe_hinted(image, header, capacity, stride, guess, &key, depth) {
                        Some(found) => {
                            assert_eq!(found, expected, "round {round}, key {key:?}");
                            answered += usize::from(guess == guessed && !clustered);
                        }
                        None => handed_on += usize::from(guess == guessed && !clustered),
                    }
                    // The group walk's two steps answer as the whole probe and hand the same
                    // lookups on, and the run they prefetch lies inside the pack.
                    let whole = probe_hinted(image, header, capacity, stride, guess, &key, depth);
                    let steps = match probe_hinted_fence(
                        image, header, capacity, stride, guess, &key, depth,
                    ) {
                        Some(Some(run)) => {
                            let start = image.as_ptr() as usize;
                            assert!((start..start + image.len()).contains(&run.address()));
                            Some(probe_hinted_records(run, &key))
                        }
                        other => other.map(|_| None),
                    };
                    assert_eq!(steps, whole, "round {round}, key {key:?}, two steps");
                }
            }
            // SAFETY: allocated above, no longer reachable.
            unsafe { crate::node::free_heap_leaf(address) };
        }
        // With the hint's guess and spread first bytes, the general probe takes over only at a
        // window missing an edge (mostly where the spare slots make the guessed count ~1/16
        // off), a longer run or the last record of a pack of short records: a small fraction
        // here, and a smaller one of the lookups in a tree of random keys with ~150 per pack.
        assert!(
            answered > 10 * handed_on,
            "{answered} answered, {handed_on} handed on"
        );
    }
}
