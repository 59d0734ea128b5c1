//! Unit tests of the builder's page layouts and level construction (they look inside the file).

use crate::format::*;
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
