//! Backup: a copy of one committed state of every table into another database while writers go
//! on (what `artdb backup` runs).
//!
//! The copy reads one [`ReadTxn`]: a snapshot of every table taken under the publish lock, so
//! the tables agree with each other (one committed state). The snapshot pins its epoch, so no
//! checkpoint or compaction reuses a page it can reach (docs/recovery.md), and readers never
//! wait for writers nor writers for readers: the source's writers are not blocked while the
//! copy runs (they only keep the pinned pages from reuse until it ends, so the source file may
//! grow meanwhile). Each table streams in key order into a bulk load of the target (dense
//! pages: the copy is compacted), all or nothing per table; the caller owns the target and
//! discards it if the copy fails.

use crate::db::{Db, ReadTxn};
use crate::error::{Error, Result};

impl Db {
    /// Copies every table of one snapshot of `self` into `target`, which must hold none of
    /// those tables. `progress` is called with the pairs copied so far. Returns the pairs
    /// copied and the snapshot's tables.
    pub fn copy_into(&self, target: &Db, progress: &mut dyn FnMut(u64)) -> Result<u64> {
        let read: ReadTxn = self.read();
        let mut copied = 0u64;
        for name in read.table_names() {
            if target.table_names().contains(&name) {
                return Err(Error::TableExists { name });
            }
            target.create_table(&name)?;
            let table = read.table(&name)?;
            let pairs = table.iter().map(|item| {
                let pair = item?;
                copied += 1;
                if copied % 4096 == 0 {
                    progress(copied);
                }
                Ok::<_, Error>(pair)
            });
            target.bulk_load_try(&name, pairs)?;
        }
        progress(copied);
        Ok(copied)
    }
}
