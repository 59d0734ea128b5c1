//! Typed tables against `BTreeMap<K, V>`: random inserts and removes in transactions
//! (committed or aborted), then gets, full scans and ranges over random typed bounds (inclusive,
//! exclusive, open, both directions), on a read snapshot and inside a write transaction that
//! sees its own writes. Also: every key type's encoding sorts like its values, decoding returns
//! what was encoded, and bytes that are no encoding of a type are an error, never a panic.
//!
//! Scale with `ARTDB_TEST_SCALE` (cases); proptest prints the failing case and saves its seed.

mod common;

use artdb::typed::{DecodeProblem, Key, Part, TableDefinition, Value};
use artdb::{Db, TypedError, WriteOptions};
use common::memory_db;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::Bound;

/// A key or value type under test: how a model's owned value is passed to the typed API.
trait Lend: Value {
    fn lend(owned: &Self::Owned) -> Self::Ref<'_>;
}

impl Lend for i64 {
    fn lend(owned: &i64) -> i64 {
        *owned
    }
}

impl Lend for u16 {
    fn lend(owned: &u16) -> u16 {
        *owned
    }
}

impl Lend for String {
    fn lend(owned: &String) -> &str {
        owned
    }
}

impl Lend for Vec<u8> {
    fn lend(owned: &Vec<u8>) -> &[u8] {
        owned
    }
}

impl Lend for [u8; 3] {
    fn lend(owned: &[u8; 3]) -> [u8; 3] {
        *owned
    }
}

impl Lend for (String, u32) {
    fn lend(owned: &(String, u32)) -> (&str, u32) {
        (&owned.0, owned.1)
    }
}

impl Lend for (i8, Vec<u8>, bool) {
    fn lend(owned: &(i8, Vec<u8>, bool)) -> (i8, &[u8], bool) {
        (owned.0, &owned.1, owned.2)
    }
}

#[derive(Debug, Clone)]
enum Change<K, V> {
    Insert(K, V),
    Remove(K),
}

#[derive(Debug, Clone)]
struct Txn<K, V> {
    changes: Vec<Change<K, V>>,
    commit: bool,
}

#[derive(Debug, Clone)]
struct Probe<K> {
    start: Bound<K>,
    end: Bound<K>,
    reverse: bool,
}

fn bound<K: Debug + Clone + 'static>(
    key: impl Strategy<Value = K>,
) -> impl Strategy<Value = Bound<K>> {
    (key, 0..3u8).prop_map(|(key, kind)| match kind {
        0 => Bound::Included(key),
        1 => Bound::Excluded(key),
        _ => Bound::Unbounded,
    })
}

fn probe<K: Debug + Clone + 'static>(
    key: impl Strategy<Value = K> + Clone,
) -> impl Strategy<Value = Probe<K>> {
    (bound(key.clone()), bound(key), any::<bool>()).prop_map(|(start, end, reverse)| Probe {
        start,
        end,
        reverse,
    })
}

fn txns<K: Debug + Clone + 'static, V: Debug + Clone + 'static>(
    key: impl Strategy<Value = K> + Clone,
    value: impl Strategy<Value = V>,
) -> impl Strategy<Value = Vec<Txn<K, V>>> {
    let change = prop_oneof![
        4 => (key.clone(), value).prop_map(|(k, v)| Change::Insert(k, v)),
        1 => key.prop_map(Change::Remove),
    ];
    let txn = (
        proptest::collection::vec(change, 0..24),
        proptest::bool::weighted(0.8),
    )
        .prop_map(|(changes, commit)| Txn { changes, commit });
    proptest::collection::vec(txn, 1..8)
}

fn lend_bound<K: Lend>(bound: &Bound<K::Owned>) -> Bound<K::Ref<'_>> {
    match bound {
        Bound::Included(key) => Bound::Included(K::lend(key)),
        Bound::Excluded(key) => Bound::Excluded(K::lend(key)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Whether `BTreeMap::range` accepts the bounds (it panics on start > end, or an empty
/// excluded-excluded range at one key); the engine returns nothing for them.
fn model_accepts<K: Ord>(start: &Bound<K>, end: &Bound<K>) -> bool {
    match (start, end) {
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a < b || (a == b && !matches!((start, end), (Bound::Excluded(_), Bound::Excluded(_))))
        }
        _ => true,
    }
}

fn model_range<K: Ord + Clone, V: Clone>(model: &BTreeMap<K, V>, probe: &Probe<K>) -> Vec<(K, V)> {
    if !model_accepts(&probe.start, &probe.end) {
        return Vec::new();
    }
    let pairs = model.range((probe.start.clone(), probe.end.clone()));
    let mut pairs: Vec<(K, V)> = pairs.map(|(k, v)| (k.clone(), v.clone())).collect();
    if probe.reverse {
        pairs.reverse();
    }
    pairs
}

/// Runs `txns` on a typed table and on the model; after each transaction checks gets, a full
/// scan and every probe, on a snapshot and inside a transaction with uncommitted writes.
fn check_against_model<K, V>(txns: &[Txn<K::Owned, V::Owned>], probes: &[Probe<K::Owned>])
where
    K: Key + Lend,
    V: Value + Lend,
    K::Owned: Ord + Clone + Debug,
    V::Owned: PartialEq + Clone + Debug,
{
    let definition = TableDefinition::<K, V>::new("typed");
    let (_storage, db) = memory_db();
    db.create_table(definition.name()).unwrap();
    let mut model: BTreeMap<K::Owned, V::Owned> = BTreeMap::new();
    for txn_case in txns {
        let mut txn = db.begin_write(WriteOptions::default()).unwrap();
        let mut seen = model.clone();
        {
            let mut table = txn.typed_table(definition);
            for change in &txn_case.changes {
                match change {
                    Change::Insert(key, value) => {
                        table.insert(K::lend(key), V::lend(value)).unwrap();
                        seen.insert(key.clone(), value.clone());
                    }
                    Change::Remove(key) => {
                        let removed = table.remove(K::lend(key)).unwrap();
                        assert_eq!(removed, seen.remove(key).is_some());
                    }
                }
            }
            // Inside the transaction: its own writes.
            let all: Vec<_> = table.iter().unwrap().map(Result::unwrap).collect();
            let expected: Vec<_> = seen.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(all, expected);
            assert_eq!(table.len().unwrap(), seen.len() as u64);
            for probe in probes {
                let range = (lend_bound::<K>(&probe.start), lend_bound::<K>(&probe.end));
                let iter = table.range(range).unwrap();
                let got: Vec<_> = if probe.reverse {
                    iter.rev().map(Result::unwrap).collect()
                } else {
                    iter.map(Result::unwrap).collect()
                };
                assert_eq!(got, model_range(&seen, probe), "{probe:?} in a transaction");
            }
        }
        if txn_case.commit {
            txn.commit().unwrap();
            model = seen;
        }
        check_snapshot(&db, definition, &model, probes);
    }
}

fn check_snapshot<K, V>(
    db: &Db,
    definition: TableDefinition<'_, K, V>,
    model: &BTreeMap<K::Owned, V::Owned>,
    probes: &[Probe<K::Owned>],
) where
    K: Key + Lend,
    V: Value + Lend,
    K::Owned: Ord + Clone + Debug,
    V::Owned: PartialEq + Clone + Debug,
{
    let read = db.read();
    let table = read.typed_table(definition).unwrap();
    assert_eq!(table.len(), model.len() as u64);
    for (key, value) in model {
        assert_eq!(table.get(K::lend(key)).unwrap().as_ref(), Some(value));
    }
    let all: Vec<_> = table.iter().map(Result::unwrap).collect();
    let expected: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, expected);
    let first = table.first().unwrap();
    assert_eq!(first.as_ref(), expected.first());
    assert_eq!(table.last().unwrap().as_ref(), expected.last());
    for probe in probes {
        let range = (lend_bound::<K>(&probe.start), lend_bound::<K>(&probe.end));
        let iter = table.range(range);
        let got: Vec<_> = if probe.reverse {
            iter.rev().map(Result::unwrap).collect()
        } else {
            iter.map(Result::unwrap).collect()
        };
        assert_eq!(got, model_range(model, probe), "{probe:?} on a snapshot");
        if let (Bound::Included(key), true) = (&probe.start, probe.reverse) {
            // A missing key reads as absent.
            if !model.contains_key(key) {
                assert_eq!(table.get(K::lend(key)).unwrap(), None);
            }
        }
    }
}

fn text() -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        "[ab\u{0}]{0,4}",
        "[a-z\u{e9}\u{4e2d}]{0,6}",
        Just(String::new()),
        Just("\u{0}\u{0}".to_string()),
    ]
}

fn bytes() -> impl Strategy<Value = Vec<u8>> + Clone {
    prop_oneof![
        proptest::collection::vec(prop_oneof![Just(0u8), Just(1), Just(255)], 0..4),
        proptest::collection::vec(any::<u8>(), 0..6),
    ]
}

fn signed() -> impl Strategy<Value = i64> + Clone {
    prop_oneof![-40i64..40, any::<i64>(), Just(i64::MIN), Just(i64::MAX),]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24 * artdb_testkit::scale() as u32,
        ..ProptestConfig::default()
    })]

    #[test]
    fn i64_keys_match_the_model(
        txns in txns(signed(), text()),
        probes in proptest::collection::vec(probe(signed()), 0..6),
    ) {
        check_against_model::<i64, String>(&txns, &probes);
    }

    #[test]
    fn string_u32_tuple_keys_match_the_model(
        txns in txns((text(), 0u32..6), any::<u16>()),
        probes in proptest::collection::vec(probe((text(), 0u32..6)), 0..6),
    ) {
        check_against_model::<(String, u32), u16>(&txns, &probes);
    }

    #[test]
    fn mixed_tuple_keys_match_the_model(
        txns in txns((-3i8..3, bytes(), any::<bool>()), bytes()),
        probes in proptest::collection::vec(probe((-3i8..3, bytes(), any::<bool>())), 0..6),
    ) {
        check_against_model::<(i8, Vec<u8>, bool), Vec<u8>>(&txns, &probes);
    }

    #[test]
    fn array_and_string_keys_match_the_model(
        array_txns in txns(any::<[u8; 3]>(), any::<[u8; 3]>()),
        array_probes in proptest::collection::vec(probe(any::<[u8; 3]>()), 0..4),
        text_txns in txns(text(), signed()),
        text_probes in proptest::collection::vec(probe(text()), 0..4),
    ) {
        check_against_model::<[u8; 3], [u8; 3]>(&array_txns, &array_probes);
        check_against_model::<String, i64>(&text_txns, &text_probes);
    }

    /// Encodings sort like values (a field followed by others, too) and round-trip.
    #[test]
    fn encodings_sort_like_values(
        a in (text(), bytes(), any::<i32>(), any::<[u16; 2]>()),
        b in (text(), bytes(), any::<i32>(), any::<[u16; 2]>()),
        x in any::<f64>(),
        y in any::<f64>(),
    ) {
        type Row = ((String, Vec<u8>), i32, [u16; 2]);
        let lend = |row: &(String, Vec<u8>, i32, [u16; 2])| ((row.0.clone(), row.1.clone()), row.2, row.3);
        let (ra, rb): (Row, Row) = (lend(&a), lend(&b));
        let encode = |row: &Row| {
            let mut out = Vec::new();
            <Row as Value>::encode(&((row.0 .0.as_str(), row.0 .1.as_slice()), row.1, row.2), &mut out);
            out
        };
        let (ea, eb) = (encode(&ra), encode(&rb));
        prop_assert_eq!(ea.cmp(&eb), ra.cmp(&rb));
        prop_assert_eq!(<Row as Value>::decode(&ea).unwrap(), ra.clone());
        let mut field = Vec::new();
        <Row as Key>::encode_field(&((ra.0 .0.as_str(), ra.0 .1.as_slice()), ra.1, ra.2), &mut field);
        field.extend_from_slice(b"after");
        let (decoded, used) = <Row as Key>::decode_field(&field).unwrap();
        prop_assert_eq!(decoded, ra.clone());
        prop_assert_eq!(&field[used..], b"after");
        let (mut fx, mut fy) = (Vec::new(), Vec::new());
        f64::encode(&x, &mut fx);
        f64::encode(&y, &mut fy);
        prop_assert_eq!(fx.cmp(&fy), x.total_cmp(&y));
        prop_assert_eq!(f64::decode(&fx).unwrap().to_bits(), x.to_bits());
    }

    /// Any bytes: decoding as any type returns a value or an error, never panics; a value it
    /// returns encodes back to the same bytes.
    #[test]
    fn decoding_any_bytes_never_panics(input in proptest::collection::vec(any::<u8>(), 0..24)) {
        if let Ok(value) = <(String, u32) as Value>::decode(&input) {
            let mut out = Vec::new();
            <(String, u32) as Value>::encode(&(value.0.as_str(), value.1), &mut out);
            prop_assert_eq!(out, input.clone());
        }
        let _ = <(i8, Vec<u8>, bool) as Value>::decode(&input);
        let _ = <[String; 2] as Value>::decode(&input);
        let _ = <(u64, (String, bool), [u8; 2]) as Key>::decode_field(&input);
        let _ = u128::decode(&input);
        let _ = bool::decode(&input);
        let _ = String::decode(&input);
        prop_assert_eq!(<[u8; 0] as Value>::decode(&input).is_ok(), input.is_empty());
        prop_assert_eq!(<() as Value>::decode(&input).is_ok(), input.is_empty());
        prop_assert_eq!(u32::decode(&input).is_ok(), input.len() == 4);
    }
}

/// A table read through a definition with other types: a decode error naming the table, the
/// part and the type; never a panic, and the bytes API still reads it.
#[test]
fn a_table_read_with_other_types_is_a_decode_error() {
    const AS_WRITTEN: TableDefinition<u64, u8> = TableDefinition::new("t");
    const AS_READ: TableDefinition<(&str, u32), u8> = TableDefinition::new("t");
    let (_storage, db) = memory_db();
    db.create_table(AS_WRITTEN.name()).unwrap();
    db.transact(|txn| txn.typed_table(AS_WRITTEN).insert(7, 1))
        .unwrap();
    let read = db.read();
    let table = read.typed_table(AS_READ).unwrap();
    let error = table.iter().next().unwrap().unwrap_err();
    let TypedError::Decode {
        table: name,
        part,
        error: decode,
        ..
    } = &error
    else {
        panic!("not a decode error: {error:?}");
    };
    assert_eq!((name.as_str(), *part), ("t", Part::Key));
    // 00 00 ends an empty string; the u32 after it finds 6 bytes.
    assert_eq!((decode.at, decode.type_name.as_str()), (2, "u32"));
    assert_eq!(
        decode.problem,
        DecodeProblem::Length {
            expected: 4,
            found: 6
        }
    );
    let shown = decode.to_string();
    assert_eq!(
        shown,
        "the u32 field at byte 2 takes 4 bytes, but 6 are there"
    );
    let message = error.to_string();
    assert!(
        message.starts_with("table \"t\": a stored key (0000000000000007) does not decode"),
        "{message}"
    );
    assert!(
        message.contains("other types than its TableDefinition declares"),
        "{message}"
    );
    assert_eq!(
        read.get("t", &7u64.to_be_bytes()).unwrap(),
        Some(&[1u8][..])
    );
    // A missing table is the engine's error.
    const MISSING: TableDefinition<u64, u64> = TableDefinition::new("missing");
    assert!(matches!(
        read.typed_table(MISSING),
        Err(artdb::Error::TableNotFound { .. })
    ));
    // In a transaction body, a decode error converts to the engine's error type.
    let converted = db
        .transact(|txn| {
            let table = txn.typed_table(AS_READ);
            table.first().map_err(TypedError::into_db_error)
        })
        .unwrap_err();
    assert!(
        converted.to_string().contains("does not decode"),
        "{converted}"
    );
}

/// A `String` key is its UTF-8 bytes, as a bytes table holds it; a typed table is a bytes table.
#[test]
fn typed_and_bytes_views_share_one_table() {
    const USERS: TableDefinition<String, (u32, bool)> = TableDefinition::new("users");
    let (_storage, db) = memory_db();
    db.create_table(USERS.name()).unwrap();
    db.transact(|txn| {
        let mut users = txn.typed_table(USERS);
        users.insert("alice", (30, true))?;
        assert!(!users.insert_if_absent("alice", (31, false))?);
        assert_eq!(
            users.get("alice").map_err(TypedError::into_db_error)?,
            Some((30, true))
        );
        users.insert("bob", (25, false))
    })
    .unwrap();
    let read = db.read();
    let value = read.get("users", b"alice").unwrap().unwrap();
    assert_eq!(value, [0, 0, 0, 30, 1]);
    let users = read.typed_table(USERS).unwrap();
    let names: Vec<String> = users.iter().map(|pair| pair.unwrap().0).collect();
    assert_eq!(names, ["alice", "bob"]);
    assert_eq!(users.range("b"..).count(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24 * artdb_testkit::scale() as u32,
        ..ProptestConfig::default()
    })]

    /// A write batch's typed view returns what `BTreeMap` returns: the previous value from
    /// `insert`, the removed one from `remove`, and its own writes from `get`.
    #[test]
    fn batch_tables_match_the_model(txns in txns((text(), -2i64..2), signed())) {
        const PAIRS: TableDefinition<(&str, i64), i64> = TableDefinition::new("pairs");
        let (_storage, db) = memory_db();
        db.create_table(PAIRS.name()).unwrap();
        let mut model: BTreeMap<(String, i64), i64> = BTreeMap::new();
        for txn_case in &txns {
            let mut seen = model.clone();
            let mut batch = db.write().unwrap();
            let mut table = batch.typed_table(PAIRS);
            for change in &txn_case.changes {
                match change {
                    Change::Insert(key, value) => {
                        let previous = table.insert((&key.0, key.1), *value).unwrap();
                        prop_assert_eq!(previous, seen.insert(key.clone(), *value));
                    }
                    Change::Remove(key) => {
                        let removed = table.remove((&key.0, key.1)).unwrap();
                        prop_assert_eq!(removed, seen.remove(key));
                    }
                }
                let (Change::Insert(key, _) | Change::Remove(key)) = change;
                prop_assert_eq!(table.get((&key.0, key.1)).unwrap(), seen.get(key).copied());
            }
            prop_assert_eq!(table.len().unwrap(), seen.len() as u64);
            if txn_case.commit {
                batch.commit().unwrap();
                model = seen;
            } else {
                drop(batch); // a batch dropped without commit is discarded
            }
            let read = db.read();
            let all: Vec<_> = read.typed_table(PAIRS).unwrap().iter().map(Result::unwrap).collect();
            let expected: Vec<_> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(all, expected);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24 * artdb_testkit::scale() as u32,
        ..ProptestConfig::default()
    })]

    /// `prefix(first)` of a tuple key is every key whose first field is `first`, both ways, on
    /// a snapshot and in a transaction with writes of its own (strings with zero bytes and
    /// strings that are prefixes of others included: "a" must not select "ab").
    #[test]
    fn prefix_selects_the_keys_with_that_first_field(
        committed in proptest::collection::vec(((text(), text()), any::<u8>()), 0..30),
        pending in proptest::collection::vec(((text(), text()), any::<u8>()), 0..10),
        firsts in proptest::collection::vec(text(), 1..5),
        reverse in any::<bool>(),
    ) {
        const NAMES: TableDefinition<(&str, &str), u8> = TableDefinition::new("names");
        let (_storage, db) = memory_db();
        db.create_table(NAMES.name()).unwrap();
        let mut model = BTreeMap::new();
        db.transact(|txn| {
            let mut table = txn.typed_table(NAMES);
            for ((a, b), v) in &committed {
                table.insert((a, b), *v)?;
            }
            Ok(())
        })
        .unwrap();
        for ((a, b), v) in &committed {
            model.insert((a.clone(), b.clone()), *v);
        }
        let select = |model: &BTreeMap<(String, String), u8>, first: &str| {
            let mut pairs: Vec<_> = model
                .iter()
                .filter(|((a, _), _)| a == first)
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            if reverse {
                pairs.reverse();
            }
            pairs
        };
        let collect = |iter: artdb::typed::TypedIter<'_, '_, (&str, &str), u8>| -> Vec<_> {
            if reverse {
                iter.rev().map(Result::unwrap).collect()
            } else {
                iter.map(Result::unwrap).collect()
            }
        };
        let read = db.read();
        let table = read.typed_table(NAMES).unwrap();
        for first in &firsts {
            prop_assert_eq!(collect(table.prefix(first)), select(&model, first));
        }
        let mut txn = db.begin_write(WriteOptions::default()).unwrap();
        let mut table = txn.typed_table(NAMES);
        let mut seen = model.clone();
        for ((a, b), v) in &pending {
            table.insert((a, b), *v).unwrap();
            seen.insert((a.clone(), b.clone()), *v);
        }
        for first in firsts.iter().chain(pending.iter().map(|((a, _), _)| a)) {
            prop_assert_eq!(collect(table.prefix(first).unwrap()), select(&seen, first));
        }
    }
}
