//! `Tree`: the single-writer tree that owns the newest version, with its read API and the
//! entry points of its writes; the writer that carries them out, and the walk every insert and
//! removal makes, are in `write/writer.rs`.

use std::sync::Arc;

use crate::cursor::{Cursor, Iter, Pair};
use crate::lookup::{check_key, Entry, Resolver, View};
use crate::persist::source::NodeSource;
use crate::word::{self, Word};
use crate::write::cow::{Registry, Snapshot};
use crate::write::writer::{check_value, Upsert, Writer};
use crate::{ChildWord, Error};

/// The single writer of a tree; owns the newest version. Readers on other threads use
/// [`Snapshot`]s taken with [`Tree::snapshot`].
pub struct Tree {
    root: [u8; 8],
    writer: Writer,
}

impl Default for Tree {
    fn default() -> Self {
        Tree::new()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.writer.registry.tree_dropped(word::load(&self.root));
    }
}

impl Tree {
    /// An empty tree.
    pub fn new() -> Tree {
        Tree::with_root(0, 0, None)
    }

    pub(crate) fn with_root(root: u64, len: u64, source: Option<Arc<dyn NodeSource>>) -> Tree {
        Tree {
            root: root.to_le_bytes(),
            writer: Writer {
                version: 1,
                dirty: false,
                len,
                registry: Registry::new(),
                source,
                released_persisted: Vec::new(),
                released_mark: 0,
            },
        }
    }

    /// A tree whose root is a persisted (or inline, or empty) word, reading persisted nodes
    /// from `source`. `len` is the number of keys (stored by the engine beside the root).
    pub fn open(root: ChildWord, len: u64, source: Arc<dyn NodeSource>) -> Result<Tree, Error> {
        let bits = root.to_bits();
        if ChildWord::from_bits(bits).is_none() {
            return Err(Error::BadRoot { bits });
        }
        Ok(Tree::with_root(bits, len, Some(source)))
    }

    /// A tree over `root` with the given writer state (for `write/fork.rs`).
    pub(crate) fn from_parts(root: u64, writer: Writer) -> Tree {
        Tree {
            root: root.to_le_bytes(),
            writer,
        }
    }

    #[inline]
    pub(crate) fn view(&self) -> View<'_> {
        View {
            root: &self.root,
            resolver: Resolver {
                source: self.writer.source.as_deref(),
            },
        }
    }

    pub(crate) fn parts_mut(&mut self) -> (&mut [u8; 8], &mut Writer) {
        (&mut self.root, &mut self.writer)
    }

    pub(crate) fn root_bits(&self) -> u64 {
        word::load(&self.root)
    }

    /// The node source, if the tree was opened over one.
    pub fn source(&self) -> Option<&Arc<dyn NodeSource>> {
        self.writer.source.as_ref()
    }

    /// Takes an immutable snapshot of the current version in O(1).
    pub fn snapshot(&mut self) -> Snapshot {
        let writer = &mut self.writer;
        writer.released_mark = writer.released_persisted.len();
        let version = if writer.dirty {
            writer.dirty = false;
            writer.version += 1;
            writer.version - 1
        } else {
            writer.version - 1
        };
        Snapshot::new(
            word::load(&self.root),
            writer.len,
            version,
            writer.registry.clone(),
            writer.source.clone(),
        )
    }

    /// Sets `key` to `value`; returns the previous value.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        check_key(key)?;
        check_value(value)?;
        let (root, writer) = self.parts_mut();
        writer.upsert(root, key, value)
    }

    /// Sets `key` to `value` (insert or replace) without returning the old value, so a
    /// replacement allocates nothing for it; `true` if a value was replaced.
    pub fn set(&mut self, key: &[u8], value: &[u8]) -> Result<bool, Error> {
        check_key(key)?;
        check_value(value)?;
        let (root, writer) = self.parts_mut();
        Ok(matches!(
            writer.upsert_with(root, key, value, false)?,
            Upsert::Replaced(_)
        ))
    }

    /// Inserts `key` only if absent; `true` if it was inserted.
    pub fn insert_if_absent(&mut self, key: &[u8], value: &[u8]) -> Result<bool, Error> {
        check_value(value)?;
        if self.view().get(key)?.is_some() {
            return Ok(false);
        }
        let (root, writer) = self.parts_mut();
        writer.upsert(root, key, value)?;
        Ok(true)
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        if self.view().get(key)?.is_none() {
            return Ok(None);
        }
        let (root, writer) = self.parts_mut();
        writer.remove(root, key)
    }

    /// Number of keys.
    pub fn len(&self) -> u64 {
        self.writer.len
    }

    /// Whether the tree has no keys.
    pub fn is_empty(&self) -> bool {
        self.writer.len == 0
    }

    /// The value of `key`, borrowed from the tree.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>, Error> {
        // SAFETY: `&self` keeps the tree's version live and unwritten for the borrow (raw/mod.rs
        // invariants 2 and 3), and `view()` is a view of it.
        unsafe { crate::lookup::get_lazy(&self.root, key, || self.view()) }
    }

    /// Looks up many keys, overlapping their cache misses; `out[i]` is the value of `keys[i]`.
    pub fn get_many<'a>(
        &'a self,
        keys: &[&[u8]],
        out: &mut Vec<Option<&'a [u8]>>,
    ) -> Result<(), Error> {
        self.view().get_many(keys, out)
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Result<Option<Pair<'_>>, Error> {
        self.cursor().into_first()
    }

    /// The largest key and its value.
    pub fn last(&self) -> Result<Option<Pair<'_>>, Error> {
        self.cursor().into_last()
    }

    /// All pairs in key order (double-ended).
    pub fn iter(&self) -> Iter<'_> {
        Iter::range::<[u8], _>(self.view(), ..)
    }

    /// The pairs whose keys fall in `range`.
    pub fn range<K, R>(&self, range: R) -> Iter<'_>
    where
        K: AsRef<[u8]> + ?Sized,
        R: std::ops::RangeBounds<K>,
    {
        Iter::range(self.view(), range)
    }

    /// The pairs whose keys start with `prefix`.
    pub fn prefix(&self, prefix: &[u8]) -> Iter<'_> {
        Iter::prefix(self.view(), prefix)
    }

    /// A cursor (not positioned until a seek).
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor::new(self.view())
    }

    /// Drains the offsets of persisted nodes (inner nodes and leaves) that the current version
    /// no longer references, in the order they were unlinked. Snapshots taken before the unlink
    /// may still read them: the engine reuses their space only once those snapshots are gone.
    pub fn take_released_persisted(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.writer.released_persisted)
    }

    /// Calls `visit` with the offset of every persisted node (inner or leaf) reachable from the
    /// current root, each once (a persisted image has exactly one parent).
    pub fn for_each_persisted(&self, mut visit: impl FnMut(u64)) -> Result<(), Error> {
        let view = self.view();
        let mut pending = vec![(word::load(view.root), 0usize, None)];
        while let Some((bits, depth, parent)) = pending.pop() {
            if let Word::Persisted(offset) = word::decode(bits) {
                visit(offset);
            }
            if let Entry::Inner(inner) = view.resolver.resolve(bits, depth, parent)? {
                let end = depth + inner.prefix.len();
                let value = word::load(inner.value_slot());
                if value != 0 {
                    pending.push((value, end, inner.persisted));
                }
                let mut start = 0usize;
                while let Some((byte, slot)) = inner.next_from(start) {
                    pending.push((word::load(slot), end + 1, inner.persisted));
                    start = byte as usize + 1;
                }
            }
        }
        Ok(())
    }

    /// Retired nodes waiting for snapshots to go (for tests and stats).
    pub fn retired_len(&self) -> usize {
        self.writer.registry.retired_len()
    }

    /// The current write version (nodes stamped with it are written in place).
    pub fn version(&self) -> u64 {
        self.writer.version
    }
}
