//! Node256: one child word per byte value.
//!
//! | offset | size | field    |
//! |--------|------|----------|
//! | 0      | 32   | header   |
//! | 32     | 2048 | children | `children[b]` is byte `b`'s child word, 0 = absent |
//!
//! Total 2080 bytes: with inline values a full Node256 costs 8.1 bytes per key, the ART optimum
//! for dense keys.

use super::{Header, NODE256_CAPACITY};
use crate::raw::Image;

/// The Node256 image.
#[repr(C)]
pub(crate) struct Node256 {
    pub header: Header,
    children: [[u8; 8]; NODE256_CAPACITY],
}
// SAFETY: repr(C), only u8 and u8 arrays.
unsafe impl Image for Node256 {}
const _: () = assert!(core::mem::size_of::<Node256>() == 2080);

impl Node256 {
    #[inline]
    pub fn find(&self, byte: u8) -> Option<&[u8; 8]> {
        let slot = &self.children[byte as usize];
        (*slot != [0; 8]).then_some(slot)
    }

    #[inline]
    pub fn find_mut(&mut self, byte: u8) -> Option<&mut [u8; 8]> {
        let slot = &mut self.children[byte as usize];
        (*slot != [0; 8]).then_some(slot)
    }

    pub fn next_from(&self, start: usize) -> Option<(u8, &[u8; 8])> {
        (start..256).find_map(|b| self.find(b as u8).map(|slot| (b as u8, slot)))
    }

    pub fn prev_before(&self, end: usize) -> Option<(u8, &[u8; 8])> {
        (0..end.min(256))
            .rev()
            .find_map(|b| self.find(b as u8).map(|slot| (b as u8, slot)))
    }

    pub fn add(&mut self, byte: u8, word: u64) {
        debug_assert!(
            self.children[byte as usize] == [0; 8],
            "Node256 add over a child"
        );
        self.children[byte as usize] = word.to_le_bytes();
        self.header.set_count(self.header.count() + 1);
    }

    /// Lets `fill` write the children of a node being built straight into its slot array (zeroed:
    /// a slot it leaves alone is absent) and sets the count it returns: one store a child, where
    /// [`Node256::add`] also rewrites the count each time (`node::build_node256`).
    pub fn fill_with(&mut self, fill: impl FnOnce(&mut [[u8; 8]; NODE256_CAPACITY]) -> usize) {
        let count = fill(&mut self.children);
        debug_assert_eq!(count, self.used(), "the count is the children written");
        self.header.set_count(count);
    }

    pub fn remove(&mut self, byte: u8) -> u64 {
        let word = u64::from_le_bytes(self.children[byte as usize]);
        if word != 0 {
            self.children[byte as usize] = [0; 8];
            self.header.set_count(self.header.count().saturating_sub(1));
        }
        word
    }

    /// Every child word, by byte (0 = absent).
    #[inline]
    pub fn children(&self) -> &[[u8; 8]; NODE256_CAPACITY] {
        &self.children
    }

    /// Number of nonzero child words (for `verify`).
    pub fn used(&self) -> usize {
        self.children.iter().filter(|c| **c != [0; 8]).count()
    }
}
