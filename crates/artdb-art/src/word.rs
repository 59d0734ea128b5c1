//! The child word: one tagged 64-bit word that names what hangs below a slot of the tree.
//!
//! Every place that can hold a child (the root, each child slot of an inner node, the value slot
//! of an inner node) is one word, stored little-endian as `[u8; 8]` inside the node image. The
//! word's *position* is the number of key bytes consumed on the way to it (its depth `d`), and
//! the key bytes consumed are the word's *path*.
//!
//! ```text
//!  63                                                            8 7  6 5   3 2   0
//! +---------------------------------------------------------------+----+-----+-----+
//! | heap inner node: pointer bits 63..3 (nodes are 8-byte aligned)           | 000 |
//! | heap leaf:       pointer bits 63..3                                      | 001 |
//! | persisted node:  file offset bits 63..3 (images are 8-byte aligned)      | 010 |
//! | inline value:    value bytes 0..7 in bits 8..63 (byte i at 8+8i) | 00 | len | 011 |
//! +---------------------------------------------------------------+----+-----+-----+
//!  word == 0: empty (no child).  Tags 100..111 are invalid (reserved).
//! ```
//!
//! Meaning at depth `d` with path `p`:
//! - inline value: the key is exactly `p`; its value (0..=7 bytes) is in the word. Because the
//!   word is stored little-endian, the value bytes are bytes `1..1+len` of the stored `[u8; 8]`,
//!   so a lookup returns a slice of the node's own memory: no allocation, no indirection.
//! - leaf: the key is `p ++ leaf.suffix` (lazy expansion: the leaf holds the rest of the key).
//! - inner node: the keys below start with `p ++ node.prefix` (path compression).
//! - persisted node: an inner node or leaf image at that offset of the database file, read
//!   through [`crate::NodeSource`]. Its kind comes from the image.
//!
//! Heap words are only meaningful inside the process that made them; [`ChildWord::from_bits`]
//! therefore refuses them (see `Tree::open`), and a persisted image containing one is corrupt.

/// Bits of the tag.
pub(crate) const TAG_MASK: u64 = 0b111;
/// Tag of a heap inner node.
pub(crate) const TAG_HEAP_NODE: u64 = 0b000;
/// Tag of a heap leaf.
pub(crate) const TAG_HEAP_LEAF: u64 = 0b001;
/// Tag of a persisted node (inner or leaf).
pub(crate) const TAG_PERSISTED: u64 = 0b010;
/// Tag of an inline value.
pub(crate) const TAG_INLINE: u64 = 0b011;
/// Shift of the inline value length within the low byte.
const INLINE_LEN_SHIFT: u32 = 3;

/// Largest value stored in the child word itself.
pub const INLINE_VALUE_LEN_MAX: usize = 7;

const _: () = assert!(core::mem::size_of::<u64>() == 8);
const _: () = assert!(INLINE_VALUE_LEN_MAX == 7, "bits 8..63 hold exactly 7 bytes");
const _: () = assert!(
    core::mem::size_of::<usize>() <= 8,
    "pointers must fit in a child word"
);

/// What a child word is, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Word {
    /// No child.
    Empty,
    /// A heap inner node at this address.
    HeapNode(usize),
    /// A heap leaf at this address.
    HeapLeaf(usize),
    /// A persisted node image at this file offset.
    Persisted(u64),
    /// An inline value of `len` bytes (stored in the word).
    Inline(usize),
    /// A reserved tag: only a corrupt persisted image produces it.
    Invalid,
}

impl Word {
    /// The offset if this is a persisted word.
    pub(crate) fn persisted(self) -> Option<u64> {
        match self {
            Word::Persisted(offset) => Some(offset),
            _ => None,
        }
    }
}

/// Decodes the word stored in `slot`.
#[inline]
pub(crate) fn decode(bits: u64) -> Word {
    if bits == 0 {
        return Word::Empty;
    }
    match bits & TAG_MASK {
        TAG_HEAP_NODE => Word::HeapNode(bits as usize),
        TAG_HEAP_LEAF => Word::HeapLeaf((bits & !TAG_MASK) as usize),
        TAG_PERSISTED => Word::Persisted(bits & !TAG_MASK),
        TAG_INLINE => {
            let len = ((bits >> INLINE_LEN_SHIFT) & 0b111) as usize;
            if bits & 0b1100_0000 != 0 {
                Word::Invalid
            } else {
                Word::Inline(len)
            }
        }
        _ => Word::Invalid,
    }
}

/// Reads the word stored little-endian in a slot.
#[inline]
pub(crate) fn load(slot: &[u8; 8]) -> u64 {
    u64::from_le_bytes(*slot)
}

/// The word of a heap inner node at `address` (8-byte aligned, nonzero).
#[inline]
pub(crate) fn heap_node(address: usize) -> u64 {
    debug_assert!(
        address != 0 && address % 8 == 0,
        "heap nodes are 8-byte aligned"
    );
    address as u64 | TAG_HEAP_NODE
}

/// The word of a heap leaf at `address` (8-byte aligned, nonzero).
#[inline]
pub(crate) fn heap_leaf(address: usize) -> u64 {
    debug_assert!(
        address != 0 && address % 8 == 0,
        "heap leaves are 8-byte aligned"
    );
    address as u64 | TAG_HEAP_LEAF
}

/// The word of a persisted node at file `offset` (8-byte aligned).
#[inline]
pub(crate) fn persisted(offset: u64) -> u64 {
    debug_assert!(offset % 8 == 0, "persisted images are 8-byte aligned");
    offset | TAG_PERSISTED
}

/// The word holding `value` inline. The caller checks `value.len() <= INLINE_VALUE_LEN_MAX`.
#[inline]
pub(crate) fn inline(value: &[u8]) -> u64 {
    debug_assert!(
        value.len() <= INLINE_VALUE_LEN_MAX,
        "inline values are at most 7 bytes"
    );
    let mut bytes = [0u8; 8];
    bytes[0] = (TAG_INLINE | ((value.len() as u64) << INLINE_LEN_SHIFT)) as u8;
    bytes[1..1 + value.len()].copy_from_slice(value);
    u64::from_le_bytes(bytes)
}

/// The value bytes of an inline word, borrowed from the slot that stores it.
#[inline]
pub(crate) fn inline_value(slot: &[u8; 8], len: usize) -> &[u8] {
    &slot[1..1 + len.min(INLINE_VALUE_LEN_MAX)]
}

/// A child word as the engine stores it (for example the root in a superblock).
///
/// Only the empty word, inline values and persisted nodes can be built from bits: heap words are
/// addresses in this process and never leave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChildWord(u64);

impl ChildWord {
    /// The empty word (an empty tree).
    pub const EMPTY: ChildWord = ChildWord(0);

    /// The word of a persisted node image at `offset` (must be a multiple of 8).
    pub fn persisted(offset: u64) -> Option<ChildWord> {
        (offset % 8 == 0 && offset < (1 << 63)).then(|| ChildWord(persisted(offset)))
    }

    /// Rebuilds a word from stored bits; `None` for heap or invalid tags.
    pub fn from_bits(bits: u64) -> Option<ChildWord> {
        match decode(bits) {
            Word::Empty | Word::Persisted(_) | Word::Inline(_) => Some(ChildWord(bits)),
            Word::HeapNode(_) | Word::HeapLeaf(_) | Word::Invalid => None,
        }
    }

    /// The raw bits, to store.
    pub fn to_bits(self) -> u64 {
        self.0
    }

    /// The file offset if this is a persisted node.
    pub fn persisted_offset(self) -> Option<u64> {
        match decode(self.0) {
            Word::Persisted(offset) => Some(offset),
            _ => None,
        }
    }

    /// The raw bits without the checks of `from_bits` (crate-internal).
    pub(crate) fn from_trusted_bits(bits: u64) -> ChildWord {
        ChildWord(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_round_trip() {
        for len in 0..=INLINE_VALUE_LEN_MAX {
            let value: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37) ^ 0xA5).collect();
            let bits = inline(&value);
            assert_ne!(bits, 0);
            assert_eq!(decode(bits), Word::Inline(len));
            let slot = bits.to_le_bytes();
            assert_eq!(inline_value(&slot, len), &value[..]);
        }
    }

    #[test]
    fn tags_are_distinct() {
        assert_eq!(decode(0), Word::Empty);
        assert_eq!(decode(heap_node(64)), Word::HeapNode(64));
        assert_eq!(decode(heap_leaf(64)), Word::HeapLeaf(64));
        assert_eq!(decode(persisted(0)), Word::Persisted(0));
        assert_eq!(decode(persisted(4096)), Word::Persisted(4096));
        assert_eq!(decode(0b100), Word::Invalid);
        assert_eq!(decode(0b1111), Word::Invalid);
        assert!(ChildWord::from_bits(heap_node(64)).is_none());
        assert!(ChildWord::from_bits(persisted(8)).is_some());
        assert_eq!(
            ChildWord::persisted(16).and_then(|w| w.persisted_offset()),
            Some(16)
        );
        assert!(ChildWord::persisted(12).is_none());
    }
}
