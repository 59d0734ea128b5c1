//! The fuzz target's body run briefly under `cargo test`: mutations of valid tables (byte flips,
//! splices, truncations, and mutations re-sealed with valid checksums so they reach the
//! structural checks). Scale with `ARTDB_TEST_SCALE`; a failure prints the seed to replay with
//! `ARTDB_FUZZ_SEED=<seed>`.

mod common;

use artdb_bitable::{fuzz, Options};
use common::{build, scale, Model};
use rand::{rngs::StdRng, Rng, SeedableRng};

fn seeds() -> Vec<Vec<u8>> {
    let mut tables = Vec::new();
    let models: Vec<Model> = vec![
        Model::new(),
        (0u32..400)
            .map(|i| (i.to_be_bytes().to_vec(), vec![i as u8; 8]))
            .collect(),
        (0u32..200)
            .map(|i| {
                (
                    format!("key{i}").into_bytes(),
                    vec![3; if i % 40 == 0 { 900 } else { i as usize % 9 }],
                )
            })
            .collect(),
    ];
    for model in &models {
        let (_dir, path) = build(
            model,
            Options {
                page_size: 512,
                ..Options::default()
            },
        );
        tables.push(std::fs::read(&path).expect("read"));
    }
    tables
}

fn mutate(rng: &mut StdRng, bytes: &mut Vec<u8>) {
    match rng.gen_range(0..4) {
        0 => {
            for _ in 0..rng.gen_range(1..8) {
                if !bytes.is_empty() {
                    let at = rng.gen_range(0..bytes.len());
                    bytes[at] = rng.gen();
                }
            }
        }
        1 => {
            let cut = rng.gen_range(0..=bytes.len());
            bytes.truncate(cut);
        }
        2 => {
            if bytes.len() > 64 {
                let from = rng.gen_range(0..bytes.len() - 32);
                let to = rng.gen_range(0..bytes.len() - 32);
                let chunk = bytes[from..from + 32].to_vec();
                bytes[to..to + 32].copy_from_slice(&chunk);
            }
        }
        _ => {
            // Small integers in page-header fields are what break parsers.
            if bytes.len() > 600 {
                let page = rng.gen_range(0..bytes.len() / 512);
                let at = page * 512 + rng.gen_range(0..40);
                if at + 2 <= bytes.len() {
                    let value: u16 = rng.gen_range(0..600);
                    bytes[at..at + 2].copy_from_slice(&value.to_le_bytes());
                }
            }
        }
    }
    if rng.gen_bool(0.7) {
        fuzz::reseal(bytes);
    }
}

#[test]
fn fuzz_body_survives_mutated_tables() {
    let seed: u64 = std::env::var("ARTDB_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    println!("fuzz seed {seed} (replay with ARTDB_FUZZ_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);
    let seeds = seeds();
    for (index, table) in seeds.iter().enumerate() {
        assert!(
            fuzz::open_verify_walk(table) > 0 || index == 0,
            "seed tables open and walk"
        );
    }
    for _ in 0..(10_000 * scale()) {
        let mut bytes = seeds[rng.gen_range(0..seeds.len())].clone();
        for _ in 0..rng.gen_range(1..4) {
            mutate(&mut rng, &mut bytes);
        }
        fuzz::open_verify_walk(&bytes);
    }
}
