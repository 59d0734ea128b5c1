//! W1's structures behind one interface: the peers (`BTreeMap`, `SkipMap`, `HashMap`, `congee`,
//! `blart`) and the trait the artdb adapter (`super::artdb`) also implements.
//!
//! Each structure runs its own loop over a slice of keys (so each can use its natural idiom, such
//! as congee's epoch guard reused across many operations) and returns a [`Tally`]: how many keys
//! it found and the sum of the digests of the values it read. The harness checks both against the
//! expected figures, so a structure that skips work or returns wrong values fails the run instead
//! of winning it.
//!
//! Key and value types: each peer gets its most favourable natural types, fixed-size arrays
//! `[u8; K]` and `[u8; V]` stored inline. Exceptions, forced by the peer's API: congee takes
//! `u64` keys (8-byte keys only) and `usize` values; for values over 8 bytes its `CongeeArc`
//! stores an `Arc<[u8; V]>` and offers no range scan. `HashMap` uses the standard library's
//! default hasher (SipHash-1-3), as `std::collections::HashMap` ships.

use std::collections::{BTreeMap, HashMap};
use std::ops::AddAssign;
use std::sync::Arc;

use congee::{CongeeArc, U64Congee};
use crossbeam_skiplist::SkipMap;

use super::keys::{value_digest, value_for};

/// The error type of a benchmark step (sendable across the reader threads).
pub type BenchError = Box<dyn std::error::Error + Send + Sync>;

/// What a loop of operations saw: keys found (or pairs scanned) and the sum of their values'
/// digests ([`value_digest`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Keys found, pairs scanned or keys removed.
    pub hits: u64,
    /// Wrapping sum of the digests of the values read.
    pub digest: u64,
}

impl Tally {
    /// Counts one value that was read.
    #[inline]
    pub fn add(&mut self, value: &[u8]) {
        self.hits += 1;
        self.digest = self.digest.wrapping_add(value_digest(value));
    }

    /// Counts one value given by its digest.
    #[inline]
    pub fn add_digest(&mut self, digest: u64) {
        self.hits += 1;
        self.digest = self.digest.wrapping_add(digest);
    }
}

impl AddAssign for Tally {
    fn add_assign(&mut self, other: Tally) {
        self.hits += other.hits;
        self.digest = self.digest.wrapping_add(other.digest);
    }
}

/// A structure under test, holding `[u8; K]` keys and `[u8; V]` values.
pub trait Structure<const K: usize, const V: usize>: Sized {
    /// The read-only view that reader threads share.
    type Reader<'a>: Reader<K>
    where
        Self: 'a;

    /// An empty structure.
    fn new() -> Self;

    /// Inserts every key of `keys`, in order, with the value [`value_for`] gives it.
    fn fill(&mut self, keys: &[[u8; K]]) -> Result<(), BenchError>;

    /// A view for reads (artdb: a snapshot; the peers: a shared reference).
    fn reader(&mut self) -> Self::Reader<'_>;

    /// Removes every key of `keys`, in order; counts the values removed.
    fn delete(&mut self, keys: &[[u8; K]]) -> Result<Tally, BenchError>;
}

/// The reads of W1 on a view that several threads may share.
///
/// Every structure's `read`, `read_batched` and `scan` is `#[inline(never)]`: each timed loop
/// is then compiled on its own, the same in every build of this binary. Inlined into the
/// harness's generic timing code, a loop's code depended on what else the binary held: a change
/// to artdb's lookup alone once moved blart's `read` from a function of its own into its
/// caller, and slowed blart's readrandom markedly in the same rounds
/// (docs/journal/benchmarks.md, "W1 after the equality probe").
pub trait Reader<const K: usize>: Sync {
    /// Looks up every key of `keys`, one at a time.
    fn read(&self, keys: &[[u8; K]]) -> Result<Tally, BenchError>;

    /// Looks up every key of `keys` in batches, if the structure has a batched lookup.
    fn read_batched(&self, _keys: &[[u8; K]]) -> Option<Result<Tally, BenchError>> {
        None
    }

    /// For every start key, seeks to it (lower bound) and reads `count` pairs in order (fewer at
    /// the end); `None` if the structure is not ordered or has no scan.
    fn scan(&self, starts: &[[u8; K]], count: usize) -> Option<Result<Tally, BenchError>>;
}

impl<const K: usize, const V: usize> Structure<K, V> for BTreeMap<[u8; K], [u8; V]> {
    type Reader<'a> = &'a Self;

    fn new() -> Self {
        BTreeMap::new()
    }

    fn fill(&mut self, keys: &[[u8; K]]) -> Result<(), BenchError> {
        for key in keys {
            self.insert(*key, value_for::<K, V>(key));
        }
        Ok(())
    }

    fn reader(&mut self) -> &Self {
        self
    }

    fn delete(&mut self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(value) = self.remove(key) {
                tally.add(&value);
            }
        }
        Ok(tally)
    }
}

impl<const K: usize, const V: usize> Reader<K> for &BTreeMap<[u8; K], [u8; V]> {
    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn read(&self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(value) = self.get(key) {
                tally.add(value);
            }
        }
        Ok(tally)
    }

    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn scan(&self, starts: &[[u8; K]], count: usize) -> Option<Result<Tally, BenchError>> {
        let mut tally = Tally::default();
        for start in starts {
            for (_, value) in self.range::<[u8; K], _>(start..).take(count) {
                tally.add(value);
            }
        }
        Some(Ok(tally))
    }
}

impl<const K: usize, const V: usize> Structure<K, V> for SkipMap<[u8; K], [u8; V]> {
    type Reader<'a> = &'a Self;

    fn new() -> Self {
        SkipMap::new()
    }

    fn fill(&mut self, keys: &[[u8; K]]) -> Result<(), BenchError> {
        for key in keys {
            self.insert(*key, value_for::<K, V>(key));
        }
        Ok(())
    }

    fn reader(&mut self) -> &Self {
        self
    }

    fn delete(&mut self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(entry) = self.remove(key) {
                tally.add(entry.value());
            }
        }
        Ok(tally)
    }
}

impl<const K: usize, const V: usize> Reader<K> for &SkipMap<[u8; K], [u8; V]> {
    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn read(&self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(entry) = self.get(key) {
                tally.add(entry.value());
            }
        }
        Ok(tally)
    }

    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn scan(&self, starts: &[[u8; K]], count: usize) -> Option<Result<Tally, BenchError>> {
        let mut tally = Tally::default();
        for start in starts {
            for entry in self.range::<[u8; K], _>(start..).take(count) {
                tally.add(entry.value());
            }
        }
        Some(Ok(tally))
    }
}

impl<const K: usize, const V: usize> Structure<K, V> for HashMap<[u8; K], [u8; V]> {
    type Reader<'a> = &'a Self;

    fn new() -> Self {
        HashMap::new()
    }

    fn fill(&mut self, keys: &[[u8; K]]) -> Result<(), BenchError> {
        for key in keys {
            self.insert(*key, value_for::<K, V>(key));
        }
        Ok(())
    }

    fn reader(&mut self) -> &Self {
        self
    }

    fn delete(&mut self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(value) = self.remove(key) {
                tally.add(&value);
            }
        }
        Ok(tally)
    }
}

impl<const K: usize, const V: usize> Reader<K> for &HashMap<[u8; K], [u8; V]> {
    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn read(&self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(value) = self.get(key) {
                tally.add(value);
            }
        }
        Ok(tally)
    }

    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn scan(&self, _starts: &[[u8; K]], _count: usize) -> Option<Result<Tally, BenchError>> {
        None
    }
}

/// `blart`'s map with its default prefix length (16 bytes).
pub type Blart<const K: usize, const V: usize> = blart::TreeMap<[u8; K], [u8; V]>;

impl<const K: usize, const V: usize> Structure<K, V> for Blart<K, V> {
    type Reader<'a> = &'a Self;

    fn new() -> Self {
        blart::TreeMap::new()
    }

    fn fill(&mut self, keys: &[[u8; K]]) -> Result<(), BenchError> {
        for key in keys {
            self.insert(*key, value_for::<K, V>(key));
        }
        Ok(())
    }

    fn reader(&mut self) -> &Self {
        self
    }

    fn delete(&mut self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(value) = self.remove(key) {
                tally.add(&value);
            }
        }
        Ok(tally)
    }
}

impl<const K: usize, const V: usize> Reader<K> for &Blart<K, V> {
    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn read(&self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for key in keys {
            if let Some(value) = self.get(key) {
                tally.add(value);
            }
        }
        Ok(tally)
    }

    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn scan(&self, starts: &[[u8; K]], count: usize) -> Option<Result<Tally, BenchError>> {
        let mut tally = Tally::default();
        for start in starts {
            for (_, value) in self.range::<[u8; K], _>(start..).take(count) {
                tally.add(value);
            }
        }
        Some(Ok(tally))
    }
}

/// How many operations share one congee epoch guard: pinning is not free ("try to reuse it",
/// says its documentation), but a guard held for a whole fill would delay every reclamation.
const CONGEE_GUARD_OPS: usize = 1024;

/// congee, 8-byte keys only: values of up to 8 bytes as `usize` words in a `U64Congee`, larger
/// values as `Arc<[u8; V]>` in a `CongeeArc` (which has no range scan).
pub enum Congee<const V: usize> {
    /// Values of up to 8 bytes, stored in the tree's value word.
    Word(U64Congee<usize>),
    /// Larger values, reference-counted.
    Arc(CongeeArc<usize, [u8; V]>),
}

/// The u64 that congee takes for an 8-byte big-endian key (congee re-encodes it big-endian).
#[inline]
fn congee_key<const K: usize>(key: &[u8; K]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&key[K - 8..]);
    u64::from_be_bytes(word)
}

impl<const K: usize, const V: usize> Structure<K, V> for Congee<V> {
    type Reader<'a> = &'a Self;

    fn new() -> Self {
        assert!(
            K == 8,
            "congee takes 8-byte keys only; the harness must not select it"
        );
        if V <= 8 {
            Congee::Word(U64Congee::new())
        } else {
            Congee::Arc(CongeeArc::new())
        }
    }

    fn fill(&mut self, keys: &[[u8; K]]) -> Result<(), BenchError> {
        for chunk in keys.chunks(CONGEE_GUARD_OPS) {
            let guard = congee::epoch::pin();
            for key in chunk {
                let value = value_for::<K, V>(key);
                match self {
                    Congee::Word(tree) => {
                        tree.insert(congee_key(key), value_digest(&value) as usize, &guard)?;
                    }
                    Congee::Arc(tree) => {
                        tree.insert(congee_key(key) as usize, Arc::new(value), &guard)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn reader(&mut self) -> &Self {
        self
    }

    fn delete(&mut self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for chunk in keys.chunks(CONGEE_GUARD_OPS) {
            let guard = congee::epoch::pin();
            for key in chunk {
                match self {
                    Congee::Word(tree) => {
                        if let Some(word) = tree.remove(congee_key(key), &guard) {
                            tally.add_digest(word as u64);
                        }
                    }
                    Congee::Arc(tree) => {
                        if let Some(value) = tree.remove(congee_key(key) as usize, &guard) {
                            tally.add(&value[..]);
                        }
                    }
                }
            }
        }
        Ok(tally)
    }
}

impl<const K: usize, const V: usize> Reader<K> for &Congee<V> {
    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn read(&self, keys: &[[u8; K]]) -> Result<Tally, BenchError> {
        let mut tally = Tally::default();
        for chunk in keys.chunks(CONGEE_GUARD_OPS) {
            let guard = congee::epoch::pin();
            for key in chunk {
                match self {
                    Congee::Word(tree) => {
                        if let Some(word) = tree.get(congee_key(key), &guard) {
                            tally.add_digest(word as u64);
                        }
                    }
                    Congee::Arc(tree) => {
                        if let Some(value) = tree.get(congee_key(key) as usize, &guard) {
                            tally.add(&value[..]);
                        }
                    }
                }
            }
        }
        Ok(tally)
    }

    // Out of line: see `Reader`'s doc.
    #[inline(never)]
    fn scan(&self, starts: &[[u8; K]], count: usize) -> Option<Result<Tally, BenchError>> {
        let Congee::Word(tree) = self else {
            return None;
        };
        let mut buffer = vec![([0u8; 8], 0usize); count];
        let mut tally = Tally::default();
        for chunk in starts.chunks(CONGEE_GUARD_OPS) {
            let guard = congee::epoch::pin();
            for start in chunk {
                let found = tree.range(congee_key(start), u64::MAX, &mut buffer, &guard);
                for (_, word) in &buffer[..found] {
                    tally.add_digest(*word as u64);
                }
            }
        }
        Some(Ok(tally))
    }
}
