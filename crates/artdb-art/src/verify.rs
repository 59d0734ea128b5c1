//! `verify` (every in-memory invariant, as typed violations) and `stats` (shape and memory).
//!
//! Invariants checked (numbered as in `node/mod.rs` and DESIGN.md):
//! 1. a node's kind fits its child count, and the header count equals the used slots;
//! 2. Node4/Node16 keys are sorted and distinct; Node48 index entries name distinct used slots;
//! 3. an inner node has at least two entries (children plus value);
//! 4. a node's stored depth equals the key bytes consumed above it, and depth + prefix stays
//!    below KEY_LEN_MAX; a value slot holds only a value (inline or a leaf with empty suffix);
//! 5. heap nodes carry a version no newer than the writer's; persisted nodes point only to
//!    persisted nodes at smaller offsets (checked by the resolver, reported as `Unreadable`);
//! 6. iteration yields strictly increasing keys, every key at most KEY_LEN_MAX bytes, and `len`
//!    equals the number yielded.
//!
//! "Every leaf's key starts with its path" holds by construction here (a leaf stores only the
//! suffix after its path), so it is checked as: no leaf key exceeds KEY_LEN_MAX.

use crate::lookup::{Entry, View};
use crate::node::{
    self, Body, InnerRef, KIND_NODE16, KIND_NODE256, KIND_NODE4, KIND_NODE48, NODE16_SHRINK_COUNT,
    NODE256_SHRINK_COUNT, NODE48_SHRINK_COUNT,
};
use crate::tree::Tree;
use crate::word::{self, Word};
use crate::{Error, KEY_LEN_MAX};
use std::fmt;

/// One broken invariant, with the key path (bytes from the root) of the node at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// The child count does not fit the node kind.
    CountOutsideKind {
        /// Path to the node.
        path: Vec<u8>,
        /// Kind byte.
        kind: u8,
        /// Header count.
        count: usize,
    },
    /// The header count differs from the used child slots.
    CountMismatch {
        /// Path to the node.
        path: Vec<u8>,
        /// Header count.
        header: usize,
        /// Used slots.
        used: usize,
    },
    /// A leaf pack whose entries are not sorted and distinct (or a wide pack whose value slots
    /// are not a permutation of its entries).
    PackDisordered {
        /// Path to the pack.
        path: Vec<u8>,
    },
    /// Node4/Node16 keys out of order or repeated, or a bad Node48 index.
    KeysDisordered {
        /// Path to the node.
        path: Vec<u8>,
    },
    /// A node with fewer than two entries (it should have been collapsed).
    TooFewEntries {
        /// Path to the node.
        path: Vec<u8>,
    },
    /// Stored depth differs from the key bytes consumed above the node.
    DepthMismatch {
        /// Path to the node.
        path: Vec<u8>,
        /// Depth in the header.
        stored: usize,
        /// Depth by the walk.
        expected: usize,
    },
    /// A value slot holds a node or a leaf with a non-empty suffix.
    ValueSlotNotValue {
        /// Path to the node.
        path: Vec<u8>,
    },
    /// A heap node stamped with a version newer than the writer's.
    VersionAhead {
        /// Path to the node.
        path: Vec<u8>,
        /// Stamped version.
        version: u64,
        /// Writer version.
        current: u64,
    },
    /// A key longer than KEY_LEN_MAX.
    KeyTooLong {
        /// Path to the entry (truncated key).
        path: Vec<u8>,
    },
    /// Iteration yielded a key not greater than the one before.
    OrderBroken {
        /// The earlier key.
        previous: Vec<u8>,
        /// The later key.
        next: Vec<u8>,
    },
    /// `len` differs from the number of keys iterated.
    LenMismatch {
        /// Stored len.
        len: u64,
        /// Keys counted.
        counted: u64,
    },
    /// A hinted pack word (tag 101) whose hint does not describe its heap pack (capacity =
    /// count + spare, record stride, full bit = no spare slot, no prefix, not dense). Lookups
    /// still answer right (`lookup::heap::step` checks the header against the hint before it uses
    /// the hint's layout), but they and the insert path's prefetches would work from a wrong
    /// layout or count guess.
    PackHintStale {
        /// Path to the pack.
        path: Vec<u8>,
    },
    /// A node could not be read (corrupt persisted image).
    Unreadable {
        /// Path to the word.
        path: Vec<u8>,
        /// The read error.
        error: Error,
    },
}

/// Writes `bytes` as text a user can read and type back: printable ASCII as itself, `\\` for a
/// backslash, `\"` for a quote, `\xNN` for any other byte; quoted, so an empty path shows.
struct ShowBytes<'a>(&'a [u8]);

impl fmt::Display for ShowBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for &byte in self.0 {
            match byte {
                b'\\' => f.write_str("\\\\")?,
                b'"' => f.write_str("\\\"")?,
                0x20..=0x7e => write!(f, "{}", char::from(byte))?,
                _ => write!(f, "\\x{byte:02x}")?,
            }
        }
        f.write_str("\"")
    }
}

/// A sentence for a user: which invariant broke and where, the key path shown as text (see
/// [`ShowBytes`]). The variant keeps the data for tools.
impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::CountOutsideKind { path, kind, count } => write!(
                f,
                "the node at key path {} holds {count} children, which a node of kind {kind} \
                 cannot",
                ShowBytes(path)
            ),
            Violation::CountMismatch { path, header, used } => write!(
                f,
                "the node at key path {} says it has {header} children but {used} slots are used",
                ShowBytes(path)
            ),
            Violation::PackDisordered { path } => write!(
                f,
                "the leaf pack at key path {} has entries out of order or repeated",
                ShowBytes(path)
            ),
            Violation::KeysDisordered { path } => write!(
                f,
                "the node at key path {} has child keys out of order, repeated, or a bad index",
                ShowBytes(path)
            ),
            Violation::TooFewEntries { path } => write!(
                f,
                "the node at key path {} has fewer than two entries (it should have been merged \
                 into its parent)",
                ShowBytes(path)
            ),
            Violation::DepthMismatch {
                path,
                stored,
                expected,
            } => write!(
                f,
                "the node at key path {} records depth {stored} but sits at depth {expected}",
                ShowBytes(path)
            ),
            Violation::ValueSlotNotValue { path } => write!(
                f,
                "the value slot of the node at key path {} holds something other than a value",
                ShowBytes(path)
            ),
            Violation::VersionAhead {
                path,
                version,
                current,
            } => write!(
                f,
                "the node at key path {} is stamped with version {version}, newer than the \
                 writer's {current}",
                ShowBytes(path)
            ),
            Violation::KeyTooLong { path } => write!(
                f,
                "a key starting {} is longer than the limit of {KEY_LEN_MAX} bytes",
                ShowBytes(path)
            ),
            Violation::OrderBroken { previous, next } => write!(
                f,
                "keys out of order: {} came after {}",
                ShowBytes(next),
                ShowBytes(previous)
            ),
            Violation::LenMismatch { len, counted } => {
                write!(f, "the tree records {len} keys but {counted} were found")
            }
            Violation::PackHintStale { path } => write!(
                f,
                "the leaf pack at key path {} has a stale size hint in its parent's word",
                ShowBytes(path)
            ),
            // A persisted image's own `Display` ends with the advice to run verify, which
            // inside verify's report is noise: the report says what to do once.
            Violation::Unreadable {
                path,
                error: Error::Persisted { offset, reason },
            } => write!(
                f,
                "the node at key path {} cannot be read: the persisted node at file offset \
                 {offset} is unusable ({reason})",
                ShowBytes(path)
            ),
            Violation::Unreadable { path, error } => write!(
                f,
                "the node at key path {} cannot be read: {error}",
                ShowBytes(path)
            ),
        }
    }
}

/// Shape and memory of one version of the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Node4 count.
    pub node4: u64,
    /// Node16 count.
    pub node16: u64,
    /// Node48 count.
    pub node48: u64,
    /// Node256 count.
    pub node256: u64,
    /// Leaves (allocated key suffix + value).
    pub leaves: u64,
    /// Values stored inline in child words.
    pub inline_values: u64,
    /// Leaf packs (each holding several keys), dense packs included.
    pub packs: u64,
    /// Dense packs among `packs` (256 one-byte suffixes, no fence: node/pack/dense.rs).
    pub dense_packs: u64,
    /// Wide packs among `packs` (values over `PACK_VALUE_WIDTH_MAX` bytes in an area of their
    /// own: node/pack/wide.rs).
    pub wide_packs: u64,
    /// Nodes and leaves read from persisted images.
    pub persisted: u64,
    /// `depth_histogram[d]`: entries with `d` inner nodes above them.
    pub depth_histogram: Vec<u64>,
    /// Bytes of heap images (inner nodes and leaves), excluding allocator overhead.
    pub heap_bytes: u64,
    /// Keys.
    pub keys: u64,
}

struct Item {
    bits: u64,
    depth: usize,
    path: Vec<u8>,
    parent: Option<u64>,
    levels: usize,
    value_slot: bool,
}

/// Walks every word of a version, calling `visit` for each resolved entry.
fn walk(view: &View<'_>, mut visit: impl FnMut(&Item, Result<&Entry<'_>, Error>)) {
    let root = word::load(view.root);
    let mut pending = vec![Item {
        bits: root,
        depth: 0,
        path: Vec::new(),
        parent: None,
        levels: 0,
        value_slot: false,
    }];
    while let Some(item) = pending.pop() {
        let entry = match view.resolver.resolve(item.bits, item.depth, item.parent) {
            Ok(entry) => entry,
            Err(error) => {
                visit(&item, Err(error));
                continue;
            }
        };
        visit(&item, Ok(&entry));
        if let Entry::Inner(inner) = entry {
            let mut path = item.path.clone();
            path.extend_from_slice(inner.prefix);
            let end = item.depth + inner.prefix.len();
            let value = word::load(inner.value_slot());
            if value != 0 {
                pending.push(Item {
                    bits: value,
                    depth: end,
                    path: path.clone(),
                    parent: inner.persisted,
                    levels: item.levels + 1,
                    value_slot: true,
                });
            }
            let mut start = 0usize;
            while let Some((byte, slot)) = inner.next_from(start) {
                let mut child_path = path.clone();
                child_path.push(byte);
                pending.push(Item {
                    bits: word::load(slot),
                    depth: end + 1,
                    path: child_path,
                    parent: inner.persisted,
                    levels: item.levels + 1,
                    value_slot: false,
                });
                start = byte as usize + 1;
            }
        }
    }
}

fn check_inner(inner: &InnerRef<'_>, item: &Item, current: u64, out: &mut Vec<Violation>) {
    let path = || item.path.clone();
    let header = inner.header();
    let count = header.count();
    let (low, high) = match header.kind {
        KIND_NODE4 => (1, node::capacity(KIND_NODE4)),
        KIND_NODE16 => (NODE16_SHRINK_COUNT + 1, node::capacity(KIND_NODE16)),
        KIND_NODE48 => (NODE48_SHRINK_COUNT + 1, node::capacity(KIND_NODE48)),
        _ => (NODE256_SHRINK_COUNT + 1, node::capacity(KIND_NODE256)),
    };
    let value = word::load(inner.value_slot()) != 0;
    if count + usize::from(value) < 2 {
        out.push(Violation::TooFewEntries { path: path() });
    } else if count > high || (count < low && !(header.kind == KIND_NODE4 && value)) {
        out.push(Violation::CountOutsideKind {
            path: path(),
            kind: header.kind,
            count,
        });
    }
    let mut used = 0usize;
    let mut start = 0usize;
    while let Some((byte, _)) = inner.next_from(start) {
        used += 1;
        start = byte as usize + 1;
    }
    let ordered = match inner.body {
        Body::N4(node) => node.keys().windows(2).all(|w| w[0] < w[1]),
        Body::N16(node) => node.keys().windows(2).all(|w| w[0] < w[1]),
        Body::N48(node) => {
            let mut seen = [false; 48];
            node.index().iter().filter(|&&i| i != 0).all(|&i| {
                let slot = i as usize - 1;
                slot < 48 && !std::mem::replace(&mut seen[slot], true)
            })
        }
        Body::N256(node) => node.used() == used,
    };
    if !ordered {
        out.push(Violation::KeysDisordered { path: path() });
    }
    if used != count {
        out.push(Violation::CountMismatch {
            path: path(),
            header: count,
            used,
        });
    }
    if header.depth() != item.depth {
        out.push(Violation::DepthMismatch {
            path: path(),
            stored: header.depth(),
            expected: item.depth,
        });
    }
    if inner.persisted.is_none() && header.version() > current {
        out.push(Violation::VersionAhead {
            path: path(),
            version: header.version(),
            current,
        });
    }
    if item.value_slot {
        out.push(Violation::ValueSlotNotValue { path: path() });
    }
}

pub(crate) fn verify_view(view: &View<'_>, len: u64, current: u64) -> Vec<Violation> {
    let mut out = Vec::new();
    walk(view, |item, entry| match entry {
        Err(error) => out.push(Violation::Unreadable {
            path: item.path.clone(),
            error,
        }),
        Ok(Entry::Inner(inner)) => check_inner(inner, item, current, &mut out),
        Ok(Entry::Pack(pack)) => {
            if item.value_slot {
                out.push(Violation::ValueSlotNotValue {
                    path: item.path.clone(),
                });
            }
            if !pack.is_sorted() {
                out.push(Violation::PackDisordered {
                    path: item.path.clone(),
                });
            }
            if item.depth + pack.prefix.len() + pack.key_width > KEY_LEN_MAX {
                out.push(Violation::KeyTooLong {
                    path: item.path.clone(),
                });
            }
            if item.bits & word::TAG_MASK == word::TAG_HEAP_PACK_HINTED
                && !pack.hint_describes(item.bits)
            {
                out.push(Violation::PackHintStale {
                    path: item.path.clone(),
                });
            }
        }
        Ok(Entry::Leaf(leaf)) => {
            if item.value_slot && !leaf.suffix.is_empty() {
                out.push(Violation::ValueSlotNotValue {
                    path: item.path.clone(),
                });
            }
            if item.depth + leaf.suffix.len() > KEY_LEN_MAX {
                out.push(Violation::KeyTooLong {
                    path: item.path.clone(),
                });
            }
        }
        Ok(_) => {}
    });
    let mut cursor = crate::cursor::Cursor::new(*view);
    let mut previous: Option<Vec<u8>> = None;
    let mut counted = 0u64;
    let mut step = cursor.seek_first();
    loop {
        match step {
            Err(error) => {
                out.push(Violation::Unreadable {
                    path: cursor.key().to_vec(),
                    error,
                });
                break;
            }
            Ok(false) => break,
            Ok(true) => {}
        }
        counted += 1;
        let key = cursor.key();
        if let Some(previous) = &previous {
            if previous.as_slice() >= key {
                out.push(Violation::OrderBroken {
                    previous: previous.clone(),
                    next: key.to_vec(),
                });
            }
        }
        match &mut previous {
            Some(buffer) => {
                buffer.clear();
                buffer.extend_from_slice(key);
            }
            None => previous = Some(key.to_vec()),
        }
        step = cursor.next();
    }
    if counted != len {
        out.push(Violation::LenMismatch { len, counted });
    }
    out
}

pub(crate) fn stats_view(view: &View<'_>) -> Stats {
    let mut stats = Stats::default();
    walk(view, |item, entry| {
        let Ok(entry) = entry else { return };
        let persisted = matches!(word::decode(item.bits), Word::Persisted(_));
        if persisted {
            stats.persisted += 1;
        }
        let entries_at_level = |stats: &mut Stats, count: u64| {
            stats.keys += count;
            if stats.depth_histogram.len() <= item.levels {
                stats.depth_histogram.resize(item.levels + 1, 0);
            }
            stats.depth_histogram[item.levels] += count;
        };
        match entry {
            Entry::Empty => {}
            Entry::Inline(_) => {
                stats.inline_values += 1;
                entries_at_level(&mut stats, 1);
            }
            Entry::Leaf(leaf) => {
                stats.leaves += 1;
                if !persisted {
                    stats.heap_bytes += leaf.image_len() as u64;
                }
                entries_at_level(&mut stats, 1);
            }
            Entry::Pack(pack) => {
                stats.packs += 1;
                stats.dense_packs += u64::from(pack.dense);
                stats.wide_packs += u64::from(pack.wide);
                if !persisted {
                    stats.heap_bytes += pack.image.len() as u64;
                }
                entries_at_level(&mut stats, pack.count() as u64);
            }
            Entry::Inner(inner) => {
                match inner.kind() {
                    KIND_NODE4 => stats.node4 += 1,
                    KIND_NODE16 => stats.node16 += 1,
                    KIND_NODE48 => stats.node48 += 1,
                    _ => stats.node256 += 1,
                }
                if !persisted {
                    stats.heap_bytes += inner.image.len() as u64;
                }
            }
        }
    });
    stats
}

impl Tree {
    /// Checks every in-memory invariant; `Err` lists each violation found.
    pub fn verify(&self) -> Result<(), Vec<Violation>> {
        let violations = verify_view(&self.view(), self.len(), self.version());
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    /// Nodes per kind, depth histogram, bytes.
    pub fn stats(&self) -> Stats {
        stats_view(&self.view())
    }
}

impl crate::Snapshot {
    /// Checks every invariant of this version; `Err` lists each violation found.
    pub fn verify(&self) -> Result<(), Vec<Violation>> {
        let violations = verify_view(&self.view(), self.len(), u64::MAX);
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    /// Nodes per kind, depth histogram, bytes.
    pub fn stats(&self) -> Stats {
        stats_view(&self.view())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `verify` reports a hinted pack word whose hint no longer describes its pack (a full bit,
    /// capacity or stride that an in-place write forgot to update), and accepts the word the
    /// writer keeps.
    #[test]
    fn stale_pack_hints_are_reported() {
        let mut tree = Tree::new();
        // Distinct first bytes: one pack at the root, without a prefix, so its word is hinted.
        for i in 0..40u8 {
            tree.insert(&[i * 6, i ^ 0x5A, 7], b"vv").unwrap();
        }
        let bits = tree.root_bits();
        assert_eq!(bits & word::TAG_MASK, word::TAG_HEAP_PACK_HINTED);
        assert_eq!(tree.verify(), Ok(()));
        let (_, _, full) = word::pack_hint_fields(bits);
        let stale_full = word::with_pack_full(bits, !full);
        // The capacity field is the hint's low bits (word.rs): one more slot than the pack has.
        let stale_capacity = bits + (1 << 47);
        for stale in [stale_full, stale_capacity] {
            let root = stale.to_le_bytes();
            let view = View {
                root: &root,
                resolver: tree.view().resolver,
            };
            let violations = verify_view(&view, tree.len(), tree.version());
            assert_eq!(
                violations,
                vec![Violation::PackHintStale { path: Vec::new() }],
                "{stale:#x}"
            );
        }
    }

    /// Each violation reads as a sentence with its key path as text, never as Rust `Debug`.
    #[test]
    fn violations_display_as_sentences_with_readable_paths() {
        let shown = Violation::Unreadable {
            path: b"ke\x00y\\".to_vec(),
            error: Error::Persisted {
                offset: 4096,
                reason: "bad kind".into(),
            },
        }
        .to_string();
        assert!(
            shown.starts_with("the node at key path \"ke\\x00y\\\\\" cannot be read: "),
            "{shown}"
        );
        assert!(!shown.contains("[107"), "{shown}");
        assert!(
            shown.ends_with("the persisted node at file offset 4096 is unusable (bad kind)"),
            "{shown}"
        );
        assert!(!shown.contains("run verify"), "{shown}");
        let shown = Violation::OrderBroken {
            previous: b"b".to_vec(),
            next: b"a\"".to_vec(),
        }
        .to_string();
        assert_eq!(shown, "keys out of order: \"a\\\"\" came after \"b\"");
        let shown = Violation::LenMismatch { len: 3, counted: 2 }.to_string();
        assert_eq!(shown, "the tree records 3 keys but 2 were found");
        assert_eq!(
            Violation::TooFewEntries { path: Vec::new() }.to_string(),
            "the node at key path \"\" has fewer than two entries (it should have been merged \
             into its parent)"
        );
    }
}
