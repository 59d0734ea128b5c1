//! Building a tree from a slice of sorted pairs already in memory: [`Tree::bulk_build_slice`].
//!
//! Where [`Tree::bulk_build`] streams (one pair at a time, a rightmost path of open nodes and a
//! buffer of pairs that may still become a pack), this build sees every pair at once, so it works
//! top-down on ranges of the slice: a range of keys sharing `depth` bytes is one word. A single
//! pair is a value word (inline in the child word when the key is used up and the value fits,
//! else a leaf); a range whose keys all have one length and whose values all have one length,
//! at most [`SLICE_PACK_ENTRIES_MAX`] of them, within the pack widths and within
//! [`pack_capacity_max`] of their record width, is one leaf pack (no spare slots); any other range is an inner node of the
//! smallest kind that holds its children, with the range's common prefix as its prefix, its
//! children being the sub-ranges that share one more byte (and a key equal to the prefix in the
//! value slot). Each key is read once per level it passes; nothing is buffered or copied.
//!
//! The work is a loop over an explicit stack of open nodes (no recursion: a key's length would
//! bound its depth). Every pair is validated (order, key and value lengths) before anything is
//! allocated, so an error leaks nothing and the build itself cannot fail.
//!
//! Used by artdb-tidstore's append path (blocks arrive in ascending order, then are built at
//! once), where keys are 4-byte block numbers and values at most 7 bytes.

use crate::cursor::common_prefix_len;
use crate::node::{self, alloc_pack_spare, build_inner, fits_pack, EntryList, Shape};
use crate::read::check_key;
use crate::tree::{check_value, value_word, Tree};
use crate::{pack_capacity_max, Error};

/// Most entries of a pack this build makes: 256, the pack bound when artdb-tidstore's append
/// path (this build's user) was measured (W4). Inserted packs may grow to `PACK_ENTRIES_MAX`
/// (1024, issue 13's wide packs for W1's composite keys); whether tidstore's 2-byte suffixes
/// gain from packs that large is not measured, so this build keeps its measured layout.
const SLICE_PACK_ENTRIES_MAX: usize = 256;

/// Version stamped on the built heap nodes and packs: the version `Tree::with_root` starts its
/// writer at, so the first writes after the build change them in place.
const SLICE_BUILD_VERSION: u64 = 1;

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

/// Reused buffers for one pack's fence bytes and records, handed to the pack writer as one
/// block (two copies per pack instead of two per entry).
#[derive(Default)]
struct PackScratch {
    fence: Vec<u8>,
    records: Vec<u8>,
}

/// What building a range gave: a finished word, or an open node pushed on the stack.
enum Started {
    Word(u64),
    Open,
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
        let root = build(pairs);
        Ok(Tree::with_root(root, pairs.len() as u64, None))
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
        let index = index as u64;
        match key.as_ref().cmp(previous.0.as_ref()) {
            std::cmp::Ordering::Greater => {}
            std::cmp::Ordering::Equal => return Err(Error::Duplicate { index }),
            std::cmp::Ordering::Less => return Err(Error::Unsorted { index }),
        }
    }
    Ok(())
}

/// The root word of the validated, sorted, non-repeating `pairs` (0 when empty).
fn build<K: AsRef<[u8]>, V: AsRef<[u8]>>(pairs: &[(K, V)]) -> u64 {
    if pairs.is_empty() {
        return 0;
    }
    let mut stack: Vec<OpenNode> = Vec::new();
    let mut scratch = PackScratch::default();
    let mut finished = match start(pairs, 0, pairs.len(), 0, 0, &mut stack, &mut scratch) {
        Started::Word(bits) => return bits,
        Started::Open => None,
    };
    while let Some(top) = stack.last_mut() {
        if let Some((byte, bits)) = finished.take() {
            top.entries.push(byte, bits);
        }
        if top.next < top.hi {
            let (lo, end) = (top.next, top.end);
            let byte = key_byte(pairs, lo, end);
            let hi = lo
                + pairs[lo..top.hi]
                    .iter()
                    .take_while(|(key, _)| key.as_ref().get(end) == Some(&byte))
                    .count();
            top.next = hi;
            let started = start(pairs, lo, hi, end + 1, byte, &mut stack, &mut scratch);
            if let Started::Word(bits) = started {
                finished = Some((byte, bits));
            }
            continue;
        }
        let Some(open) = stack.pop() else { break };
        let bits = close(pairs, &open);
        if stack.is_empty() {
            return bits;
        }
        finished = Some((open.byte, bits));
    }
    debug_assert!(false, "the stack emptied without returning the root");
    0
}

/// Byte `at` of key `index` (present: every key in a node's range is longer than its branch
/// position, except the one in its value slot, which is never grouped).
fn key_byte<K: AsRef<[u8]>, V>(pairs: &[(K, V)], index: usize, at: usize) -> u8 {
    let byte = pairs[index].0.as_ref().get(at).copied();
    debug_assert!(byte.is_some(), "key {index} is longer than {at}");
    byte.unwrap_or(0)
}

/// Builds the range `lo..hi` (non-empty) at `depth`: a word when it is one pair or one pack,
/// else an open node pushed on `stack`.
fn start<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    pairs: &[(K, V)],
    lo: usize,
    hi: usize,
    depth: usize,
    byte: u8,
    stack: &mut Vec<OpenNode>,
    scratch: &mut PackScratch,
) -> Started {
    let first = pairs[lo].0.as_ref();
    if hi - lo == 1 {
        return Started::Word(value_word(&first[depth..], pairs[lo].1.as_ref()));
    }
    let end = common_prefix_len(first, pairs[hi - 1].0.as_ref());
    if let Some(bits) = small_range(pairs, lo, hi, depth, end, scratch) {
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
        node.value = value_word(&[], pairs[lo].1.as_ref());
        node.next = lo + 1;
    }
    stack.push(node);
    Started::Open
}

/// The range `lo..hi` (at least two pairs, keys sharing `end` bytes) built at once when it is
/// small: one leaf pack at `depth` if its keys and values have uniform lengths that a pack holds,
/// else, if every key ends one byte after `end`, one inner node of value words (the last level
/// of fixed-length keys with values of mixed lengths). `None` for any other range.
fn small_range<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    pairs: &[(K, V)],
    lo: usize,
    hi: usize,
    depth: usize,
    end: usize,
    scratch: &mut PackScratch,
) -> Option<u64> {
    let count = hi - lo;
    if count > SLICE_PACK_ENTRIES_MAX {
        return None;
    }
    let range = &pairs[lo..hi];
    let (first, value) = (range[0].0.as_ref(), range[0].1.as_ref());
    let (key_len, value_len) = (first.len(), value.len());
    if key_len <= end {
        return None;
    }
    let (mut same_keys, mut same_values) = (true, true);
    for (key, value) in range {
        same_keys &= key.as_ref().len() == key_len;
        same_values &= value.as_ref().len() == value_len;
    }
    if !same_keys {
        return None;
    }
    if same_values
        && fits_pack(key_len - end, value_len)
        && count <= pack_capacity_max(key_len - end - 1 + value_len)
    {
        scratch.fence.clear();
        scratch.records.clear();
        scratch
            .records
            .reserve(count * (key_len - end - 1 + value_len));
        for (key, value) in range {
            let key = key.as_ref();
            scratch.fence.push(key[end]);
            if key_len > end + 1 {
                scratch.records.extend_from_slice(&key[end + 1..]);
            }
            scratch.records.extend_from_slice(value.as_ref());
        }
        let block = (&scratch.fence[..], &scratch.records[..]);
        return Some(alloc_pack_spare(
            &first[depth..end],
            key_len - end,
            value_len,
            count,
            0,
            SLICE_BUILD_VERSION,
            |writer| writer.push_block(block),
        ));
    }
    if key_len != end + 1 {
        return None;
    }
    let mut entries = EntryList::new();
    for (key, value) in range {
        entries.push(key.as_ref()[end], value_word(&[], value.as_ref()));
    }
    let shape = Shape {
        prefix: &first[depth..end],
        depth,
        version: SLICE_BUILD_VERSION,
        value: 0,
    };
    Some(build_inner(node::kind_for(count), &shape, &entries))
}

/// The inner node of a completed open node.
fn close<K: AsRef<[u8]>, V>(pairs: &[(K, V)], open: &OpenNode) -> u64 {
    let prefix = &pairs[open.prefix_key].0.as_ref()[open.depth..open.end];
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
