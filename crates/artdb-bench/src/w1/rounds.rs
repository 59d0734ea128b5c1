//! W1's reads side by side (`--rounds R`): every named structure is built and kept alive, then
//! R rounds each time a block of every read on every structure, the structures' order reversed
//! every round, and the report gives the median of the rounds' ratios.
//!
//! Why: this machine's speed drifts within seconds (docs/journal/benchmarks.md: blart's and
//! artdb's readrandom varied widely between invocations of one binary), and the
//! ordinary runs time a structure's reads tens of seconds apart from another's (each is built,
//! read and dropped in turn) and a structure's own `readbatch` and threaded reads seconds
//! apart from its `readrandom`. A ratio of two figures taken at different speeds measures the
//! machine. Here the blocks that a ratio compares run next to each other (one op on every
//! structure, then the next op), each block is short (the first `--block` keys of the read
//! order, a random sample of the present keys), and each starts after an untimed readrandom
//! of as many other present keys (so the caches hold what a steady run of that structure's
//! lookups leaves there, not the previous block's structure), so the ratio of each round
//! compares the same seconds of the machine.
//!
//! Every block's answers are checked like the ordinary runs' (count of hits and digest of the
//! values), so a structure that returned wrong values fails the run.

use std::time::Instant;

use super::keys::value_for;
use super::peers::{BenchError, Reader, Structure, Tally};
use super::{checked, median, timed};
use crate::w1::report::Op;

/// One structure of the side-by-side rounds, type-erased so that structures of different types
/// can be held together.
pub trait Held<const K: usize> {
    /// The structure's name.
    fn name(&self) -> &'static str;
    /// Runs one op over `keys` on `threads` threads (`Op::Batch`: the batched lookup, `None`
    /// when the structure has none); the tally and the wall-clock seconds.
    fn block(
        &mut self,
        op: Op,
        keys: &[[u8; K]],
        threads: usize,
    ) -> Option<Result<(Tally, f64), BenchError>>;
}

/// A built structure of type `S` holding `[u8; V]` values.
pub struct Built<S, const V: usize> {
    name: &'static str,
    structure: S,
}

impl<S, const V: usize> Built<S, V> {
    /// Builds `S` from `fill`.
    pub fn new<const K: usize>(name: &'static str, fill: &[[u8; K]]) -> Result<Self, BenchError>
    where
        S: Structure<K, V>,
    {
        let mut structure = S::new();
        structure.fill(fill)?;
        Ok(Built { name, structure })
    }
}

impl<S, const K: usize, const V: usize> Held<K> for Built<S, V>
where
    S: Structure<K, V>,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn block(
        &mut self,
        op: Op,
        keys: &[[u8; K]],
        threads: usize,
    ) -> Option<Result<(Tally, f64), BenchError>> {
        let reader = self.structure.reader();
        match op {
            Op::Batch => {
                if let Err(error) = reader.read_batched(&[])? {
                    return Some(Err(error));
                }
                Some(timed(threads, keys, |chunk| {
                    reader
                        .read_batched(chunk)
                        .unwrap_or_else(|| Err("no batched read".into()))
                }))
            }
            _ => Some(timed(threads, keys, |chunk| reader.read(chunk))),
        }
    }
}

/// A block of the rounds: an op and the threads it runs on.
#[derive(Clone, Copy, PartialEq)]
struct Kind {
    op: Op,
    threads: usize,
}

impl Kind {
    fn label(self) -> String {
        if self.threads > 1 {
            format!("{} x{}", self.op.name(), self.threads)
        } else {
            self.op.name().to_string()
        }
    }
}

/// Runs `rounds` rounds over `held` (built from the same keys) and returns the report's lines.
/// `read` is the read order (present keys), `missing` the absent keys; each block takes the
/// first `block` keys of each. `threads` > 1 adds a block of readrandom on that many threads.
pub fn run<const K: usize, const V: usize>(
    held: &mut [Box<dyn Held<K> + '_>],
    read: &[[u8; K]],
    missing: &[[u8; K]],
    block: usize,
    rounds: usize,
    threads: usize,
) -> Result<Vec<String>, BenchError> {
    let all_read = read;
    let read = &read[..block.min(read.len())];
    // The warm-up keys: the present keys after the block in the read order (the block's own
    // when there are too few), as many as the block.
    let warm = match all_read.get(read.len()..) {
        Some(rest) if rest.len() >= read.len() => &rest[..read.len()],
        _ => read,
    };
    let missing = &missing[..block.min(missing.len())];
    let mut expected = Tally::default();
    for key in read {
        expected.add(&value_for::<K, V>(key));
    }
    let mut kinds = vec![
        Kind {
            op: Op::Read,
            threads: 1,
        },
        Kind {
            op: Op::Missing,
            threads: 1,
        },
        Kind {
            op: Op::Batch,
            threads: 1,
        },
    ];
    if threads > 1 {
        kinds.push(Kind {
            op: Op::Read,
            threads,
        });
    }
    // rates[round][kind][structure]
    let mut rates: Vec<Vec<Vec<Option<f64>>>> = Vec::with_capacity(rounds);
    let mut lines = vec![format!(
        "side by side: {rounds} rounds; per round, each read on every structure in turn (the \
         order reversed every other round), blocks of {} present and {} absent keys, each \
         after an untimed readrandom of {} other present keys (Mops/s)",
        read.len(),
        missing.len(),
        warm.len()
    )];
    for round in 0..rounds {
        let started = Instant::now();
        let mut this = vec![vec![None; held.len()]; kinds.len()];
        for (k, kind) in kinds.iter().enumerate() {
            let order: Vec<usize> = if round % 2 == 0 {
                (0..held.len()).collect()
            } else {
                (0..held.len()).rev().collect()
            };
            let (keys, want) = match kind.op {
                Op::Missing => (missing, Tally::default()),
                _ => (read, expected),
            };
            for s in order {
                let structure = &mut held[s];
                // Whether the structure has this read at all (a batched lookup: artdb only).
                let Some(supported) = structure.block(kind.op, &[], 1) else {
                    continue;
                };
                supported?;
                // Untimed: a readrandom of as many other present keys, so that the caches hold
                // what they hold in a steady run of this structure's lookups, not what the
                // block before (another structure's) left there.
                if let Some(warmed) = structure.block(Op::Read, warm, 1) {
                    warmed?;
                }
                let Some(timed) = structure.block(kind.op, keys, kind.threads) else {
                    continue;
                };
                let rate = checked(kind.op, timed?, want, keys.len())
                    .map_err(|error| format!("{}: {error}", structure.name()))?;
                this[k][s] = Some(rate);
            }
        }
        let mut line = format!(
            "round {} ({:.1}s):",
            round + 1,
            started.elapsed().as_secs_f64()
        );
        for (k, kind) in kinds.iter().enumerate() {
            line.push_str(&format!(" {}", kind.label()));
            for (s, structure) in held.iter().enumerate() {
                if let Some(rate) = this[k][s] {
                    line.push_str(&format!(" {} {rate:.2}", structure.name()));
                }
            }
            line.push(';');
        }
        lines.push(line);
        rates.push(this);
    }
    // Ratios: the first structure (artdb when it is named) against every other, per read;
    // and each structure's batched and threaded reads against its own readrandom.
    let ratio_line = |label: String, per_round: Vec<f64>| {
        let median = median(&mut per_round.clone()).unwrap_or(f64::NAN);
        let rounds: Vec<String> = per_round.iter().map(|r| format!("{r:.2}")).collect();
        format!(
            "  {label}: median {median:.2}x (rounds: {})",
            rounds.join(", ")
        )
    };
    lines.push("median of the rounds' ratios:".to_string());
    let pick = |k: usize, s: usize| -> Vec<f64> { rates.iter().filter_map(|r| r[k][s]).collect() };
    let first = held.first().map(|h| h.name()).unwrap_or("?");
    for (k, kind) in kinds.iter().enumerate() {
        for (s, structure) in held.iter().enumerate().skip(1) {
            let per_round: Vec<f64> = rates
                .iter()
                .filter_map(|r| Some(r[k][0]? / r[k][s]?))
                .collect();
            if !per_round.is_empty() {
                lines.push(ratio_line(
                    format!("{} {first} / {}", kind.label(), structure.name()),
                    per_round,
                ));
            }
        }
    }
    for (k, kind) in kinds.iter().enumerate().skip(1) {
        if kind.op == Op::Missing {
            continue;
        }
        for (s, structure) in held.iter().enumerate() {
            let per_round: Vec<f64> = rates
                .iter()
                .filter_map(|r| Some(r[k][s]? / r[0][s]?))
                .collect();
            if !per_round.is_empty() {
                lines.push(ratio_line(
                    format!("{} {} / its readrandom", kind.label(), structure.name()),
                    per_round,
                ));
            }
        }
    }
    lines.push("median of the rounds' rates (Mops/s):".to_string());
    for (k, kind) in kinds.iter().enumerate() {
        for (s, structure) in held.iter().enumerate() {
            if let Some(rate) = median(&mut pick(k, s)) {
                lines.push(format!(
                    "  {} {}: {rate:.2}",
                    kind.label(),
                    structure.name()
                ));
            }
        }
    }
    Ok(lines)
}
