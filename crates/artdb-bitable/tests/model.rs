//! Model tests: tables built from random maps (and the edge cases the issue names) answer every
//! read exactly as a `BTreeMap` does. Scale with `ARTDB_TEST_SCALE`.

mod common;

use artdb_bitable::{key_len_max, Builder, Durability, Error, Options, Table};
use common::{build, check_against_model, scale, Model};
use proptest::prelude::*;

fn options_strategy() -> impl Strategy<Value = Options> {
    (
        prop_oneof![Just(512usize), Just(1024), Just(4096)],
        0u32..3,
        0u32..4,
        any::<bool>(),
    )
        .prop_map(
            |(page_size, key_align_log2, value_align_log2, write_behind)| Options {
                page_size,
                key_align: 1 << key_align_log2,
                value_align: 1 << value_align_log2,
                write_behind,
            },
        )
}

fn value_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..24),
        1 => proptest::collection::vec(any::<u8>(), 100..3000),
    ]
}

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    // Small alphabet so keys share prefixes and probes land between keys.
    prop_oneof![
        6 => proptest::collection::vec(0u8..4, 0..6),
        2 => proptest::collection::vec(any::<u8>(), 0..96),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24 * scale()))]

    #[test]
    fn random_tables_match_the_model(
        options in options_strategy(),
        model in proptest::collection::btree_map(key_strategy(), value_strategy(), 0..400),
        probes in proptest::collection::vec(key_strategy(), 0..24),
    ) {
        let (_dir, path) = build(&model, options);
        let table = Table::open(&path).expect("open");
        check_against_model(&table, &model, &probes);
    }

    #[test]
    fn fixed_size_tables_match_the_model(
        options in options_strategy(),
        keys in proptest::collection::btree_set(any::<u32>(), 0..3000),
        probes in proptest::collection::vec(any::<u32>(), 0..16),
    ) {
        let model: Model = keys.iter().map(|k| (k.to_be_bytes().to_vec(), k.to_le_bytes().repeat(2))).collect();
        let probes: Vec<Vec<u8>> = probes.iter().map(|k| k.to_be_bytes().to_vec()).collect();
        let (_dir, path) = build(&model, options);
        let table = Table::open(&path).expect("open");
        check_against_model(&table, &model, &probes);
    }
}

#[test]
fn empty_table() {
    let model = Model::new();
    let (_dir, path) = build(&model, Options::default());
    let table = Table::open(&path).expect("open");
    assert!(table.is_empty());
    check_against_model(&table, &model, &[vec![], vec![1]]);
    let mut cursor = table.cursor();
    assert!(!cursor.next().expect("next"));
    assert!(!cursor.prev().expect("prev"));
}

#[test]
fn one_pair_with_empty_key_and_empty_value() {
    let model: Model = [(vec![], vec![])].into_iter().collect();
    let (_dir, path) = build(&model, Options::default());
    let table = Table::open(&path).expect("open");
    check_against_model(&table, &model, &[vec![], vec![0], vec![255]]);
}

#[test]
fn keys_of_the_maximum_length_and_values_larger_than_a_page() {
    for page_size in [512usize, 4096] {
        let max = key_len_max(page_size);
        let model: Model = (0u8..40)
            .map(|i| {
                let mut key = vec![i; max];
                key[max - 1] = 255 - i;
                (
                    key,
                    vec![
                        i;
                        if i % 3 == 0 {
                            page_size * 3 + 7
                        } else {
                            i as usize
                        }
                    ],
                )
            })
            .collect();
        let (_dir, path) = build(
            &model,
            Options {
                page_size,
                ..Options::default()
            },
        );
        let table = Table::open(&path).expect("open");
        assert!(table.stats().large_value_bytes > 0);
        check_against_model(&table, &model, &[vec![0; max], vec![7], vec![39; max + 1]]);
        let dir = tempfile::tempdir().expect("dir");
        let options = Options {
            page_size,
            ..Options::default()
        };
        let mut builder = Builder::with_options(dir.path().join("x"), options).expect("builder");
        let too_long = vec![0u8; max + 1];
        let err = builder.append(&too_long, b"").expect_err("too long");
        assert!(matches!(err, Error::KeyTooLarge { .. }), "{err}");
    }
}

#[test]
fn many_levels_with_a_small_page_size() {
    let page_size = 512;
    let max = key_len_max(page_size);
    let model: Model = (0u32..(4000 * scale()))
        .map(|i| {
            let mut key = vec![b'x'; max - 4];
            key.extend_from_slice(&i.to_be_bytes());
            (key, i.to_le_bytes().to_vec())
        })
        .collect();
    let (_dir, path) = build(
        &model,
        Options {
            page_size,
            ..Options::default()
        },
    );
    let table = Table::open(&path).expect("open");
    assert!(table.levels().len() >= 5, "levels: {:?}", table.levels());
    let probes: Vec<Vec<u8>> = model
        .keys()
        .step_by(97)
        .map(|k| {
            let mut p = k.clone();
            p.push(0);
            p
        })
        .collect();
    check_against_model(&table, &model, &probes);
}

#[test]
fn out_of_order_and_duplicate_keys_are_rejected_and_the_table_so_far_survives() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.bt");
    let mut builder = Builder::create(&path).expect("builder");
    builder.append(b"b", b"1").expect("b");
    assert!(matches!(
        builder.append(b"a", b"x"),
        Err(Error::KeyOutOfOrder { index: 1 })
    ));
    assert!(matches!(
        builder.append(b"b", b"x"),
        Err(Error::DuplicateKey { index: 1 })
    ));
    builder.append(b"c", b"2").expect("c");
    builder.finish(Durability::NonDurable).expect("finish");
    let table = Table::open(&path).expect("open");
    let model: Model = [
        (b"b".to_vec(), b"1".to_vec()),
        (b"c".to_vec(), b"2".to_vec()),
    ]
    .into();
    check_against_model(&table, &model, &[b"a".to_vec(), b"bb".to_vec()]);
}

#[test]
fn an_unfinished_build_leaves_nothing_that_opens() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.bt");
    let mut builder = Builder::create(&path).expect("builder");
    for i in 0u32..10_000 {
        builder.append(&i.to_be_bytes(), b"v").expect("append");
    }
    // While building, the only file is the temporary one, and its header page is still zero.
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("e").path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert!(matches!(Table::open(&entries[0]), Err(Error::NotABitable)));
    assert!(!path.exists());
    drop(builder);
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("ls").count(),
        0,
        "the temporary file is removed"
    );
}

#[test]
fn readers_share_a_table_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Table>();
    let model: Model = (0u32..50_000)
        .map(|i| (i.to_be_bytes().to_vec(), i.to_le_bytes().to_vec()))
        .collect();
    let (_dir, path) = build(&model, Options::default());
    let table = Table::open(&path).expect("open");
    std::thread::scope(|scope| {
        for thread in 0..2u32 {
            let table = &table;
            scope.spawn(move || {
                for i in (thread..50_000).step_by(3) {
                    let value = table.get(&i.to_be_bytes()).expect("get");
                    assert_eq!(value, Some(&i.to_le_bytes()[..]));
                }
            });
        }
    });
}

#[test]
fn cursor_before_the_first_key_after_the_last_and_between_keys() {
    let model: Model = [b"b", b"d", b"f"]
        .iter()
        .map(|k| (k.to_vec(), k.to_vec()))
        .collect();
    let (_dir, path) = build(&model, Options::default());
    let table = Table::open(&path).expect("open");
    let mut cursor = table.cursor();
    // Before the first key.
    assert!(cursor.seek_lower_bound(b"a").expect("seek"));
    assert_eq!(cursor.key(), Some(&b"b"[..]));
    assert!(
        !cursor.prev().expect("prev"),
        "nothing before the first key"
    );
    assert_eq!(cursor.key(), None);
    assert!(
        cursor.next().expect("next"),
        "from unpositioned, next goes to the first key"
    );
    assert_eq!(cursor.key(), Some(&b"b"[..]));
    // After the last key.
    assert!(!cursor.seek_upper_bound(b"f").expect("seek"));
    assert!(!cursor.seek_lower_bound(b"g").expect("seek"));
    assert!(
        cursor.prev().expect("prev"),
        "from unpositioned, prev goes to the last key"
    );
    assert_eq!(cursor.key(), Some(&b"f"[..]));
    assert!(!cursor.next().expect("next"));
    // Between keys, both directions.
    assert!(cursor.seek_lower_bound(b"c").expect("seek"));
    assert_eq!(cursor.key(), Some(&b"d"[..]));
    assert!(cursor.prev().expect("prev"));
    assert_eq!(cursor.key(), Some(&b"b"[..]));
    assert!(cursor.next().expect("next"));
    assert!(cursor.next().expect("next"));
    assert_eq!(cursor.key(), Some(&b"f"[..]));
    assert!(cursor.seek_upper_bound(b"d").expect("seek"));
    assert_eq!(cursor.key(), Some(&b"f"[..]));
    assert!(
        !cursor.seek(b"c").expect("seek"),
        "exact seek of an absent key"
    );
    assert!(cursor.seek(b"d").expect("seek"));
    assert_eq!(cursor.value(), Some(&b"d"[..]));
}
