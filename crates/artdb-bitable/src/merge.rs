//! Merging N tables into one: a k-way, streaming merge through a binary heap of cursors.
//!
//! Memory is one cursor per input plus the output builder's pages. Equal keys are resolved by the
//! caller's rule: `NewestWins` keeps the value of the input with the highest index (inputs are
//! given oldest first) and skips the others; `Error` stops at the first key held twice.

use crate::builder::Builder;
use crate::cursor::Cursor;
use crate::error::{Error, Result};
use crate::page::compare_keys;
use crate::table::Table;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// How a merge resolves a key present in several inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeRule {
    /// The input with the highest index (the newest) wins.
    NewestWins,
    /// A key in two inputs is `Error::MergeDuplicateKey`.
    Error,
}

/// A heap entry: the current key of input `input`. Ordered by key, then newest input first.
struct Head<'t> {
    key: &'t [u8],
    input: usize,
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(self.key, other.key).then_with(|| other.input.cmp(&self.input))
    }
}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head<'_> {}

/// Appends the merge of `inputs` (oldest first) to `output`; returns the pairs appended.
pub fn merge(inputs: &[&Table], output: &mut Builder, rule: MergeRule) -> Result<u64> {
    let mut cursors: Vec<Cursor<'_>> = inputs.iter().map(|table| table.cursor()).collect();
    let mut heap = BinaryHeap::with_capacity(inputs.len());
    for (input, cursor) in cursors.iter_mut().enumerate() {
        if cursor.first()? {
            if let Some(key) = cursor.key() {
                heap.push(Reverse(Head { key, input }));
            }
        }
    }
    let mut appended = 0u64;
    while let Some(Reverse(head)) = heap.pop() {
        let cursor = &cursors[head.input];
        let value = cursor.value().unwrap_or_default();
        output.append(head.key, value)?;
        appended += 1;
        // Older inputs holding the same key: skip them, or report them.
        while let Some(Reverse(same)) = heap.peek() {
            if same.key != head.key {
                break;
            }
            if rule == MergeRule::Error {
                return Err(Error::MergeDuplicateKey {
                    first_input: same.input,
                    second_input: head.input,
                });
            }
            let input = same.input;
            heap.pop();
            advance(&mut cursors[input], input, &mut heap)?;
        }
        advance(&mut cursors[head.input], head.input, &mut heap)?;
    }
    Ok(appended)
}

fn advance<'t>(
    cursor: &mut Cursor<'t>,
    input: usize,
    heap: &mut BinaryHeap<Reverse<Head<'t>>>,
) -> Result<()> {
    if cursor.next()? {
        if let Some(key) = cursor.key() {
            heap.push(Reverse(Head { key, input }));
        }
    }
    Ok(())
}
