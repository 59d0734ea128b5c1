//! The read API of [`Snapshot`] (the same operations as on `Tree`, over the snapshot's version).

use std::ops::RangeBounds;

use crate::cursor::{Cursor, Iter, Pair};
use crate::lookup::PointReader;
use crate::write::cow::Snapshot;
use crate::Error;

impl Snapshot {
    /// The value of `key`, borrowed from the snapshot.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Result<Option<&[u8]>, Error> {
        // SAFETY: a snapshot's version is immutable and lives as long as the snapshot (raw/mod.rs
        // invariants 2 and 3), and `view()` is a view of it.
        unsafe { crate::lookup::get_lazy(self.view().root, key, || self.view()) }
    }

    /// A handle for many point lookups in this snapshot: the same answers as [`Snapshot::get`],
    /// with the persisted path's per-lookup setup done once ([`PointReader`]).
    #[inline]
    pub fn point_reader(&self) -> PointReader<'_> {
        PointReader::new(self.view())
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
        R: RangeBounds<K>,
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
}
