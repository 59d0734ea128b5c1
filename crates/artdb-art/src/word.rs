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
//! | heap pack with a layout hint: hint bits 63..47, pointer bits 46..3       | 101 |
//! +---------------------------------------------------------------+----+-----+-----+
//!  word == 0: empty (no child).  Tags 100, 110, 111 are invalid (reserved).
//! ```
//!
//! The pack hint (tag 101) lets a lookup prefetch the record it will compare together with the
//! pack's header, from the word alone, instead of after the header arrives (a second dependent
//! cache miss): bits 47..56 hold the pack's capacity (1..=1023), bits 57..62 its record stride,
//! bit 63 whether it is full (count = capacity: bulk-built packs, full packs of dense keys;
//! other packs are created with count / 8 spare slots and the writer updates the bit when it
//! fills or empties one in place). Only packs without a prefix are hinted (the key's first
//! suffix byte is then at the word's depth). It is only a hint: the lookup still reads
//! everything from the image, and a stale hint only costs useless prefetches. A pack whose
//! address uses bits 47..63 (no x86-64 or AArch64 user-space heap with 4-level page tables;
//! Linux maps above 2^47 only when asked to, with 5-level ones), or with
//! a prefix or a wider stride,
//! gets a plain heap leaf word (tag 001).
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
/// Tag of a heap pack whose word carries a layout hint in bits 47..63.
pub(crate) const TAG_HEAP_PACK_HINTED: u64 = 0b101;
/// Bits of a hinted pack word that hold the address.
const HINTED_ADDRESS_MASK: u64 = ((1 << PACK_HINT_SHIFT) - 1) & !TAG_MASK;
/// First bit of a pack hint.
const PACK_HINT_SHIFT: u32 = 47;
/// Largest pack capacity a hint can describe (10 bits).
const PACK_HINT_CAPACITY_MAX: usize = 0x3FF;
/// Position of the stride within the hint (after the capacity).
const PACK_HINT_STRIDE_AT: u32 = 10;
/// Position of the full bit within the hint.
const PACK_HINT_FULL_AT: u32 = 16;
/// Widest record stride a hint can describe.
const PACK_HINT_STRIDE_MAX: usize = 63;
/// Shift of the inline value length within the low byte.
const INLINE_LEN_SHIFT: u32 = 3;

/// Largest value stored in the child word itself.
pub const INLINE_VALUE_LEN_MAX: usize = 7;

/// The narrowest value of a one-byte-suffix pack that the writer's `bursts_to_inline` (write/pack.rs) turns into a Node256
/// of inline words when it would grow past a quarter of a dense pack. A Node256 is 2,080 bytes;
/// the pack it replaces would have grown to 16 + 128 + 128 x width bytes (1,040 for 7-byte
/// values, 912 for 6) and then to 16 + 256 + 256 x width (2,064, 1,808): a run that stays
/// between 65 and 128 keys costs twice the pack's memory (the price of the fill's speed, see
/// `full_run_bursts`), one between 129 and 255 at most 15% more, and one that fills nothing,
/// since a full Node256 of inline words becomes a dense pack (1,808 bytes for 7-byte values:
/// `Writer::densify_node256`).
const INLINE_BURST_VALUE_WIDTH_MIN: usize = 6;

/// Whether values of `width` bytes are inline in a child word and wide enough that a Node256 of
/// them costs no more than a one-byte-suffix pack of the same keys near full (6 or 7 bytes:
/// [`INLINE_BURST_VALUE_WIDTH_MIN`]).
#[inline]
pub(crate) fn inline_sized(width: usize) -> bool {
    (INLINE_BURST_VALUE_WIDTH_MIN..=INLINE_VALUE_LEN_MAX).contains(&width)
}

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
        TAG_HEAP_PACK_HINTED => Word::HeapLeaf((bits & HINTED_ADDRESS_MASK) as usize),
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
/// The address of a heap leaf or pack word (tag 001 or 101).
#[inline(always)]
pub(crate) fn heap_leaf_address(bits: u64) -> usize {
    let mask = if bits & TAG_MASK == TAG_HEAP_PACK_HINTED {
        HINTED_ADDRESS_MASK
    } else {
        !TAG_MASK
    };
    (bits & mask) as usize
}

/// The address of a hinted pack word (tag 101).
#[inline(always)]
pub(crate) fn hinted_pack_address(bits: u64) -> usize {
    (bits & HINTED_ADDRESS_MASK) as usize
}

/// The word of a heap pack at `address` described by `hint`: hinted (tag 101) when the hint
/// can describe it and the address leaves bits 47..63 free, a plain heap leaf word otherwise.
#[inline]
pub(crate) fn heap_pack(address: usize, hint: PackHint) -> u64 {
    let describable = (1..=PACK_HINT_CAPACITY_MAX).contains(&hint.capacity)
        && hint.stride <= PACK_HINT_STRIDE_MAX
        && hint.prefix_len == 0;
    if !describable || (address as u64) >> PACK_HINT_SHIFT != 0 {
        return heap_leaf(address);
    }
    debug_assert!(
        address != 0 && address % 8 == 0,
        "heap packs are 8-byte aligned"
    );
    let bits = hint.capacity as u64
        | (hint.stride as u64) << PACK_HINT_STRIDE_AT
        | u64::from(hint.full) << PACK_HINT_FULL_AT;
    address as u64 | TAG_HEAP_PACK_HINTED | bits << PACK_HINT_SHIFT
}

/// A pack's layout, as far as a hint describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackHint {
    /// Entry slots (1..=1023).
    pub capacity: usize,
    /// Bytes per record (suffix bytes after the first, then the value).
    pub stride: usize,
    /// Prefix bytes (a hint describes only packs without one).
    pub prefix_len: usize,
    /// count = capacity.
    pub full: bool,
}

/// Where a lookup whose first suffix byte is `first` probably reads in the hinted pack `bits`
/// names: `(fence index, record offset)` from the pack's start, guessing that its entries are
/// spread evenly over the byte's range (`first * count / 256`) and, unless the pack is full,
/// that its count is capacity - capacity / 16 (between a new pack's capacity * 8 / 9 and a
/// pack whose spare slots filled). Straight-line arithmetic: it runs on every lookup.
#[inline(always)]
pub(crate) fn pack_guess(bits: u64, first: u8) -> (usize, usize) {
    let (capacity, stride, full) = pack_hint_fields(bits);
    let index = (usize::from(first) * pack_count_guess(capacity, full)) >> 8;
    (index, PACK_HINT_FENCE_AT + capacity + index * stride)
}

/// The capacity, record stride and full bit of the hinted pack word `bits` (tag 101; for other
/// words the result means nothing). Straight-line arithmetic on the word: a lookup computes the
/// pack's addresses from it without waiting for the pack's header.
#[inline(always)]
pub(crate) fn pack_hint_fields(bits: u64) -> (usize, usize, bool) {
    let hint = bits >> PACK_HINT_SHIFT;
    (
        (hint & PACK_HINT_CAPACITY_MAX as u64) as usize,
        ((hint >> PACK_HINT_STRIDE_AT) & PACK_HINT_STRIDE_MAX as u64) as usize,
        hint >> PACK_HINT_FULL_AT != 0,
    )
}

/// The count a hint of `capacity` slots suggests: the capacity when `full`, else capacity -
/// capacity / 16 (between a new pack's capacity * 8 / 9 and a pack whose spare slots filled).
/// Straight-line arithmetic, no branch.
#[inline(always)]
pub(crate) fn pack_count_guess(capacity: usize, full: bool) -> usize {
    capacity - ((capacity >> 4) & usize::from(!full).wrapping_neg())
}

/// The end of the record area of the hinted pack `bits` names, from the pack's start (the
/// image's length for an ordinary pack: header, fence and records of every slot).
#[inline(always)]
pub(crate) fn pack_records_end(bits: u64) -> usize {
    let hint = bits >> PACK_HINT_SHIFT;
    let capacity = (hint & PACK_HINT_CAPACITY_MAX as u64) as usize;
    let stride = ((hint >> PACK_HINT_STRIDE_AT) & PACK_HINT_STRIDE_MAX as u64) as usize;
    PACK_HINT_FENCE_AT + capacity * (1 + stride)
}

/// Where the fence of a hinted pack starts (its prefix is empty).
pub(crate) const PACK_HINT_FENCE_AT: usize = 16;

/// Half the fence window `search::fence_run` counts in the hinted pack `bits` names: 16 bytes,
/// or 32 when its capacity is over 256 (a pack of over 256 entries counts a 64-byte window).
/// Straight-line arithmetic.
#[inline(always)]
pub(crate) fn pack_fence_reach(bits: u64) -> usize {
    let capacity = ((bits >> PACK_HINT_SHIFT) & PACK_HINT_CAPACITY_MAX as u64) as usize;
    16 + 16 * usize::from(capacity > 256)
}

/// Sets or clears the full bit of a hinted pack word (other words are returned unchanged).
#[inline]
pub(crate) fn with_pack_full(bits: u64, full: bool) -> u64 {
    if bits & TAG_MASK != TAG_HEAP_PACK_HINTED {
        return bits;
    }
    let bit = 1u64 << (PACK_HINT_SHIFT + PACK_HINT_FULL_AT);
    if full {
        bits | bit
    } else {
        bits & !bit
    }
}

/// The hint of a hinted pack word (tag 101).
#[cfg(test)]
pub(crate) fn pack_hint(bits: u64) -> Option<PackHint> {
    if bits & TAG_MASK != TAG_HEAP_PACK_HINTED {
        return None;
    }
    let hint = bits >> PACK_HINT_SHIFT;
    Some(PackHint {
        capacity: (hint & PACK_HINT_CAPACITY_MAX as u64) as usize,
        stride: ((hint >> PACK_HINT_STRIDE_AT) & PACK_HINT_STRIDE_MAX as u64) as usize,
        prefix_len: 0,
        full: hint >> PACK_HINT_FULL_AT != 0,
    })
}

#[inline]
pub(crate) fn persisted(offset: u64) -> u64 {
    debug_assert!(offset % 8 == 0, "persisted images are 8-byte aligned");
    offset | TAG_PERSISTED
}

/// The word holding `value` inline. The caller checks `value.len() <= INLINE_VALUE_LEN_MAX`.
/// Always inlined: as a call it cost a bulk build of dense keys instructions on every key.
#[inline(always)]
pub(crate) fn inline(value: &[u8]) -> u64 {
    debug_assert!(
        value.len() <= INLINE_VALUE_LEN_MAX,
        "inline values are at most 7 bytes"
    );
    let value = &value[..value.len().min(INLINE_VALUE_LEN_MAX)];
    let tag = u64::from((TAG_INLINE | ((value.len() as u64) << INLINE_LEN_SHIFT)) as u8);
    // Assembled in a register: copying the value into a stack array and loading it back as
    // one word stalls on store forwarding (a large share of a bulk build's time went there). Four to
    // seven bytes are two overlapping 4-byte loads (the bytes they share are the same); the road
    // not taken, a byte loop, cost a noticeable share of a dense fill's walk.
    let payload = match value {
        [] => 0,
        [a] => u64::from(*a),
        [a, b] => u64::from(u16::from_le_bytes([*a, *b])),
        [a, b, c] => u64::from(u16::from_le_bytes([*a, *b])) | u64::from(*c) << 16,
        _ => {
            let len = value.len();
            match (value.first_chunk::<4>(), value.last_chunk::<4>()) {
                (Some(low), Some(high)) => {
                    u64::from(u32::from_le_bytes(*low))
                        | u64::from(u32::from_le_bytes(*high)) << (8 * (len - 4))
                }
                _ => 0, // unreachable: four bytes or more
            }
        }
    };
    tag | payload << 8
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
            assert!(
                slot[1 + len..].iter().all(|&b| b == 0),
                "bytes past the value"
            );
            let ones = vec![0xFF; len];
            let slot = inline(&ones).to_le_bytes();
            assert_eq!(decode(u64::from_le_bytes(slot)), Word::Inline(len));
            assert_eq!(inline_value(&slot, len), &ones[..]);
            assert!(
                slot[1 + len..].iter().all(|&b| b == 0),
                "bytes past the value"
            );
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
        assert_eq!(decode(0b110), Word::Invalid);
        assert_eq!(decode(0b111), Word::Invalid);
        let hint = |capacity, stride, prefix_len, full| PackHint {
            capacity,
            stride,
            prefix_len,
            full,
        };
        let hinted = heap_pack(4096, hint(170, 13, 0, false));
        assert_eq!(hinted & TAG_MASK, TAG_HEAP_PACK_HINTED);
        assert_eq!(decode(hinted), Word::HeapLeaf(4096));
        assert_eq!(heap_leaf_address(hinted), 4096);
        assert_eq!(heap_leaf_address(heap_leaf(4096)), 4096);
        assert!(ChildWord::from_bits(hinted).is_none());
        for expected in [
            hint(1, 0, 0, false),
            hint(256, 39, 0, true),
            hint(150, 13, 0, false),
            hint(256, 63, 0, true),
            hint(700, 15, 0, false),
            hint(1023, 63, 0, true),
        ] {
            let bits = heap_pack(8, expected);
            assert_eq!(pack_hint(bits), Some(expected));
            assert_eq!(
                pack_hint(with_pack_full(bits, !expected.full)).map(|h| h.full),
                Some(!expected.full)
            );
        }
        // A full pack of 256 one-byte suffixes holds byte b at index b.
        let dense = heap_pack(8, hint(256, 7, 0, true));
        assert_eq!(pack_guess(dense, 200), (200, 16 + 256 + 200 * 7));
        // A pack that is not full is guessed at capacity - capacity / 16 entries.
        let spread = heap_pack(8, hint(160, 13, 0, false));
        assert_eq!(pack_guess(spread, 128), (75, 16 + 160 + 75 * 13));
        // The records of every slot end the image.
        assert_eq!(pack_records_end(dense), 16 + 256 + 256 * 7);
        assert_eq!(pack_records_end(spread), 16 + 160 * 14);
        let widest = heap_pack(8, hint(1023, 63, 0, true));
        assert_eq!(pack_records_end(widest), 16 + 1023 * 64);
        // Not describable, or an address using the hint's bits: a plain leaf word.
        assert_eq!(heap_pack(4096, hint(170, 13, 1, false)), heap_leaf(4096));
        assert_eq!(heap_pack(4096, hint(170, 64, 0, false)), heap_leaf(4096));
        assert_eq!(heap_pack(4096, hint(0, 13, 0, false)), heap_leaf(4096));
        assert_eq!(heap_pack(4096, hint(1024, 13, 0, false)), heap_leaf(4096));
        assert_eq!(
            heap_pack(1 << 47, hint(170, 13, 0, false)),
            heap_leaf(1 << 47)
        );
        assert_eq!(with_pack_full(heap_leaf(4096), true), heap_leaf(4096));
        assert_eq!(pack_hint(heap_leaf(4096)), None);
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
