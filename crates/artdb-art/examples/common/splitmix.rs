//! The key stream of artdb-art's examples, shared with `#[path = "common/splitmix.rs"]` (and
//! with the examples of artdb and artdb-bitable, through a path to this file).

/// SplitMix64 of `x`: a well-spread 64-bit value per index (random keys that the examples can
/// regenerate instead of storing).
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E3779B97F4A7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    z ^ (z >> 31)
}
