//! W1's key sets: what is inserted, in which order it is read, which keys are absent.
//!
//! Key shapes (BENCHMARKS.md, W1), all fixed-size arrays `[u8; K]`:
//! - `K = 8`: a big-endian u64, either random (`--keys random`) or `0..N` (`--keys dense`);
//! - `K = 16, 32, 64`: a composite index key: bytes 0..2 a big-endian index id (16 distinct,
//!   uniform), bytes 2..K-8 a low-cardinality column (one of 1,000 distinct decimal strings,
//!   zero-padded to K-10 bytes, uniform), bytes K-8..K a big-endian u64 that is random or dense
//!   as for 8-byte keys. The u64 is unique per key, so keys are unique.
//!
//! Absent keys (for `readmissing`) are built the same way from u64s that no present key uses:
//! for random keys, N + N/10 distinct random u64s are drawn and the last N/10 are the absent ones;
//! for dense keys, the absent u64s are `N..N + N/10`.
//!
//! Values are derived from their key ([`value_for`]), so a lookup's result can be checked and
//! every structure's answers summed into a digest that must match the expected one.

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

/// How the u64 part of the keys is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyOrder {
    /// Distinct uniformly random u64s.
    Random,
    /// The integers `0..N`.
    Dense,
}

impl KeyOrder {
    /// The name used in the JSON output and the table.
    pub fn name(self) -> &'static str {
        match self {
            KeyOrder::Random => "random",
            KeyOrder::Dense => "dense",
        }
    }
}

/// Number of distinct index ids in composite keys.
const INDEX_IDS: u64 = 16;
/// Number of distinct column strings in composite keys.
const COLUMN_VALUES: u64 = 1_000;

/// Every key sequence one W1 run uses.
pub struct KeySet<const K: usize> {
    /// The N present keys, in insertion order (random).
    pub fill: Vec<[u8; K]>,
    /// The same N keys in a different random order: reads, batched reads and deletes.
    pub read: Vec<[u8; K]>,
    /// N/10 keys that are not present, in random order.
    pub missing: Vec<[u8; K]>,
    /// Start keys of the seeks: present keys in random order.
    pub seek: Vec<[u8; K]>,
}

impl<const K: usize> KeySet<K> {
    /// Generates the key set of `n` keys with `seek_count` seek starts, deterministically from
    /// `seed`.
    pub fn generate(n: usize, seek_count: usize, order: KeyOrder, seed: u64) -> KeySet<K> {
        let missing_count = n / 10;
        let mut rng = StdRng::seed_from_u64(seed);
        let suffixes = distinct_suffixes(n + missing_count, order, &mut rng);
        let mut all: Vec<[u8; K]> = suffixes
            .iter()
            .map(|&s| make_key::<K>(s, &mut rng))
            .collect();
        let missing = all.split_off(n);
        let mut fill = all;
        fill.shuffle(&mut rng);
        let mut read = fill.clone();
        read.shuffle(&mut rng);
        let seek = read.iter().rev().take(seek_count).copied().collect();
        KeySet {
            fill,
            read,
            missing,
            seek,
        }
    }
}

/// `count` distinct u64s: random ones (in random order) or `0..count`.
fn distinct_suffixes(count: usize, order: KeyOrder, rng: &mut StdRng) -> Vec<u64> {
    match order {
        KeyOrder::Dense => (0..count as u64).collect(),
        KeyOrder::Random => {
            let mut values: Vec<u64> = Vec::with_capacity(count);
            while values.len() < count {
                values.extend((values.len()..count).map(|_| rng.gen::<u64>()));
                values.sort_unstable();
                values.dedup();
            }
            values.shuffle(rng);
            values
        }
    }
}

/// The key whose u64 part is `suffix` (see the module docs for the layout).
fn make_key<const K: usize>(suffix: u64, rng: &mut StdRng) -> [u8; K] {
    let mut key = [0u8; K];
    key[K - 8..].copy_from_slice(&suffix.to_be_bytes());
    if K > 8 {
        let index_id = rng.gen_range(0..INDEX_IDS) as u16;
        key[..2].copy_from_slice(&index_id.to_be_bytes());
        let column = rng.gen_range(0..COLUMN_VALUES);
        let text = format!("{column:0>width$}", width = K - 10);
        key[2..K - 8].copy_from_slice(text.as_bytes());
    }
    key
}

/// The value stored under `key`: the key's last 8 bytes, XORed with a constant and repeated
/// to fill `V` bytes (so the digest of a value is cheap to recompute from its key).
#[inline]
pub fn value_for<const K: usize, const V: usize>(key: &[u8; K]) -> [u8; V] {
    let mut word = [0u8; 8];
    word.copy_from_slice(&key[K - 8..]);
    let word = (u64::from_le_bytes(word) ^ 0x9E37_79B9_7F4A_7C15).to_le_bytes();
    let mut value = [0u8; V];
    for (index, byte) in value.iter_mut().enumerate() {
        *byte = word[index % 8];
    }
    value
}

/// A cheap summary of one value that proves it was read: its first (up to) 8 bytes as a
/// little-endian integer.
#[inline]
pub fn value_digest(value: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    let len = value.len().min(8);
    word[..len].copy_from_slice(&value[..len]);
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn composite_keys_have_the_documented_shape() {
        let set = KeySet::<32>::generate(1000, 10, KeyOrder::Dense, 7);
        assert_eq!(
            (set.fill.len(), set.missing.len(), set.seek.len()),
            (1000, 100, 10)
        );
        for key in &set.fill {
            assert!(u16::from_be_bytes([key[0], key[1]]) < 16);
            assert!(key[2..24].iter().all(u8::is_ascii_digit));
            assert!(u64::from_be_bytes(key[24..].try_into().unwrap()) < 1000);
        }
        let mut present = set.fill.clone();
        present.sort_unstable();
        present.dedup();
        assert_eq!(present.len(), 1000);
        assert!(set
            .missing
            .iter()
            .all(|key| present.binary_search(key).is_err()));
    }
}
