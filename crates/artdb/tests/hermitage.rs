//! Hermitage: one deterministic interleaving per anomaly (G0, G1a, G1b, G1c, OTV, PMP, P4,
//! G-single, G2-item, G2) at both isolation levels, with the outcome docs/isolation.md's table
//! states: snapshot isolation prevents all but G2-item and G2; serializable prevents all.
//! Setup as in Hermitage: table `test` with key 1 -> 10 and key 2 -> 20.

mod common;

use artdb::{Db, Error, Isolation, Transaction, WriteOptions};

const LEVELS: [Isolation; 2] = [Isolation::Snapshot, Isolation::Serializable];

fn setup() -> Db {
    let (_, db) = common::memory_db();
    db.create_table("test").unwrap();
    let mut batch = db.begin_write(WriteOptions::default()).unwrap();
    batch.insert("test", b"1", b"10").unwrap();
    batch.insert("test", b"2", b"20").unwrap();
    batch.commit().unwrap();
    db
}

fn begin(db: &Db, level: Isolation) -> Transaction {
    db.begin_write(WriteOptions::with_isolation(level)).unwrap()
}

fn get(txn: &Transaction, key: &[u8]) -> Option<Vec<u8>> {
    txn.get("test", key).unwrap().map(<[u8]>::to_vec)
}

fn committed(db: &Db, key: &[u8]) -> Option<Vec<u8>> {
    db.read().get("test", key).unwrap().map(<[u8]>::to_vec)
}

fn v(value: &str) -> Option<Vec<u8>> {
    Some(value.as_bytes().to_vec())
}

fn is_conflict<T: std::fmt::Debug>(result: artdb::Result<T>) -> bool {
    match result {
        Err(Error::Conflict { .. }) => true,
        Ok(_) => false,
        Err(other) => panic!("expected a conflict or success, got {other}"),
    }
}

/// Pairs (key, value) of a whole-table scan whose value satisfies `keep`.
fn scan(txn: &Transaction, keep: impl Fn(&[u8]) -> bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    txn.iter("test")
        .unwrap()
        .map(Result::unwrap)
        .filter(|(_, value)| keep(value))
        .map(|(key, value)| (key, value.to_vec()))
        .collect()
}

#[test]
fn g0_write_cycles_prevented() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        t1.insert("test", b"1", b"11").unwrap();
        t2.insert("test", b"1", b"12").unwrap();
        t1.insert("test", b"2", b"21").unwrap();
        t2.insert("test", b"2", b"22").unwrap();
        t1.commit().unwrap();
        assert!(is_conflict(t2.commit()), "{level:?}");
        assert_eq!(committed(&db, b"1"), v("11"));
        assert_eq!(committed(&db, b"2"), v("21"));
    }
}

#[test]
fn g1a_aborted_reads_prevented() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let t2 = begin(&db, level);
        t1.insert("test", b"1", b"101").unwrap();
        t1.insert("test", b"2", b"102").unwrap();
        assert_eq!(get(&t2, b"1"), v("10"));
        t1.abort();
        assert_eq!(get(&t2, b"1"), v("10"));
        assert_eq!(get(&t2, b"2"), v("20"));
        t2.commit().unwrap();
        assert_eq!(committed(&db, b"1"), v("10"));
    }
}

#[test]
fn g1b_intermediate_reads_prevented() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let t2 = begin(&db, level);
        t1.insert("test", b"1", b"101").unwrap();
        assert_eq!(get(&t2, b"1"), v("10"));
        t1.insert("test", b"1", b"11").unwrap();
        t1.commit().unwrap();
        assert_eq!(
            get(&t2, b"1"),
            v("10"),
            "{level:?}: never the intermediate 101"
        );
        t2.commit().unwrap();
        assert_eq!(committed(&db, b"1"), v("11"));
    }
}

#[test]
fn g1c_circular_information_flow_prevented() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        t1.insert("test", b"1", b"11").unwrap();
        t2.insert("test", b"2", b"22").unwrap();
        assert_eq!(get(&t1, b"2"), v("20"));
        assert_eq!(get(&t2, b"1"), v("10"));
        t1.commit().unwrap();
        // Neither saw the other's write, so there is no cycle. Serializable also rejects T2:
        // it read key 1, which T1 wrote and committed after T2 started.
        let second = t2.commit();
        match level {
            Isolation::Snapshot => assert!(second.is_ok()),
            Isolation::Serializable => assert!(is_conflict(second)),
        }
    }
}

#[test]
fn otv_observed_transaction_vanishes_prevented() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        t1.insert("test", b"1", b"11").unwrap();
        t1.insert("test", b"2", b"19").unwrap();
        t2.insert("test", b"1", b"12").unwrap();
        t1.commit().unwrap();
        let t3 = begin(&db, level);
        assert_eq!(get(&t3, b"1"), v("11"));
        t2.insert("test", b"2", b"18").unwrap();
        assert!(is_conflict(t2.commit()), "{level:?}");
        assert_eq!(
            get(&t3, b"2"),
            v("19"),
            "{level:?}: T1's write stays observed"
        );
        t3.commit().unwrap();
    }
}

#[test]
fn pmp_predicate_many_preceders_prevented() {
    for level in LEVELS {
        let db = setup();
        let t1 = begin(&db, level);
        assert!(scan(&t1, |value| value == b"30").is_empty());
        let mut t2 = begin(&db, level);
        t2.insert("test", b"3", b"30").unwrap();
        t2.commit().unwrap();
        assert!(scan(&t1, |value| value == b"30").is_empty(), "{level:?}");
        // A read-only transaction never aborts.
        t1.commit().unwrap();
    }
}

#[test]
fn pmp_write_predicate_prevented() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        for (key, value) in scan(&t1, |_| true) {
            let bumped: u32 = std::str::from_utf8(&value).unwrap().parse::<u32>().unwrap() + 10;
            t1.insert("test", &key, bumped.to_string().as_bytes())
                .unwrap();
        }
        for (key, _) in scan(&t2, |value| value == b"20") {
            assert!(t2.remove("test", &key).unwrap());
        }
        t1.commit().unwrap();
        assert!(is_conflict(t2.commit()), "{level:?}");
        assert_eq!(committed(&db, b"2"), v("30"));
    }
}

#[test]
fn p4_lost_update_prevented() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        assert_eq!(get(&t1, b"1"), v("10"));
        assert_eq!(get(&t2, b"1"), v("10"));
        t1.insert("test", b"1", b"11").unwrap();
        t2.insert("test", b"1", b"11").unwrap();
        t1.commit().unwrap();
        assert!(is_conflict(t2.commit()), "{level:?}");
    }
}

#[test]
fn g_single_read_skew_prevented() {
    for level in LEVELS {
        let db = setup();
        let t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        assert_eq!(get(&t1, b"1"), v("10"));
        assert_eq!(get(&t2, b"1"), v("10"));
        assert_eq!(get(&t2, b"2"), v("20"));
        t2.insert("test", b"1", b"12").unwrap();
        t2.insert("test", b"2", b"18").unwrap();
        t2.commit().unwrap();
        assert_eq!(
            get(&t1, b"2"),
            v("20"),
            "{level:?}: T1 still sees its snapshot"
        );
        t1.commit().unwrap();
    }
}

#[test]
fn g_single_write_predicate_prevented() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        assert_eq!(get(&t1, b"1"), v("10"));
        t2.insert("test", b"1", b"12").unwrap();
        t2.insert("test", b"2", b"18").unwrap();
        t2.commit().unwrap();
        for (key, _) in scan(&t1, |value| value == b"20") {
            assert!(t1.remove("test", &key).unwrap());
        }
        assert!(is_conflict(t1.commit()), "{level:?}");
        assert_eq!(committed(&db, b"2"), v("18"));
    }
}

#[test]
fn g2_item_write_skew_allowed_by_snapshot_prevented_by_serializable() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        for txn in [&t1, &t2] {
            assert_eq!(get(txn, b"1"), v("10"));
            assert_eq!(get(txn, b"2"), v("20"));
        }
        t1.insert("test", b"1", b"11").unwrap();
        t2.insert("test", b"2", b"21").unwrap();
        t1.commit().unwrap();
        let second = t2.commit();
        match level {
            Isolation::Snapshot => {
                second.unwrap();
                assert_eq!(committed(&db, b"1"), v("11"));
                assert_eq!(committed(&db, b"2"), v("21"));
            }
            Isolation::Serializable => assert!(is_conflict(second)),
        }
    }
}

#[test]
fn g2_anti_dependency_cycle_over_a_range() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        let thirties = |txn: &Transaction| {
            txn.range("test", b"3".as_slice()..b"9".as_slice())
                .unwrap()
                .count()
        };
        assert_eq!(thirties(&t1), 0);
        assert_eq!(thirties(&t2), 0);
        t1.insert("test", b"3", b"30").unwrap();
        t2.insert("test", b"4", b"42").unwrap();
        t1.commit().unwrap();
        let second = t2.commit();
        match level {
            // The anomaly: each inserted into the range the other saw empty.
            Isolation::Snapshot => assert!(second.is_ok()),
            Isolation::Serializable => {
                assert!(is_conflict(second));
            }
        }
    }
}

#[test]
fn serializable_ranges_are_precise() {
    // A write outside every range a serializable transaction scanned does not conflict.
    let db = setup();
    let mut t1 = begin(&db, Isolation::Serializable);
    let mut t2 = begin(&db, Isolation::Serializable);
    assert_eq!(t1.prefix("test", b"3").unwrap().count(), 0);
    assert_eq!(t2.prefix("test", b"4").unwrap().count(), 0);
    t1.insert("test", b"4", b"40").unwrap();
    t2.insert("test", b"3", b"30").unwrap();
    // T1 scanned prefix 3, T2 wrote 3: T1 must lose if T2 commits first; here T1 commits
    // first, so T2 (which scanned prefix 4, written by T1) is the one that must fail.
    t1.commit().unwrap();
    assert!(is_conflict(t2.commit()));

    let mut t3 = begin(&db, Isolation::Serializable);
    let mut t4 = begin(&db, Isolation::Serializable);
    assert_eq!(t3.prefix("test", b"5").unwrap().count(), 0);
    t3.insert("test", b"5", b"50").unwrap();
    t4.insert("test", b"6", b"60").unwrap();
    t4.commit().unwrap();
    t3.commit().unwrap();
}

#[test]
fn serializable_cursor_spans_are_validated() {
    for forward in [true, false] {
        let db = setup();
        let mut t1 = begin(&db, Isolation::Serializable);
        {
            let mut cursor = t1.cursor("test").unwrap();
            if forward {
                assert!(cursor.seek(b"1").unwrap());
                assert!(cursor.next().unwrap());
                assert_eq!(cursor.key(), b"2");
            } else {
                assert!(cursor.seek_last().unwrap());
                assert!(cursor.prev().unwrap());
                assert_eq!(cursor.key(), b"1");
            }
        }
        t1.insert("test", b"9", b"90").unwrap();
        // Outside the span visited (1..=2 forward; 1..=end backward).
        let mut outside = begin(&db, Isolation::Snapshot);
        outside.insert("test", b"0", b"0").unwrap();
        outside.commit().unwrap();
        // Inside it: the phantom between 1 and 2.
        let mut inside = begin(&db, Isolation::Snapshot);
        inside.insert("test", b"15", b"15").unwrap();
        inside.commit().unwrap();
        assert!(is_conflict(t1.commit()), "forward {forward}");
    }
}

#[test]
fn insert_if_absent_is_mvcc_aware() {
    for level in LEVELS {
        let db = setup();
        // Delete then re-insert in one transaction.
        let mut t = begin(&db, level);
        assert!(!t.insert_if_absent("test", b"1", b"x").unwrap());
        assert!(t.remove("test", b"1").unwrap());
        assert!(t.insert_if_absent("test", b"1", b"again").unwrap());
        assert_eq!(get(&t, b"1"), v("again"));
        t.commit().unwrap();
        assert_eq!(committed(&db, b"1"), v("again"));
        // Two concurrent inserts of the same new key: exactly one commits.
        let mut a = begin(&db, level);
        let mut b = begin(&db, level);
        assert!(a.insert_if_absent("test", b"new", b"a").unwrap());
        assert!(b.insert_if_absent("test", b"new", b"b").unwrap());
        b.commit().unwrap();
        assert!(is_conflict(a.commit()), "{level:?}");
        assert_eq!(committed(&db, b"new"), v("b"));
        // A concurrent delete of the key does not make an insert fail falsely: a transaction
        // that saw the key present sees it present throughout (its snapshot).
        let mut deleter = begin(&db, level);
        let mut inserter = begin(&db, level);
        assert!(deleter.remove("test", b"new").unwrap());
        deleter.commit().unwrap();
        assert!(!inserter.insert_if_absent("test", b"new", b"c").unwrap());
        inserter.commit().unwrap();
        let mut after = begin(&db, level);
        assert!(after.insert_if_absent("test", b"new", b"d").unwrap());
        after.commit().unwrap();
    }
}

#[test]
fn conflict_names_table_and_key() {
    let db = setup();
    let mut t1 = begin(&db, Isolation::Snapshot);
    let mut t2 = begin(&db, Isolation::Snapshot);
    t1.insert("test", b"2", b"a").unwrap();
    t2.insert("test", b"2", b"b").unwrap();
    t1.commit().unwrap();
    match t2.commit() {
        Err(error @ Error::Conflict { .. }) => {
            let Error::Conflict { table, key, .. } = &error else {
                unreachable!()
            };
            assert_eq!((table.as_str(), key.as_slice()), ("test", b"2".as_slice()));
            let message = error.to_string();
            assert!(
                message.contains("\"test\"") && message.contains("run it again"),
                "{message}"
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// Regression (found by tests/concurrent.rs): putting a key the snapshot lacks and removing it
/// again left no tombstone, so a concurrent insert of the key neither conflicted nor was
/// removed. The transaction wrote the key: the second committer must fail.
#[test]
fn put_then_remove_of_a_new_key_conflicts_with_a_concurrent_insert() {
    for level in LEVELS {
        let db = setup();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        t1.insert("test", b"9", b"90").unwrap();
        assert!(t1.remove("test", b"9").unwrap());
        assert_eq!(get(&t1, b"9"), None);
        assert_eq!(t1.len("test").unwrap(), 2);
        t2.insert("test", b"9", b"99").unwrap();
        t2.commit().unwrap();
        assert!(is_conflict(t1.commit()), "{level:?}");
        assert_eq!(committed(&db, b"9"), v("99"));
    }
}

/// A write batch (`Db::write`) keeps no key set: to transactions that started before it, its
/// commit is a write of every table it touched. Its records are pruned like any other.
#[test]
fn write_batches_count_as_whole_table_writes() {
    for level in LEVELS {
        let db = setup();
        db.create_table("other").unwrap();
        let mut t1 = begin(&db, level);
        let mut t2 = begin(&db, level);
        t1.insert("test", b"7", b"70").unwrap();
        t2.insert("other", b"7", b"70").unwrap();
        let mut batch = db.write().unwrap();
        batch.insert("test", b"8", b"80").unwrap();
        batch.commit().unwrap();
        assert!(is_conflict(t1.commit()), "{level:?}");
        t2.commit().unwrap();
        for i in 0..100u32 {
            let mut batch = db.write().unwrap();
            batch.insert("test", &i.to_be_bytes(), b"x").unwrap();
            batch.commit().unwrap();
        }
        assert_eq!(db.stats().unwrap().txn.history_records, 0);
    }
}

/// A serializable iterator counts as read what it consumed, not its whole requested range: the
/// first pair of an open-ended range is a read of [start, that key]; the last from the back a
/// read of [that key, end]; running out, the whole range.
#[test]
fn serializable_iterators_record_what_they_consumed() {
    let writer = |db: &Db, key: &[u8]| {
        let mut txn = begin(db, Isolation::Snapshot);
        txn.insert("test", key, b"w").unwrap();
        txn.commit().unwrap();
    };
    // From the front: key 1 is read, a new key 5 is not.
    let db = setup();
    let mut t = begin(&db, Isolation::Serializable);
    let first = t
        .range("test", b"0".as_slice()..)
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(first.0, b"1");
    t.insert("test", b"z", b"1").unwrap();
    writer(&db, b"5");
    t.commit().unwrap();
    // A phantom before the first key taken (inside [start, 1]) conflicts.
    let mut t = begin(&db, Isolation::Serializable);
    assert_eq!(
        t.range("test", b"0".as_slice()..)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .0,
        b"1"
    );
    t.insert("test", b"z", b"2").unwrap();
    writer(&db, b"05");
    assert!(is_conflict(t.commit()));
    // From the back: the last key (z) is read; a key below the one taken is not.
    let mut t = begin(&db, Isolation::Serializable);
    assert_eq!(
        t.iter("test").unwrap().next_back().unwrap().unwrap().0,
        b"z"
    );
    t.insert("test", b"y", b"1").unwrap();
    writer(&db, b"3");
    t.commit().unwrap();
    let mut t = begin(&db, Isolation::Serializable);
    assert_eq!(
        t.iter("test").unwrap().next_back().unwrap().unwrap().0,
        b"z"
    );
    t.insert("test", b"y", b"2").unwrap();
    writer(&db, b"zz");
    assert!(is_conflict(t.commit()));
}

/// Validation takes two ways (engine/history.rs, txn/validate.rs): small committed write sets
/// through the key index, large ones (and a large own set) by walking the sets. Both must find
/// the conflict.
#[test]
fn conflicts_with_large_write_sets_either_way() {
    let many = |txn: &mut Transaction, tag: &[u8]| {
        for i in 0..6000u32 {
            txn.insert("test", format!("m{i:05}").as_bytes(), tag)
                .unwrap();
        }
    };
    for level in LEVELS {
        // A large committed set, a small own set.
        let db = setup();
        let mut small = begin(&db, level);
        let mut large = begin(&db, level);
        small.insert("test", b"m04321", b"s").unwrap();
        many(&mut large, b"l");
        large.commit().unwrap();
        assert!(is_conflict(small.commit()), "{level:?}: small after large");
        // A large own set, a small committed one.
        let mut small = begin(&db, level);
        let mut large = begin(&db, level);
        small.insert("test", b"m00007", b"s").unwrap();
        many(&mut large, b"l");
        small.commit().unwrap();
        assert!(is_conflict(large.commit()), "{level:?}: large after small");
        // Serializable point reads against a large committed set.
        let mut reader = begin(&db, Isolation::Serializable);
        let mut large = begin(&db, level);
        assert_eq!(get(&reader, b"m05999"), v("l"));
        reader.insert("test", b"other", b"r").unwrap();
        many(&mut large, b"x");
        large.commit().unwrap();
        assert!(
            is_conflict(reader.commit()),
            "{level:?}: read of a key a large set wrote"
        );
    }
}
