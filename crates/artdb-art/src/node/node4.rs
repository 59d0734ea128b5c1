//! Node4: up to 4 children, keys sorted in a 4-byte array.
//!
//! | offset | size | field    |
//! |--------|------|----------|
//! | 0      | 32   | header   |
//! | 32     | 4    | keys     | child bytes, ascending, `count` used |
//! | 36     | 4    | padding  | zero |
//! | 40     | 32   | children | child words, `children[i]` belongs to `keys[i]` |
//!
//! Total 72 bytes. Lookups scan the keys linearly: four compares beat any search.

use super::{Header, NODE4_CAPACITY};
use crate::raw::Image;

/// The Node4 image.
#[repr(C)]
pub(crate) struct Node4 {
    pub header: Header,
    keys: [u8; NODE4_CAPACITY],
    padding: [u8; 4],
    children: [[u8; 8]; NODE4_CAPACITY],
}
// SAFETY: repr(C), only u8 and u8 arrays.
unsafe impl Image for Node4 {}
const _: () = assert!(core::mem::size_of::<Node4>() == 72);
const _: () = assert!(core::mem::offset_of!(Node4, children) == 40);

impl Node4 {
    #[inline]
    fn used(&self) -> usize {
        self.header.count().min(NODE4_CAPACITY)
    }

    #[inline]
    pub fn find(&self, byte: u8) -> Option<&[u8; 8]> {
        let index = self.keys[..self.used()].iter().position(|&k| k == byte)?;
        self.children.get(index)
    }

    #[inline]
    pub fn find_mut(&mut self, byte: u8) -> Option<&mut [u8; 8]> {
        let index = self.keys[..self.used()].iter().position(|&k| k == byte)?;
        self.children.get_mut(index)
    }

    pub fn next_from(&self, start: usize) -> Option<(u8, &[u8; 8])> {
        let index = self.keys[..self.used()]
            .iter()
            .position(|&k| k as usize >= start)?;
        Some((self.keys[index], &self.children[index]))
    }

    pub fn prev_before(&self, end: usize) -> Option<(u8, &[u8; 8])> {
        let index = self.keys[..self.used()]
            .iter()
            .rposition(|&k| (k as usize) < end)?;
        Some((self.keys[index], &self.children[index]))
    }

    pub fn keys(&self) -> &[u8] {
        &self.keys[..self.used()]
    }

    pub fn add(&mut self, byte: u8, word: u64) {
        let used = self.used();
        debug_assert!(used < NODE4_CAPACITY, "Node4 add on a full node");
        if used >= NODE4_CAPACITY {
            return;
        }
        let index = self.keys[..used]
            .iter()
            .position(|&k| k > byte)
            .unwrap_or(used);
        self.keys.copy_within(index..used, index + 1);
        self.children.copy_within(index..used, index + 1);
        self.keys[index] = byte;
        self.children[index] = word.to_le_bytes();
        self.header.set_count(used + 1);
    }

    pub fn remove(&mut self, byte: u8) -> u64 {
        let used = self.used();
        let Some(index) = self.keys[..used].iter().position(|&k| k == byte) else {
            return 0;
        };
        let word = u64::from_le_bytes(self.children[index]);
        self.keys.copy_within(index + 1..used, index);
        self.children.copy_within(index + 1..used, index);
        self.keys[used - 1] = 0;
        self.children[used - 1] = [0; 8];
        self.header.set_count(used - 1);
        word
    }
}
