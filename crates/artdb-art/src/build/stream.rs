//! Bulk building from sorted pairs in one pass, every node built once at its final size:
//! [`Tree::bulk_build`] (in memory) and [`Tree::bulk_persist`] (streamed through a `NodeSink`,
//! each node written as soon as its subtree is complete, O(key length) memory).
//!
//! The build keeps the open nodes of the rightmost path (a stack with strictly increasing
//! branch positions `end`) and the last key still pending placement. For each new key with
//! longest common prefix `l` with the pending key, the open nodes branching beyond `l` are
//! complete: the pending entry goes into the deepest, which is built (smallest kind that fits,
//! prefix = the bytes between its parent's branch position and its own) and becomes pending in
//! turn. A node branching at `l` is then opened if none is.

use crate::lookup::{check_key, Resolver};
use crate::node::common_prefix_len;
use crate::node::{
    self, alloc_pack_spare, build_inner, dense_image_len, fill_dense_image, fits_pack, EntryList,
    Shape, DENSE_ENTRIES,
};
use crate::persist::{checked_write, write_leaf, NodeSink};
use crate::tree::Tree;
use crate::word::{self, Word, INLINE_VALUE_LEN_MAX};
use crate::write::writer::{check_value, value_word};
use crate::{ChildWord, Error, PACK_ENTRIES_MAX};

/// Version stamped on bulk-built heap nodes and packs.
const BULK_VERSION: u64 = 1;

/// A child of an open node: a finished word, or a run of buffered pairs that may still become
/// part of a larger pack.
#[derive(Clone, Copy)]
enum Child {
    Word(u64),
    /// `count` pairs from buffer index `start` (absolute), all of one key and value length.
    Run {
        start: usize,
        count: usize,
    },
}

/// What the keys below an open node have in common so far.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Widths {
    None,
    /// Every key has this length and every value this length.
    Uniform(usize, usize),
    /// The subtree cannot be one pack (lengths differ, a finished node below, too wide).
    Mixed,
}

/// A node of the rightmost path, still open.
struct OpenNode {
    /// Branch position: key bytes before the child byte.
    end: usize,
    entries: Vec<(u8, Child)>,
    value: u64,
    /// Keys below (including the value slot's).
    keys: usize,
    widths: Widths,
    /// Entries before this index are all built words (`settle` starts here, so a node that can
    /// no longer become a pack builds each run once instead of rescanning its entries).
    settled: usize,
}

impl OpenNode {
    /// Whether the subtree may still become one leaf pack (and so keeps its pairs buffered).
    fn packable(&self) -> bool {
        match self.widths {
            // The pack's key width is at most `key_len - end` (its prefix may be longer), so its
            // capacity is at least the one of that stride.
            Widths::Uniform(key_len, value_len) => {
                self.keys
                    <= node::pack_capacity_max_for(key_len.saturating_sub(self.end), value_len)
            }
            _ => false,
        }
    }
}

/// The entry waiting for its place.
enum Pending {
    /// The last key read (`Builder::last`, `Builder::last_value`), not yet in the pair buffer:
    /// it is copied there only if it joins a node that may still become a pack.
    Last,
    /// A run of buffered pairs (the last key read, or a packable subtree ending with it).
    Run {
        start: usize,
        count: usize,
        key_len: usize,
        value_len: usize,
    },
    /// A completed subtree containing the last key, with its key count.
    Node(u64, usize),
}

/// Pairs not yet built into words: the last key's, and those of open packable subtrees.
#[derive(Default)]
struct PairBuffer {
    bytes: Vec<u8>,
    /// (offset into `bytes` relative to `byte_base`, key length, value length) per pair.
    spans: Vec<(usize, usize, usize)>,
    /// Absolute index of `spans[0]`.
    base: usize,
    /// Offset of `bytes[0]` in the absolute byte stream.
    byte_base: usize,
}

impl PairBuffer {
    fn push(&mut self, key: &[u8], value: &[u8]) -> usize {
        self.spans
            .push((self.byte_base + self.bytes.len(), key.len(), value.len()));
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
        self.base + self.spans.len() - 1
    }

    /// Key and value of pair `index` (absolute; not yet dropped).
    fn get(&self, index: usize) -> (&[u8], &[u8]) {
        let (at, key_len, value_len) = self.spans[index - self.base];
        let at = at - self.byte_base;
        let pair = &self.bytes[at..at + key_len + value_len];
        pair.split_at(key_len)
    }

    /// Drops the pairs before absolute index `keep_from`.
    fn drop_before(&mut self, keep_from: usize) {
        let count = keep_from.saturating_sub(self.base).min(self.spans.len());
        if count == 0 {
            return;
        }
        let byte_end = self
            .spans
            .get(count)
            .map_or(self.byte_base + self.bytes.len(), |span| span.0);
        self.bytes.drain(..byte_end - self.byte_base);
        self.byte_base = byte_end;
        self.spans.drain(..count);
        self.base += count;
    }
}

struct Builder<'s> {
    stack: Vec<OpenNode>,
    last: Vec<u8>,
    last_value: Vec<u8>,
    /// When set, the last value is the inline word here and `last_value` is stale (the dense
    /// fast path keeps values of up to 7 bytes as words: copying them costs more than the rest).
    last_inline: Option<u64>,
    /// Where a node on its way to the sink is composed (reused).
    scratch: Vec<u8>,
    /// Entry lists of closed nodes, reused (at most one per level of the path).
    spare_entries: Vec<Vec<(u8, Child)>>,
    pending: Option<Pending>,
    pairs: PairBuffer,
    /// Where finished words go: `None` keeps them on the heap.
    sink: Option<&'s mut dyn NodeSink>,
    /// The offset of the last dense pack with no prefix written to the sink, and the `flags`
    /// hint its parent gets (node/mod.rs).
    dense_written: Option<(u64, u8)>,
    /// The offset of the last leaf or pack `emit` wrote whose parent gets a `flags` hint (an
    /// ordinary pack: node/mod.rs), and the hint.
    leaf_written: Option<(u64, u8)>,
}

/// Widths of the keys below a node branching at `end` after adding keys of `key_len` and values
/// of `value_len`: uniform only while one leaf pack (at that node) could hold them and would
/// replace leaves (a node of inline values, key width 1, stays a node: it is as small and faster).
fn merge_widths(widths: Widths, end: usize, key_len: usize, value_len: usize) -> Widths {
    let key_width = key_len.saturating_sub(end);
    let fits =
        fits_pack(key_width, value_len) && !(key_width == 1 && value_len <= INLINE_VALUE_LEN_MAX);
    match widths {
        Widths::None if fits => Widths::Uniform(key_len, value_len),
        Widths::Uniform(k, v) if fits && k == key_len && v == value_len => widths,
        _ => Widths::Mixed,
    }
}

/// The value width when `open` (settled) is a full run of 256 one-byte suffixes whose values are
/// inline words of one length and it has no value slot: the shape a dense pack replaces.
fn dense_value_width(open: &OpenNode) -> Option<usize> {
    if open.value != 0 || open.entries.len() != DENSE_ENTRIES {
        return None;
    }
    let mut width = None;
    for &(_, child) in &open.entries {
        let Child::Word(bits) = child else {
            return None;
        };
        let Word::Inline(len) = word::decode(bits) else {
            return None;
        };
        if *width.get_or_insert(len) != len {
            return None;
        }
    }
    width
}

impl<'s> Builder<'s> {
    /// An empty builder: words stay on the heap without a sink, or go to `sink`.
    fn new(sink: Option<&'s mut dyn NodeSink>) -> Builder<'s> {
        Builder {
            stack: Vec::new(),
            last: Vec::new(),
            last_value: Vec::new(),
            last_inline: None,
            spare_entries: Vec::new(),
            scratch: Vec::new(),
            pending: None,
            pairs: PairBuffer::default(),
            sink,
            dense_written: None,
            leaf_written: None,
        }
    }

    /// A finished word: kept on the heap, or written to the sink and freed.
    fn emit(&mut self, bits: u64) -> Result<u64, Error> {
        let Some(sink) = self.sink.as_deref_mut() else {
            return Ok(bits);
        };
        let offset = match word::decode(bits) {
            Word::HeapLeaf(_) => {
                let (offset, flags) = write_leaf(&Resolver { source: None }, sink, bits)?;
                if flags != 0 {
                    self.leaf_written = Some((offset, flags));
                }
                offset
            }
            Word::HeapNode(_) => {
                // Inner nodes go to the sink from `close_top`, composed in the scratch buffer.
                return Err(Error::Storage(
                    "bulk build: an inner node reached the leaf writer".to_string(),
                ));
            }
            _ => return Ok(bits),
        };
        // SAFETY: the image was copied to the sink above and nothing references the heap copy.
        unsafe { crate::write::cow::free_word(bits) };
        Ok(word::persisted(offset))
    }

    /// Builds the word of a run of `count` buffered pairs whose word sits at `depth`: a leaf or
    /// inline value for one pair, a leaf pack (no spare slots) for more.
    fn build_run(&mut self, start: usize, count: usize, depth: usize) -> Result<u64, Error> {
        if count == 1 {
            let (key, value) = self.pairs.get(start);
            let bits = value_word(&key[depth..], value);
            return self.emit(bits);
        }
        let (first, value) = self.pairs.get(start);
        let (last, _) = self.pairs.get(start + count - 1);
        let common = common_prefix_len(first, last);
        let (key_width, value_width) = (first.len() - common, value.len());
        let prefix = &first[depth.min(common)..common];
        let pairs = &self.pairs;
        let bits = alloc_pack_spare(
            prefix,
            key_width,
            value_width,
            count,
            0,
            BULK_VERSION,
            |writer| {
                for index in start..start + count {
                    let (key, value) = pairs.get(index);
                    writer.push(key[common], &key[common + 1..], value);
                }
            },
        );
        self.emit(bits)
    }

    /// Builds every buffered run of open node `node_index` into words.
    fn settle(&mut self, node_index: usize) -> Result<(), Error> {
        let depth = self.stack[node_index].end + 1;
        let (from, to) = {
            let node = &self.stack[node_index];
            (node.settled, node.entries.len())
        };
        for entry in from..to {
            if let (_, Child::Run { start, count }) = self.stack[node_index].entries[entry] {
                let bits = self.build_run(start, count, depth)?;
                self.stack[node_index].entries[entry].1 = Child::Word(bits);
            }
            // Past each built entry, so an error leaves `settled` at the first unbuilt run.
            self.stack[node_index].settled = entry + 1;
        }
        Ok(())
    }

    /// Adds a subtree of `keys` keys with `widths` to node `node_index`; settles its runs once
    /// it can no longer become a pack.
    fn account(&mut self, node_index: usize, keys: usize, widths: Widths) -> Result<(), Error> {
        let node = &mut self.stack[node_index];
        node.keys += keys;
        node.widths = match widths {
            Widths::Uniform(key_len, value_len) => {
                merge_widths(node.widths, node.end, key_len, value_len)
            }
            Widths::None => node.widths,
            Widths::Mixed => Widths::Mixed,
        };
        if !node.packable() {
            self.settle(node_index)?;
        }
        Ok(())
    }

    fn place(&mut self, node_index: usize) -> Result<(), Error> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let end = self.stack[node_index].end;
        match pending {
            Pending::Last => {
                self.sync_last_value();
                if self.last.len() == end {
                    let bits = self.emit(value_word(&[], &self.last_value))?;
                    self.stack[node_index].value = bits;
                    self.account(node_index, 1, Widths::Mixed)?;
                } else if self.stack[node_index].widths == Widths::Mixed {
                    // A node that can no longer become a pack builds the key's word at once.
                    let byte = self.last[end];
                    let bits = value_word(&self.last[end + 1..], &self.last_value);
                    let bits = self.emit(bits)?;
                    let node = &mut self.stack[node_index];
                    if node.settled == node.entries.len() {
                        node.settled += 1;
                    }
                    node.entries.push((byte, Child::Word(bits)));
                    node.keys += 1;
                } else {
                    let byte = self.last[end];
                    let start = self.pairs.push(&self.last, &self.last_value);
                    self.stack[node_index]
                        .entries
                        .push((byte, Child::Run { start, count: 1 }));
                    let widths = Widths::Uniform(self.last.len(), self.last_value.len());
                    self.account(node_index, 1, widths)?;
                }
            }
            Pending::Run {
                start,
                count,
                key_len,
                value_len,
            } => {
                if count == 1 && key_len == end {
                    let (_, value) = self.pairs.get(start);
                    let bits = value_word(&[], value);
                    let bits = self.emit(bits)?;
                    self.stack[node_index].value = bits;
                    self.account(node_index, 1, Widths::Mixed)?;
                } else {
                    let byte = self.last[end];
                    self.stack[node_index]
                        .entries
                        .push((byte, Child::Run { start, count }));
                    self.account(node_index, count, Widths::Uniform(key_len, value_len))?;
                }
            }
            Pending::Node(bits, keys) => {
                let byte = self.last[end];
                self.stack[node_index]
                    .entries
                    .push((byte, Child::Word(bits)));
                self.account(node_index, keys, Widths::Mixed)?;
            }
        }
        Ok(())
    }

    /// Completes the top open node under a parent branching at `parent_end` (None: the root).
    fn close_top(&mut self, parent_end: Option<usize>) -> Result<(), Error> {
        let top_index = self.stack.len() - 1;
        self.place(top_index)?;
        let top = &self.stack[top_index];
        if top.packable() && top.value == 0 {
            if let (Widths::Uniform(key_len, value_len), Some(&(_, Child::Run { start, .. }))) =
                (top.widths, top.entries.first())
            {
                // The whole subtree stays a run: a pack at its parent's slot (or a larger one).
                self.pending = Some(Pending::Run {
                    start,
                    count: top.keys,
                    key_len,
                    value_len,
                });
                if let Some(open) = self.stack.pop() {
                    self.recycle(open.entries);
                }
                return Ok(());
            }
        }
        self.settle(top_index)?;
        let Some(open) = self.stack.pop() else {
            return Ok(());
        };
        let depth = parent_end.map_or(0, |end| end + 1);
        if let Some(value_width) = dense_value_width(&open) {
            return self.close_dense(open, depth, value_width);
        }
        if self.sink.is_some() {
            // Straight to the sink: the image is composed in a reused buffer, so no heap node is
            // allocated, copied and freed per node (persisted images carry version 0).
            let kind = node::kind_for(
                open.entries
                    .iter()
                    .filter(|(_, child)| matches!(child, Child::Word(_)))
                    .count(),
            );
            let mut above = word::decode(open.value).persisted();
            let words = open
                .entries
                .iter()
                .filter_map(|&(byte, child)| match child {
                    Child::Word(bits) => Some((byte, bits)),
                    Child::Run { .. } => None,
                });
            let mut flags = 0;
            for (_, bits) in words.clone() {
                above = above.max(word::decode(bits).persisted());
                if let Some((offset, hint)) = self.dense_written {
                    if bits == word::persisted(offset) {
                        flags = hint;
                    }
                }
                if let Some((offset, hint)) = self.leaf_written {
                    if bits == word::persisted(offset) && flags == 0 {
                        flags = hint;
                    }
                }
            }
            let shape = Shape {
                prefix: &self.last[depth..open.end],
                depth,
                version: 0,
                value: open.value,
            };
            let mut image = std::mem::take(&mut self.scratch);
            image.clear();
            image.resize(node::inner_len(kind, shape.prefix.len()), 0);
            node::fill_inner(&mut image, kind, &shape, words);
            if let Some(at) = image.get_mut(node::FLAGS_AT) {
                *at = flags;
            }
            let written = match self.sink.as_deref_mut() {
                Some(sink) => checked_write(sink, &image, above),
                None => Ok(0),
            };
            self.scratch = image;
            self.recycle(open.entries);
            let offset = written?;
            self.pending = Some(Pending::Node(word::persisted(offset), open.keys));
            return Ok(());
        }
        let mut entries = EntryList::new();
        for &(byte, child) in &open.entries {
            if let Child::Word(bits) = child {
                entries.push(byte, bits);
            }
        }
        let shape = Shape {
            prefix: &self.last[depth..open.end],
            depth,
            version: BULK_VERSION,
            value: open.value,
        };
        let bits = build_inner(node::kind_for(entries.len()), &shape, &entries);
        self.recycle(open.entries);
        self.pending = Some(Pending::Node(self.emit(bits)?, open.keys));
        Ok(())
    }

    /// Completes `open` (256 inline values of `value_width` bytes, no value slot; its word sits
    /// at `depth`) as a dense pack instead of a Node256: 16 + prefix + 256 x `value_width`
    /// bytes instead of 2,080 (W2's leaf level; node/pack/dense.rs). With a sink the image is composed
    /// in the scratch buffer, as for inner nodes.
    fn close_dense(
        &mut self,
        open: OpenNode,
        depth: usize,
        value_width: usize,
    ) -> Result<(), Error> {
        let prefix = &self.last[depth..open.end];
        let entries = &open.entries;
        // `dense_value_width` checked: 256 inline words of `value_width` bytes, so bytes 0..=255
        // in order.
        let fill = |writer: &mut node::PackWriter<'_>| {
            writer.push_inline_words(entries.iter().filter_map(|&(_, child)| match child {
                Child::Word(bits) => Some(bits),
                _ => None,
            }));
        };
        let bits = if self.sink.is_some() {
            let mut image = std::mem::take(&mut self.scratch);
            image.clear();
            image.resize(dense_image_len(prefix.len(), value_width), 0);
            fill_dense_image(&mut image, prefix, value_width, 0, fill);
            let written = match self.sink.as_deref_mut() {
                Some(sink) => checked_write(sink, &image, None),
                None => Ok(0),
            };
            self.scratch = image;
            let offset = written?;
            if prefix.is_empty() {
                self.dense_written = Some((offset, node::dense_children_flags(value_width)));
            }
            word::persisted(offset)
        } else {
            alloc_pack_spare(prefix, 1, value_width, DENSE_ENTRIES, 0, BULK_VERSION, fill)
        };
        let keys = open.keys;
        self.recycle(open.entries);
        self.pending = Some(Pending::Node(bits, keys));
        Ok(())
    }

    /// Keeps a closed node's (emptied) entry list for the next node opened, so each node does
    /// not regrow one from nothing.
    fn recycle(&mut self, mut entries: Vec<(u8, Child)>) {
        entries.clear();
        self.spare_entries.push(entries);
    }

    /// Drops buffered pairs no open run refers to any more: runs live only in packable open
    /// nodes, which are the deepest ones, so the shallowest of them holds the oldest run.
    fn trim(&mut self) {
        let oldest_open = self
            .stack
            .iter()
            .filter(|node| node.packable())
            .find_map(|node| match node.entries.first() {
                Some(&(_, Child::Run { start, .. })) => Some(start),
                _ => None,
            });
        let pending = match self.pending {
            Some(Pending::Run { start, .. }) => Some(start),
            _ => None,
        };
        if let Some(keep_from) = oldest_open.into_iter().chain(pending).min() {
            self.pairs.drop_before(keep_from);
        }
    }

    /// Adds `key` (greater than the last key, sharing `common` bytes with it).
    fn add(&mut self, key: &[u8], value: &[u8], common: usize) -> Result<(), Error> {
        while self.stack.last().is_some_and(|top| top.end > common) {
            let next_end = self.stack.len().checked_sub(2).map(|i| self.stack[i].end);
            let parent_end = next_end.map_or(common, |end| end.max(common));
            self.close_top(Some(parent_end))?;
        }
        if self.stack.last().map_or(true, |top| top.end < common) {
            let entries = self.spare_entries.pop().unwrap_or_default();
            self.stack.push(OpenNode {
                end: common,
                entries,
                value: 0,
                keys: 0,
                widths: Widths::None,
                settled: 0,
            });
        }
        let top_index = self.stack.len() - 1;
        self.place(top_index)?;
        self.start_run(key, value);
        if self.pairs.spans.len() >= 2 * PACK_ENTRIES_MAX {
            self.trim();
        }
        Ok(())
    }

    /// The dense-key fast path of [`Builder::add`]: when `key` differs from the last key only
    /// in its final byte, both keys have the same length, the last key's value fits inline and
    /// the node branching at that byte can no longer become a pack, the last key's inline word
    /// joins that node and `key` becomes the last key, without the general bookkeeping. Returns
    /// whether it applied (nothing changed otherwise). Inlined into `feed`, its one caller.
    #[inline(always)]
    fn add_sibling(&mut self, key: &[u8], value: &[u8], common: usize) -> bool {
        if key.len() != common + 1
            || self.last.len() != common + 1
            || (self.last_inline.is_none() && self.last_value.len() > INLINE_VALUE_LEN_MAX)
            || !matches!(self.pending, Some(Pending::Last))
        {
            return false;
        }
        let Some(top) = self.stack.last_mut() else {
            return false;
        };
        if top.end != common || top.widths != Widths::Mixed || top.settled != top.entries.len() {
            return false;
        }
        self.push_sibling(key, value, common);
        true
    }

    /// What [`Builder::add_sibling`] does once its conditions hold (the caller checked them, or
    /// knows they still hold: see `feed`): the last key's word joins the top node and `key`
    /// becomes the last key.
    #[inline(always)]
    fn push_sibling(&mut self, key: &[u8], value: &[u8], common: usize) {
        let last_word = match self.last_inline {
            Some(bits) => bits,
            None => word::inline(&self.last_value),
        };
        let Some(top) = self.stack.last_mut() else {
            debug_assert!(false, "a sibling joins the open top node");
            return;
        };
        top.entries
            .push((self.last[common], Child::Word(last_word)));
        top.keys += 1;
        top.settled += 1;
        self.last[common] = key[common];
        if value.len() <= INLINE_VALUE_LEN_MAX {
            self.last_inline = Some(word::inline(value));
        } else {
            self.last_inline = None;
            self.last_value.clear();
            self.last_value.extend_from_slice(value);
        }
    }

    /// Makes `key` the pending entry (and the last key).
    fn start_run(&mut self, key: &[u8], value: &[u8]) {
        self.pending = Some(Pending::Last);
        self.last.clear();
        self.last.extend_from_slice(key);
        self.last_value.clear();
        self.last_value.extend_from_slice(value);
        self.last_inline = None;
    }

    /// Makes `last_value` hold the last value's bytes (after the fast path kept it as a word).
    fn sync_last_value(&mut self) {
        if let Some(bits) = self.last_inline.take() {
            let slot = bits.to_le_bytes();
            self.last_value.clear();
            if let Word::Inline(len) = word::decode(bits) {
                self.last_value
                    .extend_from_slice(word::inline_value(&slot, len));
            }
        }
    }

    fn finish(&mut self) -> Result<u64, Error> {
        while !self.stack.is_empty() {
            let parent_end = self.stack.len().checked_sub(2).map(|i| self.stack[i].end);
            self.close_top(parent_end)?;
        }
        match self.pending.take() {
            Some(Pending::Last) => {
                self.sync_last_value();
                self.emit(value_word(&self.last, &self.last_value))
            }
            Some(Pending::Run { start, count, .. }) => self.build_run(start, count, 0),
            Some(Pending::Node(bits, _)) => Ok(bits),
            None => Ok(0),
        }
    }

    /// Feeds all pairs; returns the count.
    fn feed<I, K, V>(&mut self, pairs: I) -> Result<u64, Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut len = 0u64;
        // Whether the last key went in by `add_sibling` with an inline value: then nothing but
        // the last key's final byte and value changed since, so `add_sibling`'s conditions on
        // the builder (the pending entry, the top node's branch position, widths and settled
        // entries) still hold, and a next key that is the last key's sibling (same length, same
        // bytes but a greater last one, an inline value: valid, in order) needs no other test.
        // W2's dense keys take this path for all but about two keys in 128 (`add` runs once
        // per dense pack, and the key after each goes through `add_sibling`).
        let mut sibling = false;
        for (index, (key, value)) in pairs.into_iter().enumerate() {
            let (key, value) = (key.as_ref(), value.as_ref());
            if sibling {
                let common = common_prefix_len(&self.last, key);
                if key.len() == common + 1
                    && self.last.len() == key.len()
                    && value.len() <= INLINE_VALUE_LEN_MAX
                    && key[common] > self.last[common]
                {
                    self.push_sibling(key, value, common);
                    len += 1;
                    continue;
                }
                sibling = false;
            }
            check_key(key)?;
            check_value(value)?;
            if index == 0 {
                self.start_run(key, value);
            } else {
                let common = common_prefix_len(&self.last, key);
                // Greater exactly when the keys differ at `common` with the new key's byte
                // higher, or the last key is a proper prefix of the new one.
                let order = match (self.last.get(common), key.get(common)) {
                    (Some(last), Some(next)) => next.cmp(last),
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, None) => std::cmp::Ordering::Equal,
                };
                if order == std::cmp::Ordering::Greater && self.add_sibling(key, value, common) {
                    sibling = value.len() <= INLINE_VALUE_LEN_MAX;
                    len += 1;
                    continue;
                }
                match order {
                    std::cmp::Ordering::Less => {
                        return Err(Error::Unsorted {
                            index: index as u64,
                        })
                    }
                    std::cmp::Ordering::Equal => {
                        return Err(Error::Duplicate {
                            index: index as u64,
                        })
                    }
                    std::cmp::Ordering::Greater => self.add(key, value, common)?,
                }
            }
            len += 1;
        }
        Ok(len)
    }

    /// Frees every heap word still held by the builder (after an error).
    fn discard(&mut self) {
        let mut words: Vec<u64> = Vec::new();
        for open in self.stack.drain(..) {
            words.push(open.value);
            words.extend(open.entries.iter().filter_map(|&(_, child)| match child {
                Child::Word(bits) => Some(bits),
                Child::Run { .. } => None,
            }));
        }
        if let Some(Pending::Node(bits, _)) = self.pending.take() {
            words.push(bits);
        }
        for bits in words {
            // SAFETY: built by this builder and referenced only by its open nodes, which are gone.
            unsafe { crate::write::cow::free_tree(bits) };
        }
    }
}

impl Tree {
    /// Builds a tree from pairs sorted by key (strictly increasing), each node at its final
    /// size. Unsorted input is `Error::Unsorted`, a repeated key `Error::Duplicate`.
    pub fn bulk_build<I, K, V>(pairs: I) -> Result<Tree, Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut builder = Builder::new(None);
        let result = builder
            .feed(pairs)
            .and_then(|len| Ok((builder.finish()?, len)));
        match result {
            Ok((root, len)) => {
                let mut tree = Tree::with_root(root, len, None);
                // The built nodes carry the writer's first version (`BULK_VERSION`): the tree
                // counts as changed, so its first snapshot moves the writer to the next version
                // and later writes copy what the snapshot reads instead of changing it in place.
                tree.parts_mut().1.dirty = true;
                Ok(tree)
            }
            Err(error) => {
                builder.discard();
                Err(error)
            }
        }
    }

    /// Builds the persisted images of a tree from sorted pairs straight into `sink`, each node
    /// written as soon as its subtree is complete (children first), holding O(key length) nodes
    /// in memory. Returns the root word and the number of keys; open it with [`Tree::open`].
    pub fn bulk_persist<I, K, V>(
        pairs: I,
        sink: &mut dyn NodeSink,
    ) -> Result<(ChildWord, u64), Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut builder = Builder::new(Some(sink));
        let result = builder
            .feed(pairs)
            .and_then(|len| Ok((builder.finish()?, len)));
        match result {
            Ok((root, len)) => Ok((ChildWord::from_trusted_bits(root), len)),
            Err(error) => {
                builder.discard();
                Err(error)
            }
        }
    }
}
