//! Ids given all at once: [`TidStore::insert_many`], the append path fed from a slice of ids in
//! table order instead of one block at a time.
//!
//! `insert_many(ids)` means exactly what calling [`TidStore::insert`] for each id in turn means
//! (same set afterwards, same count of new ids, the same error at the same id, with the ids
//! before it inserted). It is fast when the ids ascend, each block above every block the store
//! has held: the append path's case, vacuum's heap scan handing over its dead tuples in table
//! order, or a set built from a sorted list.
//!
//! **Why a slice of ids and not a block at a time.** Fed block by block (`set_block_offsets`),
//! the caller must find where each block's ids end, and with the 1 to 5 ids per block of W4's
//! random pattern that loop's exit is mispredicted about once per block; the encoding of the
//! block's offsets then loops over them again and mispredicts its own exit. Here neither loop
//! depends on the data: block ends are found by a branch-free pass over the ids, and each
//! block's offsets are encoded from five fixed slots, masked to its count.
//!
//! Work is done a chunk of [`CHUNK_IDS`] ids at a time:
//! 1. `scan_chunk`, per id and without branches: marks in a 64-bit mask the ids that open a
//!    block (their block differs from the id before), and checks that the ids ascend strictly
//!    from above the high-water mark (each id is one integer, block above offset, so both the
//!    order and the block change are one compare); offsets are checked a block at a time in
//!    step 2 (ascending, they are all in `1..=max_offset` if the first is not 0 and the last is
//!    at most `max_offset`);
//! 2. if the chunk is valid, `append_blocks` walks the mask's set bits, a block each: it
//!    encodes the block from its first five offset slots (the wide and the packed form both,
//!    then the per-count row of `EMBEDDED_FORMS` keeps one, masked to the count, and adds the
//!    length) and stages it (`Staged`: the chunk's blocks reach the append vector in one
//!    copy); a block needing a bitmap (more than five offsets, or four or five with one above
//!    2047) branches off to fill one from its ids. The chunk's last block may go on in the next
//!    chunk, so it is held back and scanned again with that chunk (unless the input ends);
//! 3. an invalid chunk (an id out of order, out of range, or in a block the store may already
//!    hold) is inserted id by id with `insert`, which does the right thing and reports the
//!    first error.
//!
//! A chunk whose first and last ids share a block holds one block of at least [`CHUNK_IDS`]
//! ids (W4's dense pattern: 291 per block): its whole run is found, checked and set as a bitmap
//! in one pass (`append_long_run`).
//!
//! Tried first (perf, W4's random pattern): one pass that kept, per id, the current block's
//! record (start, count and both encodings accumulated) and stored it whole: it removed most
//! mispredictions against feeding block by block but cost many instructions per id; then a pass
//! that stored each id's offset and its block's number and end into scratch arrays (three stores
//! per id), half of the time of `insert_many`. The mask keeps the per-id pass to compares and
//! no stores. Tried after: a walk a block at a time with no per-id pass, each step reading the
//! six ids from a block's first and counting its ids by chained compares of their block
//! numbers; it kept eleven values live, spilled, and cost more per block than the scan does
//! (measured in `docs/tidstore.md`).

use crate::bitmap;
use crate::tree::{block_pair, BlockPair};
use crate::value::{
    Encoded, Value, EMBEDDED_OFFSETS_MAX, PACKED_OFFSET_BITS, PACKED_OFFSET_MAX, VALUE_LEN_MAX,
    WIDE_OFFSETS_MAX,
};
use crate::{Error, TidStore};

/// Ids scanned per chunk: one bit each in the mask of block starts.
const CHUNK_IDS: usize = 64;

/// What `scan_chunk` found.
struct Scan {
    /// Bit `i` set: id `i` of the chunk opens a block.
    starts: u64,
    /// Whether every id ascends strictly from the high-water mark (offsets are checked per block,
    /// in `append_blocks`).
    valid: bool,
}

impl TidStore {
    /// Inserts every id of `ids`, as [`TidStore::insert`] would one after another; returns how
    /// many were absent.
    ///
    /// Fast when the ids ascend (blocks ascending, offsets ascending within a block) and their
    /// blocks lie above every block the store has held: they take the append path without a
    /// call per block (see [`TidStore::flush_appends`]). Any other ids are inserted one at a
    /// time. On an error (an offset of 0 or above `max_offset`) the ids before the offending one
    /// are in the store and the rest are not.
    ///
    /// ```
    /// use artdb_tidstore::TidStore;
    /// let mut dead = TidStore::new();
    /// assert_eq!(dead.insert_many(&[(3, 1), (3, 7), (9, 2)])?, 3);
    /// assert_eq!(dead.insert_many(&[(3, 7), (4, 1)])?, 1); // (3, 7) was there
    /// dead.flush_appends()?;
    /// assert!(dead.contains(4, 1)? && !dead.contains(4, 2)?);
    /// # Ok::<(), artdb_tidstore::Error>(())
    /// ```
    pub fn insert_many(&mut self, ids: &[(u32, u16)]) -> Result<u64, Error> {
        self.reserve_appends(ids);
        let mut staged = Staged::new();
        let mut added = 0u64;
        let mut rest = ids;
        while let Some(&(first, _)) = rest.first() {
            let chunk = &rest[..rest.len().min(CHUNK_IDS)];
            let at_end = chunk.len() == rest.len();
            if !at_end && chunk.last().is_some_and(|&(last, _)| last == first) {
                let taken = self.append_long_run(rest)?;
                added += taken.appended as u64;
                rest = &rest[taken.consumed..];
                continue;
            }
            let scan = self.scan_chunk(chunk);
            // Unless the input ends here, the last block may go on in the next chunk: it is
            // held back and scanned again there.
            let held = match at_end {
                true => 0,
                false => 63 - (scan.starts | 1).leading_zeros(),
            };
            let starts = (scan.starts & !(u64::MAX << held)) | (u64::from(at_end) * scan.starts);
            if !scan.valid || starts == 0 {
                // (Valid with one block that may go on is impossible here: its first and last
                // ids would share a block.)
                added += self.insert_each(chunk)?;
                rest = &rest[chunk.len()..];
                continue;
            }
            let end = if at_end { chunk.len() } else { held as usize };
            added += self.append_blocks(rest, starts, end, &mut staged)?;
            rest = &rest[end..];
        }
        Ok(added)
    }

    /// Reserves room in the append vector for the blocks `ids` may add, if they look ascending:
    /// at most one per id and one per block number between the first id's and the last's.
    fn reserve_appends(&mut self, ids: &[(u32, u16)]) {
        let (Some(&(first, _)), Some(&(last, _))) = (ids.first(), ids.last()) else {
            return;
        };
        if first < last && self.above_high_water(first) {
            let span = (last - first) as usize + 1;
            self.appended.blocks.reserve(span.min(ids.len()));
        }
    }

    /// `insert` for each id; returns how many were absent.
    fn insert_each(&mut self, ids: &[(u32, u16)]) -> Result<u64, Error> {
        let mut added = 0;
        for &(block, offset) in ids {
            added += u64::from(self.insert(block, offset)?);
        }
        Ok(added)
    }

    /// Marks the ids of `chunk` (at most [`CHUNK_IDS`]) that open a block and checks the
    /// chunk, in one pass without branches or stores (see the module notes).
    #[inline]
    fn scan_chunk(&self, chunk: &[(u32, u16)]) -> Scan {
        // Each id as one integer, block above offset: (block, offset) order is integer order,
        // so "strictly ascending" is one compare and "opens a block" one shift. The first id
        // must open a block above the high-water mark: `previous` starts at the mark's last
        // id (0 for an empty store, below every valid id).
        let mut previous = self
            .high_water
            .map_or(0, |high| u64::from(high) << 16 | u64::from(u16::MAX));
        let mut valid = true;
        // The first id opens a block (for an empty store, block 0's first id does not differ
        // from `previous` in its block, and opens one all the same).
        let mut starts = 1u64;
        for (index, &(block, offset)) in chunk.iter().take(CHUNK_IDS).enumerate() {
            let id = u64::from(block) << 16 | u64::from(offset);
            valid &= id > previous;
            starts |= u64::from((id ^ previous) >> 16 != 0) << index;
            previous = id;
        }
        Scan { starts, valid }
    }

    /// Appends the blocks of `ids[..end]` that start at the set bits of `starts` (a valid
    /// scan's mask, the held-back block cleared; `end <= CHUNK_IDS`); returns the ids added.
    ///
    /// The chunk's blocks are gathered in `staged` (empty on entry and on return) and moved to
    /// the append vector in one copy, before anything else writes to the store.
    fn append_blocks(
        &mut self,
        ids: &[(u32, u16)],
        starts: u64,
        end: usize,
        staged: &mut Staged,
    ) -> Result<u64, Error> {
        let mut remaining = starts;
        let mut last_block = 0;
        while remaining != 0 {
            let start = remaining.trailing_zeros() as usize;
            remaining &= remaining - 1;
            let block_end = match remaining {
                0 => end,
                _ => remaining.trailing_zeros() as usize,
            };
            let count = block_end - start;
            let offset_at = |index: usize| ids.get(index).map_or(0, |&(_, offset)| offset);
            // One bounds check for the block and the five slots, unless the input ends within
            // them.
            let (block, slots): (u32, [u16; EMBEDDED_OFFSETS_MAX]) =
                match ids.get(start..start + EMBEDDED_OFFSETS_MAX) {
                    Some(five) => (five[0].0, std::array::from_fn(|j| five[j].1)),
                    None => (
                        ids.get(start).map_or(0, |&(block, _)| block),
                        std::array::from_fn(|j| offset_at(start + j)),
                    ),
                };
            let highest = offset_at(block_end - 1);
            // The offsets of a block ascend strictly (the scan checked), so they are all in
            // `1..=max_offset` if its first is not 0 and its last is at most `max_offset`: one
            // check a block instead of one an id. A block that fails goes the ordinary way,
            // with the rest of the chunk, which reports the error at the right id.
            if (slots[0] == 0) | (highest > self.options.max_offset) {
                self.append_staged(staged, last_block, start);
                return Ok(start as u64 + self.insert_each(&ids[start..end])?);
            }
            let wide = count <= WIDE_OFFSETS_MAX;
            // One branch, on a condition computed without branches: the block needs a bitmap
            // with more than five offsets, or with four or five of which one is above the
            // packed form's range. (Written with `||` and `&&`, the compiler branched on the
            // wide form first, which varies from block to block: about half the blocks
            // mispredicted.)
            let many = u32::from(count > EMBEDDED_OFFSETS_MAX);
            let high = u32::from(!wide) & u32::from(highest > PACKED_OFFSET_MAX);
            let value = if many | high == 0 {
                encode_slots(&slots, count)
            } else {
                let run = ids.get(start..block_end).unwrap_or(&[]);
                match self.bitmap_of_ids(block, run, highest) {
                    Ok(value) => value,
                    Err(error) => {
                        // The blocks before this one stay, as `insert` of each id would leave them.
                        self.append_staged(staged, last_block, start);
                        return Err(error);
                    }
                }
            };
            // The high-water mark is raised once, after the loop.
            staged.push(block, value);
            last_block = block;
        }
        self.append_staged(staged, last_block, end);
        Ok(end as u64)
    }

    /// Moves the staged blocks (the last of them `last_block`, holding `ids` ids between them)
    /// to the append vector and counts them.
    fn append_staged(&mut self, staged: &mut Staged, last_block: u32, ids: usize) {
        self.appended.extend(staged.take());
        self.note_block(last_block);
        self.len += ids as u64;
    }

    /// The value of a new block whose ids (checked: ascending, offsets valid, at least one,
    /// highest offset `highest`) need a bitmap: the bitmap allocated and filled, for the caller
    /// to append.
    fn bitmap_of_ids(
        &mut self,
        block: u32,
        ids: &[(u32, u16)],
        highest: u16,
    ) -> Result<Encoded, Error> {
        let handle = self.storage.alloc(bitmap::words_for(highest))?;
        let words = self.bitmap_mut(block, handle)?;
        let mut filler = WordFiller::default();
        for &(_, offset) in ids {
            filler.set(words, offset);
        }
        Ok(Value::Bitmap(handle).encode())
    }

    /// A bitmap of the offsets of `run` (ids all in `block`, a new block), checked (block,
    /// strictly ascending offsets in `1..=max_offset`) while the bits are set, in one pass;
    /// `None`, with nothing kept, if they fail the check.
    fn append_run_checked(
        &mut self,
        block: u32,
        run: &[(u32, u16)],
    ) -> Result<Option<crate::value::Handle>, Error> {
        let Some(&(_, last)) = run.last() else {
            return Ok(None);
        };
        if !self.above_high_water(block) || last == 0 || last > self.options.max_offset {
            return Ok(None);
        }
        let handle = self.storage.alloc(bitmap::words_for(last))?;
        let words = self.bitmap_mut(block, handle)?;
        // The check first, in a loop the compiler vectorizes; then the bits.
        let first = run.first().map_or(0, |&(_, offset)| offset);
        let mut valid = first > 0;
        for pair in run.windows(2) {
            valid &= (pair[1].0 == block) & (pair[1].1 > pair[0].1);
        }
        if valid && usize::from(last - first) + 1 == run.len() {
            // Strictly ascending, as many as the offsets from the first to the last: exactly
            // those (a block whose every tuple is dead, as in W4's dense pattern). Set as
            // ranges of words; the bit-by-bit loop's chain through the word being built cost
            // two cycles an offset.
            set_range(words, first, last);
        } else {
            let mut filler = WordFiller::default();
            for &(_, offset) in run {
                filler.set(words, offset);
            }
        }
        if !valid {
            self.storage.free(handle);
            return Ok(None);
        }
        Ok(Some(handle))
    }

    /// The run of ids at the start of `ids` that share its first block (at least
    /// [`CHUNK_IDS`]): appended as one bitmap block if valid, else inserted id by id.
    fn append_long_run(&mut self, ids: &[(u32, u16)]) -> Result<Taken, Error> {
        let Some(&(block, _)) = ids.first() else {
            return Ok(Taken::default());
        };
        // The caller saw ids 0 and CHUNK_IDS - 1 in `block`; if the ids between are not, the
        // checks below send the run the ordinary way.
        // Eight ids a step while the eighth is in the block (the ids between are checked with
        // the run), then one at a time.
        let mut run = CHUNK_IDS.min(ids.len());
        while ids.get(run + 7).is_some_and(|&(b, _)| b == block) {
            run += 8;
        }
        while ids.get(run).is_some_and(|&(b, _)| b == block) {
            run += 1;
        }
        let run_ids = &ids[..run];
        if let Some(handle) = self.append_run_checked(block, run_ids)? {
            debug_assert!(run > EMBEDDED_OFFSETS_MAX, "a long run needs a bitmap");
            self.append(block, Value::Bitmap(handle).encode());
            self.len += run as u64;
        } else {
            let appended = self.insert_each(run_ids)? as usize;
            return Ok(Taken {
                consumed: run,
                appended,
            });
        }
        Ok(Taken {
            consumed: run,
            appended: run,
        })
    }
}

/// Sets the bits of offsets `first..=last` (`first <= last`) in `words` (extra words ignored).
fn set_range(words: &mut [u64], first: u16, last: u16) {
    let (first, last) = (usize::from(first), usize::from(last));
    for (index, word) in words
        .iter_mut()
        .enumerate()
        .take(last / 64 + 1)
        .skip(first / 64)
    {
        let low = first.max(index * 64) - index * 64;
        let high = last.min(index * 64 + 63) - index * 64;
        // Bits low..=high.
        *word |= (u64::MAX >> (63 - high)) & (u64::MAX << low);
    }
}

/// Sets the bits of ascending offsets in a zeroed bitmap with a plain store per offset: the
/// current word is built in a register and stored whole each time (a word is complete once
/// the offsets have passed it), instead of a read-modify-write of the word in memory, whose
/// store-to-load latency chained every offset of a dense block to the one before.
#[derive(Default)]
struct WordFiller {
    /// Index of the word being built (0 before the first offset: word 0's bits start empty).
    index: usize,
    /// Its bits so far.
    bits: u64,
}

impl WordFiller {
    /// Sets `offset` (at or above the previous one's word; ignored past the end of `words`,
    /// which a caller that checks its order afterwards may hand over).
    #[inline]
    fn set(&mut self, words: &mut [u64], offset: u16) {
        let index = usize::from(offset) / 64;
        let same = 0u64.wrapping_sub(u64::from(index == self.index));
        self.bits = (self.bits & same) | 1 << (offset % 64);
        self.index = index;
        if let Some(word) = words.get_mut(index) {
            *word = self.bits;
        }
    }
}

/// Per offset count (0 to 5), how [`encode_slots`] keeps and marks its two embedded forms: the
/// mask of the wide form's bits, the mask of the packed form's bits (one of the two is 0), and
/// the value's length in the fixed-width form's length byte (`Encoded::to_fixed`).
const EMBEDDED_FORMS: [EmbeddedForm; EMBEDDED_OFFSETS_MAX + 1] = embedded_forms();

/// One row of [`EMBEDDED_FORMS`].
#[derive(Clone, Copy)]
struct EmbeddedForm {
    wide_mask: u64,
    packed_mask: u64,
    len_byte: u64,
}

const fn embedded_forms() -> [EmbeddedForm; EMBEDDED_OFFSETS_MAX + 1] {
    let mut forms = [EmbeddedForm {
        wide_mask: 0,
        packed_mask: 0,
        len_byte: 0,
    }; EMBEDDED_OFFSETS_MAX + 1];
    let mut count = 0;
    while count <= EMBEDDED_OFFSETS_MAX {
        // 1 to 3 offsets: the wide form, 2 bytes each; 4 or 5: the packed form, 7 bytes.
        let (wide_mask, packed_mask, len) = if count <= WIDE_OFFSETS_MAX {
            ((1u64 << (16 * count)) - 1, 0, 2 * count)
        } else {
            (
                0,
                (1u64 << (PACKED_OFFSET_BITS as usize * count)) - 1,
                VALUE_LEN_MAX,
            )
        };
        forms[count] = EmbeddedForm {
            wide_mask,
            packed_mask,
            len_byte: (len as u64) << (8 * VALUE_LEN_MAX),
        };
        count += 1;
    }
    forms
}

/// The value of a block of `count` (1 to 5) offsets, the first of them in `slots` (the slots
/// past `count` hold anything): both embedded forms are made, and the row of
/// [`EMBEDDED_FORMS`] for `count` keeps one of them, masked to `count`, and adds the length,
/// so nothing branches on the count. (The road not taken, computing the masks and the length per
/// block, cost several times the table's three loads.)
#[inline]
fn encode_slots(slots: &[u16; EMBEDDED_OFFSETS_MAX], count: usize) -> Encoded {
    let slot = |j: usize| u64::from(slots[j]);
    let wide_bits = slot(0) | slot(1) << 16 | slot(2) << 32;
    let packed_bits = (0..EMBEDDED_OFFSETS_MAX).fold(0u64, |bits, j| {
        bits | slot(j) << (PACKED_OFFSET_BITS as usize * j)
    });
    let form = EMBEDDED_FORMS[count.min(EMBEDDED_OFFSETS_MAX)];
    let fixed = (wide_bits & form.wide_mask) | (packed_bits & form.packed_mask) | form.len_byte;
    Encoded::from_fixed(fixed.to_le_bytes())
}

/// The blocks of one chunk on their way to the append vector (at most one per id of a chunk):
/// a store each into this array, then one copy, where a push per block reloaded the vector's
/// length and capacity through the store each time (the loop's stores to the store may alias
/// them).
struct Staged {
    pairs: [BlockPair; CHUNK_IDS],
    len: usize,
}

impl Staged {
    fn new() -> Self {
        Staged {
            pairs: [([0; 4], [0; 8]); CHUNK_IDS],
            len: 0,
        }
    }

    /// Stages `block` with `value` (blocks ascending, at most [`CHUNK_IDS`] before a
    /// [`Staged::take`]: one per id of a chunk).
    #[inline]
    fn push(&mut self, block: u32, value: Encoded) {
        debug_assert!(self.len < CHUNK_IDS, "at most one block per id of a chunk");
        if let Some(pair) = self.pairs.get_mut(self.len) {
            *pair = block_pair(block, value);
            self.len += 1;
        }
    }

    /// The staged pairs, emptying the stage.
    #[inline]
    fn take(&mut self) -> &[BlockPair] {
        let len = std::mem::take(&mut self.len);
        &self.pairs[..len]
    }
}

/// Ids consumed from the input and ids added to the store by one step.
#[derive(Default)]
struct Taken {
    consumed: usize,
    appended: usize,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::TidStoreOptions;

    /// `insert_many(ids)` on a store prepared by `setup` against `insert` of each id in turn on
    /// another: the same result (count or error), the same ids, both verified.
    fn same_as_inserts(setup: &[(u32, u16)], ids: &[(u32, u16)]) {
        for insert_only in [false, true] {
            let options = TidStoreOptions {
                insert_only,
                max_offset: 300,
            };
            let mut many = TidStore::with_options(options).unwrap();
            let mut each = TidStore::with_options(options).unwrap();
            for &(block, offset) in setup {
                many.insert(block, offset).unwrap();
                each.insert(block, offset).unwrap();
            }
            let expected = each.insert_each(ids).map_err(|error| format!("{error:?}"));
            let got = many.insert_many(ids).map_err(|error| format!("{error:?}"));
            assert_eq!(got, expected, "{ids:?}");
            let ids_of = |store: &TidStore| store.ids().collect::<Result<Vec<_>, _>>().unwrap();
            assert_eq!(ids_of(&many), ids_of(&each));
            assert_eq!(many.len(), each.len());
            many.verify().unwrap();
            many.flush_appends().unwrap();
            assert_eq!(ids_of(&many), ids_of(&each));
            many.verify().unwrap();
        }
    }

    fn run(block: u32, offsets: impl Iterator<Item = u16>) -> Vec<(u32, u16)> {
        offsets.map(|offset| (block, offset)).collect()
    }

    #[test]
    fn long_runs_are_checked_whole() {
        let full = run(5, 1..=200);
        same_as_inserts(&[], &full);
        // An id of another block inside the run, offsets still ascending.
        let mut foreign = full.clone();
        foreign[100].0 = 7;
        same_as_inserts(&[], &foreign);
        // Out of order, repeated, 0 and above `max_offset` inside the run.
        let mut swapped = full.clone();
        swapped.swap(80, 81);
        same_as_inserts(&[], &swapped);
        let mut repeated = full.clone();
        repeated[90] = repeated[89];
        same_as_inserts(&[], &repeated);
        let mut zero = full.clone();
        zero[0].1 = 0;
        same_as_inserts(&[], &zero);
        same_as_inserts(&[], &run(5, 100..=301));
        // A run of a block the store holds; spaced runs; a run that ends the input exactly at
        // a chunk's end.
        same_as_inserts(&[(5, 250)], &full);
        same_as_inserts(&[], &run(9, (1..=100).map(|i| i * 3)));
        same_as_inserts(&[], &run(9, 1..=CHUNK_IDS as u16));
    }

    #[test]
    fn chunks_hold_back_their_last_block() {
        // Blocks of 1 to 7 ids over several chunks, so that chunk ends fall everywhere.
        let mut ids = Vec::new();
        for block in 0..200u32 {
            let count = block % 7 + 1;
            ids.extend((1..=count as u16).map(|o| (block * 2, o * 40)));
        }
        for cut in [0, 1, 63, 64, 65, 200] {
            same_as_inserts(&[], &ids[cut.min(ids.len())..]);
        }
        same_as_inserts(&[(0, 1)], &ids);
        same_as_inserts(&[(1000, 1)], &ids);
        // A block equal to the high-water mark, and block 0 of an empty store.
        same_as_inserts(&[(4, 1)], &[(4, 2), (5, 1)]);
        same_as_inserts(&[], &[(0, 1), (0, 2), (1, 1)]);
        same_as_inserts(&[], &[(u32::MAX, 1), (u32::MAX, 300)]);
        same_as_inserts(&[], &[]);
    }

    #[test]
    fn an_invalid_offset_stops_at_its_id_wherever_its_block_lies() {
        // Offsets are checked a block at a time (its first and last): an offset of 0 opening a
        // block, or one above `max_offset` (300) closing it, in the first, a middle and the last
        // block of a chunk, and in blocks of one id, of several, and of a bitmap's size.
        for size in [1u16, 3, 5, 6, 9] {
            let mut ids = Vec::new();
            for block in 0..40u32 {
                ids.extend((1..=size).map(|o| (block * 3, o * 20)));
            }
            for at in [0, 1, ids.len() / 2, 63, 64, ids.len() - 1] {
                let at = at.min(ids.len() - 1);
                for bad in [0u16, 301, u16::MAX] {
                    let mut damaged = ids.clone();
                    let block = damaged[at].0;
                    // The damaged id's block keeps its order: 0 goes first, the large ones last.
                    let place = if bad == 0 {
                        damaged.iter().position(|&(b, _)| b == block).unwrap_or(at)
                    } else {
                        damaged.iter().rposition(|&(b, _)| b == block).unwrap_or(at)
                    };
                    damaged[place].1 = bad;
                    same_as_inserts(&[], &damaged);
                }
            }
        }
    }

    /// W4's shapes and the edges: ids ascending, as the append path takes them.
    fn patterns(max_offset: u16) -> Vec<(&'static str, Vec<(u32, u16)>)> {
        let mut rng = StdRng::seed_from_u64(0x5EED_0019);
        let tuples = max_offset.min(291);
        let per_tuple = |blocks: std::ops::Range<u32>, keep: &mut dyn FnMut(u32, u16) -> bool| {
            let mut ids = Vec::new();
            for block in blocks {
                ids.extend((1..=tuples).filter(|&o| keep(block, o)).map(|o| (block, o)));
            }
            ids
        };
        vec![
            // About 3 ids a block: Node256s of mixed value forms, packed and bitmap blocks.
            (
                "random",
                per_tuple(0..3000, &mut |_, _| rng.gen_ratio(1, 100)),
            ),
            ("dense", per_tuple(0..400, &mut |block, _| block % 10 == 0)),
            (
                "sparse",
                per_tuple(0..6000, &mut |block, o| block % 20 == 0 && o == 7),
            ),
            // One offset in every block: 2-byte values throughout (packs, not Node256s).
            ("uniform", per_tuple(0..1000, &mut |_, o| o == 1)),
            // One or two offsets in every block: Node256s with every slot used.
            (
                "mixed",
                per_tuple(0..1000, &mut |block, o| {
                    o == 1 || (o == 2 && block % 2 == 0)
                }),
            ),
            ("empty", Vec::new()),
            ("one id", vec![(77, 5)]),
            (
                "max offset",
                (0..300u32)
                    .flat_map(|block| {
                        let count = block % 8 + 1;
                        (0..count as u16)
                            .rev()
                            .map(move |i| (block, max_offset - i * 3))
                    })
                    .collect(),
            ),
            (
                "max block",
                vec![
                    (u32::MAX - 300, 1),
                    (u32::MAX - 1, 2),
                    (u32::MAX, 1),
                    (u32::MAX, 3),
                    (u32::MAX, max_offset),
                ],
            ),
        ]
    }

    /// `insert_many` and then `flush_appends` against a `BTreeSet` of the ids: the same set
    /// before and after the flush (iteration, membership of every id and of its neighbours,
    /// length, `verify`), on every pattern, in both storage modes and at two offset limits.
    #[test]
    fn insert_many_matches_a_btreeset_model() {
        for max_offset in [300, crate::MAX_OFFSET_DEFAULT] {
            for (name, ids) in patterns(max_offset) {
                for insert_only in [false, true] {
                    let options = TidStoreOptions {
                        insert_only,
                        max_offset,
                    };
                    let model: BTreeSet<(u32, u16)> = ids.iter().copied().collect();
                    let mut store = TidStore::with_options(options).unwrap();
                    assert_eq!(
                        store.insert_many(&ids).unwrap(),
                        model.len() as u64,
                        "{name}"
                    );
                    check_model(&store, &model, name);
                    store.flush_appends().unwrap();
                    check_model(&store, &model, name);
                    // Again: every id is there already.
                    assert_eq!(store.insert_many(&ids).unwrap(), 0, "{name}");
                    check_model(&store, &model, name);
                }
            }
        }
    }

    fn check_model(store: &TidStore, model: &BTreeSet<(u32, u16)>, name: &str) {
        let max_offset = store.options.max_offset;
        let ids: Vec<(u32, u16)> = store.ids().collect::<Result<_, _>>().unwrap();
        assert!(ids.iter().eq(model.iter()), "{name}");
        assert_eq!(store.len(), model.len() as u64, "{name}");
        for &(block, offset) in model {
            assert!(
                store.contains(block, offset).unwrap(),
                "{name} ({block}, {offset})"
            );
            for near in [offset - 1, offset + 1] {
                if near == 0 || near > max_offset {
                    continue;
                }
                let expected = model.contains(&(block, near));
                assert_eq!(store.contains(block, near).unwrap(), expected, "{name}");
            }
        }
        store.verify().unwrap();
    }

    /// Ids out of order, repeated, or with an offset of 0 or above the limit, in each pattern:
    /// the same count or the same typed error, at the same id, as `insert` of each id in turn.
    #[test]
    fn insert_many_errors_match_inserts_on_every_pattern() {
        let mut rng = StdRng::seed_from_u64(0xE770_0019);
        for (_, ids) in patterns(300) {
            if ids.len() < 2 {
                same_as_inserts(&[], &ids);
                continue;
            }
            for _ in 0..6 {
                let at = rng.gen_range(0..ids.len());
                let mut swapped = ids.clone();
                swapped.swap(at.min(ids.len() - 2), at.min(ids.len() - 2) + 1);
                let mut repeated = ids.clone();
                repeated.insert(at, ids[at]);
                let mut zero = ids.clone();
                zero[at].1 = 0;
                let mut high = ids.clone();
                high[at].1 = 301;
                for damaged in [&swapped, &repeated, &zero, &high] {
                    same_as_inserts(&[], damaged);
                }
            }
        }
        // The typed errors themselves.
        let mut store = TidStore::with_options(TidStoreOptions {
            insert_only: false,
            max_offset: 300,
        })
        .unwrap();
        let error = store.insert_many(&[(1, 1), (2, 0), (3, 1)]).unwrap_err();
        assert!(
            matches!(error, Error::OffsetOutOfRange { block: 2, .. }),
            "{error:?}"
        );
        let error = store.insert_many(&[(4, 1), (5, 301)]).unwrap_err();
        assert!(
            matches!(error, Error::OffsetOutOfRange { block: 5, .. }),
            "{error:?}"
        );
        let ids: Vec<(u32, u16)> = store.ids().collect::<Result<_, _>>().unwrap();
        assert_eq!(ids, [(1, 1), (4, 1)]);
    }

    #[test]
    fn embedded_forms_match_the_value_encoding() {
        // The table-driven encoding against `Encoded::embedded`, for every count and offsets
        // at the packed form's edges.
        let lists: [&[u16]; 8] = [
            &[1],
            &[2047],
            &[1, 65535],
            &[3, 4, 65535],
            &[1, 2, 3, 4],
            &[2044, 2045, 2046, 2047],
            &[1, 500, 1000, 1500, 2047],
            &[7, 8, 9, 10, 11],
        ];
        for offsets in lists {
            let mut slots = [0xFFFFu16; EMBEDDED_OFFSETS_MAX];
            slots[..offsets.len()].copy_from_slice(offsets);
            let got = encode_slots(&slots, offsets.len());
            assert_eq!(
                got.as_bytes(),
                Encoded::embedded(offsets).as_bytes(),
                "{offsets:?}"
            );
        }
    }

    #[test]
    fn value_forms_at_their_limits() {
        let mut ids = Vec::new();
        let lists: [&[u16]; 7] = [
            &[1],
            &[299, 300],
            &[1, 2, 300],
            &[1, 2, 3, 4],
            &[10, 20, 30, 40, 300],
            &[1, 2, 3, 4, 5, 6],
            &[64, 128, 192, 256],
        ];
        for (block, offsets) in lists.iter().enumerate() {
            ids.extend(offsets.iter().map(|&o| (block as u32, o)));
        }
        same_as_inserts(&[], &ids);
        // Past the packed form's range (a store allowing offsets above 2047).
        let options = TidStoreOptions {
            insert_only: false,
            max_offset: 3000,
        };
        let mut store = TidStore::with_options(options).unwrap();
        let high = [
            (1, 1),
            (1, 2),
            (1, 3),
            (1, 2048),
            (2, 5),
            (2, 2999),
            (3, 3000),
        ];
        assert_eq!(store.insert_many(&high).unwrap(), 7);
        assert!(!store.block_offsets(1).unwrap().is_embedded());
        assert!(store.block_offsets(2).unwrap().is_embedded());
        store.flush_appends().unwrap();
        store.verify().unwrap();
        let ids: Vec<_> = store.ids().collect::<Result<_, _>>().unwrap();
        assert_eq!(ids, high);
    }
}
