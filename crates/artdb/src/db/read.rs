//! read: a read transaction, one consistent snapshot of every table.
//!
//! Taking one is O(tables) reference-count increments under a read lock; afterwards it never
//! blocks and is never blocked. What it reads is exactly the state of the last commit before it
//! was taken, however many commits, checkpoints and page reuses follow (its pin keeps the pages
//! its version can reach from being rewritten; the tree's snapshot keeps its heap nodes).

use super::Published;
use crate::engine::Pin;
use crate::error::{from_tree, Error, Result};
use artdb_art::{PointReader, Snapshot};
use std::ops::RangeBounds;
use std::sync::Arc;

/// A snapshot of the database (see the module docs). `Send + Sync`.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let read = db.read();
/// db.transact(|txn| txn.insert("t", b"a", b"changed"))?;
/// // The snapshot does not see what committed after it was taken; a new one does.
/// assert_eq!(read.get("t", b"a")?, Some(&b"1"[..]));
/// assert_eq!(db.read().get("t", b"a")?, Some(&b"changed"[..]));
/// assert_eq!(read.table_names(), ["t"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ReadTxn {
    published: Arc<Published>,
    _pin: Pin,
}

impl ReadTxn {
    pub(crate) fn new(published: Arc<Published>, pin: Pin) -> ReadTxn {
        ReadTxn {
            published,
            _pin: pin,
        }
    }

    /// Names of the tables, in order.
    pub fn table_names(&self) -> Vec<String> {
        self.published.tables.keys().cloned().collect()
    }

    /// A table of this snapshot.
    pub fn table(&self, name: &str) -> Result<Table<'_>> {
        self.published
            .tables
            .get(name)
            .map(|snapshot| Table {
                snapshot,
                reader: snapshot.point_reader(),
            })
            .ok_or_else(|| Error::TableNotFound {
                name: name.to_string(),
            })
    }

    /// Shorthand for `self.table(table)?.get(key)`.
    pub fn get(&self, table: &str, key: &[u8]) -> Result<Option<&[u8]>> {
        self.table(table)?.get(key)
    }
}

/// One table of a [`ReadTxn`]; everything it returns borrows from the snapshot.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let read = db.read();
/// let table = read.table("t")?;
/// assert_eq!(table.len(), 3);
/// assert_eq!(table.get(b"b")?, Some(&b"2"[..]));
/// assert_eq!(table.last()?, Some((b"c".to_vec(), &b"3"[..])));
/// let mut values = Vec::new();
/// table.get_many(&[&b"a"[..], &b"z"[..]], &mut values)?;
/// assert_eq!(values, [Some(&b"1"[..]), None]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct Table<'a> {
    snapshot: &'a Snapshot,
    /// Point lookups (`get`): the persisted path's setup is done once per table handle.
    reader: PointReader<'a>,
}

impl<'a> Table<'a> {
    /// Number of keys.
    pub fn len(&self) -> u64 {
        self.snapshot.len()
    }

    /// Whether the table has no keys.
    pub fn is_empty(&self) -> bool {
        self.snapshot.is_empty()
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<&'a [u8]>> {
        self.reader.get(key).map_err(from_tree)
    }

    /// Looks up many keys at once, overlapping their cache misses; `out[i]` is `keys[i]`'s value.
    pub fn get_many(&self, keys: &[&[u8]], out: &mut Vec<Option<&'a [u8]>>) -> Result<()> {
        self.snapshot.get_many(keys, out).map_err(from_tree)
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Result<Option<(Vec<u8>, &'a [u8])>> {
        self.snapshot.first().map_err(from_tree)
    }

    /// The largest key and its value.
    pub fn last(&self) -> Result<Option<(Vec<u8>, &'a [u8])>> {
        self.snapshot.last().map_err(from_tree)
    }

    /// All pairs in key order (double-ended).
    pub fn iter(&self) -> Iter<'a> {
        Iter {
            inner: self.snapshot.iter(),
        }
    }

    /// The pairs whose keys fall in `range` (double-ended).
    pub fn range<K, R>(&self, range: R) -> Iter<'a>
    where
        K: AsRef<[u8]> + ?Sized,
        R: RangeBounds<K>,
    {
        Iter {
            inner: self.snapshot.range(range),
        }
    }

    /// The pairs whose keys start with `prefix`.
    pub fn prefix(&self, prefix: &[u8]) -> Iter<'a> {
        Iter {
            inner: self.snapshot.prefix(prefix),
        }
    }

    /// A cursor, not positioned until a seek.
    pub fn cursor(&self) -> Cursor<'a> {
        Cursor {
            inner: self.snapshot.cursor(),
        }
    }
}

/// Ordered pairs of a table: `Result<(key, value)>` in key order, from either end.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let read = db.read();
/// let table = read.table("t")?;
/// let from_b: Vec<Vec<u8>> = table
///     .range(&b"b"[..]..)
///     .map(|pair| pair.map(|(key, _value)| key))
///     .collect::<Result<_, artdb::Error>>()?;
/// assert_eq!(from_b, [b"b".to_vec(), b"c".to_vec()]);
/// let (last, _) = table.iter().next_back().expect("three pairs")?; // ok: the example put three
/// assert_eq!(last, b"c");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Iter<'a> {
    inner: artdb_art::Iter<'a>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Result<(Vec<u8>, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next().map(|item| item.map_err(from_tree))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back().map(|item| item.map_err(from_tree))
    }
}

/// A position in a table: seek (lower bound), then step either way without allocating.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let read = db.read();
/// let table = read.table("t")?;
/// let mut cursor = table.cursor();
/// assert!(cursor.seek(b"bb")?); // the first key >= "bb"
/// assert_eq!((cursor.key(), cursor.value()), (&b"c"[..], &b"3"[..]));
/// assert!(cursor.prev()?);
/// assert_eq!(cursor.key(), b"b");
/// assert!(!cursor.seek(b"d")?); // no key >= "d"
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Cursor<'a> {
    inner: artdb_art::Cursor<'a>,
}

impl<'a> Cursor<'a> {
    /// Moves to the first key `>= key`; false if there is none.
    pub fn seek(&mut self, key: &[u8]) -> Result<bool> {
        self.inner.seek(key).map_err(from_tree)
    }

    /// Moves to the smallest key; false if the table is empty.
    pub fn seek_first(&mut self) -> Result<bool> {
        self.inner.seek_first().map_err(from_tree)
    }

    /// Moves to the largest key; false if the table is empty.
    pub fn seek_last(&mut self) -> Result<bool> {
        self.inner.seek_last().map_err(from_tree)
    }

    /// Steps to the next key; false when it runs off the end.
    // A cursor step that can fail and returns whether it moved: not an Iterator (see Iter).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<bool> {
        self.inner.next().map_err(from_tree)
    }

    /// Steps to the previous key; false when it runs off the start.
    pub fn prev(&mut self) -> Result<bool> {
        self.inner.prev().map_err(from_tree)
    }

    /// Whether the cursor is at a pair.
    pub fn is_valid(&self) -> bool {
        self.inner.is_valid()
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        self.inner.key()
    }

    /// The current value (empty when not valid).
    pub fn value(&self) -> &'a [u8] {
        self.inner.value()
    }
}
