//! Building a tree from a slice of sorted pairs already in memory: [`Tree::bulk_build_slice`],
//! and [`Tree::bulk_build_fixed`] for fixed-width keys with inline values.
//!
//! Where [`Tree::bulk_build`] streams (one pair at a time, a rightmost path of open nodes and a
//! buffer of pairs that may still become a pack), this build sees every pair at once, so it works
//! top-down on ranges of the slice: a range of keys sharing `depth` bytes is one word. A single
//! pair is a value word (inline in the child word when the key is used up and the value fits,
//! else a leaf); a range whose keys all have one length and whose values all have one length,
//! at most [`SLICE_PACK_ENTRIES_MAX`] of them, within the pack widths and within
//! [`pack_capacity_max`] of their record width, is one leaf pack (no spare slots); any other
//! range is an inner node of the smallest kind that holds its children, with the range's common
//! prefix as its prefix, its children being the sub-ranges that share one more byte (and a key
//! equal to the prefix in the value slot). A child's sub-range is found by galloping and
//! bisecting over the sorted keys (`run_len`), so an upper level reads a few keys per child,
//! not every key below it; the last level reads each key once to make its word or pack entry.
//! Nothing is buffered or copied.
//!
//! The two entry points differ only in their input (the `Input` trait): general byte strings,
//! or `N`-byte keys with values of at most 7 bytes given as 8 bytes with the length in the last
//! one, whose child words are made with a mask and a shift instead of a loop over the value's
//! bytes and whose order is checked with one integer comparison per key. On W4's random pattern
//! (4-byte keys, values of 2 to 7 bytes) the fixed form more than halves the build's work per
//! key (measured in docs/benchmarks.md, W4).
//!
//! The work is a loop over an explicit stack of open nodes (no recursion: a key's length would
//! bound its depth). Every pair is validated (order, key and value lengths) before anything is
//! allocated, so an error leaks nothing and the build itself cannot fail.
//!
//! Used by artdb-tidstore's append path (blocks arrive in ascending order, then are built at
//! once), where keys are 4-byte block numbers and values at most 7 bytes.

use crate::lookup::check_key;
use crate::node::common_prefix_len;
use crate::node::{
    self, alloc_pack_spare, build_inner, build_node256, fits_pack, EntryList, Shape, KIND_NODE256,
};
use crate::tree::Tree;
use crate::write::writer::{check_value, value_word};
use crate::{pack_capacity_max, Error, INLINE_VALUE_LEN_MAX};

/// Most entries of a pack this build makes: 256, the pack bound when artdb-tidstore's append
/// path (this build's user) was measured (W4). Inserted packs may grow to `PACK_ENTRIES_MAX`
/// (the wide packs made for W1's composite keys); whether tidstore's 2-byte suffixes
/// gain from packs that large is not measured, so this build keeps its measured layout.
const SLICE_PACK_ENTRIES_MAX: usize = 256;

/// Version stamped on the built heap nodes and packs: the version `Tree::with_root` starts its
/// writer at, so the first writes after the build change them in place.
const SLICE_BUILD_VERSION: u64 = 1;

/// Byte of a fixed-width value ([`Tree::bulk_build_fixed`]) that holds the value's length.
const FIXED_VALUE_LEN_AT: usize = 7;

/// An inner node of the build still collecting its children.
struct OpenNode {
    /// Range of the slice below the node.
    hi: usize,
    /// Next index of the range not yet placed under a child.
    next: usize,
    /// Key depth of the node (bytes consumed above it).
    depth: usize,
    /// Branch position: the node's children differ at this key byte.
    end: usize,
    /// Index of a key whose bytes `depth..end` are the node's prefix.
    prefix_key: usize,
    /// The byte under which the node sits in its parent (unused at the root).
    byte: u8,
    value: u64,
    entries: EntryList,
}

/// Reused buffers: one pack's fence bytes and records, handed to the pack writer as one block
/// (two copies per pack instead of two per entry), and the entries of a last-level node (an
/// `EntryList` is 2.3 KiB: making a fresh one per node cost a memset each).
struct Scratch {
    fence: Vec<u8>,
    records: Vec<u8>,
    entries: EntryList,
}

/// What building a range gave: a finished word, or an open node pushed on the stack.
enum Started {
    Word(u64),
    Open,
}

/// The build's view of its validated, sorted, non-repeating input: the general slice of
/// `(key, value)` pairs, or the fixed-width pairs of [`Tree::bulk_build_fixed`], whose value
/// words are made without a loop over the value's bytes.
trait Input {
    /// Whether every key has the same length (known from the type: no per-range check).
    const UNIFORM_KEYS: bool;
    fn key(&self, index: usize) -> &[u8];
    fn value(&self, index: usize) -> &[u8];
    /// The word of pair `index`, whose key is used up at the node that holds it.
    #[inline]
    fn end_word(&self, index: usize) -> u64 {
        value_word(&[], self.value(index))
    }
    /// Whether the values of `lo..hi` (non-empty) all have one length.
    #[inline]
    fn same_value_lens(&self, lo: usize, hi: usize) -> bool {
        let len = self.value(lo).len();
        (lo..hi).all(|index| self.value(index).len() == len)
    }
    /// The inner node of `lo..hi` (at most 256 pairs whose keys end one byte after `end`, the
    /// byte they differ at): the last level of a build, each pair's end word under its last key
    /// byte.
    fn last_level(
        &self,
        lo: usize,
        hi: usize,
        end: usize,
        shape: &Shape<'_>,
        scratch: &mut Scratch,
    ) -> u64 {
        last_level_listed(self, lo, hi, end, shape, scratch)
    }
}

/// [`Input::last_level`] through the entry list: each pair's byte and end word pushed, then the
/// node of the kind their count asks for built from the list.
fn last_level_listed<I: Input + ?Sized>(
    input: &I,
    lo: usize,
    hi: usize,
    end: usize,
    shape: &Shape<'_>,
    scratch: &mut Scratch,
) -> u64 {
    let entries = &mut scratch.entries;
    entries.clear();
    for index in lo..hi {
        entries.push(input.key(index)[end], input.end_word(index));
    }
    build_inner(node::kind_for(hi - lo), shape, entries)
}

/// The general input: any sorted slice of byte-string pairs.
struct Pairs<'a, K, V>(&'a [(K, V)]);

impl<K: AsRef<[u8]>, V: AsRef<[u8]>> Input for Pairs<'_, K, V> {
    const UNIFORM_KEYS: bool = false;

    #[inline]
    fn key(&self, index: usize) -> &[u8] {
        self.0[index].0.as_ref()
    }

    #[inline]
    fn value(&self, index: usize) -> &[u8] {
        self.0[index].1.as_ref()
    }
}

/// The fixed-width input: `N`-byte keys and inline values of at most 7 bytes, the length in
/// byte 7 (checked at most 7 by `validate_fixed`).
struct Fixed<'a, const N: usize> {
    pairs: &'a [([u8; N], [u8; 8])],
    /// The inline word of `len` zero bytes, per `len`: an inline word is that header with the
    /// value's bytes little-endian above its low byte (byte `i` at bits `8(i+1)..`, `word.rs`).
    headers: [u64; 8],
    /// The mask of a value's `len` bytes in its little-endian integer, per `len` (a load where
    /// computing it took three instructions and a shift by a variable count).
    masks: [u64; 8],
}

impl<'a, const N: usize> Fixed<'a, N> {
    fn new(pairs: &'a [([u8; N], [u8; 8])]) -> Self {
        let zeros = [0u8; INLINE_VALUE_LEN_MAX];
        let headers =
            std::array::from_fn(|len| crate::word::inline(&zeros[..len.min(INLINE_VALUE_LEN_MAX)]));
        let masks = std::array::from_fn(|len| (1u64 << (8 * len)) - 1);
        Fixed {
            pairs,
            headers,
            masks,
        }
    }
}

impl<const N: usize> Fixed<'_, N> {
    /// The inline child word of a fixed-width value (its key used up).
    #[inline]
    fn fixed_word(&self, value: &[u8; 8]) -> u64 {
        let len = fixed_len(value);
        // The bytes above the length are masked off (the caller may leave anything there).
        let bits = u64::from_le_bytes(*value) & self.masks[len];
        let word = self.headers[len] | bits << 8;
        debug_assert_eq!(
            word,
            crate::word::inline(&value[..len]),
            "inline word layout"
        );
        word
    }
}

/// The length of a fixed-width value (at most 7 once validated, and never above 7: the mask is
/// one instruction where a `min` was two, and the same on validated input).
#[inline]
fn fixed_len(value: &[u8; 8]) -> usize {
    usize::from(value[FIXED_VALUE_LEN_AT]) & INLINE_VALUE_LEN_MAX
}

const _: () = assert!(
    INLINE_VALUE_LEN_MAX == 7,
    "fixed_len masks with INLINE_VALUE_LEN_MAX"
);

impl<const N: usize> Input for Fixed<'_, N> {
    const UNIFORM_KEYS: bool = true;

    #[inline]
    fn key(&self, index: usize) -> &[u8] {
        &self.pairs[index].0
    }

    #[inline]
    fn value(&self, index: usize) -> &[u8] {
        let value = &self.pairs[index].1;
        &value[..fixed_len(value)]
    }

    #[inline]
    fn end_word(&self, index: usize) -> u64 {
        self.fixed_word(&self.pairs[index].1)
    }

    #[inline]
    fn same_value_lens(&self, lo: usize, hi: usize) -> bool {
        // The length bytes compared raw (validated: at most 7), no slice made per pair.
        let range = &self.pairs[lo..hi];
        let len = range
            .first()
            .map_or(0, |(_, value)| value[FIXED_VALUE_LEN_AT]);
        range
            .iter()
            .all(|(_, value)| value[FIXED_VALUE_LEN_AT] == len)
    }

    /// A Node256 (more than 48 pairs: W4's random pattern fills 243 of 256 on average) is
    /// written in place, each end word stored once under its key byte; smaller kinds go through
    /// the entry list as in the general input. (The road not taken: the
    /// generic `add` of each node kind: slower, the fill was not inlined; a Node256's fill is a
    /// store per pair.)
    fn last_level(
        &self,
        lo: usize,
        hi: usize,
        end: usize,
        shape: &Shape<'_>,
        scratch: &mut Scratch,
    ) -> u64 {
        if node::kind_for(hi - lo) != KIND_NODE256 {
            return last_level_listed(self, lo, hi, end, shape, scratch);
        }
        let pairs = self.pairs.get(lo..hi).unwrap_or(&[]);
        build_node256(shape, |slots| {
            for (key, value) in pairs {
                let byte = key.get(end).copied().unwrap_or(0);
                slots[usize::from(byte)] = self.fixed_word(value).to_le_bytes();
            }
            pairs.len()
        })
    }
}

/// A tree over nodes just built. They carry the writer's first version, as `bulk_build`'s do:
/// the tree counts as changed, so its first snapshot moves the writer to the next version and
/// later writes copy what the snapshot reads instead of changing it in place (regression: they
/// changed nodes and freed packs under the snapshot).
fn built_tree(root: u64, len: u64) -> Tree {
    let mut tree = Tree::with_root(root, len, None);
    tree.parts_mut().1.dirty = true;
    tree
}

impl Tree {
    /// Builds a tree from a slice of pairs sorted by key (strictly increasing), each node once at
    /// its final size, leaf packs where a subtree's keys and values have uniform lengths.
    ///
    /// The same tree contents as [`Tree::bulk_build`] (the shapes may differ: this build makes a
    /// pack of any uniform range that fits one, as the insert path does); faster when the pairs
    /// are already in memory, as nothing is buffered. Unsorted input is `Error::Unsorted`, a
    /// repeated key `Error::Duplicate`, an oversized key or value `Error::KeyTooLarge` /
    /// `Error::ValueTooLarge`; on error nothing was allocated.
    pub fn bulk_build_slice<K, V>(pairs: &[(K, V)]) -> Result<Tree, Error>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        validate(pairs)?;
        let root = build(&Pairs(pairs), pairs.len());
        Ok(built_tree(root, pairs.len() as u64))
    }

    /// [`Tree::bulk_build_slice`] for fixed-width pairs: keys of `N` bytes and values of at most
    /// [`INLINE_VALUE_LEN_MAX`] bytes, each given as 8 bytes whose byte 7 is the value's length
    /// and whose bytes `0..length` are the value (the bytes between are ignored).
    ///
    /// Such values live in the child word, so the tree has no leaves; taking them in this form
    /// lets the build make each child word with a mask and a shift, and check the order with one
    /// integer comparison per key (`N <= 8`). artdb-tidstore's append path (4-byte block
    /// numbers, values of at most 7 bytes) is the user it was written for. Errors as for
    /// [`Tree::bulk_build_slice`]; a length byte above 7 is `Error::ValueTooLarge` (its `max` is
    /// [`INLINE_VALUE_LEN_MAX`]).
    pub fn bulk_build_fixed<const N: usize>(pairs: &[([u8; N], [u8; 8])]) -> Result<Tree, Error> {
        validate_fixed(pairs)?;
        let root = build(&Fixed::new(pairs), pairs.len());
        Ok(built_tree(root, pairs.len() as u64))
    }
}

/// Checks order and sizes of every pair.
fn validate<K: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: &[(K, V)]) -> Result<(), Error> {
    for (index, (key, value)) in pairs.iter().enumerate() {
        check_key(key.as_ref())?;
        check_value(value.as_ref())?;
        let Some(previous) = index.checked_sub(1).and_then(|i| pairs.get(i)) else {
            continue;
        };
        order(key.as_ref().cmp(previous.0.as_ref()), index)?;
    }
    Ok(())
}

/// The error for a key at `index` that compares `ordering` to the key before it.
#[inline]
fn order(ordering: std::cmp::Ordering, index: usize) -> Result<(), Error> {
    let index = index as u64;
    match ordering {
        std::cmp::Ordering::Greater => Ok(()),
        std::cmp::Ordering::Equal => Err(Error::Duplicate { index }),
        std::cmp::Ordering::Less => Err(Error::Unsorted { index }),
    }
}

/// Checks order and value lengths of fixed-width pairs: keys compared as big-endian integers
/// when they fit 8 bytes (the same order as the bytes'), else as byte strings.
fn validate_fixed<const N: usize>(pairs: &[([u8; N], [u8; 8])]) -> Result<(), Error> {
    check_key(&[0u8; N])?;
    if N <= 8 && fixed_pairs_valid(pairs) {
        return Ok(());
    }
    let mut previous: Option<u64> = None;
    for (index, (key, value)) in pairs.iter().enumerate() {
        let len = usize::from(value[FIXED_VALUE_LEN_AT]);
        if len > INLINE_VALUE_LEN_MAX {
            return Err(Error::ValueTooLarge {
                len,
                max: INLINE_VALUE_LEN_MAX,
            });
        }
        if N > 8 {
            if let Some(before) = index.checked_sub(1).and_then(|i| pairs.get(i)) {
                order(key[..].cmp(&before.0[..]), index)?;
            }
            continue;
        }
        let current = key_int(key);
        if let Some(previous) = previous {
            if current <= previous {
                order(current.cmp(&previous), index)?;
            }
        }
        previous = Some(current);
    }
    Ok(())
}

/// Whether fixed-width pairs with keys of at most 8 bytes ascend strictly with no length byte
/// above 7: one pass that folds each pair's two checks into a flag, with no branch per pair
/// (the pass that names the failing pair runs only when this says no).
#[inline]
fn fixed_pairs_valid<const N: usize>(pairs: &[([u8; N], [u8; 8])]) -> bool {
    let Some(((first, first_value), rest)) = pairs.split_first() else {
        return true;
    };
    // The length bytes are or-ed together: all are at most 7 (0b111) exactly when their or is.
    let mut lens = first_value[FIXED_VALUE_LEN_AT];
    let mut ascending = true;
    let mut previous = key_int(first);
    for (key, value) in rest {
        let current = key_int(key);
        ascending &= current > previous;
        lens |= value[FIXED_VALUE_LEN_AT];
        previous = current;
    }
    ascending & (usize::from(lens) <= INLINE_VALUE_LEN_MAX)
}

/// A key of at most 8 bytes as a big-endian integer, left-aligned (byte order is integer order).
#[inline]
fn key_int<const N: usize>(key: &[u8; N]) -> u64 {
    let mut bytes = [0u8; 8];
    let len = N.min(8);
    bytes[..len].copy_from_slice(&key[..len]);
    u64::from_be_bytes(bytes)
}

/// The root word of the validated input's `count` pairs (0 when empty).
fn build<I: Input>(input: &I, count: usize) -> u64 {
    if count == 0 {
        return 0;
    }
    let mut stack: Vec<OpenNode> = Vec::new();
    let mut scratch = Scratch {
        fence: Vec::new(),
        records: Vec::new(),
        entries: EntryList::new(),
    };
    let mut finished = match start(input, 0, count, 0, 0, &mut stack, &mut scratch) {
        Started::Word(bits) => return bits,
        Started::Open => None,
    };
    while let Some(top) = stack.last_mut() {
        if let Some((byte, bits)) = finished.take() {
            top.entries.push(byte, bits);
        }
        if top.next < top.hi {
            let (lo, end) = (top.next, top.end);
            let byte = key_byte(input, lo, end);
            let hi = lo + run_len(input, lo, top.hi, end, byte);
            top.next = hi;
            let started = start(input, lo, hi, end + 1, byte, &mut stack, &mut scratch);
            if let Started::Word(bits) = started {
                finished = Some((byte, bits));
            }
            continue;
        }
        let Some(open) = stack.pop() else { break };
        let bits = close(input, &open);
        if stack.is_empty() {
            return bits;
        }
        finished = Some((open.byte, bits));
    }
    debug_assert!(false, "the stack emptied without returning the root");
    0
}

/// Number of keys from `lo` (before `hi`) whose byte `at` is `byte` (key `lo`'s byte).
///
/// The keys of `lo..hi` share their first `at` bytes and are sorted, so their bytes at `at`
/// ascend: the run is found by galloping from `lo` and then bisecting, `O(log run)` key reads
/// instead of one per key (the upper levels of a large build have runs of thousands).
#[inline]
fn run_len<I: Input>(input: &I, lo: usize, hi: usize, at: usize, byte: u8) -> usize {
    let inside = |index: usize| input.key(index).get(at) == Some(&byte);
    // Invariant: `lo + known` is inside the run (index `lo` is), `lo + bound` is not or is `hi`.
    let (mut known, mut step) = (0usize, 1usize);
    let mut bound = hi - lo;
    while step < bound {
        if !inside(lo + step) {
            bound = step;
            break;
        }
        known = step;
        step = step.saturating_mul(2);
    }
    while bound - known > 1 {
        let middle = known + (bound - known) / 2;
        if inside(lo + middle) {
            known = middle;
        } else {
            bound = middle;
        }
    }
    bound
}

/// Byte `at` of key `index` (present: every key in a node's range is longer than its branch
/// position, except the one in its value slot, which is never grouped).
fn key_byte<I: Input>(input: &I, index: usize, at: usize) -> u8 {
    let byte = input.key(index).get(at).copied();
    debug_assert!(byte.is_some(), "key {index} is longer than {at}");
    byte.unwrap_or(0)
}

/// Builds the range `lo..hi` (non-empty) at `depth`: a word when it is one pair or one pack,
/// else an open node pushed on `stack`.
fn start<I: Input>(
    input: &I,
    lo: usize,
    hi: usize,
    depth: usize,
    byte: u8,
    stack: &mut Vec<OpenNode>,
    scratch: &mut Scratch,
) -> Started {
    let first = input.key(lo);
    if hi - lo == 1 {
        if first.len() == depth {
            return Started::Word(input.end_word(lo));
        }
        return Started::Word(value_word(&first[depth..], input.value(lo)));
    }
    let end = common_prefix_len(first, input.key(hi - 1));
    if let Some(bits) = small_range(input, lo, hi, depth, end, scratch) {
        return Started::Word(bits);
    }
    let mut node = OpenNode {
        hi,
        next: lo,
        depth,
        end,
        prefix_key: lo,
        byte,
        value: 0,
        entries: EntryList::new(),
    };
    if first.len() == end {
        // The shortest key of the range is the prefix itself: it sorts first.
        node.value = input.end_word(lo);
        node.next = lo + 1;
    }
    stack.push(node);
    Started::Open
}

/// The range `lo..hi` (at least two pairs, keys sharing `end` bytes) built at once when it is
/// small: one leaf pack at `depth` if its keys and values have uniform lengths that a pack holds,
/// else, if every key ends one byte after `end`, one inner node of value words (the last level
/// of fixed-length keys with values of mixed lengths). `None` for any other range.
fn small_range<I: Input>(
    input: &I,
    lo: usize,
    hi: usize,
    depth: usize,
    end: usize,
    scratch: &mut Scratch,
) -> Option<u64> {
    let count = hi - lo;
    if count > SLICE_PACK_ENTRIES_MAX {
        return None;
    }
    let first = input.key(lo);
    let (key_len, value_len) = (first.len(), input.value(lo).len());
    if key_len <= end {
        return None;
    }
    if !I::UNIFORM_KEYS && !(lo..hi).all(|index| input.key(index).len() == key_len) {
        return None;
    }
    let same_values = input.same_value_lens(lo, hi);
    if same_values
        && fits_pack(key_len - end, value_len)
        && count <= pack_capacity_max(key_len - end - 1 + value_len)
    {
        return Some(pack(input, lo, hi, depth, end, scratch));
    }
    if key_len != end + 1 {
        return None;
    }
    let shape = Shape {
        prefix: &first[depth..end],
        depth,
        version: SLICE_BUILD_VERSION,
        value: 0,
    };
    Some(input.last_level(lo, hi, end, &shape, scratch))
}

/// One leaf pack at `depth` of the range `lo..hi`, whose keys share `end` bytes and whose keys
/// and values have uniform lengths that a pack holds.
fn pack<I: Input>(
    input: &I,
    lo: usize,
    hi: usize,
    depth: usize,
    end: usize,
    scratch: &mut Scratch,
) -> u64 {
    let count = hi - lo;
    let first = input.key(lo);
    let (key_len, value_len) = (first.len(), input.value(lo).len());
    scratch.fence.clear();
    scratch.records.clear();
    scratch
        .records
        .reserve(count * (key_len - end - 1 + value_len));
    for index in lo..hi {
        let key = input.key(index);
        scratch.fence.push(key[end]);
        if key_len > end + 1 {
            scratch.records.extend_from_slice(&key[end + 1..]);
        }
        scratch.records.extend_from_slice(input.value(index));
    }
    let block = (&scratch.fence[..], &scratch.records[..]);
    alloc_pack_spare(
        &first[depth..end],
        key_len - end,
        value_len,
        count,
        0,
        SLICE_BUILD_VERSION,
        |writer| writer.push_block(block),
    )
}

/// The inner node of a completed open node.
fn close<I: Input>(input: &I, open: &OpenNode) -> u64 {
    let prefix = &input.key(open.prefix_key)[open.depth..open.end];
    let shape = Shape {
        prefix,
        depth: open.depth,
        version: SLICE_BUILD_VERSION,
        value: open.value,
    };
    build_inner(node::kind_for(open.entries.len()), &shape, &open.entries)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn check(pairs: &[(Vec<u8>, Vec<u8>)]) {
        let tree = Tree::bulk_build_slice(pairs).unwrap();
        let model: BTreeMap<_, _> = pairs.iter().cloned().collect();
        assert_eq!(tree.len(), model.len() as u64);
        if let Err(violations) = tree.verify() {
            panic!("verify: {violations:?}");
        }
        let items: Vec<(Vec<u8>, Vec<u8>)> = tree
            .iter()
            .map(|item| item.map(|(key, value)| (key, value.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(items
            .into_iter()
            .eq(model.iter().map(|(k, v)| (k.clone(), v.clone()))));
        for (key, value) in &model {
            assert_eq!(tree.get(key).unwrap(), Some(&value[..]));
        }
    }

    /// Keys from a small alphabet so that ranges share prefixes, prefixes are keys, and
    /// uniform runs (packs) and mixed ones (nodes) both occur.
    fn pairs() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
        let key = prop_oneof![
            prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 255]), 0..6),
            prop::collection::vec(any::<u8>(), 4..=4),
        ];
        let value = prop_oneof![
            prop::collection::vec(any::<u8>(), 2..=2),
            prop::collection::vec(any::<u8>(), 0..20),
        ];
        prop::collection::btree_map(key, value, 0..600)
            .prop_map(|map| map.into_iter().collect::<Vec<_>>())
    }

    proptest! {
        #[test]
        fn matches_btreemap_and_accepts_writes(pairs in pairs(), extra in pairs()) {
            check(&pairs);
            let mut tree = Tree::bulk_build_slice(&pairs).unwrap();
            let mut model: BTreeMap<_, _> = pairs.into_iter().collect();
            for (i, (key, value)) in extra.into_iter().enumerate() {
                if i % 3 == 0 {
                    prop_assert_eq!(tree.remove(&key).unwrap(), model.remove(&key));
                } else {
                    prop_assert_eq!(tree.insert(&key, &value).unwrap(), model.insert(key, value));
                }
            }
            prop_assert!(tree.verify().is_ok());
            let items: Vec<(Vec<u8>, Vec<u8>)> = tree
                .iter()
                .map(|item| item.map(|(key, value)| (key, value.to_vec())))
                .collect::<Result<_, _>>()
                .unwrap();
            prop_assert!(items.into_iter().eq(model.iter().map(|(k, v)| (k.clone(), v.clone()))));
        }
    }

    /// Fixed-width pairs: keys from a small alphabet (long runs, shared prefixes), values of
    /// 0 to 7 bytes with arbitrary bytes between the length and byte 7.
    fn fixed_pairs<const N: usize>() -> impl Strategy<Value = Vec<([u8; N], [u8; 8])>> {
        let key = prop_oneof![
            prop::array::uniform::<_, N>(prop::sample::select(vec![0u8, 1, 2, 255])),
            prop::array::uniform::<_, N>(any::<u8>()),
        ];
        let value = prop_oneof![
            (Just(2usize), any::<[u8; 8]>()),
            (0..=INLINE_VALUE_LEN_MAX, any::<[u8; 8]>()),
        ]
        .prop_map(|(len, mut bytes)| {
            bytes[FIXED_VALUE_LEN_AT] = len as u8;
            bytes
        });
        prop::collection::btree_map(key, value, 0..700)
            .prop_map(|map| map.into_iter().collect::<Vec<_>>())
    }

    /// `bulk_build_fixed` gives the tree `bulk_build_slice` gives for the same pairs written
    /// as byte strings: checked against a `BTreeMap`, then written to.
    fn check_fixed<const N: usize>(pairs: &[([u8; N], [u8; 8])]) -> Result<(), TestCaseError> {
        let general: Vec<(Vec<u8>, Vec<u8>)> = pairs
            .iter()
            .map(|(key, value)| {
                let len = usize::from(value[FIXED_VALUE_LEN_AT]);
                (key.to_vec(), value[..len].to_vec())
            })
            .collect();
        check(&general);
        let mut tree = Tree::bulk_build_fixed(pairs).unwrap();
        prop_assert!(tree.verify().is_ok());
        prop_assert_eq!(tree.len(), general.len() as u64);
        for (key, value) in &general {
            prop_assert_eq!(tree.get(key).unwrap(), Some(&value[..]));
        }
        let items: Vec<(Vec<u8>, Vec<u8>)> = tree
            .iter()
            .map(|item| item.map(|(key, value)| (key, value.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert_eq!(&items, &general);
        let mut model: BTreeMap<_, _> = general.into_iter().collect();
        for (i, (key, _)) in pairs.iter().enumerate().step_by(3) {
            let key = key.to_vec();
            if i % 2 == 0 {
                prop_assert_eq!(tree.remove(&key).unwrap(), model.remove(&key));
            } else {
                let value = vec![7u8; i % 12];
                prop_assert_eq!(tree.insert(&key, &value).unwrap(), model.insert(key, value));
            }
        }
        prop_assert!(tree.verify().is_ok());
        prop_assert!(tree
            .iter()
            .map(|item| item.unwrap())
            .map(|(key, value)| (key, value.to_vec()))
            .eq(model.into_iter()));
        Ok(())
    }

    proptest! {
        #[test]
        fn fixed_matches_the_slice_build(
            four in fixed_pairs::<4>(),
            one in fixed_pairs::<1>(),
            nine in fixed_pairs::<9>(),
        ) {
            check_fixed(&four)?;
            check_fixed(&one)?;
            check_fixed(&nine)?;
        }
    }

    #[test]
    fn fixed_input_errors_are_typed() {
        let value = |len: u8| {
            let mut bytes = [0u8; 8];
            bytes[FIXED_VALUE_LEN_AT] = len;
            bytes
        };
        let unsorted = [([0, 0, 0, 2], value(1)), ([0, 0, 0, 1], value(1))];
        assert!(matches!(
            Tree::bulk_build_fixed(&unsorted),
            Err(Error::Unsorted { index: 1 })
        ));
        let repeated = [([0, 0, 0, 1], value(1)), ([0, 0, 0, 1], value(2))];
        assert!(matches!(
            Tree::bulk_build_fixed(&repeated),
            Err(Error::Duplicate { index: 1 })
        ));
        let long = [
            ([0u8; 9], value(0)),
            ([1u8; 9], value(0)),
            ([0u8; 9], value(0)),
        ];
        assert!(matches!(
            Tree::bulk_build_fixed(&long),
            Err(Error::Unsorted { index: 2 })
        ));
        let too_long = [([0, 0, 0, 1], value(1)), ([0, 0, 0, 2], value(8))];
        assert!(matches!(
            Tree::bulk_build_fixed(&too_long),
            Err(Error::ValueTooLarge {
                len: 8,
                max: INLINE_VALUE_LEN_MAX
            })
        ));
        let huge_key = [([0u8; crate::KEY_LEN_MAX + 1], value(0))];
        assert!(matches!(
            Tree::bulk_build_fixed(&huge_key),
            Err(Error::KeyTooLarge { .. })
        ));
        let empty: [([u8; 4], [u8; 8]); 0] = [];
        assert!(Tree::bulk_build_fixed(&empty).unwrap().is_empty());
    }

    /// Last-level groups of every size around the Node48/Node256 edge (1, 48, 49, 200, 256 keys
    /// of one 256-key group), with values of mixed lengths (inner nodes, the Node256s filled in
    /// place) and of one length (packs): the fixed build holds the same pairs as the general
    /// one and has the same shape, node for node (`stats`).
    #[test]
    fn fixed_last_levels_of_every_size_match_the_slice_build() {
        let value = |len: usize, seed: u32| {
            let mut bytes = (seed.wrapping_mul(0x9E37_79B9) as u64 | 1).to_le_bytes();
            bytes[FIXED_VALUE_LEN_AT] = len as u8;
            bytes
        };
        let mut pairs: Vec<([u8; 4], [u8; 8])> = Vec::new();
        for group in 0..40u32 {
            let kept = [1u32, 48, 49, 200, 256][group as usize % 5];
            let mixed = group % 10 < 5;
            for low in 0..256u32 {
                // `kept` of the 256 keys, spread over the group.
                if (low * 97 % 256) >= kept {
                    continue;
                }
                let block = group << 8 | low;
                let len = if mixed {
                    [2, 4, 6, 7][block as usize % 4]
                } else {
                    2
                };
                pairs.push((block.to_be_bytes(), value(len, block)));
            }
        }
        let general: Vec<(Vec<u8>, Vec<u8>)> = pairs
            .iter()
            .map(|(key, value)| (key.to_vec(), value[..fixed_len(value)].to_vec()))
            .collect();
        let fixed = Tree::bulk_build_fixed(&pairs).unwrap();
        let slice = Tree::bulk_build_slice(&general).unwrap();
        assert!(fixed.stats().node256 >= 8, "{:?}", fixed.stats());
        assert_eq!(fixed.stats(), slice.stats());
        check_fixed(&pairs).unwrap();
    }

    #[test]
    fn run_len_gallops_to_the_end_of_each_run() {
        // Runs of every length from 1 to 70 under a one-byte branch, as `build` asks for them.
        let mut keys: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for byte in 0..70u8 {
            for i in 0..=byte {
                keys.push((vec![byte, i], vec![]));
            }
        }
        let input = Pairs(&keys[..]);
        let mut lo = 0;
        for byte in 0..70u8 {
            let run = run_len(&input, lo, keys.len(), 0, byte);
            assert_eq!(run, usize::from(byte) + 1);
            lo += run;
        }
        assert_eq!(lo, keys.len());
    }

    #[test]
    fn block_numbers_dense_sparse_and_full() {
        // Every 20th block with 2-byte values (packs), every block with mixed values (Node256s
        // of inline values), 300 consecutive blocks of 7-byte values (packs up to 256).
        let sparse: Vec<([u8; 4], [u8; 2])> = (0..100_000u32)
            .step_by(20)
            .map(|b| (b.to_be_bytes(), [1, 0]))
            .collect();
        let tree = Tree::bulk_build_slice(&sparse).unwrap();
        assert!(tree.stats().packs > 0);
        let mixed: Vec<([u8; 4], Vec<u8>)> = (0..70_000u32)
            .map(|b| (b.to_be_bytes(), vec![7; 2 + (b % 3) as usize * 2]))
            .collect();
        let full: Vec<([u8; 4], [u8; 7])> =
            (0..300u32).map(|b| (b.to_be_bytes(), [9; 7])).collect();
        for tree in [
            tree,
            Tree::bulk_build_slice(&mixed).unwrap(),
            Tree::bulk_build_slice(&full).unwrap(),
        ] {
            assert!(tree.verify().is_ok());
        }
        let pairs: Vec<(Vec<u8>, Vec<u8>)> =
            mixed.iter().map(|(k, v)| (k.to_vec(), v.clone())).collect();
        check(&pairs);
    }

    #[test]
    fn bad_input_is_a_typed_error() {
        let unsorted = [(vec![2u8], vec![0u8]), (vec![1], vec![0])];
        assert!(matches!(
            Tree::bulk_build_slice(&unsorted),
            Err(Error::Unsorted { index: 1 })
        ));
        let repeated = [(vec![1u8], vec![0u8]), (vec![1], vec![1])];
        assert!(matches!(
            Tree::bulk_build_slice(&repeated),
            Err(Error::Duplicate { index: 1 })
        ));
        let huge = [(vec![1u8], vec![0u8; crate::VALUE_LEN_MAX + 1])];
        assert!(matches!(
            Tree::bulk_build_slice(&huge),
            Err(Error::ValueTooLarge { .. })
        ));
        let empty: [(Vec<u8>, Vec<u8>); 0] = [];
        let tree = Tree::bulk_build_slice(&empty).unwrap();
        assert!(tree.is_empty() && tree.verify().is_ok());
    }
}
