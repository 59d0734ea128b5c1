//! Ordered access: the [`Cursor`] (seek, next, prev without allocating per step) and [`Iter`]
//! (a double-ended iterator over a key range, built from two cursors).
//!
//! A cursor keeps the path from the root to its entry as a stack of frames, one per inner node,
//! and the current key in one buffer that grows to the longest key seen and is then reused. No
//! recursion: the stack is bounded by `DEPTH_MAX` because every level consumes at least one key
//! byte. Order within a node: the value slot (the key that ends at the node) first, then the
//! children by byte.
//!
//! Frame position encoding: `0` = the value slot, `1 + b` = the child for byte `b`.

use std::ops::{Bound, RangeBounds};

use crate::lookup::{check_key, Entry, View};
use crate::node::{common_prefix_len, InnerRef, PackRef};
use crate::word;
use crate::Error;

#[derive(Clone, Copy)]
struct Frame<'a> {
    node: InnerRef<'a>,
    /// Depth of the node (key bytes before its prefix).
    depth: usize,
    /// 0 = value slot, 1 + b = child b.
    position: u16,
}

impl Frame<'_> {
    fn end(&self) -> usize {
        self.depth + self.node.prefix.len()
    }
}

/// The cursor's position inside a leaf pack (always below the last frame).
#[derive(Clone, Copy)]
struct PackFrame<'a> {
    pack: PackRef<'a>,
    /// Key length before the entries' suffixes (depth + pack prefix).
    base: usize,
    index: usize,
}

/// A position in one version of the tree. Steps allocate nothing once the key buffer and stack
/// have grown to the tree's depth.
pub struct Cursor<'a> {
    view: View<'a>,
    stack: Vec<Frame<'a>>,
    pack: Option<PackFrame<'a>>,
    key: Vec<u8>,
    value: &'a [u8],
    valid: bool,
}

impl<'a> Cursor<'a> {
    /// The smallest pair, copied out of a fresh cursor (the body of `first` on trees and
    /// snapshots, written once here).
    pub(crate) fn into_first(mut self) -> Result<Option<Pair<'a>>, Error> {
        Ok(self
            .seek_first()?
            .then(|| (self.key().to_vec(), self.value())))
    }

    /// The largest pair, copied out of a fresh cursor (the body of `last`).
    pub(crate) fn into_last(mut self) -> Result<Option<Pair<'a>>, Error> {
        Ok(self
            .seek_last()?
            .then(|| (self.key().to_vec(), self.value())))
    }

    pub(crate) fn new(view: View<'a>) -> Cursor<'a> {
        Cursor {
            view,
            stack: Vec::new(),
            pack: None,
            key: Vec::new(),
            value: &[],
            valid: false,
        }
    }

    /// Whether the cursor is at an entry.
    pub fn is_valid(&self) -> bool {
        self.valid
    }

    /// The key of the current entry (empty when not valid).
    pub fn key(&self) -> &[u8] {
        if self.valid {
            &self.key
        } else {
            &[]
        }
    }

    /// The value of the current entry (empty when not valid).
    pub fn value(&self) -> &'a [u8] {
        if self.valid {
            self.value
        } else {
            &[]
        }
    }

    fn reset(&mut self) {
        self.stack.clear();
        self.pack = None;
        self.key.clear();
        self.valid = false;
        self.value = &[];
    }

    /// Moves to the smallest key; `false` if the tree is empty.
    pub fn seek_first(&mut self) -> Result<bool, Error> {
        self.reset();
        if self.descend(self.view.root, 0, None, false)? {
            return Ok(true);
        }
        self.step_forward()
    }

    /// Moves to the largest key; `false` if the tree is empty.
    pub fn seek_last(&mut self) -> Result<bool, Error> {
        self.reset();
        if self.descend(self.view.root, 0, None, true)? {
            return Ok(true);
        }
        self.step_backward()
    }

    /// Moves to the smallest key `>= target`; `false` if there is none. A target longer than
    /// any key can be (a range bound) is legal: it is compared, never stored.
    pub fn seek(&mut self, target: &[u8]) -> Result<bool, Error> {
        if target.len() <= crate::KEY_LEN_MAX {
            return self.seek_within_limit(target);
        }
        // No key equals `target`; a key equal to its first KEY_LEN_MAX bytes is a proper
        // prefix of it, so smaller; any key above that prefix differs from it at some byte
        // before the limit, so it is above `target` too.
        let prefix = &target[..crate::KEY_LEN_MAX];
        if !self.seek_within_limit(prefix)? {
            return Ok(false);
        }
        if self.key == prefix {
            return self.next();
        }
        Ok(true)
    }

    /// [`Cursor::seek`] for a target within the key limit; once there, starts loading the
    /// next siblings a forward scan will enter ([`prefetch_siblings`]).
    fn seek_within_limit(&mut self, target: &[u8]) -> Result<bool, Error> {
        let found = self.seek_path(target)?;
        if found {
            if let Some(frame) = self.stack.last() {
                prefetch_siblings(frame.node, frame.position as usize, true);
            }
        }
        Ok(found)
    }

    /// The walk of [`Cursor::seek_within_limit`].
    fn seek_path(&mut self, target: &[u8]) -> Result<bool, Error> {
        check_key(target)?;
        self.reset();
        let mut slot = self.view.root;
        let mut depth = 0usize;
        let mut parent = None;
        loop {
            self.key.truncate(depth);
            match self
                .view
                .resolver
                .resolve(word::load(slot), depth, parent)?
            {
                Entry::Empty => return self.step_forward(),
                Entry::Inline(len) => {
                    if target.len() == depth {
                        return Ok(self.arrive(word::inline_value(slot, len)));
                    }
                    return self.step_forward();
                }
                Entry::Leaf(leaf) => {
                    if *leaf.suffix >= target[depth..] {
                        self.key.extend_from_slice(leaf.suffix);
                        return Ok(self.arrive(leaf.value));
                    }
                    return self.step_forward();
                }
                Entry::Pack(pack) => return self.seek_in_pack(pack, slot, depth, parent, target),
                Entry::Inner(inner) => {
                    let rest = &target[depth..];
                    let common = common_prefix_len(rest, inner.prefix);
                    if common < inner.prefix.len() {
                        let below = common == rest.len() || rest[common] < inner.prefix[common];
                        if below && self.descend(slot, depth, parent, false)? {
                            return Ok(true);
                        }
                        return self.step_forward();
                    }
                    let end = depth + inner.prefix.len();
                    let Some(&byte) = target.get(end) else {
                        if self.descend(slot, depth, parent, false)? {
                            return Ok(true);
                        }
                        return self.step_forward();
                    };
                    self.key.extend_from_slice(inner.prefix);
                    self.stack.push(Frame {
                        node: inner,
                        depth,
                        position: byte as u16 + 1,
                    });
                    match inner.find(byte) {
                        Some(child) => {
                            self.key.push(byte);
                            slot = child;
                            depth = end + 1;
                            parent = inner.persisted;
                        }
                        None => return self.step_forward(),
                    }
                }
            }
        }
    }

    /// The seek of `target` reached `pack` (in `slot` at `depth`).
    fn seek_in_pack(
        &mut self,
        pack: PackRef<'a>,
        slot: &'a [u8; 8],
        depth: usize,
        parent: Option<u64>,
        target: &[u8],
    ) -> Result<bool, Error> {
        let rest = &target[depth..];
        let common = common_prefix_len(rest, pack.prefix);
        if common < pack.prefix.len() {
            let below = common == rest.len() || rest[common] < pack.prefix[common];
            if below && self.descend(slot, depth, parent, false)? {
                return Ok(true);
            }
            return self.step_forward();
        }
        let index = pack.lower_bound(&rest[common..]);
        if index < pack.count() {
            pack.prefetch_scan_from(index);
            self.key.extend_from_slice(pack.prefix);
            return Ok(self.enter_pack(pack, index));
        }
        self.step_forward()
    }

    /// Moves to the largest key `<= target`; `false` if there is none.
    pub fn seek_at_or_before(&mut self, target: &[u8]) -> Result<bool, Error> {
        if !self.seek(target)? {
            return self.seek_last();
        }
        if self.key == target {
            return Ok(true);
        }
        self.prev()
    }

    /// Moves to the next key; `false` (and invalid) when it runs off the end.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<bool, Error> {
        if !self.valid {
            return Ok(false);
        }
        // The common step, inside a pack, inline; leaving one (and every other step) out of line.
        if self.step_in_pack(true) {
            return Ok(true);
        }
        self.step_forward()
    }

    /// Moves to the previous key; `false` (and invalid) when it runs off the start.
    #[inline]
    pub fn prev(&mut self) -> Result<bool, Error> {
        if !self.valid {
            return Ok(false);
        }
        if self.step_in_pack(false) {
            return Ok(true);
        }
        self.step_backward()
    }

    fn arrive(&mut self, value: &'a [u8]) -> bool {
        self.value = value;
        self.valid = true;
        true
    }

    /// Moves to entry `index` of `pack`; the key buffer holds the path and the pack prefix.
    fn enter_pack(&mut self, pack: PackRef<'a>, index: usize) -> bool {
        let base = self.key.len();
        self.pack = Some(PackFrame { pack, base, index });
        let (first, rest, value) = pack.entry(index);
        self.key.push(first);
        self.key.extend_from_slice(rest);
        self.arrive(value)
    }

    /// Steps within the current pack; `false` when it has no entry in that direction.
    ///
    /// The key buffer already holds a suffix of this pack after `base` (every entry's suffix has
    /// the pack's width), so the step overwrites those bytes in place: no truncate, push or
    /// length check of the buffer, no new frame (W1's seek + 100 next spends most of its
    /// instructions here).
    #[inline(always)]
    fn step_in_pack(&mut self, forward: bool) -> bool {
        let Some(frame) = self.pack.as_mut() else {
            return false;
        };
        let next = if forward {
            frame.index + 1
        } else {
            frame.index.wrapping_sub(1)
        };
        if next >= frame.pack.count() {
            self.pack = None;
            return false;
        }
        frame.index = next;
        let (first, rest, value) = frame.pack.entry(next);
        let base = frame.base;
        match self.key.get_mut(base..) {
            Some([slot, tail @ ..]) if tail.len() == rest.len() => {
                *slot = first;
                if rest.len() <= 8 {
                    // Short suffixes (W1's keys: 0 to 7 bytes after the first) byte by byte: a
                    // copy of unknown length would call memcpy.
                    for (to, from) in tail.iter_mut().zip(rest) {
                        *to = *from;
                    }
                } else {
                    tail.copy_from_slice(rest);
                }
            }
            _ => {
                // Not reached (the buffer holds a suffix of this pack's width); rebuilt anyway.
                self.key.truncate(base);
                self.key.push(first);
                self.key.extend_from_slice(rest);
            }
        }
        self.arrive(value)
    }

    /// Advances from the top frame's position to the next entry in key order.
    #[inline(never)]
    fn step_forward(&mut self) -> Result<bool, Error> {
        if self.step_in_pack(true) {
            return Ok(true);
        }
        loop {
            let Some(frame) = self.stack.last_mut() else {
                self.valid = false;
                return Ok(false);
            };
            let node = frame.node;
            let end = frame.end();
            match node.next_from(frame.position as usize) {
                Some((byte, child)) => {
                    frame.position = byte as u16 + 1;
                    prefetch_siblings(node, byte as usize + 1, true);
                    self.key.truncate(end);
                    self.key.push(byte);
                    if self.descend(child, end + 1, node.persisted, false)? {
                        return Ok(true);
                    }
                }
                None => {
                    self.stack.pop();
                }
            }
        }
    }

    /// Moves from the top frame's position to the previous entry in key order.
    #[inline(never)]
    fn step_backward(&mut self) -> Result<bool, Error> {
        if self.step_in_pack(false) {
            return Ok(true);
        }
        loop {
            let Some(frame) = self.stack.last_mut() else {
                self.valid = false;
                return Ok(false);
            };
            if frame.position == 0 {
                self.stack.pop();
                continue;
            }
            let node = frame.node;
            let end = frame.end();
            match node.prev_before(frame.position as usize - 1) {
                Some((byte, child)) => {
                    frame.position = byte as u16 + 1;
                    prefetch_siblings(node, byte as usize, false);
                    self.key.truncate(end);
                    self.key.push(byte);
                    if self.descend(child, end + 1, node.persisted, true)? {
                        return Ok(true);
                    }
                }
                None => {
                    frame.position = 0;
                    let value =
                        self.view
                            .resolver
                            .slot_value(node.value_slot(), end, node.persisted)?;
                    if let Some(value) = value {
                        self.key.truncate(end);
                        return Ok(self.arrive(value));
                    }
                    self.stack.pop();
                }
            }
        }
    }

    /// Goes down from `slot` (at `depth`, key buffer holding its path) to the first (or last)
    /// entry below it, pushing frames. `false` if the subtree is empty.
    fn descend(
        &mut self,
        mut slot: &'a [u8; 8],
        mut depth: usize,
        mut parent: Option<u64>,
        to_last: bool,
    ) -> Result<bool, Error> {
        loop {
            self.key.truncate(depth);
            let inner = match self
                .view
                .resolver
                .resolve(word::load(slot), depth, parent)?
            {
                Entry::Empty => return Ok(false),
                Entry::Inline(len) => return Ok(self.arrive(word::inline_value(slot, len))),
                Entry::Leaf(leaf) => {
                    self.key.extend_from_slice(leaf.suffix);
                    return Ok(self.arrive(leaf.value));
                }
                Entry::Pack(pack) => {
                    self.key.extend_from_slice(pack.prefix);
                    let index = if to_last { pack.count() - 1 } else { 0 };
                    return Ok(self.enter_pack(pack, index));
                }
                Entry::Inner(inner) => inner,
            };
            self.key.extend_from_slice(inner.prefix);
            let end = depth + inner.prefix.len();
            let value = self
                .view
                .resolver
                .slot_value(inner.value_slot(), end, inner.persisted)?;
            let child = if to_last {
                inner.prev_before(256)
            } else {
                None
            };
            let child = match (to_last, value) {
                (false, Some(value)) => {
                    self.stack.push(Frame {
                        node: inner,
                        depth,
                        position: 0,
                    });
                    return Ok(self.arrive(value));
                }
                (false, None) => inner.next_from(0),
                (true, _) => child,
            };
            match child {
                Some((byte, next)) => {
                    self.stack.push(Frame {
                        node: inner,
                        depth,
                        position: byte as u16 + 1,
                    });
                    self.key.push(byte);
                    slot = next;
                    depth = end + 1;
                    parent = inner.persisted;
                }
                None => {
                    if let (true, Some(value)) = (to_last, value) {
                        self.stack.push(Frame {
                            node: inner,
                            depth,
                            position: 0,
                        });
                        return Ok(self.arrive(value));
                    }
                    return Ok(false);
                }
            }
        }
    }
}

/// How many children after the one a forward step enters have their first lines prefetched.
/// A scan through small packs (e.g. W1's 16-byte keys at 50M: a Node256 over packs of ~12
/// entries) otherwise waits for each pack's header in turn; two ahead covers the miss of the
/// next pack while the current one is read.
const SIBLINGS_AHEAD: usize = 2;

/// Starts loading the first lines of the [`SIBLINGS_AHEAD`] children of `node` a scan enters
/// next ([`crate::lookup::prefetch_scan`]): forward, those at byte `from` or above; backward,
/// those below byte `from`, nearest first (a pack is entered at its last entry then, so for
/// packs over four lines only the header arrives early; small packs, the case that needs it,
/// arrive whole). No effect on results.
#[inline]
fn prefetch_siblings(node: InnerRef<'_>, from: usize, forward: bool) {
    let mut at = from;
    for _ in 0..SIBLINGS_AHEAD {
        let next = if forward {
            node.next_from(at)
        } else {
            node.prev_before(at)
        };
        let Some((byte, slot)) = next else {
            return;
        };
        crate::lookup::prefetch_scan(word::load(slot));
        at = usize::from(byte) + usize::from(forward);
    }
}

/// A key (owned) and its value (borrowed from the tree), as iteration yields them.
pub type Pair<'a> = (Vec<u8>, &'a [u8]);

/// A double-ended iterator over a key range of one version.
pub struct Iter<'a> {
    front: Cursor<'a>,
    back: Cursor<'a>,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    front_started: bool,
    back_started: bool,
    done: bool,
}

impl<'a> Iter<'a> {
    pub(crate) fn new(view: View<'a>, lower: Bound<Vec<u8>>, upper: Bound<Vec<u8>>) -> Iter<'a> {
        Iter {
            front: Cursor::new(view),
            back: Cursor::new(view),
            lower,
            upper,
            front_started: false,
            back_started: false,
            done: false,
        }
    }

    /// An iterator over `range`.
    pub(crate) fn range<K, R>(view: View<'a>, range: R) -> Iter<'a>
    where
        K: AsRef<[u8]> + ?Sized,
        R: RangeBounds<K>,
    {
        let own = |bound: Bound<&K>| match bound {
            Bound::Included(key) => Bound::Included(key.as_ref().to_vec()),
            Bound::Excluded(key) => Bound::Excluded(key.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        Iter::new(view, own(range.start_bound()), own(range.end_bound()))
    }

    /// An iterator over the keys that start with `prefix`.
    pub(crate) fn prefix(view: View<'a>, prefix: &[u8]) -> Iter<'a> {
        let upper = match prefix_successor(prefix) {
            Some(successor) => Bound::Excluded(successor),
            None => Bound::Unbounded,
        };
        Iter::new(view, Bound::Included(prefix.to_vec()), upper)
    }

    fn below_upper(&self, key: &[u8]) -> bool {
        match &self.upper {
            Bound::Included(upper) => key <= upper.as_slice(),
            Bound::Excluded(upper) => key < upper.as_slice(),
            Bound::Unbounded => true,
        }
    }

    fn above_lower(&self, key: &[u8]) -> bool {
        match &self.lower {
            Bound::Included(lower) => key >= lower.as_slice(),
            Bound::Excluded(lower) => key > lower.as_slice(),
            Bound::Unbounded => true,
        }
    }

    fn advance_front(&mut self) -> Result<bool, Error> {
        if self.front_started {
            return self.front.next();
        }
        self.front_started = true;
        match &self.lower {
            Bound::Included(lower) => self.front.seek(lower),
            Bound::Excluded(lower) => {
                let lower = lower.clone();
                if self.front.seek(&lower)? && self.front.key() == lower.as_slice() {
                    return self.front.next();
                }
                Ok(self.front.is_valid())
            }
            Bound::Unbounded => self.front.seek_first(),
        }
    }

    fn advance_back(&mut self) -> Result<bool, Error> {
        if self.back_started {
            return self.back.prev();
        }
        self.back_started = true;
        match &self.upper {
            Bound::Included(upper) => {
                let upper = upper.clone();
                self.back.seek_at_or_before(&upper)
            }
            Bound::Excluded(upper) => {
                let upper = upper.clone();
                if self.back.seek_at_or_before(&upper)? && self.back.key() == upper.as_slice() {
                    return self.back.prev();
                }
                Ok(self.back.is_valid())
            }
            Bound::Unbounded => self.back.seek_last(),
        }
    }
}

/// The smallest byte string greater than every string starting with `prefix` (`None`: no such
/// string, the prefix is all 0xFF or empty).
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut successor = prefix[..=keep].to_vec();
    successor[keep] += 1;
    Some(successor)
}

impl<'a> Iterator for Iter<'a> {
    type Item = Result<Pair<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance_front() {
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
            Ok(false) => {
                self.done = true;
                None
            }
            Ok(true) => {
                let key = self.front.key();
                let inside = self.below_upper(key)
                    && (!self.back_started || !self.back.is_valid() || key < self.back.key());
                if !inside || (self.back_started && !self.back.is_valid()) {
                    self.done = true;
                    return None;
                }
                Some(Ok((key.to_vec(), self.front.value())))
            }
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance_back() {
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
            Ok(false) => {
                self.done = true;
                None
            }
            Ok(true) => {
                let key = self.back.key();
                let inside = self.above_lower(key)
                    && (!self.front_started || !self.front.is_valid() || key > self.front.key());
                if !inside || (self.front_started && !self.front.is_valid()) {
                    self.done = true;
                    return None;
                }
                Some(Ok((key.to_vec(), self.back.value())))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successor() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }
}
