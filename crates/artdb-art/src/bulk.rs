//! `bulk_build`: a tree from sorted pairs in one pass, every node built once at its final size.
//!
//! The build keeps the open nodes of the rightmost path (a stack with strictly increasing
//! branch positions `end`) and the last key still pending placement. For each new key with
//! longest common prefix `l` with the pending key, the open nodes branching beyond `l` are
//! complete: the pending entry goes into the deepest, which is built (smallest kind that fits,
//! prefix = the bytes between its parent's branch position and its own) and becomes pending in
//! turn. A node branching at `l` is then opened if none is. Memory: O(key length) open nodes.

use crate::cursor::common_prefix_len;
use crate::node::{self, build_inner, EntryList, Shape};
use crate::read::check_key;
use crate::tree::{check_value, value_word, Tree};
use crate::Error;

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

struct Builder {
    stack: Vec<OpenNode>,
    last: Vec<u8>,
    pending: Option<Pending>,
    version: u64,
}

impl Builder {
    fn place(&mut self, node_index: usize) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let open = &mut self.stack[node_index];
        match pending {
            Pending::Key(key, value) => {
                if key.len() == open.end {
                    open.value = value_word(&[], &value);
                } else {
                    open.entries
                        .push((key[open.end], value_word(&key[open.end + 1..], &value)));
                }
            }
            Pending::Node(word) => open.entries.push((self.last[open.end], word)),
        }
    }

    /// Completes the top open node under a parent branching at `parent_end` (None: the root).
    fn close_top(&mut self, parent_end: Option<usize>) {
        let top_index = self.stack.len() - 1;
        self.place(top_index);
        let Some(open) = self.stack.pop() else { return };
        let depth = parent_end.map_or(0, |end| end + 1);
        let mut entries = EntryList::new();
        for &(byte, word) in &open.entries {
            entries.push(byte, word);
        }
        let shape = Shape {
            prefix: &self.last[depth..open.end],
            depth,
            version: self.version,
            value: open.value,
        };
        let word = build_inner(node::kind_for(entries.len()), &shape, &entries);
        self.pending = Some(Pending::Node(word));
    }

    fn add(&mut self, key: &[u8], value: &[u8]) {
        let common = common_prefix_len(&self.last, key);
        while self.stack.last().is_some_and(|top| top.end > common) {
            let next_end = self.stack.len().checked_sub(2).map(|i| self.stack[i].end);
            let parent_end = next_end.map_or(common, |end| end.max(common));
            self.close_top(Some(parent_end));
        }
        if self.stack.last().map_or(true, |top| top.end < common) {
            self.stack.push(OpenNode {
                end: common,
                entries: Vec::new(),
                value: 0,
            });
        }
        let top_index = self.stack.len() - 1;
        self.place(top_index);
        self.pending = Some(Pending::Key(key.to_vec(), value.to_vec()));
        self.last.clear();
        self.last.extend_from_slice(key);
    }

    fn finish(mut self) -> u64 {
        while !self.stack.is_empty() {
            let parent_end = self.stack.len().checked_sub(2).map(|i| self.stack[i].end);
            self.close_top(parent_end);
        }
        match self.pending.take() {
            Some(Pending::Key(key, value)) => value_word(&key, &value),
            Some(Pending::Node(word)) => word,
            None => 0,
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
            version: 1,
        };
        let mut len = 0u64;
        // Words built so far are owned by the builder until it finishes; on an error they are
        // freed through a temporary tree holding them.
        let result = (|| {
            for (index, (key, value)) in pairs.into_iter().enumerate() {
                let (key, value) = (key.as_ref(), value.as_ref());
                check_key(key)?;
                check_value(value)?;
                if index > 0 {
                    match key.cmp(builder.last.as_slice()) {
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
                        std::cmp::Ordering::Greater => builder.add(key, value),
                    }
                } else {
                    builder.pending = Some(Pending::Key(key.to_vec(), value.to_vec()));
                    builder.last.extend_from_slice(key);
                }
                len += 1;
            }
            Ok(())
        })();
        let root = builder.finish();
        let tree = Tree::with_root(root, len, None);
        result.map(|()| tree)
    }
}
