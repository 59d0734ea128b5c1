//! command: what a client asks the cluster to do (one [`Command`] is one raft log entry) and
//! what the state machine answers ([`Response`]).
//!
//! Applying is deterministic: it depends only on the command and the state before it, so every
//! node that applies the same log reaches the same data table. That is why a command that breaks a
//! limit (a key longer than the tree's `KEY_LEN_MAX`, say) is answered [`Response::Rejected`] on
//! every node alike, by a check made before anything is written, and never as a storage error:
//! a storage error stops the node, and a rejected command must not stop the cluster. A
//! [`Command::Transaction`] is checked whole before its first write, so it is applied whole or
//! not at all.

use serde::{Deserialize, Serialize};

/// Most operations in one [`Command::Transaction`].
pub const TRANSACTION_OPERATIONS_MAX: usize = 10_000;

/// A write of one key, inside a [`Command::Transaction`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operation {
    /// Sets `key` to `value`.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Removes `key` (nothing if absent).
    Delete {
        /// The key.
        key: Vec<u8>,
    },
}

/// A condition of a [`Command::Transaction`]: `key` holds `expected` (`None`: is absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// The key.
    pub key: Vec<u8>,
    /// The value it must hold; `None`: it must be absent.
    pub expected: Option<Vec<u8>>,
}

/// One client write, replicated as one log entry and applied atomically.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Sets `key` to `value`.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Removes `key`.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
    /// Sets `key` to `new` (`None`: removes it) if it holds `expected` (`None`: is absent).
    CompareAndSet {
        /// The key.
        key: Vec<u8>,
        /// The value it must hold; `None`: it must be absent.
        expected: Option<Vec<u8>>,
        /// The value to set; `None`: remove the key.
        new: Option<Vec<u8>>,
    },
    /// If every condition holds, applies every operation, in order; else changes nothing.
    Transaction {
        /// Conditions checked against the state before the transaction.
        conditions: Vec<Condition>,
        /// Writes applied when they all hold.
        operations: Vec<Operation>,
    },
    /// Independent client writes that a node gathered into one log entry (so they share one
    /// append, one fsync and one replication round): each is applied in order, as if it were
    /// an entry of its own, and answered by its own response.
    Batch(Vec<Command>),
}

/// What applying a log entry answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// A blank or membership entry: nothing for a client.
    Applied,
    /// A put or a delete; `previous` is the value the key held before.
    Written {
        /// The value before, `None` if the key was absent.
        previous: Option<Vec<u8>>,
    },
    /// A compare-and-set: whether it set, and the value the key holds after it.
    CompareAndSet {
        /// Whether the key held the expected value (and so was set).
        succeeded: bool,
        /// The value after the command.
        current: Option<Vec<u8>>,
    },
    /// A transaction: whether its conditions held (and so its operations were applied).
    Transaction {
        /// Whether every condition held.
        succeeded: bool,
    },
    /// The command breaks a limit and changed nothing; `reason` says which.
    Rejected {
        /// What was wrong.
        reason: String,
    },
    /// A [`Command::Batch`]: the response of each of its commands, in order.
    Batch(Vec<Response>),
}

impl Command {
    /// Why this command cannot be applied, if it cannot: the check every node makes alike before
    /// writing anything.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Command::Put { key, value } => check_pair(key, Some(value)),
            Command::Delete { key } => check_pair(key, None),
            Command::CompareAndSet { key, new, .. } => check_pair(key, new.as_deref()),
            Command::Transaction {
                conditions,
                operations,
            } => {
                let count = conditions.len() + operations.len();
                if count > TRANSACTION_OPERATIONS_MAX {
                    return Err(format!(
                        "a transaction of {count} conditions and operations is over the limit \
                         of {TRANSACTION_OPERATIONS_MAX}; split it"
                    ));
                }
                for condition in conditions {
                    check_pair(&condition.key, None)?;
                }
                for operation in operations {
                    match operation {
                        Operation::Put { key, value } => check_pair(key, Some(value))?,
                        Operation::Delete { key } => check_pair(key, None)?,
                    }
                }
                Ok(())
            }
            // Each command of a batch is checked when it is applied: one over a limit is
            // rejected alone, as it would be in an entry of its own.
            Command::Batch(_) => Ok(()),
        }
    }

    /// Applies the command to the data table `table` inside `txn` and answers it.
    pub fn apply(&self, txn: &mut artdb::Transaction, table: &str) -> artdb::Result<Response> {
        if let Err(reason) = self.check() {
            return Ok(Response::Rejected { reason });
        }
        match self {
            Command::Put { key, value } => {
                let previous = get(txn, table, key)?;
                txn.insert(table, key, value)?;
                Ok(Response::Written { previous })
            }
            Command::Delete { key } => {
                let previous = get(txn, table, key)?;
                txn.remove(table, key)?;
                Ok(Response::Written { previous })
            }
            Command::CompareAndSet { key, expected, new } => {
                let current = get(txn, table, key)?;
                if current != *expected {
                    return Ok(Response::CompareAndSet {
                        succeeded: false,
                        current,
                    });
                }
                write(txn, table, key, new.as_deref())?;
                Ok(Response::CompareAndSet {
                    succeeded: true,
                    current: new.clone(),
                })
            }
            Command::Transaction {
                conditions,
                operations,
            } => {
                for condition in conditions {
                    if get(txn, table, &condition.key)? != condition.expected {
                        return Ok(Response::Transaction { succeeded: false });
                    }
                }
                for operation in operations {
                    match operation {
                        Operation::Put { key, value } => write(txn, table, key, Some(value))?,
                        Operation::Delete { key } => write(txn, table, key, None)?,
                    }
                }
                Ok(Response::Transaction { succeeded: true })
            }
            Command::Batch(commands) => commands
                .iter()
                .map(|command| command.apply(txn, table))
                .collect::<artdb::Result<_>>()
                .map(Response::Batch),
        }
    }
}

fn check_pair(key: &[u8], value: Option<&[u8]>) -> Result<(), String> {
    if key.len() > artdb_art::KEY_LEN_MAX {
        return Err(format!(
            "a key of {} bytes is over the limit of {} bytes",
            key.len(),
            artdb_art::KEY_LEN_MAX
        ));
    }
    if let Some(value) = value {
        if value.len() > artdb_art::VALUE_LEN_MAX {
            return Err(format!(
                "a value of {} bytes is over the limit of {} bytes",
                value.len(),
                artdb_art::VALUE_LEN_MAX
            ));
        }
    }
    Ok(())
}

fn get(txn: &artdb::Transaction, table: &str, key: &[u8]) -> artdb::Result<Option<Vec<u8>>> {
    Ok(txn.get(table, key)?.map(<[u8]>::to_vec))
}

fn write(
    txn: &mut artdb::Transaction,
    table: &str,
    key: &[u8],
    value: Option<&[u8]>,
) -> artdb::Result<()> {
    match value {
        Some(value) => txn.insert(table, key, value),
        None => txn.remove(table, key).map(|_| ()),
    }
}
