//! Reading a version: resolving child words to nodes, point lookups, batched lookups.
//!
//! A [`View`] is one version of the tree (a root word and the node source for persisted nodes),
//! borrowed for `'a`. `Tree` and `Snapshot` both read through it. Everything a read returns is
//! borrowed from node memory (inline values from the child word inside the node) for `'a`.
//!
//! Hazard: persisted images come from a file. [`Resolver::resolve`] checks each one before use
//! (kind, length, count, depth, and that a persisted child lies at a smaller offset than its
//! persisted parent, which bounds every descent) and returns `Error::Persisted`, never panics.

pub(crate) mod heap;
pub(crate) mod persisted;
pub(crate) mod snapshot;

use crate::lookup::heap::Fast;
use crate::lookup::persisted::{CheckedRoot, Quick};
use crate::node::{self, InnerRef, LeafRef, PackRef, KIND_DENSE, KIND_LEAF, KIND_PACK, KIND_WIDE};
use crate::persist::source::{NodeSource, QuickRegion};
use crate::word::{self, Word};
use crate::{Error, KEY_LEN_MAX};

/// A child word resolved to what it names.
#[derive(Clone, Copy)]
pub(crate) enum Entry<'a> {
    Empty,
    /// An inline value of this many bytes (the bytes are in the slot).
    Inline(usize),
    Leaf(LeafRef<'a>),
    /// A leaf pack (several fixed-width entries).
    Pack(PackRef<'a>),
    Inner(InnerRef<'a>),
}

/// Views a leaf or pack image.
#[inline]
fn leaf_entry(image: &[u8]) -> Result<Entry<'_>, &'static str> {
    match image.first() {
        Some(&KIND_PACK) | Some(&KIND_DENSE) | Some(&KIND_WIDE) => {
            Ok(Entry::Pack(PackRef::from_image(image)?))
        }
        _ => Ok(Entry::Leaf(LeafRef::from_image(image)?)),
    }
}

/// Turns child words into node views.
#[derive(Clone, Copy)]
pub(crate) struct Resolver<'a> {
    pub source: Option<&'a dyn NodeSource>,
}

impl<'a> Resolver<'a> {
    /// Resolves `bits`, a word at `depth` read from a node persisted at `parent` (if any).
    ///
    /// For heap words this relies on the tree's invariants (raw/mod.rs): a heap word reachable from a
    /// version is a live image of this crate that is not written or freed while `'a` lasts. The
    /// writer uses the result only until it next writes that node.
    #[inline]
    pub fn resolve(
        &self,
        bits: u64,
        depth: usize,
        parent: Option<u64>,
    ) -> Result<Entry<'a>, Error> {
        match word::decode(bits) {
            Word::Empty => Ok(Entry::Empty),
            Word::Inline(len) => Ok(Entry::Inline(len)),
            Word::HeapNode(address) => {
                if let Some(offset) = parent {
                    return Err(Error::persisted(
                        offset,
                        "a persisted node points to heap memory",
                    ));
                }
                // SAFETY: a heap word reachable from a version is a live inner image of ours that
                // is neither written nor freed while the version is borrowed (raw/mod.rs 2, 3).
                let inner = unsafe { node::heap_inner::<'a>(address) };
                debug_assert_eq!(inner.header().depth(), depth, "heap node depth");
                Ok(Entry::Inner(inner))
            }
            Word::HeapLeaf(address) => {
                if let Some(offset) = parent {
                    return Err(Error::persisted(
                        offset,
                        "a persisted node points to heap memory",
                    ));
                }
                // SAFETY: as above, for a leaf or pack; they are never written after creation.
                let image = unsafe { node::heap_leaf_image::<'a>(address) };
                leaf_entry(image).map_err(|reason| Error::persisted(0, reason))
            }
            Word::Persisted(offset) => self.resolve_persisted(offset, depth, parent),
            Word::Invalid => Err(Error::persisted(
                parent.unwrap_or(0),
                format!("a child word has an invalid tag ({bits:#018x})"),
            )),
        }
    }

    #[cold]
    fn resolve_persisted(
        &self,
        offset: u64,
        depth: usize,
        parent: Option<u64>,
    ) -> Result<Entry<'a>, Error> {
        if let Some(parent) = parent {
            if offset >= parent {
                return Err(Error::persisted(
                    parent,
                    format!("child offset {offset} is not below its parent"),
                ));
            }
        }
        let source = self
            .source
            .ok_or_else(|| Error::persisted(offset, "the tree has no node source"))?;
        let bytes = source.node_image(offset)?;
        match bytes.first() {
            Some(&KIND_LEAF) | Some(&KIND_PACK) | Some(&KIND_DENSE) | Some(&KIND_WIDE) => {
                let entry = leaf_entry(bytes).map_err(|r| Error::persisted(offset, r))?;
                if let Entry::Pack(pack) = entry {
                    // A wide pack's records name their values by slot: checked once here, so
                    // no read of a persisted wide pack meets a slot past its values.
                    pack.check_slots()
                        .map_err(|r| Error::persisted(offset, r))?;
                }
                let key_len = match entry {
                    Entry::Leaf(leaf) => depth + leaf.suffix.len(),
                    Entry::Pack(pack) => depth + pack.prefix.len() + pack.key_width,
                    _ => 0,
                };
                if key_len > KEY_LEN_MAX {
                    return Err(Error::persisted(offset, "leaf key longer than KEY_LEN_MAX"));
                }
                Ok(entry)
            }
            _ => {
                let mut inner =
                    InnerRef::from_image(bytes).map_err(|r| Error::persisted(offset, r))?;
                let header = inner.header();
                if header.count() > node::capacity(header.kind) {
                    return Err(Error::persisted(
                        offset,
                        "child count exceeds the node kind",
                    ));
                }
                if header.depth() != depth {
                    return Err(Error::persisted(
                        offset,
                        format!("node depth {} where {depth} was expected", header.depth()),
                    ));
                }
                if depth + inner.prefix.len() >= KEY_LEN_MAX {
                    return Err(Error::persisted(offset, "prefix reaches past KEY_LEN_MAX"));
                }
                inner.persisted = Some(offset);
                Ok(Entry::Inner(inner))
            }
        }
    }

    /// A lookup of `key` in the persisted image at `offset` (reached at `depth` from a node
    /// persisted at `parent`) if it is a well-formed dense pack (`node::dense_get`); `None`
    /// leaves it to the general path, which reports anything wrong.
    #[inline]
    fn dense_get(
        &self,
        offset: u64,
        parent: Option<u64>,
        depth: usize,
        key: &[u8],
    ) -> Option<Option<&'a [u8]>> {
        if parent.is_some_and(|parent| offset >= parent) {
            return None;
        }
        node::dense_get(self.source?.node_image(offset).ok()?, key, depth)
    }

    /// The value held by a value-slot word (inline, or a leaf with an empty suffix).
    #[inline]
    pub fn slot_value(
        &self,
        slot: &'a [u8; 8],
        depth: usize,
        parent: Option<u64>,
    ) -> Result<Option<&'a [u8]>, Error> {
        match self.resolve(word::load(slot), depth, parent)? {
            Entry::Empty => Ok(None),
            Entry::Inline(len) => Ok(Some(word::inline_value(slot, len))),
            Entry::Leaf(leaf) if leaf.suffix.is_empty() => Ok(Some(leaf.value)),
            _ => Err(Error::persisted(
                parent.unwrap_or(0),
                "a value slot holds a node",
            )),
        }
    }
}

/// One version of the tree, borrowed.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub root: &'a [u8; 8],
    pub resolver: Resolver<'a>,
}

/// Point lookups in one [`Snapshot`](crate::Snapshot) ([`Snapshot::point_reader`](crate::Snapshot::point_reader)),
/// for callers that look up many keys in the same snapshot (the engine's table handle). When
/// the snapshot's root is persisted and its source offers a [`QuickRegion`], the region is
/// fetched once here instead of once per lookup (a call through the source and a copy of the
/// region each time), and lookups start on the quick persisted path; otherwise `get` is
/// [`Snapshot::get`](crate::Snapshot::get). The root image is checked once here (every check the
/// quick path makes of it; a root page not verified yet gets its first-use work through the
/// source first), so each `get` starts with the root's prefix and child search. Images outside
/// the region (pages not verified when the reader was made, or written later) go to the source
/// as they do on every path.
#[derive(Clone, Copy)]
pub struct PointReader<'a> {
    view: View<'a>,
    /// The source's region, when the root is persisted.
    region: Option<QuickRegion<'a>>,
    /// The root node, checked once here when the region serves it (lookup/persisted.rs).
    root: Option<CheckedRoot<'a>>,
}

impl<'a> PointReader<'a> {
    /// A reader of `view`.
    #[inline]
    pub(crate) fn new(view: View<'a>) -> PointReader<'a> {
        let persisted = word::load(view.root) & word::TAG_MASK == word::TAG_PERSISTED;
        let region = match view.resolver.source {
            Some(source) if persisted => source.quick_region(),
            _ => None,
        };
        let root = match (&region, view.resolver.source) {
            (Some(region), Some(source)) => {
                // A root page not verified yet (a cold reader): its first-use work now, as the
                // first lookup would do it; a failure is left for the lookups to report.
                let offset = word::load(view.root) & !word::TAG_MASK;
                if region.image(offset).is_none() {
                    let _ = source.node_image(offset);
                }
                CheckedRoot::new(region, view.root)
            }
            _ => None,
        };
        PointReader { view, region, root }
    }

    /// The value of `key` (the same answer as [`Snapshot::get`](crate::Snapshot::get)).
    #[inline(always)]
    pub fn get(&self, key: &[u8]) -> Result<Option<&'a [u8]>, Error> {
        match (&self.region, &self.root) {
            (Some(region), Some(root)) => self.view.get_below_checked_root(region, root, key),
            (Some(region), None) => self.view.get_from_persisted_root(region, key),
            (None, _) => self.view.get(key),
        }
    }
}

/// `View::get` from `root`, for callers that make the view only when the heap fast path hands
/// the lookup on (`view` runs then): a lookup that the fast path finishes neither builds the
/// view nor keeps its fields on the stack (a saving measurable on every lookup that a Node256
/// root rejects). (A persisted root, a whole tree on file, is handed back by the fast
/// path's first tag dispatch: no test of its own here, which every heap lookup paid for.)
///
/// # Safety
/// `root` is the root slot of a version whose heap images stay live and unwritten during `'a`
/// (raw/mod.rs invariants 2 and 3: a `Tree` borrowed shared, or a `Snapshot`), and `view` returns a
/// view of that version.
#[inline(always)]
pub(crate) unsafe fn get_lazy<'a>(
    root: &'a [u8; 8],
    key: &[u8],
    view: impl FnOnce() -> View<'a>,
) -> Result<Option<&'a [u8]>, Error> {
    check_key(key)?;
    // SAFETY: `root` is of a version borrowed for 'a (caller).
    match unsafe { crate::lookup::heap::get(root, key) } {
        Fast::Done(value) => Ok(value),
        Fast::Slow(slot, depth) => view().get_persisted(key, slot, depth),
    }
}

/// Rejects keys over the limit.
#[inline]
pub(crate) fn check_key(key: &[u8]) -> Result<(), Error> {
    if key.len() > KEY_LEN_MAX {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max: KEY_LEN_MAX,
        });
    }
    Ok(())
}

impl<'a> View<'a> {
    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<&'a [u8]>, Error> {
        // SAFETY: a view borrows a version (a shared `Tree` or a `Snapshot`) for 'a, so its heap
        // images stay live and unwritten during 'a (raw/mod.rs invariants 2 and 3).
        unsafe { get_lazy(self.root, key, || *self) }
    }

    /// `get` for a view whose root word is persisted (a table read from the file), through
    /// `region` (the view's source's [`QuickRegion`], fetched once by a [`PointReader`]): the
    /// quick persisted path from the root, with no pass through the heap fast path first. The
    /// same answers as [`View::get`]. Inlined into `PointReader::get`'s callers (the engine's
    /// `Table::get`): no call, register saves or result copy of its own (a cost W2's lookups
    /// showed when it was out of line).
    #[inline]
    pub(crate) fn get_from_persisted_root(
        &self,
        region: &QuickRegion<'a>,
        key: &[u8],
    ) -> Result<Option<&'a [u8]>, Error> {
        check_key(key)?;
        let Some(source) = self.resolver.source else {
            return self.get_slow(key, self.root, 0, None);
        };
        self.finish_quick(
            source,
            key,
            crate::lookup::persisted::get(region, self.root, 0, None, key),
        )
    }

    /// `get` for a view whose persisted root `root` was checked by a [`PointReader`] (through
    /// `region`, the view's source's [`QuickRegion`]): the root's prefix and child search, then
    /// the quick persisted path from the root's child. The same answers as [`View::get`].
    #[inline(always)]
    pub(crate) fn get_below_checked_root(
        &self,
        region: &QuickRegion<'a>,
        root: &CheckedRoot<'a>,
        key: &[u8],
    ) -> Result<Option<&'a [u8]>, Error> {
        check_key(key)?;
        let Some(source) = self.resolver.source else {
            return self.get_slow(key, self.root, 0, None);
        };
        self.finish_quick(
            source,
            key,
            crate::lookup::persisted::get_below_root(region, self.root, root, key),
        )
    }

    /// `get` from `slot` at `depth` where the heap fast path stopped (reached through heap
    /// nodes only, so with no persisted parent): through persisted inner nodes on the quick
    /// path when the source offers a [`crate::QuickRegion`], then the checked general path for
    /// whatever is left. Not `#[cold]`: this is every lookup of a persisted tree through
    /// `Tree::get` or `Snapshot::get`. Only the first quick walk is here; what it hands back
    /// goes to [`View::get_persisted_rest`].
    #[inline(never)]
    fn get_persisted(
        &self,
        key: &[u8],
        slot: &'a [u8; 8],
        depth: usize,
    ) -> Result<Option<&'a [u8]>, Error> {
        let Some(source) = self.resolver.source else {
            return self.get_slow(key, slot, depth, None);
        };
        let Some(region) = source.quick_region() else {
            return self.get_slow(key, slot, depth, None);
        };
        self.finish_quick(
            source,
            key,
            crate::lookup::persisted::get(&region, slot, depth, None, key),
        )
    }

    /// The answer of a quick persisted walk (`lookup::persisted`): its value, or the checked rest
    /// of the lookup from where it stopped.
    #[inline(always)]
    fn finish_quick(
        &self,
        source: &'a dyn NodeSource,
        key: &[u8],
        quick: Quick<'a>,
    ) -> Result<Option<&'a [u8]>, Error> {
        match quick {
            Quick::Done(value) => Ok(value),
            Quick::Slow(at, at_depth, at_parent) => {
                self.get_persisted_rest(source, key, at, at_depth, at_parent)
            }
        }
    }

    /// `get` where the quick persisted path stopped at `slot` and `depth` (below the persisted
    /// node at `parent`, if any): a page whose first-use work is not done yet (a cold lookup)
    /// is handed to the source (which does it, or reports what is wrong) and the quick path goes
    /// on from there; anything else, or a page the region still does not serve, is the general
    /// path's.
    #[cold]
    #[inline(never)]
    fn get_persisted_rest(
        &self,
        source: &'a dyn NodeSource,
        key: &[u8],
        mut slot: &'a [u8; 8],
        mut depth: usize,
        mut parent: Option<u64>,
    ) -> Result<Option<&'a [u8]>, Error> {
        loop {
            let unverified = match word::decode(word::load(slot)) {
                Word::Persisted(offset) => {
                    !parent.is_some_and(|parent| offset >= parent)
                        && source
                            .quick_region()
                            .is_some_and(|region| region.image(offset).is_none())
                        && source.node_image(offset).is_ok()
                        && source
                            .quick_region()
                            .is_some_and(|region| region.image(offset).is_some())
                }
                _ => false,
            };
            if !unverified {
                return self.get_slow(key, slot, depth, parent);
            }
            let Some(region) = source.quick_region() else {
                return self.get_slow(key, slot, depth, parent);
            };
            match crate::lookup::persisted::get(&region, slot, depth, parent, key) {
                Quick::Done(value) => return Ok(value),
                Quick::Slow(at, at_depth, at_parent) => {
                    (slot, depth, parent) = (at, at_depth, at_parent);
                }
            }
        }
    }

    /// The checked general path of `get`, from `slot` at `depth` below the persisted node at
    /// `parent` (if any).
    #[cold]
    #[inline(never)]
    fn get_slow(
        &self,
        key: &[u8],
        mut slot: &'a [u8; 8],
        mut depth: usize,
        mut parent: Option<u64>,
    ) -> Result<Option<&'a [u8]>, Error> {
        loop {
            match word::decode(word::load(slot)) {
                Word::Inline(len) => {
                    return Ok((key.len() == depth).then(|| word::inline_value(slot, len)))
                }
                Word::Persisted(offset) => {
                    // A dense pack (W2's leaf level) is read in place (node/pack/dense.rs).
                    if let Some(value) = self.resolver.dense_get(offset, parent, depth, key) {
                        return Ok(value);
                    }
                }
                _ => {}
            }
            match self.resolver.resolve(word::load(slot), depth, parent)? {
                Entry::Empty => return Ok(None),
                Entry::Inline(len) => {
                    return Ok((key.len() == depth).then(|| word::inline_value(slot, len)))
                }
                Entry::Leaf(leaf) => {
                    return Ok((key[depth..] == *leaf.suffix).then_some(leaf.value))
                }
                Entry::Pack(pack) => return Ok(pack_get(&pack, &key[depth..])),
                Entry::Inner(inner) => {
                    let rest = &key[depth..];
                    if !inner.prefix.is_empty() && !rest.starts_with(inner.prefix) {
                        return Ok(None);
                    }
                    let at = depth + inner.prefix.len();
                    let Some(&byte) = key.get(at) else {
                        return self
                            .resolver
                            .slot_value(inner.value_slot(), at, inner.persisted);
                    };
                    match inner.find(byte) {
                        Some(child) => {
                            prefetch_for(word::load(child), key, at + 1);
                            slot = child;
                        }
                        None => return Ok(None),
                    }
                    depth = at + 1;
                    parent = inner.persisted;
                }
            }
        }
    }

    /// Looks up `keys` in groups whose descents are interleaved level by level, prefetching each
    /// lookup's next node while the others compute, so cache misses of different keys overlap.
    /// Heap words go through the fast group walk of `lookup/heap.rs`; whatever it hands back
    /// (persisted words, long prefixes, value slots) continues in the checked group walk here.
    pub fn get_many(&self, keys: &[&[u8]], out: &mut Vec<Option<&'a [u8]>>) -> Result<(), Error> {
        out.clear();
        out.reserve(keys.len());
        for key in keys {
            check_key(key)?;
        }
        let mut values = [None; GET_MANY_GROUP_LEN];
        let mut slow = [(self.root, 0usize); GET_MANY_GROUP_LEN];
        for group in keys.chunks(GET_MANY_GROUP_LEN) {
            // SAFETY: a view borrows a version (a shared `Tree` or a `Snapshot`) for 'a, so its
            // heap images stay live and unwritten during 'a (raw/mod.rs invariants 2 and 3).
            let slow_lanes =
                unsafe { crate::lookup::heap::get_group(self.root, group, &mut values, &mut slow) };
            let base = out.len();
            out.extend_from_slice(&values[..group.len().min(GET_MANY_GROUP_LEN)]);
            // The lookups the fast walk handed back (heap trees: none) are gathered only if
            // there are any, so their arrays cost nothing otherwise.
            if slow_lanes != 0 {
                let mut starts = [(self.root, 0usize); GET_MANY_GROUP_LEN];
                let mut slow_index = [0usize; GET_MANY_GROUP_LEN];
                let mut slow_keys: [&[u8]; GET_MANY_GROUP_LEN] = [&[]; GET_MANY_GROUP_LEN];
                let mut slow_len = 0;
                for (i, key) in group.iter().enumerate().take(GET_MANY_GROUP_LEN) {
                    if slow_lanes & (1 << i) != 0 {
                        starts[slow_len] = slow[i];
                        slow_index[slow_len] = base + i;
                        slow_keys[slow_len] = key;
                        slow_len += 1;
                    }
                }
                let mut found = [None; GET_MANY_GROUP_LEN];
                self.get_group(
                    &slow_keys[..slow_len],
                    &starts[..slow_len],
                    &mut found[..slow_len],
                )?;
                for (j, value) in found.iter().take(slow_len).enumerate() {
                    out[slow_index[j]] = *value;
                }
            }
        }
        Ok(())
    }

    /// The group walk of the lookups the heap walk handed on: `keys[i]` continues at
    /// `starts[i]` (a slot and depth reached through heap nodes only, so with no persisted
    /// parent); `out[i]` receives its value. Through the quick persisted walk when the source
    /// serves a region (a table read from its file: every lookup starts at a persisted root),
    /// each lookup it hands back finished as `get` finishes it; else the checked group walk.
    fn get_group(
        &self,
        keys: &[&[u8]],
        starts: &[(&'a [u8; 8], usize)],
        out: &mut [Option<&'a [u8]>],
    ) -> Result<(), Error> {
        if let Some(source) = self.resolver.source {
            if let Some(region) = source.quick_region() {
                let len = keys.len().min(starts.len()).min(GET_MANY_GROUP_LEN);
                let mut quick = [Quick::Done(None); GET_MANY_GROUP_LEN];
                crate::lookup::persisted::get_group(
                    &region,
                    &keys[..len],
                    &starts[..len],
                    &mut quick,
                );
                for (i, outcome) in quick.iter().enumerate().take(len) {
                    out[i] = match *outcome {
                        Quick::Done(value) => value,
                        Quick::Slow(slot, depth, parent) => {
                            self.get_persisted_rest(source, keys[i], slot, depth, parent)?
                        }
                    };
                }
                return Ok(());
            }
        }
        self.get_group_checked(keys, starts, out)
    }

    /// The checked group walk (a source without a region): as [`View::get_group`].
    fn get_group_checked(
        &self,
        keys: &[&[u8]],
        starts: &[(&'a [u8; 8], usize)],
        out: &mut [Option<&'a [u8]>],
    ) -> Result<(), Error> {
        let mut slots = [self.root; GET_MANY_GROUP_LEN];
        let mut depths = [0usize; GET_MANY_GROUP_LEN];
        let mut parents = [None; GET_MANY_GROUP_LEN];
        let mut active = [false; GET_MANY_GROUP_LEN];
        for (i, &(slot, depth)) in starts.iter().enumerate().take(GET_MANY_GROUP_LEN) {
            slots[i] = slot;
            depths[i] = depth;
            active[i] = true;
        }
        let mut remaining = starts.len().min(GET_MANY_GROUP_LEN);
        while remaining > 0 {
            for i in 0..starts.len().min(GET_MANY_GROUP_LEN) {
                if !active[i] {
                    continue;
                }
                let key = keys[i];
                let step = self.step(key, slots[i], depths[i], parents[i])?;
                match step {
                    Step::Done(value) => {
                        out[i] = value;
                        active[i] = false;
                        remaining -= 1;
                    }
                    Step::Descend(slot, depth, parent) => {
                        prefetch_for(word::load(slot), key, depth);
                        slots[i] = slot;
                        depths[i] = depth;
                        parents[i] = parent;
                    }
                }
            }
        }
        Ok(())
    }

    /// One level of a lookup.
    #[inline]
    fn step(
        &self,
        key: &[u8],
        slot: &'a [u8; 8],
        depth: usize,
        parent: Option<u64>,
    ) -> Result<Step<'a>, Error> {
        Ok(
            match self.resolver.resolve(word::load(slot), depth, parent)? {
                Entry::Empty => Step::Done(None),
                Entry::Inline(len) => {
                    Step::Done((key.len() == depth).then(|| word::inline_value(slot, len)))
                }
                Entry::Leaf(leaf) => {
                    Step::Done((key[depth..] == *leaf.suffix).then_some(leaf.value))
                }
                Entry::Pack(pack) => Step::Done(pack_get(&pack, &key[depth..])),
                Entry::Inner(inner) => {
                    if !key[depth..].starts_with(inner.prefix) {
                        return Ok(Step::Done(None));
                    }
                    let at = depth + inner.prefix.len();
                    match key.get(at) {
                        None => Step::Done(self.resolver.slot_value(
                            inner.value_slot(),
                            at,
                            inner.persisted,
                        )?),
                        Some(&byte) => match inner.find(byte) {
                            Some(child) => Step::Descend(child, at + 1, inner.persisted),
                            None => Step::Done(None),
                        },
                    }
                }
            },
        )
    }
}

/// The value of the key whose bytes after the pack's position are `rest`: the probe every
/// point lookup of a pack makes (`node::probe`, also the heap path's and, through
/// `pack_get_checked`, the quick persisted walk's), so that the paths agree even on a damaged
/// image that no checksum stands behind (a fence or records out of order).
#[inline]
pub(crate) fn pack_get<'a>(pack: &PackRef<'a>, rest: &[u8]) -> Option<&'a [u8]> {
    node::probe(pack.image, rest, 0)
}

/// Lookups advanced together by `get_many`: enough to cover a miss's latency with the others'
/// work, few enough that their state stays in registers and L1.
pub const GET_MANY_GROUP_LEN: usize = 16;

enum Step<'a> {
    Done(Option<&'a [u8]>),
    Descend(&'a [u8; 8], usize, Option<u64>),
}

/// Starts loading the lines a lookup of `key` will touch in the image `bits` names (at `depth`),
/// so that they arrive together instead of one dependent miss after another:
/// - an inner node: its header, and (guessing an empty prefix, the common case below the top)
///   the Node48 index byte and the Node256 child slot for `key[depth]`; a wrong guess costs one
///   useless prefetch;
/// - a pack whose word carries a layout hint (word.rs): its header, the fence lines at both
///   ends of the window `search::fence_run` counts around the key's first suffix byte's expected
///   place (`word::pack_guess`; 16 bytes either side, 32 in a pack of over 256 slots, whose
///   window is 64 bytes: `word::pack_fence_reach`), and the two record lines from that
///   place's record on, so the record arrives with the header instead of one miss later (a
///   wrong guess, e.g. for keys not spread evenly, costs useless prefetches);
/// - another leaf or pack: its first four lines (a pack's header, fence and entries).
#[inline(always)]
pub(crate) fn prefetch_for(bits: u64, key: &[u8], depth: usize) {
    prefetch_lines(bits, key, depth, true);
}

/// [`prefetch_for`] for a group walk that searches a pack's fence in one round and compares its
/// record in the next (prefetching the record's exact lines in between): a hinted pack's record
/// lines are left out, since 16 lookups with 6 prefetches each would queue behind the core's
/// miss buffers (`get_many` was measurably slower with them). So is everything but the header
/// line of a plain leaf word with one key byte left: that is a leaf or a pack of one-byte
/// suffixes, in a tree of dense keys a dense pack, whose value's line the next round places
/// from the header's value width (the three lines after the header hold the key's value for
/// 1 key byte in 7 when values are 7 bytes wide).
#[inline(always)]
pub(crate) fn prefetch_for_split(bits: u64, key: &[u8], depth: usize) {
    prefetch_lines(bits, key, depth, false);
}

/// Starts loading what a forward scan reads first in the image `bits` names: an inner node's
/// header line, or a leaf's or pack's first four lines (header, fence and the first entries of a
/// small pack). Persisted and inline words: nothing (a persisted image is read through its
/// source).
#[inline(always)]
pub(crate) fn prefetch_scan(bits: u64) {
    match word::decode(bits) {
        Word::HeapNode(address) => crate::raw::prefetch(address),
        Word::HeapLeaf(address) => {
            crate::raw::prefetch(address);
            crate::raw::prefetch(address + 64);
            crate::raw::prefetch(address + 128);
            crate::raw::prefetch(address + 192);
        }
        _ => {}
    }
}

/// [`prefetch_for`] (`whole`) or [`prefetch_for_split`]: without `whole`, the lines that a
/// group walk places exactly one round later are left out (a hinted pack's records, a one-byte
/// leaf's lines past its header).
#[inline(always)]
fn prefetch_lines(bits: u64, key: &[u8], depth: usize, whole: bool) {
    match word::decode(bits) {
        Word::HeapNode(address) => {
            crate::raw::prefetch(address);
            if let Some(&byte) = key.get(depth) {
                crate::raw::prefetch(address + node::HEADER_LEN + byte as usize);
                crate::raw::prefetch(address + node::HEADER_LEN + 8 * byte as usize);
            }
        }
        Word::HeapLeaf(address) => match key.get(depth) {
            Some(&first) if bits & word::TAG_MASK == word::TAG_HEAP_PACK_HINTED => {
                let (index, record_at) = word::pack_guess(bits, first);
                let fence_at = address + word::PACK_HINT_FENCE_AT;
                let reach = word::pack_fence_reach(bits);
                crate::raw::prefetch(address);
                crate::raw::prefetch(fence_at + index.saturating_sub(reach));
                crate::raw::prefetch(fence_at + index + reach);
                #[cfg(feature = "probe-ladder")]
                if whole && crate::ladder::stage() == crate::ladder::EXACT_RECORD {
                    let at = crate::ladder::next_record();
                    if at != 0 {
                        crate::raw::prefetch(at);
                        crate::raw::prefetch(at + 15);
                    }
                    return;
                }
                if whole {
                    crate::raw::prefetch(address + record_at);
                    crate::raw::prefetch(address + record_at + 64);
                }
            }
            _ => {
                crate::raw::prefetch(address);
                if whole || key.len() != depth + 1 {
                    crate::raw::prefetch(address + 64);
                    crate::raw::prefetch(address + 128);
                    crate::raw::prefetch(address + 192);
                }
            }
        },
        _ => {}
    }
}
