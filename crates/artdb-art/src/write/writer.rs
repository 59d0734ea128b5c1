//! The writer: the state with which `Tree` (tree.rs) changes its newest version by
//! copy-on-write, and the walk of every insert and removal.
//!
//! Every write walks from the root to the key's position, making each inner node on the way
//! writable first (`Writer::own`: in place if stamped with the current version, else a copy that
//! replaces it in the already writable parent, see `write/cow.rs`). Structure changes happen at the
//! bottom of the walk only:
//! - insert into an empty slot: a value word (inline value or leaf);
//! - insert where a leaf or inline value sits: a Node4 whose prefix is the common part (lazy
//!   expansion undone by one level);
//! - insert that diverges inside a node's prefix: a Node4 above it, the node re-prefixed below;
//! - insert into a full node: grow to the next kind;
//! - remove leaving a node with one entry: the entry moves up into the parent's slot, with the
//!   node's prefix (and byte) prepended (path compression restored);
//! - remove leaving a node at its kind's shrink count: shrink to the previous kind.
//!
//! A collapse replaces a node in its parent's slot without changing the parent's child count, so
//! no change ever propagates more than one level up: no parent stack is needed.

use std::sync::Arc;

use crate::lookup::{Entry, Resolver};
use crate::node::common_prefix_len;
use crate::node::{
    self, alloc_leaf, build_inner, copy_inner, Body, EntryList, InnerMut, InnerRef, Shape,
    KIND_NODE16, KIND_NODE256, KIND_NODE4, KIND_NODE48, NODE16_SHRINK_COUNT, NODE256_SHRINK_COUNT,
    NODE48_CAPACITY, NODE48_SHRINK_COUNT,
};
use crate::persist::source::NodeSource;
use crate::word::{self, Word, INLINE_VALUE_LEN_MAX};
use crate::write::cow::Registry;
use crate::write::fast::FastUpsert;
use crate::write::pack::{can_pack, pack_of_two, PackInsert};
use crate::{Error, VALUE_LEN_MAX};

/// The writer's state, apart from the root (so the root slot and the writer borrow separately).
pub(crate) struct Writer {
    /// Version stamped on nodes created now.
    pub version: u64,
    /// Whether anything changed since the last snapshot.
    pub dirty: bool,
    pub len: u64,
    pub registry: Arc<Registry>,
    pub source: Option<Arc<dyn NodeSource>>,
    /// Offsets of persisted nodes unlinked from the current tree (drained by the engine).
    pub released_persisted: Vec<u64>,
    /// Length of `released_persisted` when the last snapshot was taken (for `rollback_to`).
    pub released_mark: usize,
}

/// What an upsert did.
pub(crate) enum Upsert {
    /// The key was new.
    Inserted,
    /// The key was present; its old value when it was asked for.
    Replaced(Option<Vec<u8>>),
}

/// The key suffix and value held by a value word (inline value or leaf), borrowed.
#[derive(Clone, Copy)]
struct ValueWord<'v> {
    suffix: &'v [u8],
    value: &'v [u8],
}

/// Rejects values over the limit.
pub(crate) fn check_value(value: &[u8]) -> Result<(), Error> {
    if value.len() > VALUE_LEN_MAX {
        return Err(Error::ValueTooLarge {
            len: value.len(),
            max: VALUE_LEN_MAX,
        });
    }
    Ok(())
}

/// The word for a key whose remaining bytes are `suffix`, holding `value`.
pub(crate) fn value_word(suffix: &[u8], value: &[u8]) -> u64 {
    if suffix.is_empty() && value.len() <= INLINE_VALUE_LEN_MAX {
        word::inline(value)
    } else {
        alloc_leaf(suffix, value)
    }
}

/// Views an owned heap node mutably.
// The kind was written by this crate when the image was made: a bad kind is a broken invariant,
// not a condition a caller can handle.
#[allow(clippy::expect_used)]
fn inner_mut<'x>(address: usize) -> InnerMut<'x> {
    // SAFETY: `address` comes from `Writer::own`, so it is a live heap inner image that no
    // snapshot reaches (stamped with the writer's version, or no snapshot is alive), and the
    // writer (holding `&mut Tree`) uses no other view of it while this one is alive (raw/mod.rs
    // invariant 2).
    let node = unsafe { node::heap_inner_mut::<'x>(address) };
    node.expect("heap images made by this crate have a valid kind") // ok: we wrote the kind
}

impl Writer {
    /// Unlinks a word from the current tree: frees it now or retires it (write/cow.rs).
    pub fn retire(&mut self, bits: u64) {
        match word::decode(bits) {
            Word::HeapNode(address) => {
                // SAFETY: `bits` was linked in the current tree, so it is live; the view ends here.
                let version = unsafe { node::heap_inner(address) }.header().version();
                if version == self.version || self.registry.no_snapshots() {
                    // SAFETY: stamped with the current version (no snapshot reaches it) or no
                    // snapshot exists; it was just unlinked from the current tree.
                    unsafe { crate::write::cow::free_word(bits) };
                } else {
                    self.registry.retire(self.version, bits);
                }
            }
            Word::HeapLeaf(address) => {
                // SAFETY: `bits` was linked in the current tree, so it is live; the view ends here.
                let image = unsafe { node::heap_leaf_image(address) };
                let current_pack = node::is_pack_image(image)
                    && image.get(8..16) == Some(&self.version.to_le_bytes()[..]);
                if current_pack || self.registry.no_snapshots() {
                    // SAFETY: a pack created in the current version (no snapshot reaches it) or
                    // no snapshot exists; it was just unlinked from the current tree.
                    unsafe { crate::write::cow::free_word(bits) };
                } else {
                    self.registry.retire(self.version, bits);
                }
            }
            Word::Persisted(offset) => self.released_persisted.push(offset),
            _ => {}
        }
    }

    /// Makes the inner node in `slot` writable; returns its address. `inner` is the view of the
    /// node in `slot`, which must not be used afterwards. A persisted image whose words carry
    /// heap tags is an error (see [`check_persisted_words`]) and leaves `slot` as it was.
    fn own(&mut self, slot: &mut [u8; 8], inner: &InnerRef<'_>) -> Result<usize, Error> {
        let bits = word::load(slot);
        if let Word::HeapNode(address) = word::decode(bits) {
            if inner.header().version() == self.version {
                return Ok(address);
            }
            if self.registry.no_snapshots() {
                // No snapshot is alive (and none can appear while the writer runs): nothing but
                // the writer reaches this node, so it is adopted into the current version in
                // place instead of copied.
                inner_mut(address).header().set_version(self.version);
                return Ok(address);
            }
        }
        check_persisted_words(inner)?;
        let address = copy_inner(inner.image, self.version);
        *slot = word::heap_node(address).to_le_bytes();
        self.retire(bits);
        Ok(address)
    }

    fn changed(&mut self) {
        self.dirty = true;
    }

    /// Insert or replace; returns the old value.
    pub fn upsert(
        &mut self,
        root: &mut [u8; 8],
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        Ok(match self.upsert_with(root, key, value, true)? {
            Upsert::Inserted => None,
            Upsert::Replaced(old) => old,
        })
    }

    /// Insert or replace; copies the old value out only if `want_old` (so `Tree::set`
    /// allocates nothing for a replacement beyond what the new value needs).
    pub fn upsert_with(
        &mut self,
        root: &mut [u8; 8],
        key: &[u8],
        value: &[u8],
        want_old: bool,
    ) -> Result<Upsert, Error> {
        let (mut slot, mut depth) = match self.upsert_fast(root, key, value, want_old) {
            FastUpsert::Done(upsert) => return Ok(upsert),
            FastUpsert::Slow(slot, depth) => (slot, depth),
        };
        let source = self.source.clone();
        let resolver = Resolver {
            source: source.as_deref(),
        };
        loop {
            let bits = word::load(slot);
            let inner = match resolver.resolve(bits, depth, None)? {
                Entry::Empty => {
                    *slot = value_word(&key[depth..], value).to_le_bytes();
                    self.added();
                    return Ok(Upsert::Inserted);
                }
                Entry::Inline(len) => {
                    let mut old = [0u8; INLINE_VALUE_LEN_MAX];
                    let len = len.min(INLINE_VALUE_LEN_MAX);
                    old[..len].copy_from_slice(word::inline_value(slot, len));
                    let old = ValueWord {
                        suffix: &[],
                        value: &old[..len],
                    };
                    return Ok(self.replace_or_split(slot, depth, old, key, value, want_old));
                }
                Entry::Leaf(leaf) => {
                    // The leaf stays live until `replace_or_split` retires it, after its last use
                    // of these borrowed bytes.
                    let old = ValueWord {
                        suffix: leaf.suffix,
                        value: leaf.value,
                    };
                    return Ok(self.replace_or_split(slot, depth, old, key, value, want_old));
                }
                Entry::Pack(pack) => {
                    match self.pack_insert(slot, depth, &pack, &key[depth..], value, want_old) {
                        PackInsert::Replaced(old) => {
                            self.changed();
                            return Ok(Upsert::Replaced(old));
                        }
                        PackInsert::Inserted => {
                            self.added();
                            return Ok(Upsert::Inserted);
                        }
                        PackInsert::Burst => continue,
                    }
                }
                Entry::Inner(inner) => inner,
            };
            let common = common_prefix_len(&key[depth..], inner.prefix);
            if common < inner.prefix.len() {
                self.split_prefix(slot, depth, &inner, common, key, value)?;
                self.added();
                return Ok(Upsert::Inserted);
            }
            let end = depth + inner.prefix.len();
            let Some(&byte) = key.get(end) else {
                let old = resolver.slot_value(inner.value_slot(), end, inner.persisted)?;
                let replacing = old.is_some();
                let old = old.filter(|_| want_old).map(<[u8]>::to_vec);
                let address = self.own(slot, &inner)?;
                self.set_value_slot(address, value, replacing);
                return Ok(if replacing {
                    Upsert::Replaced(old)
                } else {
                    Upsert::Inserted
                });
            };
            let has_child = inner.find(byte).is_some();
            // Read before the node is changed: `own` may adopt it in place, and then `inner`
            // views the image that `add` below changes.
            let (kind, count) = (inner.kind(), inner.count());
            let full = count >= node::capacity(kind);
            let address = self.own(slot, &inner)?;
            if has_child {
                match inner_mut(address).into_child_slot(byte) {
                    Some(child) => slot = child,
                    None => return Ok(Upsert::Inserted), // unreachable: the child was found above
                }
                depth = end + 1;
                continue;
            }
            let child = value_word(&key[end + 1..], value);
            if full {
                self.grow(slot, address, depth, byte, child);
            } else {
                inner_mut(address).add(byte, child);
                // The count from before the add: read after it (a node written in place), the
                // full node's count was one past the capacity and a run whose 256th key came
                // this way (a full pack of 255 one-byte suffixes, as bulk builds and persisted
                // images leave them, burst into a Node256 by that key) stayed a Node256.
                if kind == KIND_NODE256 && count + 1 == node::NODE256_CAPACITY {
                    self.densify_node256(slot, address);
                }
            }
            self.added();
            return Ok(Upsert::Inserted);
        }
    }

    /// Sets the value slot of the owned node at `address` (`replacing`: a value was there).
    fn set_value_slot(&mut self, address: usize, value: &[u8], replacing: bool) {
        let value_slot = inner_mut(address).into_value_slot();
        let old_bits = word::load(value_slot);
        *value_slot = value_word(&[], value).to_le_bytes();
        self.retire(old_bits);
        if replacing {
            self.changed();
        } else {
            self.added();
        }
    }

    fn added(&mut self) {
        // Saturating, like `removed`: a damaged catalog can claim any length.
        self.len = self.len.saturating_add(1);
        self.dirty = true;
    }

    /// At a value word holding key `path ++ old_suffix`: replace it if the key is the same,
    /// otherwise put both under a new Node4.
    /// `old` borrows the word's leaf (if any), which stays live until it is retired here after
    /// the last use of `old`.
    fn replace_or_split(
        &mut self,
        slot: &mut [u8; 8],
        depth: usize,
        old: ValueWord<'_>,
        key: &[u8],
        value: &[u8],
        want_old: bool,
    ) -> Upsert {
        let ValueWord {
            suffix: old_suffix,
            value: old_value,
        } = old;
        let bits = word::load(slot);
        let suffix = &key[depth..];
        if suffix == old_suffix {
            let old = want_old.then(|| old_value.to_vec());
            *slot = value_word(suffix, value).to_le_bytes();
            self.retire(bits);
            self.changed();
            return Upsert::Replaced(old);
        }
        if can_pack(old_suffix, old_value, suffix, value) {
            *slot =
                pack_of_two((old_suffix, old_value), (suffix, value), self.version).to_le_bytes();
            self.retire(bits);
            self.added();
            return Upsert::Inserted;
        }
        let common = common_prefix_len(suffix, old_suffix);
        let mut entries = EntryList::new();
        let mut value_bits = 0u64;
        for (s, v) in [(old_suffix, old_value), (suffix, value)] {
            if s.len() == common {
                value_bits = value_word(&[], v);
            } else {
                entries.insert_sorted(s[common], value_word(&s[common + 1..], v));
            }
        }
        let shape = Shape {
            prefix: &suffix[..common],
            depth,
            version: self.version,
            value: value_bits,
        };
        *slot = build_inner(KIND_NODE4, &shape, &entries).to_le_bytes();
        self.retire(bits);
        self.added();
        Upsert::Inserted
    }

    /// The key diverges from `inner`'s prefix after `common` bytes: a Node4 goes above it.
    fn split_prefix(
        &mut self,
        slot: &mut [u8; 8],
        depth: usize,
        inner: &InnerRef<'_>,
        common: usize,
        key: &[u8],
        value: &[u8],
    ) -> Result<(), Error> {
        check_persisted_words(inner)?;
        let bits = word::load(slot);
        let mut entries = EntryList::new();
        inner.entries(&mut entries);
        let moved_shape = Shape {
            prefix: &inner.prefix[common + 1..],
            depth: depth + common + 1,
            version: self.version,
            value: word::load(inner.value_slot()),
        };
        let moved = build_inner(inner.kind(), &moved_shape, &entries);
        entries.clear();
        entries.insert_sorted(inner.prefix[common], moved);
        let mut value_bits = 0u64;
        match key.get(depth + common) {
            None => value_bits = value_word(&[], value),
            Some(&byte) => {
                entries.insert_sorted(byte, value_word(&key[depth + common + 1..], value))
            }
        }
        let shape = Shape {
            prefix: &inner.prefix[..common],
            depth,
            version: self.version,
            value: value_bits,
        };
        *slot = build_inner(KIND_NODE4, &shape, &entries).to_le_bytes();
        self.retire(bits);
        Ok(())
    }

    /// The owned node at `address` is full: replace it with the next kind plus the new child.
    fn grow(&mut self, slot: &mut [u8; 8], address: usize, depth: usize, byte: u8, child: u64) {
        // SAFETY: `address` is owned (from `own`) and no mutable view of it is alive.
        let inner = unsafe { node::heap_inner(address) };
        let mut entries = EntryList::new();
        inner.entries(&mut entries);
        entries.insert_sorted(byte, child);
        let kind = node::kind_for(entries.len());
        let shape = Shape {
            prefix: inner.prefix,
            depth,
            version: self.version,
            value: word::load(inner.value_slot()),
        };
        *slot = build_inner(kind, &shape, &entries).to_le_bytes();
        self.retire(word::heap_node(address));
    }

    /// Removes `key`, which the caller checked is present.
    pub fn remove(&mut self, root: &mut [u8; 8], key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let source = self.source.clone();
        let resolver = Resolver {
            source: source.as_deref(),
        };
        let mut slot = root;
        let mut depth = 0usize;
        loop {
            let bits = word::load(slot);
            let inner = match resolver.resolve(bits, depth, None)? {
                Entry::Empty => return Ok(None),
                Entry::Inline(len) => {
                    let old = word::inline_value(slot, len).to_vec();
                    *slot = [0; 8];
                    self.removed();
                    return Ok(Some(old));
                }
                Entry::Leaf(leaf) => {
                    let old = leaf.value.to_vec();
                    *slot = [0; 8];
                    self.retire(bits);
                    self.removed();
                    return Ok(Some(old));
                }
                Entry::Pack(pack) => {
                    let rest = &key[depth..];
                    let index = rest
                        .strip_prefix(pack.prefix)
                        .and_then(|suffix| pack.find(suffix));
                    let Some(index) = index else { return Ok(None) };
                    let old = self.pack_remove(slot, depth, &pack, index);
                    self.removed();
                    return Ok(Some(old));
                }
                Entry::Inner(inner) => inner,
            };
            let end = depth + inner.prefix.len();
            let byte = key.get(end).copied();
            let terminal = match byte {
                None => true,
                Some(byte) => match inner.find(byte) {
                    None => return Ok(None),
                    Some(child) => matches!(
                        resolver.resolve(word::load(child), end + 1, inner.persisted)?,
                        Entry::Inline(_) | Entry::Leaf(_)
                    ),
                },
            };
            let address = self.own(slot, &inner)?;
            let mut node = inner_mut(address);
            match (terminal, byte) {
                (false, Some(byte)) => {
                    match node.into_child_slot(byte) {
                        Some(child) => slot = child,
                        None => return Ok(None), // unreachable: the child was found above
                    }
                    depth = end + 1;
                    continue;
                }
                (_, None) => {
                    let value_slot = &mut node.header().value;
                    let removed = word::load(value_slot);
                    *value_slot = [0; 8];
                    return self.finish_remove(&resolver, slot, address, depth, removed, end);
                }
                (true, Some(byte)) => {
                    let removed = node.remove(byte);
                    return self.finish_remove(&resolver, slot, address, depth, removed, end + 1);
                }
            }
        }
    }

    /// After unlinking the value word `removed` (at `removed_depth`) from the owned node at
    /// `address` (in `slot`, at `depth`): returns its value, retires it, fixes the node up.
    fn finish_remove(
        &mut self,
        resolver: &Resolver<'_>,
        slot: &mut [u8; 8],
        address: usize,
        depth: usize,
        removed: u64,
        removed_depth: usize,
    ) -> Result<Option<Vec<u8>>, Error> {
        let old = value_of(resolver, removed, removed_depth)?;
        self.retire(removed);
        self.removed();
        self.after_remove(resolver, slot, address, depth)?;
        Ok(old)
    }

    fn removed(&mut self) {
        // Saturating: the length of a persisted tree comes from the engine's catalog, which a
        // damaged file can understate (`verify` reports the mismatch; found by the engine's
        // fuzz body, crates/artdb/tests/fuzz_body.rs).
        self.len = self.len.saturating_sub(1);
        self.dirty = true;
    }

    /// After a removal from the owned node at `address` (in `slot`, at `depth`): collapse it if
    /// one entry is left, shrink it if its kind's shrink count is reached.
    fn after_remove(
        &mut self,
        resolver: &Resolver<'_>,
        slot: &mut [u8; 8],
        address: usize,
        depth: usize,
    ) -> Result<(), Error> {
        // SAFETY: `address` is owned (from `own`) and no mutable view of it is alive.
        let inner = unsafe { node::heap_inner(address) };
        let count = inner.count();
        let value_bits = word::load(inner.value_slot());
        let end = depth + inner.prefix.len();
        if count + usize::from(value_bits != 0) <= 1 {
            let replacement = if count == 0 {
                self.relocate(resolver, value_bits, inner.prefix, end, depth)?
            } else {
                let Some((byte, child)) = inner.next_from(0) else {
                    return Ok(());
                };
                let mut extra = Vec::with_capacity(inner.prefix.len() + 1);
                extra.extend_from_slice(inner.prefix);
                extra.push(byte);
                self.relocate(resolver, word::load(child), &extra, end + 1, depth)?
            };
            *slot = replacement.to_le_bytes();
            self.retire(word::heap_node(address));
            return Ok(());
        }
        let smaller = match inner.kind() {
            KIND_NODE16 if count <= NODE16_SHRINK_COUNT => KIND_NODE4,
            KIND_NODE48 if count <= NODE48_SHRINK_COUNT => KIND_NODE16,
            KIND_NODE256 if count <= NODE256_SHRINK_COUNT => KIND_NODE48,
            _ => return Ok(()),
        };
        let mut entries = EntryList::new();
        inner.entries(&mut entries);
        let shape = Shape {
            prefix: inner.prefix,
            depth,
            version: self.version,
            value: value_bits,
        };
        *slot = build_inner(smaller, &shape, &entries).to_le_bytes();
        self.retire(word::heap_node(address));
        Ok(())
    }

    /// Moves the word `bits` at depth `from` up to depth `to`, prepending `extra` (the bytes in
    /// between) to what it holds. Returns the new word; the old one is retired.
    fn relocate(
        &mut self,
        resolver: &Resolver<'_>,
        bits: u64,
        extra: &[u8],
        from: usize,
        to: usize,
    ) -> Result<u64, Error> {
        debug_assert_eq!(from, to + extra.len(), "relocation spans the extra bytes");
        if extra.is_empty() {
            return Ok(bits);
        }
        let moved = match resolver.resolve(bits, from, None)? {
            Entry::Empty => 0,
            Entry::Inline(len) => {
                let slot = bits.to_le_bytes();
                alloc_leaf(extra, word::inline_value(&slot, len))
            }
            Entry::Leaf(leaf) => {
                let mut suffix = Vec::with_capacity(extra.len() + leaf.suffix.len());
                suffix.extend_from_slice(extra);
                suffix.extend_from_slice(leaf.suffix);
                alloc_leaf(&suffix, leaf.value)
            }
            Entry::Pack(pack) => self.pack_with_prefix_before(&pack, extra),
            Entry::Inner(inner) => {
                check_persisted_words(&inner)?;
                let mut prefix = Vec::with_capacity(extra.len() + inner.prefix.len());
                prefix.extend_from_slice(extra);
                prefix.extend_from_slice(inner.prefix);
                let mut entries = EntryList::new();
                inner.entries(&mut entries);
                let shape = Shape {
                    prefix: &prefix,
                    depth: to,
                    version: self.version,
                    value: word::load(inner.value_slot()),
                };
                build_inner(inner.kind(), &shape, &entries)
            }
        };
        self.retire(bits);
        Ok(moved)
    }
}

/// Rejects a persisted inner image whose value slot or a child word carries a heap tag, or names
/// a persisted node at or above the image's own offset. Heap words are addresses in the process
/// that made them, so a file holds them only by damage or craft; the order of offsets bounds
/// every descent and the pages a checkpoint writes above the children. The resolver checks both
/// below a persisted parent, but once the writer copies an image into the heap (`Writer::own`,
/// `split_prefix`, `relocate`) its words sit below a heap parent and are trusted, so they are
/// checked before the copy. (Regression, found by the engine's fuzz body,
/// `crates/artdb/tests/fuzz_body.rs`: a log replay through such a node ended in a segmentation
/// fault in `lookup::heap::step`.)
///
/// The node's shape is checked too, for what the heap writer relies on and the read path does
/// not check: Node4 and Node16 keys sorted and distinct; every Node48 index entry naming its own
/// non-empty slot (two bytes naming one slot made the copy a heap DAG whose shared child the
/// next checkpoint retired twice: a double free, found by the same fuzz body), every slot no
/// byte names empty (`add` reuses empty slots); and the count equal to the children present.
fn check_persisted_words(inner: &InnerRef<'_>) -> Result<(), Error> {
    let Some(offset) = inner.persisted else {
        return Ok(());
    };
    check_persisted_shape(inner, offset)?;
    let check = |bits| match word::decode(bits) {
        Word::HeapNode(_) | Word::HeapLeaf(_) => Err(Error::persisted(
            offset,
            "a persisted node points to heap memory",
        )),
        Word::Persisted(child) if child >= offset => Err(Error::persisted(
            offset,
            format!("child offset {child} is not below its parent"),
        )),
        _ => Ok(()),
    };
    check(word::load(inner.value_slot()))?;
    let mut start = 0usize;
    while let Some((byte, slot)) = inner.next_from(start) {
        check(word::load(slot))?;
        start = usize::from(byte) + 1;
    }
    Ok(())
}

/// The shape part of [`check_persisted_words`] for the persisted node `inner` at `offset`.
fn check_persisted_shape(inner: &InnerRef<'_>, offset: u64) -> Result<(), Error> {
    let bad = |what: &str| Err(Error::persisted(offset, format!("a persisted node {what}")));
    let sorted = |keys: &[u8]| keys.windows(2).all(|pair| pair[0] < pair[1]);
    match inner.body {
        Body::N4(node) if !sorted(node.keys()) => return bad("has Node4 keys out of order"),
        Body::N16(node) if !sorted(node.keys()) => return bad("has Node16 keys out of order"),
        Body::N48(node) => {
            let mut named = [false; NODE48_CAPACITY];
            for &entry in node.index().iter().filter(|&&entry| entry != 0) {
                let slot = usize::from(entry) - 1;
                let Some(seen) = named.get_mut(slot) else {
                    return bad("has a Node48 index entry past its slots");
                };
                if std::mem::replace(seen, true) {
                    return bad("names one Node48 slot for two bytes");
                }
            }
            for (slot, word) in node.slots().iter().enumerate() {
                if named.get(slot).copied().unwrap_or(false) != (*word != [0; 8]) {
                    return bad("has a Node48 slot whose word and index disagree");
                }
            }
        }
        _ => {}
    }
    let mut used = 0usize;
    let mut start = 0usize;
    while let Some((byte, _)) = inner.next_from(start) {
        used += 1;
        start = usize::from(byte) + 1;
    }
    if used != inner.header().count() {
        return bad("has a count that differs from its children");
    }
    Ok(())
}

/// The value held by a (just unlinked) value word.
fn value_of(resolver: &Resolver<'_>, bits: u64, depth: usize) -> Result<Option<Vec<u8>>, Error> {
    Ok(match resolver.resolve(bits, depth, None)? {
        Entry::Inline(len) => Some(word::inline_value(&bits.to_le_bytes(), len).to_vec()),
        Entry::Leaf(leaf) => Some(leaf.value.to_vec()),
        _ => None,
    })
}
