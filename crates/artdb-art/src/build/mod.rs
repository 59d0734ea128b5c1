//! build: bulk builds of a tree from sorted input. `stream` (from an iterator, streaming each
//! finished node to its sink: O(depth) memory), `slice` (from a sorted slice, in memory).

pub(crate) mod slice;
pub(crate) mod stream;
