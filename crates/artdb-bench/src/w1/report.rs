//! W1's output: the table for people (each artdb figure beside each peer's, with the ratio) and
//! the JSON for tools.
//!
//! JSON (one object, exactly these fields):
//! `{"workload":"w1","n":N,"key_len":K,"value_len":V,"keys":"random","results":[{"structure":
//! "artdb","op":"readrandom","mops":12.3,"bytes_per_key":14.1}, ...],"peers":{crate:version}}`
//! (peers: [`crate::versions::json`]). `mops` is millions of
//! operations per second, except for `seekrandom`, where it is millions of pairs read per
//! second (Mkeys/s: each seek reads 100 pairs). `bytes_per_key` is the structure's allocator
//! bytes after the fill minus before, divided by N; it is repeated on every row of the structure.
//! For artdb it includes the bytes its image arena's images asked for (the arena maps its own
//! chunks: see `w1.rs`); `held_bytes_per_key` counts those chunks whole, free space included.
//! For the peers the two are equal.

use std::fmt::Write as _;

use serde::Serialize;

/// One operation of W1, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    /// Insert N pairs in random order.
    Fill,
    /// N lookups of present keys, in random order, one at a time.
    Read,
    /// N/10 lookups of absent keys.
    Missing,
    /// The same lookups as `Read`, through a batched lookup (artdb's `get_many`).
    Batch,
    /// Seek to a random present key, then read 100 pairs in order.
    Seek,
    /// Remove all N keys in random order.
    Delete,
}

impl Op {
    /// Every operation, in run order.
    pub const ALL: [Op; 6] = [
        Op::Fill,
        Op::Read,
        Op::Missing,
        Op::Batch,
        Op::Seek,
        Op::Delete,
    ];

    /// The name in the JSON and the table.
    pub fn name(self) -> &'static str {
        match self {
            Op::Fill => "fillrandom",
            Op::Read => "readrandom",
            Op::Missing => "readmissing",
            Op::Batch => "readbatch",
            Op::Seek => "seekrandom",
            Op::Delete => "deleterandom",
        }
    }

    /// The unit of the op's rate.
    pub fn unit(self) -> &'static str {
        match self {
            Op::Seek => "Mkeys/s",
            _ => "Mops/s",
        }
    }
}

/// The median figures of one structure.
pub struct StructureFigures {
    /// The structure's name (`artdb`, `btreemap`, ...).
    pub name: &'static str,
    /// Median rate per op; `None` where the structure has no such operation.
    pub rates: Vec<(Op, Option<f64>)>,
    /// Median allocator bytes per key after the fill.
    pub bytes_per_key: f64,
    /// Median bytes per key held after the fill, with the free space of artdb's image arena.
    pub held_bytes_per_key: f64,
}

impl StructureFigures {
    /// The median rate of `op`, if measured.
    pub fn rate(&self, op: Op) -> Option<f64> {
        self.rates
            .iter()
            .find(|(o, _)| *o == op)
            .and_then(|(_, rate)| *rate)
    }
}

/// The parameters of the run, as they appear in the JSON.
pub struct RunHeader {
    /// Number of keys.
    pub n: usize,
    /// Key length in bytes.
    pub key_len: usize,
    /// Value length in bytes.
    pub value_len: usize,
    /// `random` or `dense`.
    pub keys: &'static str,
    /// Reader threads.
    pub threads: usize,
    /// Repetitions whose median is reported.
    pub runs: usize,
}

#[derive(Serialize)]
struct JsonRow {
    structure: &'static str,
    op: &'static str,
    mops: f64,
    bytes_per_key: f64,
    held_bytes_per_key: f64,
}

#[derive(Serialize)]
struct JsonReport {
    workload: &'static str,
    n: usize,
    key_len: usize,
    value_len: usize,
    keys: &'static str,
    results: Vec<JsonRow>,
    /// The peers' versions ([`crate::versions::json`]).
    peers: serde_json::Value,
}

/// The JSON document of a run (see the module docs for the schema).
pub fn json(header: &RunHeader, figures: &[StructureFigures]) -> Result<String, serde_json::Error> {
    let results = figures
        .iter()
        .flat_map(|structure| {
            structure.rates.iter().filter_map(|(op, rate)| {
                rate.map(|mops| JsonRow {
                    structure: structure.name,
                    op: op.name(),
                    mops: round(mops, 3),
                    bytes_per_key: round(structure.bytes_per_key, 2),
                    held_bytes_per_key: round(structure.held_bytes_per_key, 2),
                })
            })
        })
        .collect();
    let report = JsonReport {
        workload: "w1",
        n: header.n,
        key_len: header.key_len,
        value_len: header.value_len,
        keys: header.keys,
        results,
        peers: crate::versions::json(),
    };
    serde_json::to_string_pretty(&report)
}

fn round(value: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (value * scale).round() / scale
}

/// The table for people: one row per op (and two for memory), one column per structure, then
/// artdb's ratio to each peer (rates: artdb / peer, higher is better for artdb; memory: artdb /
/// peer, lower is better). `readbatch` ratios compare artdb's batched rate with each peer's
/// one-at-a-time `readrandom` rate, since the peers have no batched lookup.
pub fn table(header: &RunHeader, figures: &[StructureFigures]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "W1: n={} key_len={} value_len={} keys={} threads={} runs={} (median)",
        header.n, header.key_len, header.value_len, header.keys, header.threads, header.runs
    );
    let artdb = figures.iter().find(|figure| figure.name == "artdb");
    let peers: Vec<&StructureFigures> = figures
        .iter()
        .filter(|figure| figure.name != "artdb")
        .collect();
    let _ = write!(out, "{:<13} {:<8}", "op", "unit");
    for figure in figures {
        let _ = write!(out, " {:>9}", figure.name);
    }
    if artdb.is_some() {
        for peer in &peers {
            let _ = write!(out, " {:>11}", format!("a/{}", peer.name));
        }
    }
    out.push('\n');
    for op in Op::ALL {
        let _ = write!(out, "{:<13} {:<8}", op.name(), op.unit());
        for figure in figures {
            let _ = write!(out, " {:>9}", cell(figure.rate(op)));
        }
        if let Some(artdb) = artdb {
            let peer_op = if op == Op::Batch { Op::Read } else { op };
            for peer in &peers {
                let _ = write!(out, " {:>11}", ratio(artdb.rate(op), peer.rate(peer_op)));
            }
        }
        out.push('\n');
    }
    let memory_rows: [(&str, MemoryFigure); 2] = [
        ("memory", |figure| figure.bytes_per_key),
        ("memory held", |figure| figure.held_bytes_per_key),
    ];
    for (label, bytes) in memory_rows {
        let _ = write!(out, "{:<13} {:<8}", label, "B/key");
        for figure in figures {
            let _ = write!(out, " {:>9}", format!("{:.1}", bytes(figure)));
        }
        if let Some(artdb) = artdb {
            for peer in &peers {
                let _ = write!(out, " {:>11}", ratio(Some(bytes(artdb)), Some(bytes(peer))));
            }
        }
        out.push('\n');
    }
    out
}

/// Reads one memory figure (bytes per key) of a structure, for a memory row of the table.
type MemoryFigure = fn(&StructureFigures) -> f64;

fn cell(rate: Option<f64>) -> String {
    match rate {
        Some(rate) => format!("{rate:.2}"),
        None => "-".to_string(),
    }
}

fn ratio(artdb: Option<f64>, peer: Option<f64>) -> String {
    match (artdb, peer) {
        (Some(artdb), Some(peer)) if peer > 0.0 => format!("{:.2}x", artdb / peer),
        _ => "-".to_string(),
    }
}
