//! Shared helpers of the integration tests: building a table from a model and the scale knob.

#![allow(dead_code)]

use artdb_bitable::{Builder, Durability, Options, Table};
use std::collections::BTreeMap;

/// The model: what the table must hold.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// `ARTDB_TEST_SCALE` (default 1) multiplies randomized case counts.
pub fn scale() -> u32 {
    std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Builds a table holding `model` in a fresh temporary directory.
pub fn build(model: &Model, options: Options) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("table.bt");
    let mut builder = Builder::with_options(&path, options).expect("builder");
    for (key, value) in model {
        builder.append(key, value).expect("append");
    }
    builder.finish(Durability::Durable).expect("finish");
    (dir, path)
}

/// Checks every read path of `table` against `model`.
pub fn check_against_model(table: &Table, model: &Model, probes: &[Vec<u8>]) {
    use std::ops::Bound;
    assert_eq!(table.len(), model.len() as u64);
    let all: Vec<_> = table.iter().map(|r| r.expect("iter")).collect();
    let expected: Vec<_> = model.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    assert_eq!(all, expected, "full iteration");
    for (key, value) in model {
        assert_eq!(table.get(key).expect("get"), Some(&value[..]));
    }
    assert_eq!(table.first().expect("first"), expected.first().copied());
    assert_eq!(table.last().expect("last"), expected.last().copied());
    let mut cursor = table.cursor();
    for probe in probes {
        assert_eq!(
            table.get(probe).expect("get"),
            model.get(probe).map(|v| &v[..])
        );
        let lower = model
            .range::<[u8], _>((Bound::Included(&probe[..]), Bound::Unbounded))
            .next();
        cursor.seek_lower_bound(probe).expect("lower");
        assert_eq!(
            cursor.key(),
            lower.map(|(k, _)| &k[..]),
            "lower bound of {probe:?}"
        );
        let upper = model
            .range::<[u8], _>((Bound::Excluded(&probe[..]), Bound::Unbounded))
            .next();
        cursor.seek_upper_bound(probe).expect("upper");
        assert_eq!(
            cursor.key(),
            upper.map(|(k, _)| &k[..]),
            "upper bound of {probe:?}"
        );
        // Step back from the upper bound: the last key <= probe.
        let at_or_before = model
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(&probe[..])))
            .next_back();
        cursor.prev().expect("prev");
        if upper.is_some() {
            assert_eq!(
                cursor.key(),
                at_or_before.map(|(k, _)| &k[..]),
                "prev of upper bound"
            );
        }
        assert_eq!(cursor.seek(probe).expect("seek"), model.contains_key(probe));
        let prefix: Vec<_> = table.prefix(probe).map(|r| r.expect("prefix").0).collect();
        let model_prefix: Vec<_> = model
            .keys()
            .filter(|k| k.starts_with(probe))
            .map(|k| &k[..])
            .collect();
        assert_eq!(prefix, model_prefix, "prefix {probe:?}");
    }
    for pair in probes.windows(2) {
        let (a, b) = (&pair[0][..], &pair[1][..]);
        let got: Vec<_> = table
            .range(Bound::Included(a), Bound::Excluded(b))
            .map(|r| r.expect("range").0)
            .collect();
        let want: Vec<_> = if a <= b {
            model
                .range::<[u8], _>((Bound::Included(a), Bound::Excluded(b)))
                .map(|(k, _)| &k[..])
                .collect()
        } else {
            Vec::new()
        };
        assert_eq!(got, want, "range {a:?}..{b:?}");
    }
    // A full backward walk.
    let mut backward = Vec::new();
    let mut cursor = table.cursor();
    while cursor.prev().expect("prev") {
        backward.push(cursor.entry().expect("positioned"));
    }
    backward.reverse();
    assert_eq!(backward, expected, "backward walk");
    table.verify().expect("verify");
}
