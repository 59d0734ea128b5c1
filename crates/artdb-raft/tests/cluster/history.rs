//! A client history and its linearizability check, one register per key (a write-read-CAS
//! register: the cluster's keys are independent, so the history is linearizable iff each key's
//! sub-history is).
//!
//! The check is the Wing-Gong search with memoisation (as porcupine does it): from the state
//! after some linearized set of operations, any pending operation invoked before the earliest
//! return among the pending ones may go next if the register allows its outcome; the search
//! keeps each (set, state) pair once and walks with an explicit stack. An operation whose
//! outcome the client never learned (a timeout, a node stopped under it) returns at infinity
//! and need not be linearized at all (it may not have happened); a read whose outcome is
//! unknown is not recorded.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Values written are unique numbers; a read of bytes that are no such number reads this.
pub const VALUE_UNREADABLE: u32 = u32::MAX;

/// Most (set, state) pairs the search visits per key before it gives up.
const SEARCH_STATES_MAX: usize = 2_000_000;

/// What a client asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Put(u32),
    Delete,
    Get,
    CompareAndSet { expected: Option<u32>, new: u32 },
}

/// What it learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Written,
    Read(Option<u32>),
    CompareAndSet(bool),
    Unknown,
}

/// One operation of the history; `returned == u64::MAX` for an unknown outcome.
#[derive(Debug, Clone, Copy)]
pub struct Event {
    /// Read only through `Debug`, in a failure's message.
    #[allow(dead_code)]
    pub client: usize,
    pub key: u32,
    pub call: Call,
    pub outcome: Outcome,
    pub invoked: u64,
    pub returned: u64,
}

/// The history of a run, recorded by concurrent clients; the clock orders invocations and
/// returns as they happened.
#[derive(Default)]
pub struct History {
    clock: AtomicU64,
    events: Mutex<Vec<Event>>,
}

impl History {
    /// A tick of the history's clock.
    pub fn now(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    /// Records an operation invoked at `invoked` whose outcome is `outcome` (its return is now).
    pub fn record(&self, client: usize, key: u32, call: Call, outcome: Outcome, invoked: u64) {
        let returned = match outcome {
            Outcome::Unknown => u64::MAX,
            _ => self.now(),
        };
        let event = Event {
            client,
            key,
            call,
            outcome,
            invoked,
            returned,
        };
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(event);
    }

    /// The events so far.
    pub fn events(&self) -> Vec<Event> {
        self.events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// The register's step: the state after `event` from `state`, or `None` if its outcome is
/// impossible there.
fn step(state: Option<u32>, event: &Event) -> Option<Option<u32>> {
    match (event.call, event.outcome) {
        (Call::Put(value), _) => Some(Some(value)),
        (Call::Delete, _) => Some(None),
        (Call::Get, Outcome::Read(value)) => (value == state).then_some(state),
        (Call::Get, _) => Some(state),
        (Call::CompareAndSet { expected, new }, Outcome::CompareAndSet(true)) => {
            (state == expected).then_some(Some(new))
        }
        (Call::CompareAndSet { expected, .. }, Outcome::CompareAndSet(false)) => {
            (state != expected).then_some(state)
        }
        (Call::CompareAndSet { expected, new }, _) => {
            Some(if state == expected { Some(new) } else { state })
        }
    }
}

/// Whether one key's operations are linearizable from an absent key.
fn check_key(key: u32, events: &[Event]) -> Result<(), String> {
    let count = events.len();
    let words = count.div_ceil(64);
    let must: Vec<bool> = events.iter().map(|e| e.returned != u64::MAX).collect();
    let mut visited: HashSet<(Vec<u64>, Option<u32>)> = HashSet::new();
    let start = (vec![0u64; words], None);
    visited.insert(start.clone());
    let mut stack = vec![start];
    let done = |set: &[u64]| (0..count).all(|i| !must[i] || set[i / 64] & (1 << (i % 64)) != 0);
    while let Some((set, state)) = stack.pop() {
        if done(&set) {
            return Ok(());
        }
        let pending = |i: usize| set[i / 64] & (1 << (i % 64)) == 0;
        let earliest_return = (0..count)
            .filter(|&i| pending(i))
            .map(|i| events[i].returned)
            .min()
            .unwrap_or(u64::MAX);
        for i in (0..count).filter(|&i| pending(i) && events[i].invoked < earliest_return) {
            let Some(next_state) = step(state, &events[i]) else {
                continue;
            };
            let mut next_set = set.clone();
            next_set[i / 64] |= 1 << (i % 64);
            let next = (next_set, next_state);
            if visited.insert(next.clone()) {
                stack.push(next);
            }
        }
        if visited.len() > SEARCH_STATES_MAX {
            return Err(format!(
                "key {key}: the search passed {SEARCH_STATES_MAX} states without an answer"
            ));
        }
    }
    Err(format!(
        "key {key}: no linearization of its {count} operations: {events:?}"
    ))
}

/// Whether the whole history is linearizable.
pub fn check(events: &[Event]) -> Result<(), String> {
    let mut keys: Vec<u32> = events.iter().map(|e| e.key).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        let mut of_key: Vec<Event> = events.iter().filter(|e| e.key == key).copied().collect();
        of_key.sort_by_key(|e| e.invoked);
        check_key(key, &of_key)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(call: Call, outcome: Outcome, invoked: u64, returned: u64) -> Event {
        Event {
            client: 0,
            key: 0,
            call,
            outcome,
            invoked,
            returned,
        }
    }

    #[test]
    fn a_read_overlapping_a_write_may_see_either_value() {
        let history = [
            event(Call::Put(1), Outcome::Written, 0, 1),
            event(Call::Put(2), Outcome::Written, 2, 5),
            event(Call::Get, Outcome::Read(Some(1)), 3, 4),
            event(Call::Get, Outcome::Read(Some(2)), 6, 7),
        ];
        assert!(check(&history).is_ok());
    }

    #[test]
    fn a_stale_read_after_a_completed_write_is_caught() {
        let history = [
            event(Call::Put(1), Outcome::Written, 0, 1),
            event(Call::Put(2), Outcome::Written, 2, 3),
            event(Call::Get, Outcome::Read(Some(1)), 4, 5),
        ];
        assert!(check(&history).is_err());
    }

    #[test]
    fn an_unknown_write_may_or_may_not_have_happened() {
        let happened = [
            event(Call::Put(1), Outcome::Unknown, 0, u64::MAX),
            event(Call::Get, Outcome::Read(Some(1)), 1, 2),
        ];
        let not_happened = [
            event(Call::Put(1), Outcome::Unknown, 0, u64::MAX),
            event(Call::Get, Outcome::Read(None), 1, 2),
        ];
        assert!(check(&happened).is_ok());
        assert!(check(&not_happened).is_ok());
    }

    #[test]
    fn compare_and_set_outcomes_must_match_the_register() {
        let good = [
            event(Call::Put(1), Outcome::Written, 0, 1),
            event(
                Call::CompareAndSet {
                    expected: Some(1),
                    new: 2,
                },
                Outcome::CompareAndSet(true),
                2,
                3,
            ),
            event(
                Call::CompareAndSet {
                    expected: Some(1),
                    new: 3,
                },
                Outcome::CompareAndSet(false),
                4,
                5,
            ),
        ];
        let bad = [
            event(Call::Put(1), Outcome::Written, 0, 1),
            event(
                Call::CompareAndSet {
                    expected: Some(1),
                    new: 2,
                },
                Outcome::CompareAndSet(false),
                2,
                3,
            ),
        ];
        assert!(check(&good).is_ok());
        assert!(check(&bad).is_err());
    }
}
