//! Typed views of a table: [`ReadTable`] on a read snapshot, [`TxnTable`] on a write
//! transaction, [`BatchTable`] on a write batch, and [`TypedIter`], the ordered scans. Each
//! call encodes its typed arguments and calls the bytes API; each pair read is decoded, and one
//! that does not decode is [`TypedError::Decode`] naming the table. The views hold no state of
//! their own (a table handle or a borrow, and the definition), so taking one costs nothing.

use super::encoding::{encoded, first_field_prefix, Tuple};
use super::{Key, Part, TableDefinition, TypedError, TypedPair, TypedResult, Value};
use crate::db::{Iter, ReadTxn, Table, WriteTxn};
use crate::error::Result;
use crate::txn::{Transaction, TxnIter};
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

/// Encodes a typed range's bounds.
fn encoded_bounds<'k, K: Key, R: RangeBounds<K::Ref<'k>>>(
    range: &R,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let own = |bound: Bound<&K::Ref<'k>>| match bound {
        Bound::Included(key) => Bound::Included(encoded::<K>(key)),
        Bound::Excluded(key) => Bound::Excluded(encoded::<K>(key)),
        Bound::Unbounded => Bound::Unbounded,
    };
    (own(range.start_bound()), own(range.end_bound()))
}

/// Decodes a stored pair.
fn decode_pair<K: Key, V: Value>(
    table: &str,
    key: &[u8],
    value: &[u8],
) -> TypedResult<TypedPair<K, V>> {
    let key_owned =
        K::decode(key).map_err(|error| TypedError::decode(table, Part::Key, key, error))?;
    let value_owned = decode_value::<V>(table, value)?;
    Ok((key_owned, value_owned))
}

fn decode_value<V: Value>(table: &str, value: &[u8]) -> TypedResult<V::Owned> {
    V::decode(value).map_err(|error| TypedError::decode(table, Part::Value, value, error))
}

impl ReadTxn {
    /// The table `definition` names, typed (see [`crate::typed`]);
    /// [`crate::Error::TableNotFound`] if there is none.
    pub fn typed_table<'n, K: Key, V: Value>(
        &self,
        definition: TableDefinition<'n, K, V>,
    ) -> Result<ReadTable<'_, 'n, K, V>> {
        Ok(ReadTable {
            table: self.table(definition.name())?,
            definition,
        })
    }
}

impl Transaction {
    /// The table `definition` names, typed, as this transaction sees it (see
    /// [`crate::typed`]). Taking one costs nothing: take it again for each table a step uses.
    pub fn typed_table<'n, K: Key, V: Value>(
        &mut self,
        definition: TableDefinition<'n, K, V>,
    ) -> TxnTable<'_, 'n, K, V> {
        TxnTable {
            txn: self,
            definition,
        }
    }
}

impl<'db> WriteTxn<'db> {
    /// The table `definition` names, typed, as this write batch sees it (see
    /// [`crate::typed`]). Taking one costs nothing.
    pub fn typed_table<'n, K: Key, V: Value>(
        &mut self,
        definition: TableDefinition<'n, K, V>,
    ) -> BatchTable<'_, 'db, 'n, K, V> {
        BatchTable {
            batch: self,
            definition,
        }
    }
}

/// A typed table of a write batch ([`WriteTxn::typed_table`], of [`crate::Db::write`]).
///
/// ```
/// use artdb::{Db, Options, TableDefinition};
/// const COUNTS: TableDefinition<&str, u64> = TableDefinition::new("counts");
/// # let dir = tempfile::tempdir()?;
/// let db = Db::open_or_create(dir.path().join("counts.artdb"), Options::default())?;
/// let mut batch = db.write()?;
/// batch.create_table(COUNTS.name())?;
/// let mut counts = batch.typed_table(COUNTS);
/// for word in "a rose is a rose".split(' ') {
///     let count = counts.get(word)?.unwrap_or(0);
///     counts.insert(word, count + 1)?;
/// }
/// assert_eq!(counts.get("rose")?, Some(2));
/// batch.commit()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BatchTable<'b, 'db, 'n, K: Key, V: Value> {
    batch: &'b mut WriteTxn<'db>,
    definition: TableDefinition<'n, K, V>,
}

impl<K: Key, V: Value> BatchTable<'_, '_, '_, K, V> {
    /// The value of `key` (the batch's own writes included).
    pub fn get(&self, key: K::Ref<'_>) -> TypedResult<Option<V::Owned>> {
        let name = self.definition.name();
        match self.batch.get(name, &encoded::<K>(&key))? {
            Some(value) => decode_value::<V>(name, &value).map(Some),
            None => Ok(None),
        }
    }

    /// Sets `key` to `value`; returns the previous value.
    pub fn insert(&mut self, key: K::Ref<'_>, value: V::Ref<'_>) -> TypedResult<Option<V::Owned>> {
        let name = self.definition.name();
        let previous = self
            .batch
            .insert(name, &encoded::<K>(&key), &encoded::<V>(&value))?;
        previous
            .map(|bytes| decode_value::<V>(name, &bytes))
            .transpose()
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, key: K::Ref<'_>) -> TypedResult<Option<V::Owned>> {
        let name = self.definition.name();
        let previous = self.batch.remove(name, &encoded::<K>(&key))?;
        previous
            .map(|bytes| decode_value::<V>(name, &bytes))
            .transpose()
    }

    /// Number of keys as the batch sees them.
    pub fn len(&self) -> Result<u64> {
        self.batch.len(self.definition.name())
    }

    /// Whether the batch sees no keys.
    pub fn is_empty(&self) -> Result<bool> {
        self.len().map(|len| len == 0)
    }
}

/// A typed table of a read snapshot ([`ReadTxn::typed_table`]).
///
/// ```
/// use artdb::{Db, Options, TableDefinition};
/// const TEMPERATURES: TableDefinition<i16, f64> = TableDefinition::new("temperatures");
/// # let dir = tempfile::tempdir()?;
/// let db = Db::open_or_create(dir.path().join("t.artdb"), Options::default())?;
/// db.create_table(TEMPERATURES.name())?;
/// db.transact(|txn| {
///     let mut table = txn.typed_table(TEMPERATURES);
///     for (year, celsius) in [(-300, 14.1), (1900, 13.7), (2020, 14.9)] {
///         table.insert(year, celsius)?;
///     }
///     Ok(())
/// })?;
/// let read = db.read();
/// let table = read.typed_table(TEMPERATURES)?;
/// // Signed keys sort as numbers: -300 first. The newest year, from the back:
/// assert_eq!(table.first()?, Some((-300, 14.1)));
/// assert_eq!(table.range(..2000).next_back().transpose()?, Some((1900, 13.7)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ReadTable<'a, 'n, K: Key, V: Value> {
    table: Table<'a>,
    definition: TableDefinition<'n, K, V>,
}

impl<'a, 'n, K: Key, V: Value> ReadTable<'a, 'n, K, V> {
    /// Number of keys.
    pub fn len(&self) -> u64 {
        self.table.len()
    }

    /// Whether the table has no keys.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// The value of `key`.
    pub fn get(&self, key: K::Ref<'_>) -> TypedResult<Option<V::Owned>> {
        match self.table.get(&encoded::<K>(&key))? {
            Some(value) => decode_value::<V>(self.definition.name(), value).map(Some),
            None => Ok(None),
        }
    }

    /// The pairs whose keys fall in `range` (typed bounds: `3..10`, `("a", 0)..`), in key
    /// order, double-ended.
    pub fn range<'k, R: RangeBounds<K::Ref<'k>>>(&self, range: R) -> TypedIter<'a, 'n, K, V> {
        let bounds = encoded_bounds::<K, R>(&range);
        TypedIter::new(
            Inner::Read(self.table.range::<Vec<u8>, _>(bounds)),
            self.definition.name(),
        )
    }

    /// The pairs whose key's first field is `first` (a tuple key), in key order,
    /// double-ended: `prefix("alice")` of `(&str, u32)` keys is every `("alice", _)`.
    pub fn prefix(&self, first: <K::First as Value>::Ref<'_>) -> TypedIter<'a, 'n, K, V>
    where
        K: Tuple,
    {
        let prefix = first_field_prefix::<K>(&first);
        TypedIter::new(
            Inner::Read(self.table.prefix(&prefix)),
            self.definition.name(),
        )
    }

    /// All pairs in key order, double-ended.
    pub fn iter(&self) -> TypedIter<'a, 'n, K, V> {
        TypedIter::new(Inner::Read(self.table.iter()), self.definition.name())
    }

    /// The pair with the smallest key.
    pub fn first(&self) -> TypedResult<Option<TypedPair<K, V>>> {
        self.iter().next().transpose()
    }

    /// The pair with the largest key.
    pub fn last(&self) -> TypedResult<Option<TypedPair<K, V>>> {
        self.iter().next_back().transpose()
    }
}

/// A typed table of a write transaction ([`Transaction::typed_table`]): reads see the
/// transaction's own writes; writes are private to it until it commits.
///
/// ```
/// use artdb::{Db, Options, TableDefinition, WriteOptions};
/// // Seats by (row, letter as an ASCII byte): whether the seat is booked.
/// const SEATS: TableDefinition<(u8, u8), bool> = TableDefinition::new("seats");
/// # let dir = tempfile::tempdir()?;
/// let db = Db::open_or_create(dir.path().join("t.artdb"), Options::default())?;
/// db.create_table(SEATS.name())?;
/// let mut txn = db.begin_write(WriteOptions::default())?;
/// let mut seats = txn.typed_table(SEATS);
/// assert!(seats.insert_if_absent((12, b'C'), true)?);
/// assert!(!seats.insert_if_absent((12, b'C'), false)?); // taken
/// assert_eq!(seats.get((12, b'C'))?, Some(true));
/// assert_eq!(seats.range((12, 0)..(13, 0))?.count(), 1);
/// txn.commit()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TxnTable<'t, 'n, K: Key, V: Value> {
    txn: &'t mut Transaction,
    definition: TableDefinition<'n, K, V>,
}

impl<'t, 'n, K: Key, V: Value> TxnTable<'t, 'n, K, V> {
    /// The value of `key`.
    pub fn get(&self, key: K::Ref<'_>) -> TypedResult<Option<V::Owned>> {
        let name = self.definition.name();
        match self.txn.get(name, &encoded::<K>(&key))? {
            Some(value) => decode_value::<V>(name, value).map(Some),
            None => Ok(None),
        }
    }

    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: K::Ref<'_>, value: V::Ref<'_>) -> Result<()> {
        let name = self.definition.name();
        self.txn
            .insert(name, &encoded::<K>(&key), &encoded::<V>(&value))
    }

    /// Sets `key` to `value` only if the transaction sees no value for it; true if it did
    /// (see [`Transaction::insert_if_absent`]).
    pub fn insert_if_absent(&mut self, key: K::Ref<'_>, value: V::Ref<'_>) -> Result<bool> {
        let name = self.definition.name();
        self.txn
            .insert_if_absent(name, &encoded::<K>(&key), &encoded::<V>(&value))
    }

    /// Removes `key`; true if the transaction saw a value for it.
    pub fn remove(&mut self, key: K::Ref<'_>) -> Result<bool> {
        self.txn.remove(self.definition.name(), &encoded::<K>(&key))
    }

    /// Number of keys as the transaction sees them.
    pub fn len(&self) -> Result<u64> {
        self.txn.len(self.definition.name())
    }

    /// Whether the transaction sees no keys.
    pub fn is_empty(&self) -> Result<bool> {
        self.len().map(|len| len == 0)
    }

    /// The pairs whose keys fall in `range` (typed bounds), in key order, double-ended.
    pub fn range<'k, R: RangeBounds<K::Ref<'k>>>(
        &self,
        range: R,
    ) -> TypedResult<TypedIter<'_, 'n, K, V>> {
        let bounds = encoded_bounds::<K, R>(&range);
        let inner = self
            .txn
            .range::<Vec<u8>, _>(self.definition.name(), bounds)?;
        Ok(TypedIter::new(Inner::Txn(inner), self.definition.name()))
    }

    /// The pairs whose key's first field is `first` (a tuple key), in key order, double-ended
    /// (see [`ReadTable::prefix`]).
    pub fn prefix(
        &self,
        first: <K::First as Value>::Ref<'_>,
    ) -> TypedResult<TypedIter<'_, 'n, K, V>>
    where
        K: Tuple,
    {
        let prefix = first_field_prefix::<K>(&first);
        let inner = self.txn.prefix(self.definition.name(), &prefix)?;
        Ok(TypedIter::new(Inner::Txn(inner), self.definition.name()))
    }

    /// All pairs in key order, double-ended.
    pub fn iter(&self) -> TypedResult<TypedIter<'_, 'n, K, V>> {
        let inner = self.txn.iter(self.definition.name())?;
        Ok(TypedIter::new(Inner::Txn(inner), self.definition.name()))
    }

    /// The pair with the smallest key.
    pub fn first(&self) -> TypedResult<Option<TypedPair<K, V>>> {
        self.iter()?.next().transpose()
    }

    /// The pair with the largest key.
    pub fn last(&self) -> TypedResult<Option<TypedPair<K, V>>> {
        self.iter()?.next_back().transpose()
    }
}

/// The bytes scan under a [`TypedIter`]. One lives per scan, so its size matters less than
/// the allocation that boxing the larger variant would add to every scan.
#[allow(clippy::large_enum_variant)]
enum Inner<'a> {
    Read(Iter<'a>),
    Txn(TxnIter<'a>),
}

/// Decoded pairs of a typed table in key order, from either end: `Result<(K::Owned,
/// V::Owned)>`.
pub struct TypedIter<'a, 'n, K: Key, V: Value> {
    inner: Inner<'a>,
    table: &'n str,
    types: PhantomData<fn() -> (K, V)>,
}

impl<'a, 'n, K: Key, V: Value> TypedIter<'a, 'n, K, V> {
    fn new(inner: Inner<'a>, table: &'n str) -> TypedIter<'a, 'n, K, V> {
        TypedIter {
            inner,
            table,
            types: PhantomData,
        }
    }

    fn decode(
        &self,
        item: Option<Result<(Vec<u8>, &'a [u8])>>,
    ) -> Option<TypedResult<TypedPair<K, V>>> {
        Some(match item? {
            Ok((key, value)) => decode_pair::<K, V>(self.table, &key, value),
            Err(error) => Err(TypedError::Db(error)),
        })
    }
}

impl<K: Key, V: Value> Iterator for TypedIter<'_, '_, K, V> {
    type Item = TypedResult<TypedPair<K, V>>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = match &mut self.inner {
            Inner::Read(iter) => iter.next(),
            Inner::Txn(iter) => iter.next(),
        };
        self.decode(item)
    }
}

impl<K: Key, V: Value> DoubleEndedIterator for TypedIter<'_, '_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let item = match &mut self.inner {
            Inner::Read(iter) => iter.next_back(),
            Inner::Txn(iter) => iter.next_back(),
        };
        self.decode(item)
    }
}
