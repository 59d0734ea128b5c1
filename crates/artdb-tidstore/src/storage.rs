//! Bitmap storage: where the bitmaps of blocks whose offsets do not fit the child word live, addressed by
//! the 32-bit handle index that the block's inline value holds (see `value.rs`).
//!
//! Two kinds, chosen when the store is created:
//!
//! - **Heap** (the default): a slab of boxed word slices; a handle index is a slot number. A
//!   bitmap that grows or shrinks is reallocated in its slot (its handle index stays), a freed
//!   slot goes on a free list and is reused first. Memory held: the live words, plus 16 bytes per
//!   slot and 4 per free slot.
//! - **Arena** (insert-only mode): bump allocation from chunks of words, nothing freed
//!   individually, as PostgreSQL's bump memory context. A handle index is `chunk << 16 | word`:
//!   a chunk holds at most 2^16 words (512 KiB), and chunks grow from 512 words by doubling, so a
//!   small store stays small. Growing the most recent allocation (the common case: ids arrive in
//!   block order, so the block being filled is the last one allocated) extends it in place;
//!   growing any other copies it to the top and abandons the old words, which stay counted in
//!   `bytes()` until the store is dropped.
//!
//! Invariants: every word a fresh allocation hands out is zero (heap: allocated zeroed; arena:
//! words past `used` in every chunk are zero, and a top allocation given back is zeroed before
//! `used` moves down). A handle's word count equals the length of the slice it names.
//!
//! Road not taken: storing bitmaps as the tree's own leaf values. Every insert into a bitmap would
//! then replace the leaf through the tree (a copy of the value per insert) because the tree hands
//! out values read-only; keeping bitmaps here lets an insert set one bit in place and leaves the
//! tree's child word untouched until a block changes form.

use crate::value::Handle;
use crate::Error;

/// Bits of an arena handle index that address a word inside a chunk.
const ARENA_WORD_BITS: u32 = 16;
/// Largest chunk, in words (one chunk's address space).
const ARENA_CHUNK_WORDS_MAX: usize = 1 << ARENA_WORD_BITS;
/// First chunk, in words (4 KiB).
const ARENA_CHUNK_WORDS_MIN: usize = 512;
/// Most chunks an arena handle can address.
const ARENA_CHUNKS_MAX: usize = 1 << (32 - ARENA_WORD_BITS);

/// The bitmap storage of one store.
#[derive(Debug)]
pub(crate) enum Storage {
    Heap(HeapSlab),
    Arena(Arena),
}

impl Storage {
    pub(crate) fn heap() -> Storage {
        Storage::Heap(HeapSlab::default())
    }

    pub(crate) fn arena() -> Storage {
        Storage::Arena(Arena::default())
    }

    /// A zeroed bitmap of `words` words (1 to 1024).
    #[inline]
    pub(crate) fn alloc(&mut self, words: usize) -> Result<Handle, Error> {
        debug_assert!((1..=1024).contains(&words), "bitmap of {words} words");
        match self {
            Storage::Heap(slab) => slab.alloc(words),
            Storage::Arena(arena) => arena.alloc(words),
        }
    }

    /// The words of `handle`, or `None` if it names no bitmap (a bug or a damaged value).
    #[inline]
    pub(crate) fn get(&self, handle: Handle) -> Option<&[u64]> {
        match self {
            Storage::Heap(slab) => slab.get(handle),
            Storage::Arena(arena) => arena.get(handle),
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, handle: Handle) -> Option<&mut [u64]> {
        match self {
            Storage::Heap(slab) => slab.get_mut(handle),
            Storage::Arena(arena) => arena.get_mut(handle),
        }
    }

    /// Resizes `handle` to `words` words, keeping the common prefix and zeroing any new words.
    /// Returns the (possibly moved) handle; `None` if `handle` names no bitmap.
    pub(crate) fn resize(&mut self, handle: Handle, words: usize) -> Result<Option<Handle>, Error> {
        debug_assert!((1..=1024).contains(&words), "bitmap of {words} words");
        match self {
            Storage::Heap(slab) => Ok(slab.resize(handle, words)),
            Storage::Arena(arena) => arena.resize(handle, words),
        }
    }

    /// Gives `handle` back (the arena reclaims it only if it is the most recent allocation).
    pub(crate) fn free(&mut self, handle: Handle) {
        match self {
            Storage::Heap(slab) => slab.free(handle),
            Storage::Arena(arena) => arena.free(handle),
        }
    }

    /// Bytes of heap memory this storage holds.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Storage::Heap(slab) => slab.bytes(),
            Storage::Arena(arena) => arena.bytes(),
        }
    }

    /// Number of live bitmaps the storage hands out (heap only; the arena does not track it).
    pub(crate) fn live_bitmaps(&self) -> Option<usize> {
        match self {
            Storage::Heap(slab) => Some(slab.slots.len() - slab.free.len()),
            Storage::Arena(_) => None,
        }
    }
}

/// Heap storage: one boxed slice per bitmap, in a slab with a free list.
#[derive(Debug, Default)]
pub(crate) struct HeapSlab {
    /// A free slot holds an empty slice (no allocation).
    slots: Vec<Box<[u64]>>,
    free: Vec<u32>,
    live_words: usize,
}

impl HeapSlab {
    fn alloc(&mut self, words: usize) -> Result<Handle, Error> {
        let bitmap = vec![0u64; words].into_boxed_slice();
        let index = match self.free.pop() {
            Some(index) => {
                debug_assert!(
                    self.slots[index as usize].is_empty(),
                    "free slot {index} in use"
                );
                self.slots[index as usize] = bitmap;
                index
            }
            None => {
                let index = u32::try_from(self.slots.len()).map_err(|_| Error::StorageFull {
                    bytes: self.bytes(),
                })?;
                self.slots.push(bitmap);
                index
            }
        };
        self.live_words += words;
        Ok(Handle {
            index,
            words: words as u16,
        })
    }

    #[inline]
    fn get(&self, handle: Handle) -> Option<&[u64]> {
        let bitmap = self.slots.get(handle.index as usize)?;
        (bitmap.len() == usize::from(handle.words)).then_some(&bitmap[..])
    }

    #[inline]
    fn get_mut(&mut self, handle: Handle) -> Option<&mut [u64]> {
        let bitmap = self.slots.get_mut(handle.index as usize)?;
        (bitmap.len() == usize::from(handle.words)).then_some(&mut bitmap[..])
    }

    fn resize(&mut self, handle: Handle, words: usize) -> Option<Handle> {
        let old = self.get(handle)?;
        let mut bitmap = vec![0u64; words];
        let keep = old.len().min(words);
        bitmap[..keep].copy_from_slice(&old[..keep]);
        self.live_words = self.live_words - old.len() + words;
        self.slots[handle.index as usize] = bitmap.into_boxed_slice();
        Some(Handle {
            index: handle.index,
            words: words as u16,
        })
    }

    fn free(&mut self, handle: Handle) {
        if self.get(handle).is_none() {
            debug_assert!(false, "freeing {handle:?}, which names no bitmap");
            return;
        }
        self.live_words -= usize::from(handle.words);
        self.slots[handle.index as usize] = Box::default();
        self.free.push(handle.index);
    }

    fn bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Box<[u64]>>()
            + self.free.capacity() * std::mem::size_of::<u32>()
            + self.live_words * 8
    }
}

/// Arena storage: bump allocation from chunks; see the module header.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    chunks: Vec<Box<[u64]>>,
    /// Words handed out from the last chunk.
    used: usize,
    /// Sum of the chunks' lengths.
    capacity_words: usize,
}

impl Arena {
    /// Bump allocation (inlined into `insert_many`'s bitmap blocks: a call and a `Result`
    /// returned through memory were about half of its cost); a new chunk is `add_chunk`'s.
    #[inline]
    fn alloc(&mut self, words: usize) -> Result<Handle, Error> {
        let fits = self
            .chunks
            .last()
            .is_some_and(|chunk| chunk.len() - self.used >= words);
        if !fits {
            self.add_chunk(words)?;
        }
        let chunk = self.chunks.len() - 1;
        let start = self.used;
        self.used += words;
        Ok(Handle {
            index: (chunk as u32) << ARENA_WORD_BITS | start as u32,
            words: words as u16,
        })
    }

    #[inline(never)]
    fn add_chunk(&mut self, words: usize) -> Result<(), Error> {
        if self.chunks.len() == ARENA_CHUNKS_MAX {
            return Err(Error::StorageFull {
                bytes: self.bytes(),
            });
        }
        let doubled = self
            .chunks
            .last()
            .map_or(ARENA_CHUNK_WORDS_MIN, |chunk| chunk.len() * 2);
        let len = doubled.clamp(words, ARENA_CHUNK_WORDS_MAX);
        self.chunks.push(vec![0u64; len].into_boxed_slice());
        self.capacity_words += len;
        self.used = 0;
        Ok(())
    }

    /// Chunk number and word range of `handle`, if it lies inside the handed-out words.
    #[inline]
    fn locate(&self, handle: Handle) -> Option<(usize, std::ops::Range<usize>)> {
        let chunk = (handle.index >> ARENA_WORD_BITS) as usize;
        let start = (handle.index & (ARENA_CHUNK_WORDS_MAX as u32 - 1)) as usize;
        let end = start + usize::from(handle.words);
        let limit = if chunk + 1 == self.chunks.len() {
            self.used
        } else {
            self.chunks.get(chunk)?.len()
        };
        (end <= limit).then_some((chunk, start..end))
    }

    #[inline]
    fn get(&self, handle: Handle) -> Option<&[u64]> {
        let (chunk, range) = self.locate(handle)?;
        self.chunks[chunk].get(range)
    }

    #[inline]
    fn get_mut(&mut self, handle: Handle) -> Option<&mut [u64]> {
        let (chunk, range) = self.locate(handle)?;
        self.chunks[chunk].get_mut(range)
    }

    /// Whether `handle` is the most recent allocation (its end is the bump pointer).
    fn is_top(&self, chunk: usize, end: usize) -> bool {
        chunk + 1 == self.chunks.len() && end == self.used
    }

    fn resize(&mut self, handle: Handle, words: usize) -> Result<Option<Handle>, Error> {
        let Some((chunk, range)) = self.locate(handle) else {
            return Ok(None);
        };
        let room = self.chunks[chunk].len() - range.start;
        if self.is_top(chunk, range.end) && words <= room {
            let new_end = range.start + words;
            if new_end < range.end {
                self.chunks[chunk][new_end..range.end].fill(0);
            }
            self.used = new_end;
            return Ok(Some(Handle {
                index: handle.index,
                words: words as u16,
            }));
        }
        let moved = self.alloc(words)?;
        let keep = range.len().min(words);
        let old: Vec<u64> = self.chunks[chunk][range.start..range.start + keep].to_vec();
        match self.get_mut(moved) {
            Some(bitmap) => bitmap[..keep].copy_from_slice(&old),
            None => debug_assert!(false, "fresh arena handle {moved:?} does not resolve"),
        }
        Ok(Some(moved))
    }

    fn free(&mut self, handle: Handle) {
        if let Some((chunk, range)) = self.locate(handle) {
            if self.is_top(chunk, range.end) {
                self.chunks[chunk][range.clone()].fill(0);
                self.used = range.start;
            }
        }
    }

    fn bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Box<[u64]>>() + self.capacity_words * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(mut storage: Storage) {
        let a = storage.alloc(2).unwrap();
        let b = storage.alloc(5).unwrap();
        assert!(storage.get(a).unwrap().iter().all(|&w| w == 0));
        storage.get_mut(a).unwrap()[1] = 7;
        storage.get_mut(b).unwrap()[4] = 9;
        // Growing the top allocation, then one below it.
        let b = storage.resize(b, 8).unwrap().unwrap();
        assert_eq!(storage.get(b).unwrap(), [0, 0, 0, 0, 9, 0, 0, 0]);
        let a = storage.resize(a, 3).unwrap().unwrap();
        assert_eq!(storage.get(a).unwrap(), [0, 7, 0]);
        let a = storage.resize(a, 1).unwrap().unwrap();
        assert_eq!(storage.get(a).unwrap(), [0]);
        storage.free(a);
        let c = storage.alloc(4).unwrap();
        assert!(
            storage.get(c).unwrap().iter().all(|&w| w == 0),
            "fresh words are zero"
        );
        assert_eq!(storage.get(b).unwrap()[4], 9);
        assert!(storage
            .get(Handle {
                index: 1 << 30,
                words: 1
            })
            .is_none());
        assert!(storage
            .get(Handle {
                index: b.index,
                words: 1000
            })
            .is_none());
        assert!(storage.bytes() >= 12 * 8);
    }

    #[test]
    fn heap_and_arena_behave_alike() {
        exercise(Storage::heap());
        exercise(Storage::arena());
    }

    #[test]
    fn arena_chunks_grow_and_never_split_a_bitmap() {
        let mut arena = Storage::arena();
        let mut handles = Vec::new();
        for i in 0..5000usize {
            let words = 1 + i % 32;
            let handle = arena.alloc(words).unwrap();
            arena.get_mut(handle).unwrap()[words - 1] = i as u64 + 1;
            handles.push((handle, words, i as u64 + 1));
        }
        for (handle, words, tag) in handles {
            let bitmap = arena.get(handle).unwrap();
            assert_eq!(bitmap.len(), words);
            assert_eq!(bitmap[words - 1], tag);
        }
        let top = arena.alloc(1024).unwrap();
        assert_eq!(arena.get(top).unwrap().len(), 1024);
    }

    #[test]
    fn arena_grows_the_top_allocation_in_place() {
        let mut arena = Storage::arena();
        let a = arena.alloc(1).unwrap();
        let before = arena.bytes();
        let grown = arena.resize(a, 5).unwrap().unwrap();
        assert_eq!(grown.index, a.index);
        assert_eq!(arena.bytes(), before);
    }
}
