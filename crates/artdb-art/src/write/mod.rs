//! write: changing a tree. `writer` (the writer's state and the walk of every insert and
//! removal), `cow` (copy-on-write versions and snapshots), `fast` (the in-place
//! fast paths of an insert into nodes this version made), `pack` (edits of leaf packs), `fork`
//! (a private writer on a snapshot, installed into its tree), `rollback` (undoing a write that
//! failed half-way).

pub(crate) mod cow;
pub(crate) mod fast;
pub(crate) mod fork;
pub(crate) mod pack;
pub(crate) mod rollback;
pub(crate) mod writer;
