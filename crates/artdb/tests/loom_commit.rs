//! A loom model of the commit protocol's synchronization (txn/commit.rs, engine/live.rs,
//! engine/history.rs, `Shared::publish`), explored over every interleaving of three threads.
//!
//! The model keeps the real protocol and its locks, with the data shrunk to a few keys:
//! - begin: under the publish lock's read side, take the published (seq, state) and register
//!   the start seq as live;
//! - commit: under the commit lock, validate the write set against the history records after
//!   the start seq (first committer wins), apply, push a record with the next seq, publish
//!   (write side of the publish lock), unregister, prune (keep records after
//!   `min(oldest live start, published seq)`, read under the publish lock);
//! - abort (drop): unregister, then prune only if the commit lock is free (`try_lock`).
//!
//! Checked in every interleaving: validation finds every record after its start (pruning never
//! drops one a live transaction needs); a snapshot equals the state its seq names; seqs are
//! dense; read-modify-write increments are never lost (lost update prevented). Pruning by the
//! published seq alone (ignoring live transactions) fails this model at once.
//!
//! Preemption bound 2 under `cargo test` (about a second), 3 when `ARTDB_TEST_SCALE` > 1.

use loom::sync::{Arc, Mutex, RwLock};
use loom::thread;
use std::collections::BTreeMap;

const KEYS: usize = 2;

#[derive(Clone, PartialEq, Eq, Debug)]
struct Published {
    seq: u64,
    values: [u64; KEYS],
}

struct CommitState {
    seq: u64,
    /// (seq, key written) of the records kept.
    history: Vec<(u64, usize)>,
    /// The state after every commit, by seq (for checking snapshots).
    states: Vec<[u64; KEYS]>,
    current: [u64; KEYS],
}

struct Db {
    commit: Mutex<CommitState>,
    published: RwLock<std::sync::Arc<Published>>,
    live: Mutex<BTreeMap<u64, usize>>,
}

struct Txn {
    start: u64,
    snapshot: std::sync::Arc<Published>,
    write: Option<(usize, u64)>,
}

impl Db {
    fn new() -> Db {
        Db {
            commit: Mutex::new(CommitState {
                seq: 0,
                history: Vec::new(),
                states: vec![[0; KEYS]],
                current: [0; KEYS],
            }),
            published: RwLock::new(std::sync::Arc::new(Published {
                seq: 0,
                values: [0; KEYS],
            })),
            live: Mutex::new(BTreeMap::new()),
        }
    }

    fn begin(&self) -> Txn {
        let published = self.published.read().unwrap();
        let start = published.seq;
        *self.live.lock().unwrap().entry(start).or_insert(0) += 1;
        Txn {
            start,
            snapshot: std::sync::Arc::clone(&published),
            write: None,
        }
    }

    fn unregister(&self, start: u64) {
        let mut live = self.live.lock().unwrap();
        if let Some(count) = live.get_mut(&start) {
            *count -= 1;
            if *count == 0 {
                live.remove(&start);
            }
        }
    }

    fn prune(&self, state: &mut CommitState) {
        let published = self.published.read().unwrap();
        let oldest = self.live.lock().unwrap().keys().next().copied();
        let keep_after = oldest.map_or(published.seq, |oldest| oldest.min(published.seq));
        state.history.retain(|&(seq, _)| seq > keep_after);
    }

    /// Returns the commit's seq, or `None` on a conflict.
    fn commit(&self, txn: Txn) -> Option<u64> {
        let mut state = self.commit.lock().unwrap();
        // The snapshot is the state its seq names.
        assert_eq!(state.states[txn.start as usize], txn.snapshot.values);
        // Every commit after the start is still in the history.
        let kept: Vec<u64> = state
            .history
            .iter()
            .map(|&(seq, _)| seq)
            .filter(|&seq| seq > txn.start)
            .collect();
        let expected: Vec<u64> = (txn.start + 1..=state.seq).collect();
        assert_eq!(
            kept, expected,
            "a record a live transaction needs was pruned"
        );
        let result = match txn.write {
            Some((key, _))
                if state
                    .history
                    .iter()
                    .any(|&(seq, written)| seq > txn.start && written == key) =>
            {
                None
            }
            Some((key, value)) => {
                state.seq += 1;
                let seq = state.seq;
                state.history.push((seq, key));
                state.current[key] = value;
                let current = state.current;
                state.states.push(current);
                *self.published.write().unwrap() = std::sync::Arc::new(Published {
                    seq,
                    values: current,
                });
                Some(seq)
            }
            None => Some(txn.start),
        };
        self.unregister(txn.start);
        self.prune(&mut state);
        result
    }

    fn abort(&self, txn: Txn) {
        self.unregister(txn.start);
        if let Ok(mut state) = self.commit.try_lock() {
            self.prune(&mut state);
        }
    }
}

#[test]
fn commit_protocol_under_loom() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(if artdb_testkit::scale() > 1 { 3 } else { 2 });
    builder.check(|| {
        let db = Arc::new(Db::new());
        // Two read-modify-write increments of key 0.
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let db = Arc::clone(&db);
                thread::spawn(move || {
                    let mut txn = db.begin();
                    let value = txn.snapshot.values[0];
                    txn.write = Some((0, value + 1));
                    db.commit(txn).is_some()
                })
            })
            .collect();
        // A third transaction that writes key 1 or aborts, racing with the pruning.
        let other = {
            let db = Arc::clone(&db);
            thread::spawn(move || {
                let mut txn = db.begin();
                txn.write = Some((1, 7));
                let first = db.commit(txn).is_some();
                let txn = db.begin();
                db.abort(txn);
                first
            })
        };
        let increments = workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .filter(|&committed| committed)
            .count() as u64;
        assert!(
            other.join().unwrap(),
            "key 1 has one writer: it never conflicts"
        );
        let published = db.published.read().unwrap().clone();
        assert_eq!(published.values[0], increments, "no increment lost");
        assert!(increments >= 1, "the first committer always wins");
        assert_eq!(published.values[1], 7);
        let state = db.commit.lock().unwrap();
        assert_eq!(state.seq, increments + 1, "seqs are dense");
    });
}
