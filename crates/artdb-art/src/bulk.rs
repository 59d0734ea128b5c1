//! Bulk building from sorted pairs in one pass, every node built once at its final size:
//! [`Tree::bulk_build`] (in memory) and [`Tree::bulk_persist`] (streamed through a `NodeSink`,
//! each node written as soon as its subtree is complete, O(key length) memory).
//!
//! The build keeps the open nodes of the rightmost path (a stack with strictly increasing
//! branch positions `end`) and the last key still pending placement. For each new key with
//! longest common prefix `l` with the pending key, the open nodes branching beyond `l` are
//! complete: the pending entry goes into the deepest, which is built (smallest kind that fits,
//! prefix = the bytes between its parent's branch position and its own) and becomes pending in
//! turn. A node branching at `l` is then opened if none is.

use crate::cow;
use crate::cursor::common_prefix_len;
use crate::node::{self, build_inner, EntryList, Shape};
use crate::persist::{checked_write, write_leaf, NodeSink};
use crate::read::{check_key, Resolver};
use crate::tree::{check_value, value_word, Tree};
use crate::word::{self, Word};
use crate::{ChildWord, Error};

/// A node of the rightmost path, still open.
struct OpenNode {
    /// Branch position: key bytes before the child byte.
    end: usize,
    entries: Vec<(u8, u64)>,
    value: u64,
}

/// The entry waiting for its place.
enum Pending {
    /// The last key read, with its value.
    Key(Vec<u8>, Vec<u8>),
    /// A completed subtree containing the last key.
    Node(u64),
}

struct Builder<'s> {
    stack: Vec<OpenNode>,
    last: Vec<u8>,
    pending: Option<Pending>,
    /// Where finished words go: `None` keeps them on the heap.
    sink: Option<&'s mut dyn NodeSink>,
}

impl Builder<'_> {
    /// A finished word: kept on the heap, or written to the sink and freed.
    fn emit(&mut self, bits: u64) -> Result<u64, Error> {
        let Some(sink) = self.sink.as_deref_mut() else {
            return Ok(bits);
        };
        let offset = match word::decode(bits) {
            Word::HeapLeaf(_) => write_leaf(&Resolver { source: None }, sink, bits)?,
            Word::HeapNode(address) => {
                // SAFETY: a node the builder just made; nothing else references it.
                let inner = unsafe { node::heap_inner(address) };
                let mut image = inner.image.to_vec();
                image[8..16].fill(0); // version: persisted images carry 0
                let mut children_max = word::decode(word::load(inner.value_slot())).persisted();
                let mut start = 0usize;
                while let Some((byte, slot)) = inner.next_from(start) {
                    let child = word::decode(word::load(slot)).persisted();
                    children_max = children_max.max(child);
                    start = byte as usize + 1;
                }
                checked_write(sink, &image, children_max)?
            }
            _ => return Ok(bits),
        };
        // SAFETY: the image was copied to the sink above and nothing references the heap copy.
        unsafe { cow::free_word(bits) };
        Ok(word::persisted(offset))
    }

    fn place(&mut self, node_index: usize) -> Result<(), Error> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let end = self.stack[node_index].end;
        match pending {
            Pending::Key(key, value) => {
                if key.len() == end {
                    let bits = self.emit(value_word(&[], &value))?;
                    self.stack[node_index].value = bits;
                } else {
                    let bits = self.emit(value_word(&key[end + 1..], &value))?;
                    self.stack[node_index].entries.push((key[end], bits));
                }
            }
            Pending::Node(bits) => self.stack[node_index].entries.push((self.last[end], bits)),
        }
        Ok(())
    }

    /// Completes the top open node under a parent branching at `parent_end` (None: the root).
    fn close_top(&mut self, parent_end: Option<usize>) -> Result<(), Error> {
        let top_index = self.stack.len() - 1;
        self.place(top_index)?;
        let Some(open) = self.stack.pop() else {
            return Ok(());
        };
        let depth = parent_end.map_or(0, |end| end + 1);
        let mut entries = EntryList::new();
        for &(byte, bits) in &open.entries {
            entries.push(byte, bits);
        }
        let shape = Shape {
            prefix: &self.last[depth..open.end],
            depth,
            version: 1,
            value: open.value,
        };
        let bits = build_inner(node::kind_for(entries.len()), &shape, &entries);
        self.pending = Some(Pending::Node(self.emit(bits)?));
        Ok(())
    }

    fn add(&mut self, key: &[u8], value: &[u8]) -> Result<(), Error> {
        let common = common_prefix_len(&self.last, key);
        while self.stack.last().is_some_and(|top| top.end > common) {
            let next_end = self.stack.len().checked_sub(2).map(|i| self.stack[i].end);
            let parent_end = next_end.map_or(common, |end| end.max(common));
            self.close_top(Some(parent_end))?;
        }
        if self.stack.last().map_or(true, |top| top.end < common) {
            self.stack.push(OpenNode {
                end: common,
                entries: Vec::new(),
                value: 0,
            });
        }
        let top_index = self.stack.len() - 1;
        self.place(top_index)?;
        self.pending = Some(Pending::Key(key.to_vec(), value.to_vec()));
        self.last.clear();
        self.last.extend_from_slice(key);
        Ok(())
    }

    fn finish(&mut self) -> Result<u64, Error> {
        while !self.stack.is_empty() {
            let parent_end = self.stack.len().checked_sub(2).map(|i| self.stack[i].end);
            self.close_top(parent_end)?;
        }
        match self.pending.take() {
            Some(Pending::Key(key, value)) => self.emit(value_word(&key, &value)),
            Some(Pending::Node(bits)) => Ok(bits),
            None => Ok(0),
        }
    }

    /// Feeds all pairs; returns the count.
    fn feed<I, K, V>(&mut self, pairs: I) -> Result<u64, Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut len = 0u64;
        for (index, (key, value)) in pairs.into_iter().enumerate() {
            let (key, value) = (key.as_ref(), value.as_ref());
            check_key(key)?;
            check_value(value)?;
            if index == 0 {
                self.pending = Some(Pending::Key(key.to_vec(), value.to_vec()));
                self.last.extend_from_slice(key);
            } else {
                match key.cmp(self.last.as_slice()) {
                    std::cmp::Ordering::Less => {
                        return Err(Error::Unsorted {
                            index: index as u64,
                        })
                    }
                    std::cmp::Ordering::Equal => {
                        return Err(Error::Duplicate {
                            index: index as u64,
                        })
                    }
                    std::cmp::Ordering::Greater => self.add(key, value)?,
                }
            }
            len += 1;
        }
        Ok(len)
    }

    /// Frees every heap word still held by the builder (after an error).
    fn discard(&mut self) {
        let mut words: Vec<u64> = Vec::new();
        for open in self.stack.drain(..) {
            words.push(open.value);
            words.extend(open.entries.iter().map(|&(_, bits)| bits));
        }
        if let Some(Pending::Node(bits)) = self.pending.take() {
            words.push(bits);
        }
        for bits in words {
            // SAFETY: built by this builder and referenced only by its open nodes, which are gone.
            unsafe { cow::free_tree(bits) };
        }
    }
}

impl Tree {
    /// Builds a tree from pairs sorted by key (strictly increasing), each node at its final
    /// size. Unsorted input is `Error::Unsorted`, a repeated key `Error::Duplicate`.
    pub fn bulk_build<I, K, V>(pairs: I) -> Result<Tree, Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut builder = Builder {
            stack: Vec::new(),
            last: Vec::new(),
            pending: None,
            sink: None,
        };
        let result = builder
            .feed(pairs)
            .and_then(|len| Ok((builder.finish()?, len)));
        match result {
            Ok((root, len)) => Ok(Tree::with_root(root, len, None)),
            Err(error) => {
                builder.discard();
                Err(error)
            }
        }
    }

    /// Builds the persisted images of a tree from sorted pairs straight into `sink`, each node
    /// written as soon as its subtree is complete (children first), holding O(key length) nodes
    /// in memory. Returns the root word and the number of keys; open it with [`Tree::open`].
    pub fn bulk_persist<I, K, V>(
        pairs: I,
        sink: &mut dyn NodeSink,
    ) -> Result<(ChildWord, u64), Error>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut builder = Builder {
            stack: Vec::new(),
            last: Vec::new(),
            pending: None,
            sink: Some(sink),
        };
        let result = builder
            .feed(pairs)
            .and_then(|len| Ok((builder.finish()?, len)));
        match result {
            Ok((root, len)) => Ok((ChildWord::from_trusted_bits(root), len)),
            Err(error) => {
                builder.discard();
                Err(error)
            }
        }
    }
}
