//! Unit tests of the builder's page layouts and level construction (they look inside the file).

use crate::format::*;
use crate::page::{Guess, Probe};
use crate::{Builder, Durability, Options, Table};

fn build(pairs: &[(Vec<u8>, Vec<u8>)], options: Options) -> (tempfile::TempDir, Table) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t.bt");
    let mut builder = Builder::with_options(&path, options).expect("builder");
    for (key, value) in pairs {
        builder.append(key, value).expect("append");
    }
    builder.finish(Durability::NonDurable).expect("finish");
    let table = Table::open(&path).expect("open");
    (dir, table)
}

#[test]
fn fixed_records_fill_a_page_without_overhead() {
    let pairs: Vec<_> = (0u64..1000)
        .map(|i| (i.to_be_bytes().repeat(3), i.to_le_bytes().to_vec()))
        .collect();
    let (_dir, table) = build(&pairs, Options::default());
    let data = table.data();
    let leaf = &data[4096..8192];
    assert_eq!(leaf[P_LAYOUT], LAYOUT_FIXED);
    assert_eq!(read_u16(leaf, P_COUNT), 127, "(4096 - 32) / 32 records");
    let stats = table.stats();
    assert_eq!(stats.levels.len(), 2);
    assert!(stats.leaf_bytes() as f64 <= 1.2 * 32.0 * 1000.0 + 4096.0);
    table.verify().expect("verify");
}

#[test]
fn aligned_values_are_aligned_in_place() {
    let pairs: Vec<_> = (0u64..500)
        .map(|i| (vec![1, 2, 3, i as u8, (i >> 8) as u8], vec![7; 8]))
        .collect();
    let mut sorted = pairs.clone();
    sorted.sort();
    let options = Options {
        value_align: 8,
        ..Options::default()
    };
    let (_dir, table) = build(&sorted, options);
    for (key, _) in &sorted {
        let value = table.get(key).expect("get").expect("present");
        assert_eq!(
            value.as_ptr() as usize % 8,
            0,
            "values aligned to 8 in the map"
        );
    }
    table.verify().expect("verify");
}

#[test]
fn mixed_sizes_switch_a_page_to_slotted() {
    let pairs: Vec<_> = (0u32..300)
        .map(|i| (format!("k{i:05}").into_bytes(), vec![0u8; (i % 7) as usize]))
        .collect();
    let (_dir, table) = build(&pairs, Options::default());
    assert_eq!(table.data()[4096 + P_LAYOUT], LAYOUT_SLOTTED);
    for (key, value) in &pairs {
        assert_eq!(table.get(key).expect("get"), Some(&value[..]));
    }
    table.verify().expect("verify");
}

#[test]
fn branch_levels_point_at_contiguous_children() {
    let options = Options {
        page_size: 512,
        ..Options::default()
    };
    let pairs: Vec<_> = (0u32..20_000)
        .map(|i| (i.to_be_bytes().to_vec(), vec![(i % 251) as u8]))
        .collect();
    let (_dir, table) = build(&pairs, options);
    assert!(table.levels().len() >= 3, "levels: {:?}", table.levels());
    let top = table.levels().last().expect("levels");
    assert_eq!(top.page_count, 1);
    table.verify().expect("verify");
}

/// The reference of `PageRef::search`: a linear scan for the first key `>= probe` (`> probe`
/// when `strict`).
fn linear_search(keys: &[&[u8]], probe: &[u8], strict: bool) -> usize {
    keys.iter()
        .position(|key| if strict { *key > probe } else { *key >= probe })
        .unwrap_or(keys.len())
}

#[test]
fn sampled_page_search_matches_a_linear_scan_on_every_page_and_level() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(0xb17);
    // Page sizes and record shapes give leaf counts from a handful to thousands of records and
    // branch pages of every fill (sample steps 1 to 512), with gaps between keys for misses.
    // Keys of 4 bytes (shorter than a probe's head), 8 (exactly a head) and 12 (whose heads are
    // shared by runs of up to 256 keys, so comparisons are decided past the head).
    for (page_size, value_len, pairs, key_len) in [
        (512, 8, 3_000u32, 4),
        (512, 0, 2_000, 4),
        (4096, 8, 20_000, 4),
        (4096, 100, 5_000, 4),
        (65536, 8, 30_000, 4),
        (65536, 0, 70_000, 4),
        (512, 8, 3_000, 8),
        (4096, 8, 20_000, 8),
        (512, 8, 3_000, 12),
        (4096, 8, 20_000, 12),
        (65536, 0, 70_000, 12),
    ] {
        let key_of = |value: u32| -> Vec<u8> {
            match key_len {
                4 => value.to_be_bytes().to_vec(),
                8 => u64::from(value).to_be_bytes().to_vec(),
                _ => {
                    let mut key = (u64::from(value) >> 8).to_be_bytes().to_vec();
                    key.extend_from_slice(&value.to_be_bytes());
                    key
                }
            }
        };
        let value_of = |key: &[u8]| -> u32 {
            let tail = &key[key.len() - 4..];
            u32::from_be_bytes([tail[0], tail[1], tail[2], tail[3]])
        };
        let mut keys: Vec<u32> = (0..pairs)
            .map(|_| rng.gen_range(0..u32::MAX / 2) * 2 + 1)
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let data: Vec<_> = keys
            .iter()
            .map(|&k| (key_of(k), vec![7u8; value_len]))
            .collect();
        let options = Options {
            page_size,
            ..Options::default()
        };
        let (_dir, table) = build(&data, options);
        for (level, info) in table.levels().iter().enumerate() {
            for index in 0..info.page_count {
                let page = table.page(level, index).expect("page");
                let page_keys: Vec<&[u8]> = (0..page.count()).map(|i| page.key(i)).collect();
                let mut probes: Vec<Vec<u8>> = vec![vec![], vec![0xff; 5], vec![0, 0, 0]];
                // Every key of small pages; about 300 spread over the big ones.
                for key in page_keys
                    .iter()
                    .step_by(page_keys.len().div_ceil(300).max(1))
                {
                    let value = value_of(key);
                    probes.push(key.to_vec());
                    probes.push(key_of(value.wrapping_sub(1)));
                    probes.push(key_of(value.wrapping_add(1)));
                    probes.push([&key[..], &[0]].concat());
                    probes.push(key[..3].to_vec());
                    probes.push(key[..key.len() - 1].to_vec());
                }
                for probe in &probes {
                    let key = Probe::new(probe);
                    for strict in [false, true] {
                        let expected = linear_search(&page_keys, probe, strict);
                        let place = format!(
                            "page size {page_size}, key length {key_len}, level {level}, \
                             page {index}, probe {probe:?}, strict {strict}"
                        );
                        assert_eq!(page.search(key, strict), expected, "{place}");
                        // The guided search gives the same answer whatever the guess: none, the
                        // right place, both ends, and a random (mostly wrong) place; for a page
                        // taken as cached (plain binary search after a missed guess) or not.
                        let right = expected as f64 / page_keys.len().max(1) as f64;
                        let guesses = [0.0, 1.0, right, rng.gen_range(0.0..1.0)];
                        for cached in [false, true] {
                            assert_eq!(
                                page.search_guided(key, strict, None, cached),
                                expected,
                                "{place}"
                            );
                            for fraction in guesses {
                                let guess = Some(Guess::at(fraction));
                                assert_eq!(
                                    page.search_guided(key, strict, guess, cached),
                                    expected,
                                    "{place}, guess {fraction}, cached {cached}"
                                );
                            }
                        }
                        assert_eq!(
                            page.holds(expected.min(page.count() - 1), key),
                            page_keys[expected.min(page.count() - 1)] == &probe[..],
                            "{place}"
                        );
                        // A guess at the answer is answered from its window alone.
                        assert_eq!(
                            page.search_window(key, strict, Guess::at(right)),
                            Some(expected),
                            "{place}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn builds_larger_than_the_write_buffer_go_through_the_background_writer_intact() {
    // 200,000 pairs of 32 bytes: about 1,600 leaf pages, six full 1 MiB buffers handed to the
    // writer thread (so buffers are reused), then a partial one written after it stopped.
    let pairs: Vec<_> = (0u64..200_000)
        .map(|i| ((i * 3).to_be_bytes().repeat(3), i.to_le_bytes().to_vec()))
        .collect();
    let (_dir, table) = build(&pairs, Options::default());
    assert!(table.leaf_pages() > 6 * 256, "more than six full buffers");
    table.verify().expect("verify");
    let all: Vec<_> = table.iter().map(|pair| pair.expect("iter")).collect();
    assert_eq!(all.len(), pairs.len());
    for ((key, value), (read_key, read_value)) in pairs.iter().zip(all) {
        assert_eq!((&key[..], &value[..]), (read_key, read_value));
    }
    for (key, value) in pairs.iter().step_by(97) {
        assert_eq!(table.get(key).expect("get"), Some(&value[..]));
        let missing = (u64::from_be_bytes(key[..8].try_into().expect("8 bytes")) + 1)
            .to_be_bytes()
            .repeat(3);
        assert_eq!(table.get(&missing).expect("get"), None);
    }
}

#[test]
fn a_dropped_builder_with_queued_buffers_leaves_no_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t.bt");
    let mut builder = Builder::create(&path).expect("builder");
    for i in 0u64..100_000 {
        builder
            .append(&i.to_be_bytes().repeat(3), &[1; 8])
            .expect("append");
    }
    drop(builder);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Every key of `model` is found by `get` with its value, and the lower bound of the key with a
/// zero byte appended is what `model` says (and `get` of it, where absent, finds nothing).
fn check_lookups_and_bounds(table: &Table, model: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>) {
    for (key, value) in model {
        assert_eq!(table.get(key).expect("get"), Some(&value[..]));
        let mut next = key.clone();
        next.push(0);
        let expected = model.range(next.clone()..).next().map(|(k, _)| k.clone());
        let mut cursor = table.cursor();
        let found = cursor.seek_lower_bound(&next).expect("seek");
        assert_eq!(
            found.then(|| cursor.key().map(<[u8]>::to_vec)).flatten(),
            expected
        );
        if !model.contains_key(&next) {
            assert_eq!(table.get(&next).expect("get"), None);
        }
    }
}

/// Keys whose spread is far from even (clusters, long common prefixes, keys that are prefixes of
/// others): lookups and bounds through the guided descent still find exactly what a `BTreeMap`
/// finds, and the guesses `Guess::between` makes stay in `[0, 1]` and keep the keys' order.
#[test]
fn guided_descent_matches_a_btreemap_on_unevenly_spread_keys() {
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x9e55);
    let mut model = BTreeMap::new();
    // Dense clusters of consecutive integers far apart, a run of keys sharing a 20-byte prefix,
    // keys that are prefixes of others, and sparse random keys.
    for cluster in 0..40u64 {
        let base = rng.gen::<u64>() >> (cluster % 7 * 8);
        for offset in 0..rng.gen_range(1..400u64) {
            model.insert(
                base.wrapping_add(offset).to_be_bytes().to_vec(),
                vec![1u8; 8],
            );
        }
    }
    for index in 0..2_000u32 {
        let mut key = vec![0xab; 20];
        key.extend_from_slice(&(index * index).to_be_bytes());
        model.insert(key, vec![2u8; 8]);
    }
    for len in 0..30 {
        model.insert(vec![0x5c; len], vec![3u8; 8]);
        model.insert([vec![0x5c; len], vec![0]].concat(), vec![4u8; 8]);
    }
    for _ in 0..3_000 {
        let len = rng.gen_range(1..24);
        let key: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        model.insert(key, vec![5u8; 8]);
    }
    let data: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for page_size in [512, 4096] {
        let options = Options {
            page_size,
            ..Options::default()
        };
        let (_dir, mut table) = build(&data, options);
        let levels_needed = if page_size == 512 { 3 } else { 2 };
        assert!(
            table.levels().len() >= levels_needed,
            "the test needs guided leaves (and, with small pages, guided branch pages)"
        );
        // Every level taken as cached (no prefetch, plain binary search after a missed guess),
        // none (prefetches, speculative children, sampled search), and the default split.
        for cached_bytes_max in [u64::MAX, 0, super::table::CACHED_LEVEL_BYTES_MAX] {
            table.set_cached_level_bytes_max(cached_bytes_max);
            check_lookups_and_bounds(&table, &model);
        }
    }
    let ordered = [
        &[1u8, 2, 3][..],
        &[1, 2, 3, 0],
        &[1, 2, 3, 7, 9],
        &[1, 2, 4],
    ];
    let mut last = 0.0;
    for key in &ordered[..3] {
        let guess = Guess::between(ordered[0], ordered[3], key).expect("spread");
        let position = guess.scale(1 << 20);
        assert!(position as f64 >= last && position <= 1 << 20);
        last = position as f64;
    }
    for (fraction, parts, part) in [(0.0, 10, 0), (0.55, 10, 5), (1.0, 10, 9), (0.5, 0, 0)] {
        let (found, within) = Guess::at(fraction).split(parts);
        assert_eq!(found, part, "fraction {fraction} of {parts} parts");
        assert!(within.scale(1000) <= 1000);
    }
    let within = Guess::at(0.55).split(10).1.scale(1000);
    assert!((499..=500).contains(&within), "{within}");
    // The descent's guess from the keys' heads is `between`'s, up to a borrow from the bytes
    // past the heads, wherever it is used (heads at least 2^32 apart); elsewhere it is
    // `between`'s exactly.
    for round in 0..10_000u32 {
        let mut keys: Vec<Vec<u8>> = (0..3)
            .map(|_| {
                let len = rng.gen_range(0..24);
                // Some rounds share a long prefix, so the heads tie or differ by little.
                let shared = if round % 3 == 0 { 6 } else { 0 };
                (0..len)
                    .map(|at| if at < shared { 0x42 } else { rng.gen() })
                    .collect()
            })
            .collect();
        keys.sort();
        let (low, key, high) = (&keys[0], &keys[1], &keys[2]);
        let exact = Guess::between(low, high, key);
        let from_heads = Guess::between_probe(low, high, Probe::new(key));
        match (exact, from_heads) {
            (Some(exact), Some(from_heads)) => {
                let (exact, from_heads) = (exact.scale(1 << 24), from_heads.scale(1 << 24));
                assert!(exact.abs_diff(from_heads) <= 1, "{low:?} {key:?} {high:?}");
            }
            (exact, from_heads) => assert_eq!(exact, from_heads, "{low:?} {key:?} {high:?}"),
        }
    }
    assert_eq!(Guess::between(b"a", b"a\0", b"a"), None);
    assert_eq!(Guess::between(b"same", b"same", b"same"), None);
    assert_eq!(Guess::between_probe(b"a", b"a\0", Probe::new(b"a")), None);
}

/// The children per branch page that `Table::open` derives from the header (for the speculative
/// prefetch of a guessed child) are the real ones where every page but the last is full, as the
/// builder makes them for fixed-length keys.
#[test]
fn children_per_page_from_the_header_match_the_pages() {
    for (page_size, pairs) in [(512, 40_000u64), (4096, 300_000)] {
        let data: Vec<_> = (0..pairs)
            .map(|k| ((k * 3).to_be_bytes().to_vec(), k.to_le_bytes().to_vec()))
            .collect();
        let options = Options {
            page_size,
            ..Options::default()
        };
        let (_dir, table) = build(&data, options);
        assert!(table.levels().len() >= 3, "{:?}", table.levels());
        assert_eq!(table.children_per_page(0), 0, "leaves have no children");
        for level in 1..table.levels().len() {
            let pages = table.levels()[level].page_count;
            let full = table.page(level, 0).expect("page").count() as u64 + 1;
            for index in 0..pages.saturating_sub(1) {
                let count = table.page(level, index).expect("page").count() as u64;
                assert_eq!(count + 1, full, "level {level} page {index}");
            }
            assert_eq!(table.children_per_page(level), full, "level {level}");
        }
    }
}

/// The flattened cached levels (`top.rs`) send every lookup to the same leaf, and the same slot
/// in it, as the walk through every page from the root: present keys, keys between them and past
/// both ends, on tables whose cached part is the root alone, several levels of many pages, or
/// every branch level, with keys spread evenly, keys whose first eight bytes tie (the search
/// then compares them in full) and keys of every length (slotted pages).
#[test]
fn flattened_top_levels_locate_as_the_page_walk() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x70b);
    let even: Vec<Vec<u8>> = (0..20_000u64)
        .map(|i| {
            let mut key = (i * 0x0000_d1b7_1758_e219).to_be_bytes().to_vec();
            key.extend_from_slice(&[7; 16]);
            key
        })
        .collect();
    let tied: Vec<Vec<u8>> = (0..20_000u32)
        .map(|i| {
            let mut key = vec![0x42; 12];
            key.extend_from_slice(&i.to_be_bytes());
            key
        })
        .collect();
    let mut mixed: Vec<Vec<u8>> = (0..20_000)
        .map(|i| {
            let len = rng.gen_range(0..40usize);
            let shared = if i % 4 == 0 { len.min(9) } else { 0 };
            (0..len)
                .map(|at| if at < shared { 0x10 } else { rng.gen() })
                .collect()
        })
        .collect();
    mixed.sort();
    mixed.dedup();
    for (shape, keys) in [("even", even), ("tied", tied), ("mixed", mixed)] {
        let data: Vec<_> = keys.iter().map(|k| (k.clone(), k.clone())).collect();
        for page_size in [512, 4096] {
            let options = Options {
                page_size,
                ..Options::default()
            };
            let (_dir, mut table) = build(&data, options);
            let levels = table.levels().len();
            for cached in [super::table::CACHED_LEVEL_BYTES_MAX, u64::MAX, 4 * 512, 0] {
                table.set_cached_level_bytes_max(cached);
                let top = table.top_shape();
                if cached == 0 {
                    assert_eq!(top, None, "{shape}: no level is cached");
                } else if cached == u64::MAX && levels > 1 {
                    assert_eq!(top.map(|(level, _)| level), Some(0), "{shape}: all cached");
                }
                let mut probes: Vec<Vec<u8>> = vec![Vec::new(), vec![0xff; 60], vec![0]];
                for key in keys.iter().step_by(7) {
                    probes.push(key.clone());
                    probes.push([&key[..], &[0]].concat());
                    if let Some((&last, rest)) = key.split_last() {
                        probes.push([rest, &[last.wrapping_sub(1)]].concat());
                        probes.push(rest.to_vec());
                    }
                }
                for probe in &probes {
                    for strict in [false, true] {
                        let (leaf, page, slot) =
                            table.locate(Probe::new(probe), strict).expect("locate");
                        let (walked, walked_page, walked_slot) =
                            table.walk(Probe::new(probe), strict).expect("walk");
                        assert_eq!(
                            (leaf, slot, page.count()),
                            (walked, walked_slot, walked_page.count()),
                            "{shape}, {page_size}-byte pages, cached {cached}, {probe:?}"
                        );
                    }
                }
            }
        }
    }
}

/// Threads whose first lookups race to build the flattened cached levels (each may build its
/// own; one is kept) all find every key, and the table keeps one array.
#[test]
fn first_lookups_on_many_threads_race_to_build_the_top_and_agree() {
    let data: Vec<_> = (0..30_000u64)
        .map(|i| {
            (
                (i * 0x9e37_79b9).to_be_bytes().to_vec(),
                i.to_le_bytes().to_vec(),
            )
        })
        .collect();
    let options = Options {
        page_size: 512,
        ..Options::default()
    };
    let (_dir, table) = build(&data, options);
    std::thread::scope(|scope| {
        for thread in 0..4usize {
            let (table, data) = (&table, &data);
            scope.spawn(move || {
                for (key, value) in data.iter().skip(thread).step_by(3) {
                    assert_eq!(table.get(key).expect("get"), Some(&value[..]));
                }
            });
        }
    });
    let (level, separators) = table.top_shape().expect("a cached branch level");
    // About 1,000 leaves of 512 bytes (over `CACHED_LEVEL_BYTES_MAX`) under cached branch levels.
    assert_eq!(level, 0, "the array names leaves");
    assert!(separators > 0);
}

/// Durable builds of 48 MiB of leaves, with and without write-behind (with it, several windows
/// are started and waited for): the table reads back whole.
#[test]
fn a_durable_build_larger_than_the_write_behind_windows_reads_back() {
    for write_behind in [true, false] {
        let options = Options {
            write_behind,
            ..Options::default()
        };
        durable_build_reads_back(options);
    }
}

fn durable_build_reads_back(options: Options) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.bt");
    let mut builder = Builder::with_options(&path, options).expect("builder");
    let n = 1_500_000u64;
    for i in 0..n {
        builder
            .append(&(i * 7).to_be_bytes().repeat(3), &i.to_le_bytes())
            .expect("append");
    }
    let summary = builder.finish(Durability::Durable).expect("finish");
    assert!(
        summary.file_bytes > 40 << 20,
        "{} bytes",
        summary.file_bytes
    );
    let table = Table::open(&path).expect("open");
    assert_eq!(table.len(), n);
    for i in (0..n).step_by(997).chain([n - 1]) {
        let key = (i * 7).to_be_bytes().repeat(3);
        assert_eq!(table.get(&key).expect("get"), Some(&i.to_le_bytes()[..]));
        let missing = (i * 7 + 1).to_be_bytes().repeat(3);
        assert_eq!(table.get(&missing).expect("get"), None);
    }
    table.verify().expect("verify");
}
