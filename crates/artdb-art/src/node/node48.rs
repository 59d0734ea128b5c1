//! Node48: up to 48 children behind a 256-entry byte index.
//!
//! | offset | size | field    |
//! |--------|------|----------|
//! | 0      | 32   | header   |
//! | 32     | 256  | index    | `index[b]` = slot + 1 of byte `b`'s child, 0 = absent |
//! | 288    | 384  | children | 48 child words; a free slot holds the empty word 0 |
//!
//! Total 672 bytes. An index entry above 48 (only a corrupt image has one) reads as absent.

use super::{Header, NODE48_CAPACITY};
use crate::raw::Image;

/// The Node48 image.
#[repr(C)]
pub(crate) struct Node48 {
    pub header: Header,
    index: [u8; 256],
    children: [[u8; 8]; NODE48_CAPACITY],
}
// SAFETY: repr(C), only u8 and u8 arrays.
unsafe impl Image for Node48 {}
const _: () = assert!(core::mem::size_of::<Node48>() == 672);
const _: () = assert!(core::mem::offset_of!(Node48, children) == 288);

impl Node48 {
    #[inline]
    pub fn find(&self, byte: u8) -> Option<&[u8; 8]> {
        let slot = (self.index[byte as usize] as usize).checked_sub(1)?;
        self.children.get(slot)
    }

    #[inline]
    pub fn find_mut(&mut self, byte: u8) -> Option<&mut [u8; 8]> {
        let slot = (self.index[byte as usize] as usize).checked_sub(1)?;
        self.children.get_mut(slot)
    }

    pub fn next_from(&self, start: usize) -> Option<(u8, &[u8; 8])> {
        (start..256).find_map(|b| self.find(b as u8).map(|slot| (b as u8, slot)))
    }

    pub fn prev_before(&self, end: usize) -> Option<(u8, &[u8; 8])> {
        (0..end.min(256))
            .rev()
            .find_map(|b| self.find(b as u8).map(|slot| (b as u8, slot)))
    }

    /// The raw index (for `verify`).
    pub fn index(&self) -> &[u8; 256] {
        &self.index
    }

    /// The raw child slots (for the writer's check of a persisted image it copies).
    pub fn slots(&self) -> &[[u8; 8]; NODE48_CAPACITY] {
        &self.children
    }

    pub fn add(&mut self, byte: u8, word: u64) {
        let Some(slot) = self.children.iter().position(|child| *child == [0; 8]) else {
            debug_assert!(false, "Node48 add on a full node");
            return;
        };
        self.children[slot] = word.to_le_bytes();
        self.index[byte as usize] = slot as u8 + 1;
        self.header.set_count(self.header.count() + 1);
    }

    pub fn remove(&mut self, byte: u8) -> u64 {
        let Some(slot) = (self.index[byte as usize] as usize).checked_sub(1) else {
            return 0;
        };
        let Some(child) = self.children.get_mut(slot) else {
            return 0;
        };
        let word = u64::from_le_bytes(*child);
        *child = [0; 8];
        self.index[byte as usize] = 0;
        self.header.set_count(self.header.count().saturating_sub(1));
        word
    }
}
