//! client: the Rust client of an artdb cluster over TCP ([`crate::wire`]'s protocol).
//!
//! It sends each request to the node it last heard from, follows a `NotLeader` answer to the
//! leader it names (or tries the next address when none is named), and tries the next address
//! when a connection cannot be made. It never sends a write twice once the write may have
//! reached a node: an error after sending is [`ClientError::Unknown`] (the write may or may not
//! be applied), which the caller resolves by reading.

use crate::command::{Command, Condition, Operation, Response};
use crate::state_machine::Pairs;
use crate::wire::{self, Consistency, Reply, Request, Status};
use crate::NodeId;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::io;
use std::time::Duration;
use tokio::net::TcpStream;

/// Attempts of one request across redirects and unreachable nodes.
pub const ATTEMPTS_MAX: u32 = 20;

/// Pause before trying another node when none is known to lead (an election takes a few
/// heartbeats).
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Longest wait for one answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a client request failed.
#[derive(Debug)]
pub enum ClientError {
    /// No node answered as leader within [`ATTEMPTS_MAX`] attempts; `last` is the last error.
    NoLeader {
        /// The last thing that went wrong.
        last: String,
    },
    /// The request was sent but no answer came (`reason`): a write may or may not be applied.
    Unknown {
        /// What went wrong.
        reason: String,
    },
    /// The node refused the request (`message` says why).
    Failed {
        /// The node's message.
        message: String,
    },
    /// The node answered something this request does not expect (a version mismatch).
    Unexpected {
        /// The answer.
        reply: String,
    },
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::NoLeader { last } => write!(
                f,
                "no node of the cluster answered as leader ({last}); check that a majority of \
                 the nodes is up (`artdb-server status`)"
            ),
            ClientError::Unknown { reason } => write!(
                f,
                "the request was sent but not answered ({reason}); a write may or may not \
                 have been applied: read the key to find out"
            ),
            ClientError::Failed { message } => write!(f, "the node refused the request: {message}"),
            ClientError::Unexpected { reply } => write!(
                f,
                "the node answered {reply}, which this client does not expect: is it another \
                 version of artdb-server?"
            ),
        }
    }
}

impl std::error::Error for ClientError {}

/// A client of a cluster (see the module docs). One request at a time; make one client per
/// concurrent caller.
pub struct Client {
    addresses: Vec<String>,
    current: usize,
    stream: Option<TcpStream>,
}

enum Attempt {
    NotSent(io::Error),
    Sent(io::Error),
}

impl Client {
    /// A client of the cluster whose nodes listen at `addresses` (any subset; the leader is
    /// found from there).
    pub fn new(addresses: Vec<String>) -> Client {
        Client {
            addresses,
            current: 0,
            stream: None,
        }
    }

    async fn exchange(&mut self, request: &Request) -> Result<Reply, Attempt> {
        let stream = match &mut self.stream {
            Some(stream) => stream,
            None => {
                let address = self
                    .addresses
                    .get(self.current)
                    .cloned()
                    .unwrap_or_default();
                let stream = TcpStream::connect(&address)
                    .await
                    .map_err(Attempt::NotSent)?;
                stream.set_nodelay(true).map_err(Attempt::NotSent)?;
                self.stream.insert(stream)
            }
        };
        let exchange = async {
            wire::write_frame(stream, request).await?;
            wire::read_frame(stream).await
        };
        match tokio::time::timeout(ANSWER_TIMEOUT, exchange).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(error)) => Err(Attempt::Sent(error)),
            Err(elapsed) => Err(Attempt::Sent(io::Error::new(
                io::ErrorKind::TimedOut,
                elapsed,
            ))),
        }
    }

    fn next_address(&mut self) {
        self.stream = None;
        self.current = (self.current + 1) % self.addresses.len().max(1);
    }

    fn go_to(&mut self, address: String) {
        self.stream = None;
        self.current = match self.addresses.iter().position(|known| *known == address) {
            Some(index) => index,
            None => {
                self.addresses.push(address);
                self.addresses.len() - 1
            }
        };
    }

    /// Sends `request` to the leader (following redirects) and returns its answer.
    pub async fn request(&mut self, request: Request) -> Result<Reply, ClientError> {
        let mut last = String::from("no attempt made");
        for _ in 0..ATTEMPTS_MAX {
            match self.exchange(&request).await {
                Ok(Reply::NotLeader {
                    leader: Some((_, address)),
                }) if self.addresses.get(self.current) != Some(&address) => self.go_to(address),
                Ok(Reply::NotLeader { .. }) => {
                    last = "a node knew no leader".to_string();
                    self.next_address();
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                Ok(Reply::Failed { message }) => return Err(ClientError::Failed { message }),
                Ok(reply) => return Ok(reply),
                Err(Attempt::NotSent(error)) => {
                    last = error.to_string();
                    self.next_address();
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                Err(Attempt::Sent(error)) => {
                    self.next_address();
                    return Err(ClientError::Unknown {
                        reason: error.to_string(),
                    });
                }
            }
        }
        Err(ClientError::NoLeader { last })
    }

    async fn write(&mut self, command: Command) -> Result<Response, ClientError> {
        match self.request(Request::Write(command)).await? {
            Reply::Written(Response::Rejected { reason }) => {
                Err(ClientError::Failed { message: reason })
            }
            Reply::Written(response) => Ok(response),
            other => Err(unexpected(other)),
        }
    }

    /// Sets `key` to `value`; returns the value before.
    pub async fn put(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        let command = Command::Put {
            key: key.to_vec(),
            value: value.to_vec(),
        };
        match self.write(command).await? {
            Response::Written { previous } => Ok(previous),
            other => Err(unexpected(other)),
        }
    }

    /// Removes `key`; returns the value before.
    pub async fn delete(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        match self.write(Command::Delete { key: key.to_vec() }).await? {
            Response::Written { previous } => Ok(previous),
            other => Err(unexpected(other)),
        }
    }

    /// Sets `key` to `new` (`None`: removes it) if it holds `expected`; returns whether it did
    /// and the value after.
    pub async fn compare_and_set(
        &mut self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<(bool, Option<Vec<u8>>), ClientError> {
        let command = Command::CompareAndSet {
            key: key.to_vec(),
            expected: expected.map(<[u8]>::to_vec),
            new: new.map(<[u8]>::to_vec),
        };
        match self.write(command).await? {
            Response::CompareAndSet { succeeded, current } => Ok((succeeded, current)),
            other => Err(unexpected(other)),
        }
    }

    /// Applies `operations` as one log entry if every condition holds; returns whether it did.
    pub async fn transaction(
        &mut self,
        conditions: Vec<Condition>,
        operations: Vec<Operation>,
    ) -> Result<bool, ClientError> {
        let command = Command::Transaction {
            conditions,
            operations,
        };
        match self.write(command).await? {
            Response::Transaction { succeeded } => Ok(succeeded),
            other => Err(unexpected(other)),
        }
    }

    /// The value of `key`.
    pub async fn get(
        &mut self,
        key: &[u8],
        consistency: Consistency,
    ) -> Result<Option<Vec<u8>>, ClientError> {
        let request = Request::Get {
            key: key.to_vec(),
            consistency,
        };
        match self.request(request).await? {
            Reply::Value(value) => Ok(value),
            other => Err(unexpected(other)),
        }
    }

    /// Up to `limit` pairs from `start` to `end` (exclusive; `None`: the last key).
    pub async fn range(
        &mut self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        consistency: Consistency,
    ) -> Result<Pairs, ClientError> {
        let request = Request::Range {
            start: start.to_vec(),
            end: end.map(<[u8]>::to_vec),
            limit,
            consistency,
        };
        match self.request(request).await? {
            Reply::Pairs(pairs) => Ok(pairs),
            other => Err(unexpected(other)),
        }
    }

    /// Up to `limit` pairs whose keys start with `prefix`.
    pub async fn prefix(
        &mut self,
        prefix: &[u8],
        limit: usize,
        consistency: Consistency,
    ) -> Result<Pairs, ClientError> {
        let request = Request::Prefix {
            prefix: prefix.to_vec(),
            limit,
            consistency,
        };
        match self.request(request).await? {
            Reply::Pairs(pairs) => Ok(pairs),
            other => Err(unexpected(other)),
        }
    }

    /// The status of the node this client talks to (the first address, until a redirect).
    pub async fn status(&mut self) -> Result<Status, ClientError> {
        match self.request(Request::Status).await? {
            Reply::Status(status) => Ok(status),
            other => Err(unexpected(other)),
        }
    }

    /// Starts a new cluster of `members` (ids and addresses) from the node this client talks to.
    pub async fn initialize(
        &mut self,
        members: BTreeMap<NodeId, String>,
    ) -> Result<(), ClientError> {
        self.done(Request::Initialize { members }).await
    }

    /// Adds node `id` at `address` as a learner; returns once it caught up.
    pub async fn add_learner(&mut self, id: NodeId, address: &str) -> Result<(), ClientError> {
        let request = Request::AddLearner {
            id,
            address: address.to_string(),
        };
        self.done(request).await
    }

    /// Makes `voters` the cluster's voters.
    pub async fn change_membership(&mut self, voters: BTreeSet<NodeId>) -> Result<(), ClientError> {
        self.done(Request::ChangeMembership { voters }).await
    }

    async fn done(&mut self, request: Request) -> Result<(), ClientError> {
        match self.request(request).await? {
            Reply::Done => Ok(()),
            other => Err(unexpected(other)),
        }
    }
}

fn unexpected(reply: impl fmt::Debug) -> ClientError {
    ClientError::Unexpected {
        reply: format!("{reply:?}"),
    }
}
