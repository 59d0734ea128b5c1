//! Node16: up to 16 children, keys sorted in a 16-byte array searched with SIMD.
//!
//! | offset | size | field    |
//! |--------|------|----------|
//! | 0      | 32   | header   |
//! | 32     | 16   | keys     | child bytes, ascending, `count` used |
//! | 48     | 128  | children | child words, `children[i]` belongs to `keys[i]` |
//!
//! Total 176 bytes. The key array is exactly one SSE2 register: `crate::raw::search::find_byte16` compares
//! all 16 keys at once on x86-64 and falls back to a scan elsewhere.

use super::{Header, NODE16_CAPACITY};
use crate::raw::search;
use crate::raw::Image;

/// The Node16 image.
#[repr(C)]
pub(crate) struct Node16 {
    pub header: Header,
    keys: [u8; NODE16_CAPACITY],
    children: [[u8; 8]; NODE16_CAPACITY],
}
// SAFETY: repr(C), only u8 and u8 arrays.
unsafe impl Image for Node16 {}
const _: () = assert!(core::mem::size_of::<Node16>() == 176);
const _: () = assert!(core::mem::offset_of!(Node16, children) == 48);

impl Node16 {
    #[inline]
    fn used(&self) -> usize {
        self.header.count().min(NODE16_CAPACITY)
    }

    #[inline]
    pub fn find(&self, byte: u8) -> Option<&[u8; 8]> {
        let index = search::find_byte16(&self.keys, self.used(), byte)?;
        self.children.get(index)
    }

    #[inline]
    pub fn find_mut(&mut self, byte: u8) -> Option<&mut [u8; 8]> {
        let index = search::find_byte16(&self.keys, self.used(), byte)?;
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
        debug_assert!(used < NODE16_CAPACITY, "Node16 add on a full node");
        if used >= NODE16_CAPACITY {
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
        let Some(index) = search::find_byte16(&self.keys, used, byte) else {
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
