//! stats: what `Db::stats`, `Db::table_tree_stats` and `Db::verify` report.

use super::Db;
use crate::error::{CorruptionKind, Error, Result};
use crate::store::StoreStats;
use std::sync::Arc;

/// A table in [`DbStats`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStats {
    /// The table's name.
    pub name: String,
    /// Number of keys (committed).
    pub keys: u64,
    /// Changed since the last checkpoint.
    pub dirty: bool,
}

/// Figures about the database.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let stats = db.stats()?;
/// assert_eq!(stats.tables[0].name, "t");
/// assert_eq!(stats.tables[0].keys, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbStats {
    /// Tables in name order.
    pub tables: Vec<TableStats>,
    /// The file.
    pub store: StoreStats,
    /// Transactions: live snapshots, the oldest one, the commit history kept.
    pub txn: TxnStats,
    /// The write-ahead log.
    pub log: LogStats,
}

/// Figures about the write-ahead log in [`DbStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Bytes of records not yet covered by a checkpoint (the current cycle).
    pub bytes: u64,
    /// Records in the current cycle.
    pub records: u64,
    /// LSN of the newest record (0: none yet).
    pub last_lsn: u64,
    /// LSN covered by the newest durable checkpoint.
    pub covered_lsn: u64,
    /// Length of the log file, preallocated space included.
    pub file_bytes: u64,
    /// Commits through the log since open.
    pub commits: u64,
    /// Log syncs since open (fewer than commits when group commit shares them).
    pub syncs: u64,
}

/// The transaction figures of [`DbStats`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TxnStats {
    /// Write transactions open now.
    pub live_writers: u64,
    /// Age of the oldest live snapshot (read or write transaction), if any.
    pub oldest_snapshot_age: Option<std::time::Duration>,
    /// Pages freed by checkpoints that the oldest snapshot keeps from reuse (they become
    /// reusable at the first checkpoint after it ends).
    pub oldest_snapshot_pinned_pages: u64,
    /// Commit records kept for validating live write transactions (pruned as soon as no live
    /// transaction is older).
    pub history_records: u64,
    /// The last commit sequence number.
    pub commit_seq: u64,
    /// Tables a write transaction's commit changed by installing the transaction's own tree
    /// (its copy-on-write fork of its snapshot, or its inserts into an empty table): nothing
    /// was copied again at commit. Since open.
    pub tables_installed_at_commit: u64,
    /// Tables into which a commit applied its changes again (another commit had changed the
    /// table since the transaction's snapshot). Since open.
    pub tables_reapplied_at_commit: u64,
    /// Commits that bypassed the log (bigger than
    /// [`Options::wal_bypass_threshold_bytes`](super::Options::wal_bypass_threshold_bytes), and
    /// bulk loads): written to the database file by a checkpoint, logged as a reference. Since
    /// open.
    pub commits_bypassing_log: u64,
    /// Live readers of this database through its readers file: read-only opens of other
    /// processes beside this writer (and read-only handles of this process), each counted once
    /// per checkpoint its snapshots read. 0 for a database not opened by path.
    pub other_process_readers: u64,
    /// The oldest checkpoint generation such a reader reads, if any: while it lives, pages
    /// that checkpoint reaches are not reused (`artdb readers FILE` lists the readers).
    pub other_process_oldest_generation: Option<u64>,
    /// Pages freed by checkpoints that those readers keep from reuse.
    pub other_process_pinned_pages: u64,
}

/// What [`Db::verify`] found.
///
/// ```
/// # let db = artdb::Db::create_in(std::sync::Arc::new(artdb::io::MemoryStorage::new()?), artdb::Options::default())?;
/// db.create_table("t")?;
/// db.transact(|txn| {
///     txn.insert("t", b"a", b"1")?;
///     txn.insert("t", b"b", b"2")?;
///     txn.insert("t", b"c", b"3")
/// })?;
/// let report = db.verify()?;
/// assert!(report.is_ok(), "{report}");
/// assert_eq!(report.keys_checked, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct VerifyReport {
    /// Every violated invariant and checksum failure, each as the error that names it.
    pub problems: Vec<Error>,
    /// Findings that are not damage for sure: an older superblock slot that fails its checksum
    /// (a write torn by a crash, or damage; the next checkpoint rewrites it).
    pub notes: Vec<String>,
    /// Tables checked.
    pub tables_checked: u64,
    /// Keys seen while walking the tables.
    pub keys_checked: u64,
}

impl VerifyReport {
    /// Whether nothing was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Db {
    /// Figures about the tables and the file (cheap: reads no node).
    pub fn stats(&self) -> Result<DbStats> {
        if let Some(view) = self.followed() {
            return view.stats();
        }
        self.shared.refuse_on_batch_thread("Db::stats")?;
        let _checkpointing = self.shared.checkpoint_lock.lock();
        let state = self.shared.writer.lock();
        let published = Arc::clone(&self.shared.published.read());
        let tables = published
            .tables
            .iter()
            .map(|(name, snapshot)| TableStats {
                name: name.clone(),
                keys: snapshot.len(),
                dirty: state.tables.get(name).is_some_and(|t| t.dirty),
            })
            .collect();
        let oldest = self.shared.live.oldest();
        let txn = TxnStats {
            live_writers: self.shared.live.writers() as u64,
            oldest_snapshot_age: oldest.map(|oldest| oldest.age),
            oldest_snapshot_pinned_pages: oldest
                .map_or(0, |oldest| state.store.pages_pinned_at(oldest.epoch)),
            history_records: state.history.len() as u64,
            commit_seq: state.history.seq(),
            tables_installed_at_commit: state.counters.installed,
            tables_reapplied_at_commit: state.counters.applied,
            commits_bypassing_log: state.counters.bypassed,
            other_process_readers: 0,
            other_process_oldest_generation: None,
            other_process_pinned_pages: 0,
        };
        let mut txn = txn;
        if let Some(readers) = self.shared.readers.get() {
            let live: Vec<u64> = readers
                .list()?
                .into_iter()
                .filter(|slot| slot.alive)
                .map(|slot| slot.generation)
                .collect();
            txn.other_process_readers = live.len() as u64;
            txn.other_process_oldest_generation = live.iter().copied().min();
            if let Some(pin) = self.shared.other_process_pin(&state) {
                txn.other_process_pinned_pages = state.store.pages_pinned_at(pin);
            }
        }
        let pipeline = self.shared.pipeline.stats();
        let log = LogStats {
            bytes: state.wal.bytes(),
            records: state.wal.records(),
            last_lsn: state.wal.last_lsn(),
            covered_lsn: state.store.durable().wal_position,
            file_bytes: state.wal.file_bytes(),
            commits: pipeline.commits,
            syncs: pipeline.syncs,
        };
        Ok(DbStats {
            tables,
            store: state.store.stats()?,
            txn,
            log,
        })
    }

    /// The tree shape of one table (walks the whole table: reads every node).
    pub fn table_tree_stats(&self, name: &str) -> Result<artdb_art::Stats> {
        if let Some(view) = self.followed() {
            return view.table_tree_stats(name);
        }
        let published = Arc::clone(&self.shared.published.read());
        let snapshot = published
            .tables
            .get(name)
            .ok_or_else(|| Error::TableNotFound {
                name: name.to_string(),
            })?;
        Ok(snapshot.stats())
    }

    /// Checks every invariant the database can check: both metadata blobs, the checksum of
    /// every page that holds nodes, and every table's tree (order, shapes, lengths).
    pub fn verify(&self) -> Result<VerifyReport> {
        if let Some(view) = self.followed() {
            return view.verify();
        }
        self.shared.refuse_on_batch_thread("Db::verify")?;
        let mut report = VerifyReport::default();
        // Pages whose checksum failed: what else fails because of them is reported once.
        let mut damaged: std::collections::BTreeSet<u64> = std::collections::BTreeSet::new();
        {
            let _checkpointing = self.shared.checkpoint_lock.lock();
            let mut state = self.shared.writer.lock();
            let (problems, notes) = state.store.verify_superblocks()?;
            report.problems.extend(problems);
            report.notes.extend(notes);
            let pages = state.store.verify_pages()?;
            damaged.extend(pages.iter().filter_map(damaged_page));
            report.problems.extend(pages);
            if !state.needs_checkpoint() {
                // A walk stopped by a page reported damaged above says nothing new.
                let accounting = state.verify_space_accounting()?;
                report
                    .problems
                    .extend(accounting.into_iter().filter(|problem| {
                        !matches!(problem, Error::Corruption { at, .. }
                        if damaged.contains(&(at / crate::store::PAGE_SIZE)))
                    }));
            }
        }
        let published = Arc::clone(&self.shared.published.read());
        for (name, snapshot) in &published.tables {
            report.tables_checked += 1;
            report.keys_checked += snapshot.len();
            if let Err(violations) = snapshot.verify() {
                // Nodes in pages reported damaged: one line per table (how many, and the
                // first), not one per node reached through the page.
                let mut in_damaged: Option<(usize, String, usize)> = None;
                for violation in violations {
                    if let artdb_art::Violation::Unreadable {
                        error: artdb_art::Error::Persisted { offset, .. },
                        ..
                    } = &violation
                    {
                        if damaged.contains(&(offset / crate::store::PAGE_SIZE)) {
                            match &mut in_damaged {
                                Some((count, _, _)) => *count += 1,
                                None => {
                                    let at = report.problems.len();
                                    in_damaged = Some((1, violation.to_string(), at));
                                }
                            }
                            continue;
                        }
                    }
                    report.problems.push(Error::Corruption {
                        at: 0,
                        kind: CorruptionKind::Invariant(format!("table {name:?}: {violation}")),
                    });
                }
                // In the place of the first, so the report reads cause before consequence.
                if let Some((count, first, at)) = in_damaged {
                    let text = match count {
                        1 => format!("table {name:?}: {first}"),
                        _ => format!(
                            "table {name:?}: {count} nodes in damaged pages are unreadable, the \
                             first: {first}"
                        ),
                    };
                    report.problems.insert(
                        at,
                        Error::Corruption {
                            at: 0,
                            kind: CorruptionKind::Invariant(text),
                        },
                    );
                }
            }
        }
        Ok(report)
    }
}

/// The page of a problem that is a page's checksum failing.
fn damaged_page(problem: &Error) -> Option<u64> {
    match problem {
        Error::Corruption {
            at,
            kind: CorruptionKind::PageChecksum,
        } => Some(at / crate::store::PAGE_SIZE),
        _ => None,
    }
}
