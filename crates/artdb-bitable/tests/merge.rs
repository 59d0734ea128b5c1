//! Merge tests: the merge of random tables equals the union of their models under each rule.

mod common;

use artdb_bitable::{merge, Builder, Durability, Error, MergeRule, Options, Table};
use common::{build, check_against_model, scale, Model};
use proptest::prelude::*;

fn run_merge(models: &[Model], rule: MergeRule) -> (tempfile::TempDir, Result<Table, Error>) {
    let built: Vec<_> = models
        .iter()
        .map(|m| {
            build(
                m,
                Options {
                    page_size: 512,
                    ..Options::default()
                },
            )
        })
        .collect();
    let tables: Vec<Table> = built
        .iter()
        .map(|(_, path)| Table::open(path).expect("open"))
        .collect();
    let inputs: Vec<&Table> = tables.iter().collect();
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("merged.bt");
    let mut builder = Builder::create(&path).expect("builder");
    let result = merge(&inputs, &mut builder, rule)
        .and_then(|_| builder.finish(Durability::NonDurable))
        .and_then(|_| Table::open(&path));
    (dir, result)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24 * scale()))]

    #[test]
    fn newest_wins_matches_the_union_of_the_models(
        models in proptest::collection::vec(
            proptest::collection::btree_map(
                proptest::collection::vec(0u8..6, 0..5),
                proptest::collection::vec(any::<u8>(), 0..200),
                0..150),
            0..5),
        probes in proptest::collection::vec(proptest::collection::vec(0u8..6, 0..5), 0..8),
    ) {
        let mut union = Model::new();
        for model in &models {
            union.extend(model.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let (_dir, table) = run_merge(&models, MergeRule::NewestWins);
        check_against_model(&table.expect("merge"), &union, &probes);

        let overlapping = {
            let mut seen = std::collections::BTreeSet::new();
            models.iter().flat_map(|m| m.keys()).any(|k| !seen.insert(k.clone()))
        };
        let (_dir, strict) = run_merge(&models, MergeRule::Error);
        match strict {
            Ok(table) => {
                prop_assert!(!overlapping);
                check_against_model(&table, &union, &probes);
            }
            Err(Error::MergeDuplicateKey { .. }) => prop_assert!(overlapping),
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }
}
