//! Leaf pack lookups where many entries share their first suffix byte (a "run"): the lookup
//! counts the run in the fence, compares the first `RUN_BRANCH_FREE_MAX` (4) records of a run
//! without branches and walks longer runs, and a 32-byte fence window around the byte's
//! expected place answers unless the run's edges lie outside it. Runs of 1 to 12 entries, in
//! packs built by inserts and by `bulk_build`, with fences clustered (window misses) and spread;
//! every present key, and absent keys inside, between and around the runs, against the model.

use std::collections::BTreeMap;

use artdb_art::Tree;

/// Pairs of one pack: 8-byte keys sharing their first two bytes, so the third byte is the
/// fence byte; `runs[i]` entries with fence byte `bytes[i]`, the other bytes spread.
fn pairs(bytes: &[u8], runs: &[usize]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for (&byte, &run) in bytes.iter().zip(runs) {
        for j in 0..run {
            let tail = (j as u64 * 0x0101_0103 + 7 * byte as u64) << 8;
            let mut key = vec![0x5A, 0xA5, byte];
            key.extend_from_slice(&tail.to_be_bytes()[3..]);
            let value = (byte as u64 * 1000 + j as u64).to_le_bytes().to_vec();
            model.insert(key, value);
        }
    }
    model
}

fn check(tree: &Tree, model: &BTreeMap<Vec<u8>, Vec<u8>>, label: &str) {
    for (key, value) in model {
        assert_eq!(tree.get(key).unwrap(), Some(&value[..]), "{label}: {key:?}");
        // Neighbours: one below and one above in the last bytes, absent unless in the model.
        for delta in [1u64, 0x100, 0x1_0000] {
            let mut tail = [0u8; 8];
            tail[3..].copy_from_slice(&key[3..]);
            let number = u64::from_be_bytes(tail);
            for probe in [number.wrapping_sub(delta), number + delta] {
                let mut other = key[..3].to_vec();
                other.extend_from_slice(&probe.to_be_bytes()[3..]);
                assert_eq!(
                    tree.get(&other).unwrap(),
                    model.get(&other).map(|v| &v[..]),
                    "{label}: {other:?}"
                );
            }
        }
    }
    // Every record's suffix under other first bytes: a lookup must not match a record outside
    // its own run.
    for key in model.keys() {
        for byte in 0..=255u8 {
            let mut other = key.clone();
            other[2] = byte;
            assert_eq!(
                tree.get(&other).unwrap(),
                model.get(&other).map(|v| &v[..]),
                "{label}: {other:?}"
            );
        }
    }
    for byte in 0..=255u8 {
        let key = [0x5A, 0xA5, byte, 0, 0, 0, 0, 1];
        assert_eq!(
            tree.get(&key).unwrap(),
            model.get(&key[..]).map(|v| &v[..]),
            "{label}: {key:?}"
        );
    }
    let keys: Vec<&[u8]> = model.keys().map(|k| &k[..]).collect();
    let mut out = Vec::new();
    tree.get_many(&keys, &mut out).unwrap();
    for (key, found) in keys.iter().zip(&out) {
        assert_eq!(
            *found,
            model.get(*key).map(|v| &v[..]),
            "{label} get_many: {key:?}"
        );
    }
}

#[test]
fn runs_of_every_length_in_spread_and_clustered_fences() {
    let layouts: Vec<(Vec<u8>, Vec<usize>)> = vec![
        // Spread: 40 bytes over the range, runs cycling 1..=12.
        (
            (0..40).map(|i| (i * 6 + 3) as u8).collect(),
            (0..40).map(|i| 1 + i % 12).collect(),
        ),
        // Clustered: 20 neighbouring bytes (the window around a byte's expected place misses).
        (
            (100..120).collect(),
            (0..20).map(|i| 1 + (i * 7) % 12).collect(),
        ),
        // Every byte of 0..=247 (a full fence), with runs of 5 at both ends.
        (
            (0..=247).collect(),
            (0..248)
                .map(|i| if i == 0 || i == 247 { 5 } else { 1 })
                .collect(),
        ),
        // Small packs (under the 32-byte window).
        (vec![0, 7, 200], vec![4, 1, 5]),
        (vec![255], vec![12]),
    ];
    for (bytes, runs) in &layouts {
        let model = pairs(bytes, runs);
        if model.len() < 2 || model.len() > 256 {
            continue;
        }
        let mut inserted = Tree::new();
        for (key, value) in &model {
            inserted.insert(key, value).unwrap();
        }
        assert!(inserted.stats().packs >= 1, "the keys make a pack");
        check(&inserted, &model, "inserted");
        let built = Tree::bulk_build(model.iter()).unwrap();
        assert!(built.stats().packs >= 1, "the bulk build makes a pack");
        check(&built, &model, "bulk_build");
    }
}
