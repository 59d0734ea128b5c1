//! The heap-only insert fast path used by `Writer::upsert_with` (W1's fillrandom).
//!
//! Most inserts into a tree that lives on the heap walk inner nodes the writer already owns (or
//! may adopt, when no snapshot is alive) and end in one of a few cheap ways: a new child word in
//! an inner node with room for it (a Node256 that this fills with inline values of one length
//! becomes a dense pack), a new entry in a spare slot of a writable leaf pack (or a new value
//! for an entry already there), or a writable pack without a spare slot copied with the new
//! entry into a larger one (or, for the 256th entry of a one-byte-suffix pack, a dense one). This path does exactly those, reading each node's
//! kind and prefix straight from its header, with no `Result`, no `Entry` enum, no node-source
//! handle (the general path clones an `Arc` per insert) and no checked image parse of inner
//! nodes.
//!
//! Everything else it hands back as [`FastUpsert::Slow`] with the slot and depth it reached,
//! having changed nothing on the way but what the general path would have done there too
//! (adopting nodes into the current version, `Writer::own`'s no-snapshot case), and the general
//! path continues from there: persisted words, nodes a snapshot may still reach (they need a
//! copy), prefixes that differ from the key or are longer than the header holds, keys that end
//! at an inner node (value slots), full inner nodes (grow), leaves and inline values (split or
//! replace), dense packs, packs whose widths differ from the key's, packs at their capacity
//! bound (burst), and full 64-entry one-byte-suffix packs of 6- or 7-byte values (they become
//! a Node256 of inline words: `write::pack::bursts_to_inline`). A slot
//! reached through heap nodes only has a heap parent, so the general path continues with no
//! persisted parent, as it would have after walking the same nodes.

use crate::node::{
    self, PackMut, PackRef, HEADER_LEN, KIND_NODE256, KIND_PACK, PACK_HEADER_LEN,
    PREFIX_INLINE_LEN_MAX,
};
use crate::word::{self, TAG_HEAP_LEAF, TAG_HEAP_NODE, TAG_HEAP_PACK_HINTED, TAG_MASK};
use crate::write::pack::{full_run_bursts, rebuild, takes_insert_in_place};
use crate::write::writer::{value_word, Upsert, Writer};

/// Outcome of the insert fast path.
pub(crate) enum FastUpsert<'s> {
    /// The insert or replacement is done (length and dirty flag updated).
    Done(Upsert),
    /// The general path must continue at this slot and depth (no persisted parent).
    Slow(&'s mut [u8; 8], usize),
}

impl Writer {
    /// Inserts or replaces `key` from `root` through owned heap words only (see the module
    /// docs); `want_old` copies a replaced value out.
    #[inline]
    pub(crate) fn upsert_fast<'s>(
        &mut self,
        root: &'s mut [u8; 8],
        key: &[u8],
        value: &[u8],
        want_old: bool,
    ) -> FastUpsert<'s> {
        let mut slot = root;
        let mut depth = 0usize;
        loop {
            let bits = word::load(slot);
            match bits & TAG_MASK {
                TAG_HEAP_NODE if bits != 0 => {
                    let address = bits as usize;
                    if let Some(&byte) = key.get(depth) {
                        prefetch_node256_slot(address, byte);
                    }
                    // SAFETY: a heap node word linked in the current tree names a live inner
                    // image of this crate (raw/mod.rs invariant 2); the writer holds `&mut Tree`, so
                    // nothing else writes it, and this view is dropped before any other view of
                    // the node is made. Writes through it happen only once the node is the
                    // current version's or no snapshot is alive (checked below), as in
                    // `Writer::own`.
                    let Some(mut inner) = (unsafe { node::heap_inner_body_mut::<'s>(address) })
                    else {
                        return FastUpsert::Slow(slot, depth);
                    };
                    let header = inner.header();
                    debug_assert_eq!(header.depth(), depth, "heap node depth");
                    if header.version() != self.version {
                        if !self.registry.no_snapshots() {
                            return FastUpsert::Slow(slot, depth);
                        }
                        // No snapshot is alive (and none can appear while the writer runs): the
                        // node is adopted into the current version, as `Writer::own` does.
                        header.set_version(self.version);
                    }
                    let prefix_len = header.prefix_len();
                    if prefix_len > PREFIX_INLINE_LEN_MAX
                        || (prefix_len != 0
                            && !header.inline_prefix_matches(key, depth, prefix_len))
                    {
                        return FastUpsert::Slow(slot, depth);
                    }
                    let at = depth + prefix_len;
                    let Some(&byte) = key.get(at) else {
                        return FastUpsert::Slow(slot, depth);
                    };
                    let (kind, count) = (header.kind, header.count());
                    match inner.into_child_slot(byte) {
                        Some(child) => {
                            slot = child;
                            depth = at + 1;
                        }
                        None if count < node::capacity(kind) => {
                            // SAFETY: as above; the view from before was consumed.
                            let Some(mut inner) =
                                (unsafe { node::heap_inner_body_mut::<'s>(address) })
                            else {
                                return FastUpsert::Slow(slot, depth);
                            };
                            inner.add(byte, value_word(&key[at + 1..], value));
                            if kind == KIND_NODE256 && count + 1 == node::DENSE_ENTRIES {
                                self.densify_node256(slot, address);
                            }
                            self.len += 1;
                            self.dirty = true;
                            return FastUpsert::Done(Upsert::Inserted);
                        }
                        None => return FastUpsert::Slow(slot, depth),
                    }
                }
                TAG_HEAP_LEAF | TAG_HEAP_PACK_HINTED => {
                    if bits & TAG_MASK == TAG_HEAP_PACK_HINTED {
                        if let Some(&first) = key.get(depth) {
                            prefetch_pack_tail(bits, first);
                        }
                    } else if key.len() == depth + 1 {
                        // One key byte left: a pack here that can take the key is a
                        // one-byte-suffix pack (a dense run being filled).
                        prefetch_run_pack_head(word::heap_leaf_address(bits), value.len());
                    }
                    return match self.pack_upsert_fast(bits, key.get(depth..), value, want_old) {
                        Some((upsert, new_bits)) => {
                            *slot = new_bits.to_le_bytes();
                            FastUpsert::Done(upsert)
                        }
                        None => FastUpsert::Slow(slot, depth),
                    };
                }
                _ => return FastUpsert::Slow(slot, depth),
            }
        }
    }

    /// The pack part of [`Writer::upsert_fast`]: `rest` is the key after the pack's word.
    /// Returns the outcome and the pack's new word (its full bit may change), or `None` for
    /// the general path (nothing changed).
    #[inline]
    fn pack_upsert_fast(
        &mut self,
        bits: u64,
        rest: Option<&[u8]>,
        value: &[u8],
        want_old: bool,
    ) -> Option<(Upsert, u64)> {
        let rest = rest?;
        let address = word::heap_leaf_address(bits);
        // SAFETY: a heap leaf word linked in the current tree names a live leaf or pack image
        // of this crate (raw/mod.rs invariant 2), unchanged while this shared view is used; the view
        // is dropped before the mutable one below is made.
        let image = unsafe { node::heap_leaf_image(address) };
        if image.first() != Some(&KIND_PACK) {
            return None;
        }
        if bits & TAG_MASK == TAG_HEAP_LEAF {
            if let [first] = rest {
                prefetch_run_pack_tail(address, image, *first);
            }
        }
        let (found, state) = node::heap_pack_find(image, rest, value.len())?;
        let writable = state.version == self.version || self.registry.no_snapshots();
        if !writable {
            return None;
        }
        match found {
            Ok(index) => {
                let old = if want_old {
                    Some(PackRef::from_image(image).ok()?.entry(index).2.to_vec())
                } else {
                    None
                };
                // SAFETY: a live heap pack of the current tree that no snapshot reaches (its
                // version is the writer's, or no snapshot is alive); the writer holds `&mut
                // Tree` and uses no other view of it from here on (`image` is not used again).
                let image = unsafe { node::heap_leaf_image_mut(address) };
                PackMut::new(image).set_value(index, value);
                self.dirty = true;
                Some((Upsert::Replaced(old), bits))
            }
            Err(at) => {
                if state.count >= node::pack_capacity_max(state.stride) {
                    return None;
                }
                let suffix = rest.get(state.prefix_len..)?;
                if !takes_insert_in_place(state.key_width, state.count, state.spare, false) {
                    // No spare slot (or the 256th entry of a one-byte-suffix pack): the pack is
                    // copied with the new entry into a larger one (or a dense one), as the
                    // general path would, without its second walk, checked parse and search.
                    // A full run of inline-sized values bursts there instead.
                    if state.spare == 0
                        && full_run_bursts(state.key_width, state.count, value.len())
                    {
                        return None;
                    }
                    let pack = PackRef::from_image(image).ok()?;
                    let new_bits = rebuild(
                        self.version,
                        &pack,
                        pack.prefix,
                        None,
                        Some((at, suffix)),
                        value,
                    );
                    self.retire(bits);
                    self.len += 1;
                    self.dirty = true;
                    return Some((Upsert::Inserted, new_bits));
                }
                // SAFETY: as for the replacement above.
                let image = unsafe { node::heap_leaf_image_mut(address) };
                PackMut::new(image).insert_found(&state, at, suffix, value);
                self.len += 1;
                self.dirty = true;
                // The last spare slot taken: the word's hint now says full (word.rs).
                Some((
                    Upsert::Inserted,
                    word::with_pack_full(bits, state.spare == 1),
                ))
            }
        }
    }
}

/// Starts loading the lines an insert into the hinted pack `bits` will shift, before the pack's
/// header has arrived: from where the key's record probably goes (`word::pack_guess`) to the end
/// of the records, and the fence line at the guessed index (a pack of at most 24 lines: all of
/// it from the fence on). The shift (`PackMut`) then finds them in flight instead of missing on
/// each in turn.
#[inline(always)]
fn prefetch_pack_tail(bits: u64, first: u8) {
    const LINE: usize = 64;
    const LINES_MAX: usize = 24;
    let address = word::heap_leaf_address(bits);
    let end = word::pack_records_end(bits);
    let start = if end <= LINES_MAX * LINE {
        // A small pack is loaded whole: the guess assumes a pack near full, and a
        // one-byte-suffix pack (capacities 4, 8, ..., 128) may be only half full, so the guess
        // can lie past the entry where the shift starts.
        word::PACK_HINT_FENCE_AT
    } else {
        let (index, record_at) = word::pack_guess(bits, first);
        crate::raw::prefetch(address + word::PACK_HINT_FENCE_AT + index);
        record_at
    };
    // Whole lines from the one holding `start` through the one holding the last record byte
    // (heap images are 8-byte aligned, not line-aligned).
    let mut line = (address + start) & !(LINE - 1);
    let mut lines = 0;
    while line < address + end && lines < LINES_MAX {
        crate::raw::prefetch(line);
        line += LINE;
        lines += 1;
    }
}

/// Cache line size assumed by the prefetches below.
const LINE: usize = 64;

/// Lines at most that one prefetch of a one-byte-suffix pack issues (as `prefetch_pack_tail`).
const RUN_PACK_LINES_MAX: usize = 24;

/// Entries of the one-byte-suffix pack whose lines [`prefetch_run_pack_head`] loads before the
/// pack's header has arrived: the largest pack of a dense run of 6- or 7-byte values (it
/// bursts into a Node256 of inline words at its 65th key: write/pack.rs, `full_run_bursts`).
const RUN_PACK_HEAD_ENTRIES: usize = crate::node::DENSE_ENTRIES / 4;

/// Starts loading the child slot for `byte` of the inner node at `address`, as if it were a
/// Node256 without a prefix, together with its header instead of one miss after it. Below the
/// first levels of a large tree that is what the node is (dense keys: every level; random
/// keys: the levels above the packs); for other kinds, or a node with a prefix, the line is
/// simply not used (a prefetch never faults). Dense 10M fill: the run's Node256 had cost two
/// misses one after the other, its header and then its slot.
#[inline(always)]
fn prefetch_node256_slot(address: usize, byte: u8) {
    crate::raw::prefetch(address + HEADER_LEN + 8 * usize::from(byte));
}

/// Starts loading, before its header arrives, the lines after the header's line of the pack
/// at `address` if it is a one-byte-suffix pack of `value_len`-byte values with up to
/// [`RUN_PACK_HEAD_ENTRIES`] slots: the fence and records an insert searches and shifts.
/// One-byte-suffix packs carry no layout hint in their word (word.rs: their lookups are
/// faster without one), so this is a guess of their size; a smaller pack (or a single leaf)
/// wastes the lines past its end, a larger one gets the rest from
/// [`prefetch_run_pack_tail`] once its header is known.
#[inline(always)]
fn prefetch_run_pack_head(address: usize, value_len: usize) {
    let end = address + run_pack_head_len(value_len);
    let mut line = (address + LINE) & !(LINE - 1);
    let mut lines = 0;
    while line < end && lines < RUN_PACK_LINES_MAX {
        crate::raw::prefetch(line);
        line += LINE;
        lines += 1;
    }
}

/// Bytes of a one-byte-suffix pack without a prefix of [`RUN_PACK_HEAD_ENTRIES`] slots of
/// `value_len`-byte values: what [`prefetch_run_pack_head`] covers.
#[inline(always)]
fn run_pack_head_len(value_len: usize) -> usize {
    PACK_HEADER_LEN + RUN_PACK_HEAD_ENTRIES * (1 + value_len)
}

/// Once the header of the pack `image` (at `address`) is read, for a one-byte-suffix pack
/// larger than [`prefetch_run_pack_head`] covered: starts loading the rest of its fence and the
/// records from a little before where the suffix byte `first` probably goes (its share of
/// the entries, as in a dense run) through the end of the records, which the insert's shift
/// reads and writes.
#[inline(always)]
fn prefetch_run_pack_tail(address: usize, image: &[u8], first: u8) {
    let Some(&[_, 1, c0, c1, value_width, spare, p0, p1]) = image.first_chunk::<8>() else {
        return;
    };
    let covered = address + run_pack_head_len(usize::from(value_width));
    let count = usize::from(u16::from_le_bytes([c0, c1]));
    let fence_at = address + PACK_HEADER_LEN + usize::from(u16::from_le_bytes([p0, p1]));
    let records_at = fence_at + count + usize::from(spare);
    let stride = usize::from(value_width);
    let records_end = records_at + (count + 1) * stride;
    if records_end <= covered {
        return;
    }
    let mut line = (address + LINE).max(covered) & !(LINE - 1);
    let mut lines = 0;
    while line < fence_at + count && lines < RUN_PACK_LINES_MAX {
        crate::raw::prefetch(line);
        line += LINE;
        lines += 1;
    }
    // Entries below the suffix byte's share, less a line's worth for the spread of a random
    // run, stay where they are.
    let below = (usize::from(first) * count / crate::node::DENSE_ENTRIES)
        .saturating_sub(LINE / stride.max(1));
    line = line.max((records_at + below * stride) & !(LINE - 1));
    while line < records_end && lines < RUN_PACK_LINES_MAX {
        crate::raw::prefetch(line);
        line += LINE;
        lines += 1;
    }
}
