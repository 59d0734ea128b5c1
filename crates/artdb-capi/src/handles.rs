//! The Rust objects behind the C API's opaque handles, and what they do in safe Rust: the
//! state of a write transaction, the bounds and moves of a cursor.
//!
//! Handles that borrow another object own a reference count of it instead (a cursor owns its
//! read snapshot, a write batch its database), so no order of frees from C leaves a dangling
//! borrow. The borrows themselves (`'static` in the fields below) are made in `ffi/`, the one
//! module with unsafe code, next to the argument for why they stay valid.

use crate::error::{Failure, ARTDB_MISUSE, ARTDB_NOTFOUND, ARTDB_OK};
use artdb::{Cursor, Db, ReadTxn, Transaction, TxnCursor, WriteTxn};
use std::ffi::c_int;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;

/// `artdb_db`: an open database. Shared by any number of threads.
pub struct DbHandle {
    /// The database; write batches hold a second count, so `artdb_close` can refuse while
    /// one is open instead of freeing what it borrows.
    pub db: Arc<Db>,
    /// Set by `artdb_close`; the transactions begun on the handle hold it too.
    pub closed: Arc<AtomicBool>,
}

/// `artdb_read`: a read snapshot. Shared by any number of threads.
pub struct ReadHandle {
    /// The snapshot; cursors hold further counts.
    pub read: Arc<ReadTxn>,
}

/// A write transaction until its commit or abort, shared by its handle and the cursors opened
/// in it (so a cursor used after the transaction ended finds it gone instead of dangling).
pub type TxnSlot = Arc<parking_lot::Mutex<Option<Transaction>>>;

/// `artdb_txn`: a write transaction, used by one thread at a time.
pub struct TxnHandle {
    /// The transaction until its commit or abort.
    pub txn: TxnSlot,
    /// How it ended ("committed", "aborted", "ended by a failed commit").
    pub ended: &'static str,
    /// Its database's close flag: the engine would accept a commit after `Db::close`, which
    /// no C caller can mean, so `artdb_txn_commit` refuses it.
    pub db_closed: Arc<AtomicBool>,
}

impl TxnHandle {
    /// The transaction, or [`crate::error::ARTDB_INVALID`] once it has ended.
    pub fn live(&mut self) -> Result<parking_lot::MappedMutexGuard<'_, Transaction>, Failure> {
        let ended = self.ended;
        parking_lot::MutexGuard::try_map(self.txn.lock(), Option::as_mut).map_err(|_| {
            Failure::invalid(format!(
                "the transaction was already {ended}; free it with artdb_txn_free and begin \
                 another"
            ))
        })
    }

    /// Ends the transaction: what it was, for a commit (`None` if it had ended already).
    pub fn end(&mut self) -> Option<Transaction> {
        self.txn.lock().take()
    }

    /// Refuses a commit once the database handle was closed.
    pub fn database_open(&self) -> Result<(), Failure> {
        if self.db_closed.load(Ordering::Acquire) {
            Err(Failure::invalid(
                "the database of this transaction was closed (artdb_close); nothing of it was \
                 committed: open the database again and run the transaction there",
            ))
        } else {
            Ok(())
        }
    }
}

/// `artdb_batch`: a write batch, which holds the database's writer lock until it ends; used
/// only on the thread that began it.
pub struct BatchHandle {
    /// The batch until its commit; borrows the database `db` holds. Declared before `db` so
    /// it is dropped first.
    pub batch: Option<WriteTxn<'static>>,
    /// The database the batch borrows.
    pub db: Arc<Db>,
    /// The thread that began it (the writer lock's guard never leaves it).
    pub thread: ThreadId,
    /// The value of the last `artdb_batch_get`, which C borrows until the next batch call.
    pub value: Vec<u8>,
}

impl BatchHandle {
    /// The batch, refusing a call from another thread or after the commit.
    pub fn live(&mut self) -> Result<&mut WriteTxn<'static>, Failure> {
        self.on_its_thread()?;
        self.batch.as_mut().ok_or_else(|| {
            Failure::invalid(
                "the write batch was already committed; free it with artdb_batch_free and begin \
                 another",
            )
        })
    }

    /// Refuses a call from a thread other than the one that began the batch.
    pub fn on_its_thread(&self) -> Result<(), Failure> {
        if std::thread::current().id() == self.thread {
            Ok(())
        } else {
            Err(Failure::new(
                ARTDB_MISUSE,
                "a write batch holds the writer lock of its thread: use and free it on the \
                 thread that began it",
            ))
        }
    }
}

/// The keys a cursor may stand on: everything, a range, or the keys with a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// The smallest key allowed.
    pub lower: Bound<Vec<u8>>,
    /// The largest key allowed.
    pub upper: Bound<Vec<u8>>,
}

impl Bounds {
    /// Every key.
    pub fn all() -> Bounds {
        Bounds {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        }
    }

    /// The keys that start with `prefix`: from the prefix up to (not including) the smallest
    /// key greater than every key with it.
    pub fn prefix(prefix: &[u8]) -> Bounds {
        let upper = match prefix_successor(prefix) {
            Some(successor) => Bound::Excluded(successor),
            None => Bound::Unbounded,
        };
        Bounds {
            lower: Bound::Included(prefix.to_vec()),
            upper,
        }
    }

    /// Whether `key` is at or above the lower bound.
    pub fn above_lower(&self, key: &[u8]) -> bool {
        match &self.lower {
            Bound::Unbounded => true,
            Bound::Included(lower) => key >= lower.as_slice(),
            Bound::Excluded(lower) => key > lower.as_slice(),
        }
    }

    /// Whether `key` is at or below the upper bound.
    pub fn below_upper(&self, key: &[u8]) -> bool {
        match &self.upper {
            Bound::Unbounded => true,
            Bound::Included(upper) => key <= upper.as_slice(),
            Bound::Excluded(upper) => key < upper.as_slice(),
        }
    }
}

/// The smallest byte string greater than every string that starts with `prefix`; `None` when
/// there is none (an empty prefix, or one of only 0xFF bytes).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|byte| *byte != 0xFF)?;
    let mut successor = prefix[..=last].to_vec();
    successor[last] += 1;
    Some(successor)
}

/// What a cursor reads.
pub enum Source {
    /// A read snapshot's table: the engine's cursor, borrowing the snapshot `read` holds
    /// (declared before it, so dropped first).
    Snapshot {
        /// The engine's cursor.
        cursor: Cursor<'static>,
        /// The snapshot the cursor borrows.
        read: Arc<ReadTxn>,
    },
    /// A write transaction's table as the transaction sees it (its own puts and deletes
    /// included). The transaction may change between two moves, so each move opens the
    /// engine's cursor afresh at the current key, and the pair is copied out.
    Txn {
        /// The transaction, shared with its handle.
        txn: TxnSlot,
        /// The table.
        table: String,
        /// The pair the cursor stands on (when it stands on one).
        key: Vec<u8>,
        /// Its value.
        value: Vec<u8>,
    },
}

/// `artdb_cursor`: a position in one table of a read snapshot or a write transaction, confined
/// to [`Bounds`]; used by one thread at a time.
pub struct CursorHandle {
    /// What it reads.
    pub source: Source,
    /// Where it may stand.
    pub bounds: Bounds,
    /// Whether it stands on a pair inside its bounds.
    pub positioned: bool,
}

/// A cursor move's outcome as a C code: on a pair, or off the end.
fn code(positioned: bool) -> c_int {
    if positioned {
        ARTDB_OK
    } else {
        ARTDB_NOTFOUND
    }
}

/// The moves the engine's two cursors share (a snapshot's and a transaction's).
trait Steps {
    fn seek(&mut self, key: &[u8]) -> artdb::Result<bool>;
    fn seek_first(&mut self) -> artdb::Result<bool>;
    fn seek_last(&mut self) -> artdb::Result<bool>;
    fn next(&mut self) -> artdb::Result<bool>;
    fn prev(&mut self) -> artdb::Result<bool>;
    fn key(&self) -> &[u8];
}

macro_rules! steps {
    ($cursor:ty) => {
        impl Steps for $cursor {
            fn seek(&mut self, key: &[u8]) -> artdb::Result<bool> {
                <$cursor>::seek(self, key)
            }
            fn seek_first(&mut self) -> artdb::Result<bool> {
                <$cursor>::seek_first(self)
            }
            fn seek_last(&mut self) -> artdb::Result<bool> {
                <$cursor>::seek_last(self)
            }
            fn next(&mut self) -> artdb::Result<bool> {
                <$cursor>::next(self)
            }
            fn prev(&mut self) -> artdb::Result<bool> {
                <$cursor>::prev(self)
            }
            fn key(&self) -> &[u8] {
                <$cursor>::key(self)
            }
        }
    };
}
steps!(Cursor<'_>);
steps!(TxnCursor<'_>);

/// A move of a cursor: where to go.
#[derive(Clone, Copy)]
enum Move<'k> {
    First,
    Last,
    Seek(&'k [u8]),
    Next,
    Prev,
}

/// Moves `cursor` (standing on `current` for `Next` and `Prev`) inside `bounds`; true if it
/// stands on a key (which the caller still checks against the far bound).
fn step(
    cursor: &mut impl Steps,
    bounds: &Bounds,
    to: Move<'_>,
    current: Option<&[u8]>,
) -> artdb::Result<bool> {
    match to {
        Move::First => match &bounds.lower {
            Bound::Unbounded => cursor.seek_first(),
            Bound::Included(lower) => cursor.seek(lower),
            Bound::Excluded(lower) => {
                let found = cursor.seek(lower)?;
                if found && cursor.key() == lower.as_slice() {
                    cursor.next()
                } else {
                    Ok(found)
                }
            }
        },
        Move::Last => match &bounds.upper {
            Bound::Unbounded => cursor.seek_last(),
            Bound::Included(upper) => {
                if !cursor.seek(upper)? {
                    cursor.seek_last()
                } else if cursor.key() == upper.as_slice() {
                    Ok(true)
                } else {
                    cursor.prev()
                }
            }
            Bound::Excluded(upper) => {
                if cursor.seek(upper)? {
                    cursor.prev()
                } else {
                    cursor.seek_last()
                }
            }
        },
        Move::Seek(key) => cursor.seek(key),
        // A snapshot's cursor is still where it was; a transaction's is opened afresh at the
        // key it stood on (which the transaction may have deleted since).
        Move::Next => match current {
            None => cursor.next(),
            Some(key) => {
                let found = cursor.seek(key)?;
                if found && cursor.key() == key {
                    cursor.next()
                } else {
                    Ok(found)
                }
            }
        },
        Move::Prev => match current {
            None => cursor.prev(),
            Some(key) => {
                if cursor.seek(key)? {
                    cursor.prev()
                } else {
                    cursor.seek_last()
                }
            }
        },
    }
}

/// A move of a transaction's cursor after the transaction ended.
fn transaction_ended() -> Failure {
    Failure::invalid(
        "the transaction of this cursor has ended (committed, aborted or freed); free the \
         cursor, and open one in a live transaction",
    )
}

impl CursorHandle {
    /// Moves to the smallest key inside the bounds.
    pub fn first(&mut self) -> Result<c_int, Failure> {
        self.go(Move::First)
    }

    /// Moves to the largest key inside the bounds.
    pub fn last(&mut self) -> Result<c_int, Failure> {
        self.go(Move::Last)
    }

    /// Moves to the first key `>= key` inside the bounds (the first of the bounds when `key` is
    /// below them).
    pub fn seek(&mut self, key: &[u8]) -> Result<c_int, Failure> {
        if !self.bounds.above_lower(key) {
            return self.first();
        }
        self.go(Move::Seek(key))
    }

    /// Steps to the next key; [`ARTDB_NOTFOUND`] past the upper bound or when not positioned.
    // A cursor step that can fail and returns a C code: not an Iterator.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<c_int, Failure> {
        self.transaction_live()?;
        if !self.positioned {
            return Ok(ARTDB_NOTFOUND);
        }
        self.go(Move::Next)
    }

    /// Steps to the previous key; [`ARTDB_NOTFOUND`] past the lower bound or when not
    /// positioned.
    pub fn prev(&mut self) -> Result<c_int, Failure> {
        self.transaction_live()?;
        if !self.positioned {
            return Ok(ARTDB_NOTFOUND);
        }
        self.go(Move::Prev)
    }

    /// The pair the cursor stands on.
    pub fn pair(&self) -> Option<(&[u8], &[u8])> {
        if !self.positioned {
            return None;
        }
        Some(match &self.source {
            Source::Snapshot { cursor, .. } => (cursor.key(), cursor.value()),
            Source::Txn { key, value, .. } => (key.as_slice(), value.as_slice()),
        })
    }

    /// Refuses a move of a transaction's cursor once the transaction has ended.
    fn transaction_live(&self) -> Result<(), Failure> {
        match &self.source {
            Source::Txn { txn, .. } if txn.lock().is_none() => Err(transaction_ended()),
            _ => Ok(()),
        }
    }

    /// Makes the move and records whether it left the cursor on a pair inside the bounds.
    fn go(&mut self, to: Move<'_>) -> Result<c_int, Failure> {
        let bounds = &self.bounds;
        let positioned = self.positioned;
        self.positioned = false;
        let inside = |key: &[u8]| bounds.above_lower(key) && bounds.below_upper(key);
        let now = match &mut self.source {
            Source::Snapshot { cursor, .. } => {
                let found = step(cursor, bounds, to, None)?;
                found && cursor.is_valid() && inside(cursor.key())
            }
            Source::Txn {
                txn,
                table,
                key,
                value,
            } => {
                let slot = txn.lock();
                let Some(transaction) = slot.as_ref() else {
                    return Err(transaction_ended());
                };
                let mut cursor = transaction.cursor(table)?;
                let current = positioned.then_some(key.as_slice());
                let found = step(&mut cursor, bounds, to, current)?;
                let now = found && cursor.is_valid() && inside(cursor.key());
                if now {
                    key.clear();
                    key.extend_from_slice(cursor.key());
                    value.clear();
                    value.extend_from_slice(cursor.value());
                }
                now
            }
        };
        self.positioned = now;
        Ok(code(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successor_skips_trailing_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }

    #[test]
    fn prefix_bounds_hold_exactly_the_keys_with_the_prefix() {
        let bounds = Bounds::prefix(b"ab");
        for (key, inside) in [
            (&b"aa\xff"[..], false),
            (b"ab", true),
            (b"ab\x00", true),
            (b"ab\xff\xff", true),
            (b"ac", false),
        ] {
            let contains = bounds.above_lower(key) && bounds.below_upper(key);
            assert_eq!(contains, inside, "{key:?}");
        }
    }
}
