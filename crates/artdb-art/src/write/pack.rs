//! Writer operations on leaf packs: insert, replace, remove, relocate, burst.
//!
//! Packs are immutable (node/pack/): every change builds a new pack and retires the old one.
//! A key outside the pack's prefix gets an inner node above the pack (`pack_split_prefix`). A key
//! that a pack cannot take (another key width or value width, or a full pack) bursts the pack
//! into an inner node (grouping the entries by their
//! first differing byte; groups of one become leaves or inline values, larger groups smaller
//! packs), after which the ordinary inner-node insert continues.

use crate::node::common_prefix_len;
use crate::node::fits_pack;
use crate::node::{
    self, alloc_pack, alloc_pack_spare, build_inner, build_inner_in, kind_for, Body, EntryList,
    PackMut, PackRef, Shape, DENSE_ENTRIES, KIND_NODE256,
};
use crate::raw::arena::Group;
use crate::word::{self, inline_sized, Word};
use crate::write::writer::{value_word, Writer};

/// Whether an insert into `pack` (absent key of its widths) bursts it into a Node256 of inline
/// words instead of copying it into a larger pack: a one-byte-suffix pack of inline-sized
/// values (6 or 7 bytes) with no spare slot left and at least a quarter of a dense pack's
/// entries ([`full_run_bursts`]). From there on each insert is one store into the Node256
/// instead of shifting part of the pack's records (dense keys in random order: three quarters
/// of each run's inserts come after its 64th), and the 256th key turns the node into a dense
/// pack.
#[inline]
pub(crate) fn bursts_to_inline(pack: &PackRef<'_>) -> bool {
    !pack.wide
        && !pack.dense
        && pack.spare() == 0
        && full_run_bursts(pack.key_width, pack.count(), pack.value_width)
}

/// [`bursts_to_inline`] for an ordinary pack without spare slots, from its widths and count
/// (the insert fast path reads them from the header).
///
/// The bound is a quarter of a run (64 entries; a full pack of 64 meets it, capacities being
/// powers of two), not half: an insert into a pack of 65 to 128 one-byte
/// suffixes shifted half of ~100 records and missed on each of their lines, where a Node256
/// takes one store. With the prefetches of write/fast.rs, this took W1's dense fill (keys in
/// random order, 7-byte values) from level with congee to well ahead of it, with fewer
/// instructions per insert (measured in docs/journal/benchmarks.md, "W1 dense fill"); a run that
/// stays between 65 and 128 keys holds twice the memory (2,080 bytes against a 128-slot pack's
/// 1,040 for 7-byte values). An eighth of a run (33 to 64 keys in a Node256: four times the
/// pack) bought little more.
#[inline]
pub(crate) fn full_run_bursts(key_width: usize, count: usize, value_width: usize) -> bool {
    key_width == 1 && count >= DENSE_ENTRIES / 4 && inline_sized(value_width)
}

/// The full suffix (after the prefix) of a pack entry.
fn suffix_of(pack: &PackRef<'_>, index: usize, out: &mut Vec<u8>) {
    let (first, rest, _) = pack.entry(index);
    out.clear();
    out.push(first);
    out.extend_from_slice(rest);
}

/// Whether a pack of `key_width`-byte suffixes with `count` entries and `spare` spare slots
/// takes one more entry in place (when writable): it has a spare slot, and the entry is not the
/// 256th of a one-byte-suffix pack (which goes into a copy built dense; a wide pack never
/// becomes dense). Shared by the general path and the insert fast path (write/fast.rs).
#[inline(always)]
pub(crate) fn takes_insert_in_place(
    key_width: usize,
    count: usize,
    spare: usize,
    wide: bool,
) -> bool {
    let becomes_dense = key_width == 1 && count + 1 == node::DENSE_ENTRIES && !wide;
    spare > 0 && !becomes_dense
}

/// What an attempted pack insert did.
pub(crate) enum PackInsert {
    /// Replaced the value of an existing key (the old value, when asked for).
    Replaced(Option<Vec<u8>>),
    /// Inserted a new key.
    Inserted,
    /// The pack cannot take the key: it was burst into an inner node; retry the insert.
    Burst,
}

impl Writer {
    /// Inserts `rest` (the key after the pack's position) into the pack in `slot`.
    pub(crate) fn pack_insert(
        &mut self,
        slot: &mut [u8; 8],
        depth: usize,
        pack: &PackRef<'_>,
        rest: &[u8],
        value: &[u8],
        want_old: bool,
    ) -> PackInsert {
        let bits = word::load(slot);
        let same_value_width = value.len() == pack.value_width;
        let Some(suffix) = rest.strip_prefix(pack.prefix) else {
            self.pack_split_prefix(slot, depth, pack, rest, value);
            return PackInsert::Inserted;
        };
        let fits = suffix.len() == pack.key_width;
        match pack.search(suffix) {
            Ok(index) if fits && same_value_width => {
                let old = want_old.then(|| pack.entry(index).2.to_vec());
                if let Some(mut writable) = self.writable_pack(bits, pack.version) {
                    writable.set_value(index, value);
                } else {
                    *slot = rebuild(self.version, pack, pack.prefix, Some(index), None, value)
                        .to_le_bytes();
                    self.retire(bits);
                }
                PackInsert::Replaced(old)
            }
            Err(_) if fits && same_value_width && bursts_to_inline(pack) => {
                self.burst(slot, depth, pack);
                PackInsert::Burst
            }
            Err(at) if fits && same_value_width && pack.count() < pack.capacity_max() => {
                self.pack_insert_at(slot, pack, at, suffix, value);
                PackInsert::Inserted
            }
            _ => {
                self.burst(slot, depth, pack);
                PackInsert::Burst
            }
        }
    }

    /// Inserts `suffix` (absent, of the pack's widths) at entry `at` of the pack in `slot`: in
    /// place into a spare slot when the pack is writable, else into a copy. The 256th entry of
    /// a one-byte-suffix pack always goes into a copy, which is built dense (node/pack/build.rs).
    fn pack_insert_at(
        &mut self,
        slot: &mut [u8; 8],
        pack: &PackRef<'_>,
        at: usize,
        suffix: &[u8],
        value: &[u8],
    ) {
        let bits = word::load(slot);
        let spare = pack.spare();
        let in_place = takes_insert_in_place(pack.key_width, pack.count(), spare, pack.wide);
        let writable = if in_place {
            self.writable_pack(bits, pack.version)
        } else {
            None
        };
        match writable {
            Some(mut writable) => {
                writable.insert(at, suffix, value);
                // The last spare slot taken: the word's hint now says full (word.rs). `spare` is
                // the count from before the insert: `pack` views the image the insert changed,
                // and its spare count read now (one less) set the bit one insert early and
                // cleared it when the last slot was taken.
                *slot = word::with_pack_full(bits, spare == 1).to_le_bytes();
            }
            None => {
                *slot = rebuild(
                    self.version,
                    pack,
                    pack.prefix,
                    None,
                    Some((at, suffix)),
                    value,
                )
                .to_le_bytes();
                self.retire(bits);
            }
        }
    }

    /// The heap pack `bits` (created in `version`) names, writable in place if no snapshot can
    /// reach it. The caller uses no other view of the pack afterwards.
    fn writable_pack(&mut self, bits: u64, version: u64) -> Option<PackMut<'static>> {
        let Word::HeapLeaf(address) = word::decode(bits) else {
            return None;
        };
        if version != self.version && !self.registry.no_snapshots() {
            return None;
        }
        // SAFETY: a live heap pack linked in the current tree that no snapshot reaches: it was
        // created in the current version, or no snapshot is alive (and none can appear while the
        // writer, holding `&mut Tree`, runs); the writer's shared view of it is not used after
        // this call (see the callers).
        Some(PackMut::new(unsafe { node::heap_leaf_image_mut(address) }))
    }

    /// Inserts `rest` (the key after the pack's position), which leaves the pack's prefix, by
    /// putting an inner node above the pack: the node's prefix is their common part, its
    /// children the pack (a copy, its prefix cut after the byte where the key differs) and the
    /// key's value word; a key that ends inside the prefix goes to the node's value slot.
    /// (Bursting the pack, the road not taken, turned every dense run inserted in
    /// ascending order into a Node256 of inline words: the next run's first key always leaves
    /// the prefix of the run before.)
    #[cold]
    #[inline(never)]
    fn pack_split_prefix(
        &mut self,
        slot: &mut [u8; 8],
        depth: usize,
        pack: &PackRef<'_>,
        rest: &[u8],
        value: &[u8],
    ) {
        let bits = word::load(slot);
        let common = common_prefix_len(rest, pack.prefix);
        let Some(&pack_byte) = pack.prefix.get(common) else {
            debug_assert!(false, "pack_split_prefix of a key inside the pack's prefix");
            return;
        };
        let moved = rebuild(
            self.version,
            pack,
            &pack.prefix[common + 1..],
            None,
            None,
            &[],
        );
        let mut entries = EntryList::new();
        let mut value_slot = 0;
        match rest.get(common) {
            Some(&byte) => {
                let key_word = value_word(&rest[common + 1..], value);
                if byte < pack_byte {
                    entries.push(byte, key_word);
                    entries.push(pack_byte, moved);
                } else {
                    entries.push(pack_byte, moved);
                    entries.push(byte, key_word);
                }
            }
            None => {
                value_slot = value_word(&[], value);
                entries.push(pack_byte, moved);
            }
        }
        let shape = Shape {
            prefix: &rest[..common],
            depth,
            version: self.version,
            value: value_slot,
        };
        *slot = build_inner(kind_for(entries.len()), &shape, &entries).to_le_bytes();
        self.retire(bits);
    }

    /// Replaces the pack in `slot` by an inner node holding the same keys.
    fn burst(&mut self, slot: &mut [u8; 8], depth: usize, pack: &PackRef<'_>) {
        let bits = word::load(slot);
        let count = pack.count();
        if pack.key_width == 1 {
            // One-byte suffixes are distinct: every entry is a group of one, with no suffix to
            // gather.
            *slot = self.one_byte_node(pack, depth, None).to_le_bytes();
            self.retire(bits);
            return;
        }
        let (mut first, mut last) = (Vec::new(), Vec::new());
        suffix_of(pack, 0, &mut first);
        suffix_of(pack, count - 1, &mut last);
        let common = common_prefix_len(&first, &last).min(pack.key_width - 1);
        let mut entries = EntryList::new();
        let mut suffix = Vec::new();
        let mut start = 0usize;
        while start < count {
            suffix_of(pack, start, &mut suffix);
            let byte = suffix[common];
            let mut end = start + 1;
            let mut other = Vec::new();
            while end < count {
                suffix_of(pack, end, &mut other);
                if other[common] != byte {
                    break;
                }
                end += 1;
            }
            let word = if end - start == 1 {
                value_word(&suffix[common + 1..], pack.entry(start).2)
            } else {
                group_pack(self.version, pack, start, end, common + 1)
            };
            entries.push(byte, word);
            start = end;
        }
        let mut prefix = pack.prefix.to_vec();
        prefix.extend_from_slice(&first[..common]);
        let shape = Shape {
            prefix: &prefix,
            depth,
            version: self.version,
            value: 0,
        };
        *slot = build_inner(kind_for(entries.len()), &shape, &entries).to_le_bytes();
        self.retire(bits);
    }

    /// An inner node (at `depth`, with the pack's prefix) holding the entries of the
    /// one-byte-suffix pack `pack` but `skip`, each a value word under its byte (inline up to
    /// 7 bytes): what a burst or a removal from a dense run makes of the pack.
    fn one_byte_node(&self, pack: &PackRef<'_>, depth: usize, skip: Option<usize>) -> u64 {
        let mut entries = EntryList::new();
        for index in (0..pack.count()).filter(|&index| Some(index) != skip) {
            let (byte, _, value) = pack.entry(index);
            entries.push(byte, value_word(&[], value));
        }
        let shape = Shape {
            prefix: pack.prefix,
            depth,
            version: self.version,
            value: 0,
        };
        build_inner_in(kind_for(entries.len()), &shape, &entries, Group::Run)
    }

    /// Called when an insert made the heap Node256 at `address` (linked in `slot`, owned by the
    /// writer) full: if its 256 children are inline values of one length and no key ends at the
    /// node, the node becomes a dense pack of the same keys (1,808 bytes instead of 2,080 for
    /// 7-byte values; the layout bulk builds and full one-byte-suffix packs already end in).
    /// Anything else leaves the node as it is.
    pub(crate) fn densify_node256(&mut self, slot: &mut [u8; 8], address: usize) {
        let old = word::load(slot);
        // SAFETY: `address` is a live heap inner image of the current tree (the caller just
        // added a child to it); the view is dropped before the node is retired below.
        let node = unsafe { node::heap_inner(address) };
        if node.kind() != KIND_NODE256
            || node.count() != DENSE_ENTRIES
            || word::load(node.value_slot()) != 0
        {
            return;
        }
        let Body::N256(body) = node.body else {
            return;
        };
        let children = body.children();
        let mut width = None;
        for child in children {
            let Word::Inline(len) = word::decode(u64::from_le_bytes(*child)) else {
                return;
            };
            if *width.get_or_insert(len) != len {
                return;
            }
        }
        let Some(width) = width else {
            return;
        };
        let bits = alloc_pack_spare(node.prefix, 1, width, DENSE_ENTRIES, 0, self.version, |w| {
            w.push_inline_words(children.iter().map(|child| u64::from_le_bytes(*child)));
        });
        *slot = bits.to_le_bytes();
        self.retire(old);
    }

    /// Removes entry `index` from the pack in `slot`; returns its value.
    pub(crate) fn pack_remove(
        &mut self,
        slot: &mut [u8; 8],
        depth: usize,
        pack: &PackRef<'_>,
        index: usize,
    ) -> Vec<u8> {
        let bits = word::load(slot);
        let old = pack.entry(index).2.to_vec();
        if pack.dense && inline_sized(pack.value_width) {
            // A dense pack of inline-sized values gives way to a Node256 of inline words (2,080
            // bytes, no more than the 255-entry pack with spare slots a copy would make), so the
            // next removals of the run each clear a slot instead of shifting half of a pack
            // (W1's deleterandom on dense keys); the Node256 shrinks as any inner node does,
            // and a key inserted back into it makes it dense again (`densify_node256`).
            *slot = self.one_byte_node(pack, depth, Some(index)).to_le_bytes();
            self.retire(bits);
            return old;
        }
        // In place only while the spare count (one more after this removal) fits its byte; a
        // pack emptied further is rebuilt with count / 8 spare slots. A dense pack of values
        // that are not inline-sized has no fence to shift: it is rebuilt as an ordinary pack of
        // 255 entries.
        if pack.count() > 2 && pack.spare() < u8::MAX as usize && !pack.dense {
            if let Some(mut writable) = self.writable_pack(bits, pack.version) {
                writable.remove(index);
                *slot = word::with_pack_full(bits, false).to_le_bytes();
                return old;
            }
        }
        let replacement = if pack.count() > 2 {
            rebuild_without(self.version, pack, index)
        } else {
            let keep = 1 - index;
            let mut suffix = pack.prefix.to_vec();
            let (first, rest, value) = pack.entry(keep);
            suffix.push(first);
            suffix.extend_from_slice(rest);
            value_word(&suffix, value)
        };
        *slot = replacement.to_le_bytes();
        self.retire(bits);
        old
    }

    /// A copy of the pack whose prefix has `extra` in front (it moves up by `extra.len()`).
    pub(crate) fn pack_with_prefix_before(&mut self, pack: &PackRef<'_>, extra: &[u8]) -> u64 {
        let mut prefix = extra.to_vec();
        prefix.extend_from_slice(pack.prefix);
        rebuild(self.version, pack, &prefix, None, None, &[])
    }
}

/// Whether two value words' keys can start a pack: same suffix length and value width.
pub(crate) fn can_pack(old_suffix: &[u8], old_value: &[u8], suffix: &[u8], value: &[u8]) -> bool {
    let common = common_prefix_len(old_suffix, suffix);
    old_suffix.len() == suffix.len()
        && old_value.len() == value.len()
        && common < suffix.len()
        && fits_pack(suffix.len() - common, value.len())
}

/// A pack of two entries (distinct suffixes of equal length, values of equal length).
pub(crate) fn pack_of_two(a: (&[u8], &[u8]), b: (&[u8], &[u8]), version: u64) -> u64 {
    let (low, high) = if a.0 < b.0 { (a, b) } else { (b, a) };
    let common = common_prefix_len(low.0, high.0);
    let key_width = low.0.len() - common;
    alloc_pack(
        &low.0[..common],
        key_width,
        low.1.len(),
        2,
        version,
        |writer| {
            writer.push(low.0[common], &low.0[common + 1..], low.1);
            writer.push(high.0[common], &high.0[common + 1..], high.1);
        },
    )
}

/// A copy of `pack` with a new prefix, optionally one value replaced or one entry inserted.
pub(crate) fn rebuild(
    version: u64,
    pack: &PackRef<'_>,
    prefix: &[u8],
    replace: Option<usize>,
    insert: Option<(usize, &[u8])>,
    value: &[u8],
) -> u64 {
    let count = pack.count() + usize::from(insert.is_some());
    alloc_pack(
        prefix,
        pack.key_width,
        pack.value_width,
        count,
        version,
        |writer| {
            if let (None, Some((at, suffix))) = (replace, insert) {
                // The common case (an insert into a pack with no spare slot, or one a snapshot
                // still reads): two block copies around the new entry.
                writer.push_entries(pack, 0, at);
                writer.push(suffix[0], &suffix[1..], value);
                writer.push_entries(pack, at, pack.count());
                return;
            }
            for index in 0..=pack.count() {
                if let Some((at, suffix)) = insert {
                    if at == index {
                        writer.push(suffix[0], &suffix[1..], value);
                    }
                }
                if index == pack.count() {
                    break;
                }
                let (first, rest, old) = pack.entry(index);
                writer.push(
                    first,
                    rest,
                    if replace == Some(index) { value } else { old },
                );
            }
        },
    )
}

/// A copy of `pack` without entry `skip`.
fn rebuild_without(version: u64, pack: &PackRef<'_>, skip: usize) -> u64 {
    alloc_pack(
        pack.prefix,
        pack.key_width,
        pack.value_width,
        pack.count() - 1,
        version,
        |writer| {
            writer.push_entries(pack, 0, skip);
            writer.push_entries(pack, skip + 1, pack.count());
        },
    )
}

/// A pack of entries `start..end` of `pack` without their first `cut` suffix bytes.
fn group_pack(version: u64, pack: &PackRef<'_>, start: usize, end: usize, cut: usize) -> u64 {
    let key_width = pack.key_width - cut;
    let mut suffix = Vec::new();
    alloc_pack(
        &[],
        key_width,
        pack.value_width,
        end - start,
        version,
        |writer| {
            for index in start..end {
                suffix_of(pack, index, &mut suffix);
                writer.push(suffix[cut], &suffix[cut + 1..], pack.entry(index).2);
            }
        },
    )
}
