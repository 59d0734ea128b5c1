//! Persistence hooks: reading node images by file offset, writing them post-order.
//!
//! The tree does no file I/O. The engine implements [`NodeSource`] (serve the image at an
//! offset, e.g. from a read-only memory map) and [`NodeSink`] (append an image, return its
//! offset). [`Tree::persist`] writes every heap node of the current version children-first,
//! with heap child words swizzled to persisted words, and returns the root word; persisted
//! subtrees are referenced, not rewritten. [`Tree::adopt_persisted`] then switches the tree onto
//! the persisted images (its heap nodes are retired, so live snapshots keep reading them).
//!
//! Image format: exactly the heap image (node/ and docs/art.md), with the version field 0 and
//! every child word empty, inline or persisted. Images start at offsets that are multiples of 8.
//! Invariant (checked by the writer and again on every read): a persisted node's persisted
//! children lie at smaller offsets than the node itself, so every descent is bounded.
//!
//! The two traits and [`MemoryNodeStore`] (both over a byte vector: the test double, and a handy
//! way to ship a tree's images in memory) are in `persist/source.rs`.

pub(crate) mod source;

use std::sync::Arc;

use crate::lookup::{Entry, Resolver};
use crate::node::{self, leaf_image_len, InnerRef, HEADER_LEN};
use crate::tree::Tree;
use crate::word::{self, Word};
use crate::{ChildWord, Error};

pub use source::{MemoryNodeStore, NodeSink, NodeSource, QuickRegion};

/// A node being written: its image copy, and its child words still to visit.
struct PendingNode {
    image: Vec<u8>,
    /// (byte offset of the child word inside `image`, word bits).
    children: Vec<(usize, u64)>,
    next: usize,
    /// Where this node's word goes in its parent's image.
    position_in_parent: usize,
    /// Largest offset of a persisted child (the node must be written above it).
    child_offset_max: Option<u64>,
}

impl PendingNode {
    fn new(inner: &InnerRef<'_>, position_in_parent: usize) -> PendingNode {
        let mut image = inner.image.to_vec();
        image[8..16].fill(0); // the version field: persisted images carry 0
        let base = inner.image.as_ptr() as usize;
        let mut children = vec![(16, word::load(inner.value_slot()))];
        let mut start = 0usize;
        while let Some((byte, slot)) = inner.next_from(start) {
            children.push((slot.as_ptr() as usize - base, word::load(slot)));
            start = byte as usize + 1;
        }
        PendingNode {
            image,
            children,
            next: 0,
            position_in_parent,
            child_offset_max: None,
        }
    }

    fn set_child(&mut self, position: usize, offset: u64) {
        self.image[position..position + 8].copy_from_slice(&word::persisted(offset).to_le_bytes());
        self.child_offset_max = Some(self.child_offset_max.map_or(offset, |max| max.max(offset)));
    }
}

pub(crate) fn checked_write(
    sink: &mut dyn NodeSink,
    image: &[u8],
    above: Option<u64>,
) -> Result<u64, Error> {
    let offset = sink.write(image, above)?;
    if offset % 8 != 0 || offset >= 1 << 63 {
        return Err(Error::Storage(format!(
            "the node sink returned unaligned offset {offset}"
        )));
    }
    if above.is_some_and(|child| offset <= child) {
        return Err(Error::Storage(format!(
            "the node sink returned offset {offset}, not above the children of the image"
        )));
    }
    Ok(offset)
}

impl Tree {
    /// Writes every heap node of the current version through `sink`, children before parents,
    /// and returns the root word of the persisted tree. The tree itself is unchanged; call
    /// [`Tree::adopt_persisted`] once the images are durable and readable through a source.
    pub fn persist(&self, sink: &mut dyn NodeSink) -> Result<ChildWord, Error> {
        let resolver = Resolver {
            source: self.source().map(|s| s.as_ref() as &dyn NodeSource),
        };
        let root = self.root_bits();
        let inner = match word::decode(root) {
            Word::HeapLeaf(_) => {
                let (offset, _) = write_leaf(&resolver, sink, root)?;
                return Ok(ChildWord::from_trusted_bits(word::persisted(offset)));
            }
            Word::HeapNode(_) => match resolver.resolve(root, 0, None)? {
                Entry::Inner(inner) => inner,
                _ => return Ok(ChildWord::from_trusted_bits(root)),
            },
            _ => return Ok(ChildWord::from_trusted_bits(root)),
        };
        let mut stack = vec![PendingNode::new(&inner, 0)];
        while let Some(top) = stack.last_mut() {
            if let Some(&(position, bits)) = top.children.get(top.next) {
                top.next += 1;
                match word::decode(bits) {
                    Word::HeapLeaf(_) => {
                        let (offset, flags) = write_leaf(&resolver, sink, bits)?;
                        top.set_child(position, offset);
                        // The parent's hint for its pack children (node/mod.rs): a dense
                        // pack's replaces any, an ordinary pack's any but a dense one.
                        let dense = node::dense_children_width(flags).is_some();
                        if dense
                            || (flags != 0
                                && node::dense_children_width(top.image[node::FLAGS_AT]).is_none())
                        {
                            top.image[node::FLAGS_AT] = flags;
                        }
                    }
                    Word::HeapNode(address) => {
                        // SAFETY: a heap word of the current version, not written during `&self`.
                        let child = unsafe { node::heap_inner(address) };
                        stack.push(PendingNode::new(&child, position));
                    }
                    Word::Persisted(offset) => {
                        let max = top.child_offset_max.map_or(offset, |m| m.max(offset));
                        top.child_offset_max = Some(max);
                    }
                    _ => {}
                }
                continue;
            }
            let done = stack.pop().ok_or(Error::Storage("persist stack".into()))?; // ok: non-empty
            let offset = checked_write(sink, &done.image, done.child_offset_max)?;
            match stack.last_mut() {
                Some(parent) => parent.set_child(done.position_in_parent, offset),
                None => return Ok(ChildWord::from_trusted_bits(word::persisted(offset))),
            }
        }
        Ok(ChildWord::EMPTY)
    }

    /// Switches the tree onto a persisted root (normally the one `persist` returned) read
    /// through `source`, with `len` keys. The heap nodes of the current version are retired:
    /// live snapshots keep reading them, and they are freed when those snapshots go.
    pub fn adopt_persisted(
        &mut self,
        root: ChildWord,
        len: u64,
        source: Arc<dyn NodeSource>,
    ) -> Result<(), Error> {
        let bits = root.to_bits();
        if ChildWord::from_bits(bits).is_none() {
            return Err(Error::BadRoot { bits });
        }
        let old_root = self.root_bits();
        let (root_slot, writer) = self.parts_mut();
        if writer.registry.no_snapshots() {
            // SAFETY: no snapshot exists, and the old root is unlinked right below; its heap
            // nodes are reachable only through it.
            unsafe { crate::write::cow::free_tree(old_root) };
        } else {
            retire_tree(writer, old_root);
        }
        *root_slot = bits.to_le_bytes();
        writer.len = len;
        writer.source = Some(source);
        writer.dirty = true;
        Ok(())
    }
}

/// Retires every heap image reachable from `root` (the tree is being replaced wholesale). Its
/// persisted words are not released: the adopted persisted root still references them.
fn retire_tree(writer: &mut crate::write::writer::Writer, root: u64) {
    let mut pending = vec![root];
    while let Some(bits) = pending.pop() {
        if let Word::HeapNode(address) = word::decode(bits) {
            // SAFETY: a live heap node of the current tree; the view ends before it is retired.
            let inner = unsafe { node::heap_inner(address) };
            pending.push(word::load(inner.value_slot()));
            let mut start = 0usize;
            while let Some((byte, slot)) = inner.next_from(start) {
                pending.push(word::load(slot));
                start = byte as usize + 1;
            }
        }
        if !matches!(word::decode(bits), Word::Persisted(_)) {
            writer.retire(bits);
        }
    }
}

/// Writes the heap leaf or pack `bits` names through `sink`: its offset, and the `flags` hint
/// its parent gets for it (node/mod.rs: nonzero for a dense pack with no prefix and for an
/// ordinary pack).
pub(crate) fn write_leaf(
    resolver: &Resolver<'_>,
    sink: &mut dyn NodeSink,
    bits: u64,
) -> Result<(u64, u8), Error> {
    match resolver.resolve(bits, 0, None)? {
        Entry::Leaf(leaf) => {
            let len = leaf_image_len(leaf.suffix.len(), leaf.value.len());
            let mut image = Vec::with_capacity(len);
            image.extend_from_slice(&[node::KIND_LEAF, 0]);
            image.extend_from_slice(&(leaf.suffix.len() as u16).to_le_bytes());
            image.extend_from_slice(&(leaf.value.len() as u32).to_le_bytes());
            image.extend_from_slice(leaf.suffix);
            image.extend_from_slice(leaf.value);
            Ok((checked_write(sink, &image, None)?, 0))
        }
        Entry::Pack(pack) => {
            let mut image = pack.image.to_vec();
            image[8..16].fill(0); // the version field: persisted images carry 0
            let flags = if pack.dense && pack.prefix.is_empty() {
                node::dense_children_flags(pack.value_width)
            } else if !pack.dense && !pack.wide {
                node::pack_children_flags()
            } else {
                0
            };
            Ok((checked_write(sink, &image, None)?, flags))
        }
        _ => Err(Error::Storage("a leaf word does not name a leaf".into())),
    }
}

const _: () = assert!(
    HEADER_LEN == 32,
    "the version field sits at bytes 8..16 of the header"
);
