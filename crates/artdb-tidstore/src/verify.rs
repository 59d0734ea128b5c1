//! `verify`: one walk over the store that checks every invariant the other modules make and rely
//! on, returning typed violations instead of panicking.
//!
//! Checked: blocks come in strictly ascending order; each value decodes; embedded values hold 1
//! to 5 offsets in `1..=max_offset`; a bitmap handle names a bitmap whose word count is exactly
//! `words_for(highest offset)`, with bit 0 clear, no bit above `max_offset` and offsets that do
//! not fit the child word (`value::fits_embedded`); no two blocks share a bitmap; the appended blocks (`append.rs`) come after the
//! tree's, and the high-water mark is at least the last block; the ids add up to `len()`; in heap mode the slab
//! holds exactly as many live bitmaps as blocks refer to.

use std::collections::HashSet;
use std::fmt;

use crate::bitmap;
use crate::value::{embedded_len, fits_embedded, Handle, Value, EMBEDDED_OFFSETS_MAX};
use crate::TidStore;

/// One broken invariant found by [`TidStore::verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The block it was found at, if it concerns one block.
    pub block: Option<u32>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.block {
            Some(block) => write!(f, "block {block}: {}", self.message),
            None => write!(f, "store: {}", self.message),
        }
    }
}

impl TidStore {
    /// Checks every invariant of the store; `Ok` or the list of violations found.
    pub fn verify(&self) -> Result<(), Vec<Violation>> {
        let mut violations = Vec::new();
        let mut report = |block: Option<u32>, message: String| {
            violations.push(Violation { block, message });
        };
        let mut ids = 0u64;
        let mut previous: Option<u32> = None;
        let mut handles = HashSet::new();
        let mut cursor = self.tree.cursor(&self.appended.blocks);
        let mut step = cursor.seek(0);
        loop {
            let (block, value) = match step {
                Ok(Some(entry)) => entry,
                Ok(None) => break,
                Err(error) => {
                    report(None, format!("the tree walk failed: {error}"));
                    break;
                }
            };
            if previous.is_some_and(|previous| previous >= block) {
                report(Some(block), format!("comes after block {previous:?}"));
            }
            previous = Some(block);
            match value {
                Value::Embedded(offsets) => {
                    ids += self.check_embedded(offsets, &mut |m| report(Some(block), m))
                }
                Value::Bitmap(handle) => {
                    if !handles.insert(handle.index) {
                        report(
                            Some(block),
                            format!("shares bitmap handle {}", handle.index),
                        );
                    }
                    ids += self.check_bitmap(handle, &mut |m| report(Some(block), m));
                }
            }
            step = cursor.next();
        }
        if previous.is_some_and(|last| self.high_water.map_or(true, |high| high < last)) {
            report(
                None,
                format!(
                    "high-water mark {:?} is below block {previous:?}",
                    self.high_water
                ),
            );
        }
        if let Err(messages) = self.tree.verify() {
            for message in messages {
                report(None, format!("the tree: {message}"));
            }
        }
        if ids != self.len {
            report(
                None,
                format!("len() is {} but the blocks hold {ids} ids", self.len),
            );
        }
        if let Some(live) = self.storage.live_bitmaps() {
            if live != handles.len() {
                report(
                    None,
                    format!("{live} live bitmaps, {} referred to", handles.len()),
                );
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }

    fn check_embedded(
        &self,
        offsets: [u16; EMBEDDED_OFFSETS_MAX],
        report: &mut dyn FnMut(String),
    ) -> u64 {
        let count = embedded_len(&offsets);
        if offsets[count..].iter().any(|&o| o != 0) {
            report(format!("embedded offsets {offsets:?} have a gap"));
        }
        if offsets[..count]
            .iter()
            .any(|&o| o > self.options.max_offset)
        {
            report(format!("embedded offsets {offsets:?} exceed max_offset"));
        }
        count as u64
    }

    fn check_bitmap(&self, handle: Handle, report: &mut dyn FnMut(String)) -> u64 {
        let Some(words) = self.storage.get(handle) else {
            report(format!("bitmap handle {handle:?} names no bitmap"));
            return 0;
        };
        let count = bitmap::count(words);
        let lowest = bitmap::lowest::<EMBEDDED_OFFSETS_MAX>(words);
        if count <= EMBEDDED_OFFSETS_MAX && fits_embedded(&lowest[..count]) {
            report(format!(
                "a bitmap holds only {count} offsets {lowest:?}; they must be embedded"
            ));
        }
        if words.first().is_some_and(|word| word & 1 == 1) {
            report("offset 0 is set in the bitmap".to_string());
        }
        match bitmap::highest(words) {
            Some(highest) if highest > self.options.max_offset => {
                report(format!("bitmap offset {highest} exceeds max_offset"));
            }
            Some(highest) if bitmap::words_for(highest) != words.len() => report(format!(
                "bitmap has {} words but its highest offset {highest} needs {}",
                words.len(),
                bitmap::words_for(highest)
            )),
            _ => {}
        }
        count as u64
    }
}
