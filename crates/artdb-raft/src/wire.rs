//! wire: the TCP protocol between nodes and between clients and nodes: frames of postcard
//! messages, one [`Request`] answered by one [`Reply`] on a connection at a time.
//!
//! Frame: a `u32` little-endian length, then that many bytes of postcard. A frame longer than
//! [`FRAME_BYTES_MAX`] is refused before it is read (a peer cannot make a node allocate more).
//!
//! Why this stack: tokio is already the runtime openraft runs on; postcard is already the
//! encoding of the raft log; a length-prefixed binary frame keeps a request to one read and one
//! write with no HTTP or protobuf layer between (tonic would add a `protoc` build step, axum an
//! HTTP parser and a text encoding). Raft RPCs and client requests share one port and one
//! framing, so a node has one listener.

use crate::command::{Command, Response};
use crate::state_machine::Pairs;
use crate::{NodeId, TypeConfig};
use openraft::error::{CheckIsLeaderError, ClientWriteError, InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Longest frame: above openraft's default snapshot chunk (3 MiB) and any sane command.
pub const FRAME_BYTES_MAX: usize = 64 << 20;

/// Most pairs one scan returns.
pub const SCAN_PAIRS_MAX: usize = 10_000;

/// How a read is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Consistency {
    /// By the leader after a read index round (openraft's `ensure_linearizable`): sees every
    /// write acknowledged before it was sent.
    Linearizable,
    /// By whichever node gets it, from its own state machine: may be behind the leader.
    Stale,
}

/// What a node is asked.
#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    /// Raft: replicate entries.
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    /// Raft: a vote.
    Vote(VoteRequest<NodeId>),
    /// Raft: a snapshot chunk.
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// A client write, replicated as one log entry.
    Write(Command),
    /// The value of a key.
    Get {
        /// The key.
        key: Vec<u8>,
        /// How it is read.
        consistency: Consistency,
    },
    /// Up to `limit` pairs from `start` (inclusive) to `end` (exclusive; `None`: the end).
    Range {
        /// First key.
        start: Vec<u8>,
        /// Key after the last.
        end: Option<Vec<u8>>,
        /// Most pairs (at most [`SCAN_PAIRS_MAX`]).
        limit: usize,
        /// How it is read.
        consistency: Consistency,
    },
    /// Up to `limit` pairs whose keys start with `prefix`.
    Prefix {
        /// The prefix.
        prefix: Vec<u8>,
        /// Most pairs (at most [`SCAN_PAIRS_MAX`]).
        limit: usize,
        /// How it is read.
        consistency: Consistency,
    },
    /// The node's view of the cluster.
    Status,
    /// Makes this node start a new cluster of `members` (once, on one node).
    Initialize {
        /// Node ids and addresses.
        members: BTreeMap<NodeId, String>,
    },
    /// Adds a node as a learner and waits until it caught up.
    AddLearner {
        /// Its id.
        id: NodeId,
        /// Its address.
        address: String,
    },
    /// Makes `voters` the voters (learners not named stay learners; voters not named leave).
    ChangeMembership {
        /// The new voter set.
        voters: BTreeSet<NodeId>,
    },
}

/// A node's view of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// This node.
    pub id: NodeId,
    /// Leader, Follower, Candidate or Learner.
    pub state: String,
    /// The leader it knows of.
    pub leader: Option<NodeId>,
    /// Its term.
    pub term: u64,
    /// Index of its last log entry.
    pub last_log_index: Option<u64>,
    /// Index of its last applied entry.
    pub last_applied_index: Option<u64>,
    /// Voters of the membership it applies.
    pub voters: BTreeSet<NodeId>,
    /// Every node of the membership (voters and learners) and its address.
    pub nodes: BTreeMap<NodeId, String>,
}

/// What a node answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum Reply {
    /// To `AppendEntries`.
    AppendEntries(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    /// To `Vote`.
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    /// To `InstallSnapshot`.
    InstallSnapshot(
        Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>,
    ),
    /// A write was applied; the state machine's answer.
    Written(Response),
    /// The value read (`None`: absent).
    Value(Option<Vec<u8>>),
    /// The pairs scanned.
    Pairs(Pairs),
    /// To `Status`.
    Status(Status),
    /// The membership request was carried out.
    Done,
    /// This node is not the leader; ask `leader` (id and address) if known.
    NotLeader {
        /// The leader this node knows of.
        leader: Option<(NodeId, String)>,
    },
    /// The request failed; `message` says why.
    Failed {
        /// What went wrong.
        message: String,
    },
}

impl Reply {
    /// The reply to a failed client write or membership change.
    pub fn from_write_error(
        error: RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>,
    ) -> Reply {
        match error {
            RaftError::APIError(ClientWriteError::ForwardToLeader(forward)) => Reply::NotLeader {
                leader: forward
                    .leader_id
                    .zip(forward.leader_node.map(|node| node.addr)),
            },
            other => Reply::Failed {
                message: other.to_string(),
            },
        }
    }

    /// The reply to a failed read index round.
    pub fn from_read_error(
        error: RaftError<NodeId, CheckIsLeaderError<NodeId, BasicNode>>,
    ) -> Reply {
        match error {
            RaftError::APIError(CheckIsLeaderError::ForwardToLeader(forward)) => Reply::NotLeader {
                leader: forward
                    .leader_id
                    .zip(forward.leader_node.map(|node| node.addr)),
            },
            other => Reply::Failed {
                message: other.to_string(),
            },
        }
    }
}

/// Writes `message` as one frame.
pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(
    writer: &mut W,
    message: &T,
) -> io::Result<()> {
    let bytes = postcard::to_allocvec(message).map_err(io::Error::other)?;
    if bytes.len() > FRAME_BYTES_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a message of {} bytes is over the frame limit of {FRAME_BYTES_MAX}",
                bytes.len()
            ),
        ));
    }
    let len = bytes.len() as u32;
    writer.write_all(&len.to_le_bytes()).await?;
    writer.write_all(&bytes).await?;
    writer.flush().await
}

/// Reads one frame and decodes it.
pub async fn read_frame<R: AsyncRead + Unpin, T: DeserializeOwned>(
    reader: &mut R,
) -> io::Result<T> {
    let mut len = [0u8; 4];
    reader.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > FRAME_BYTES_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the limit of {FRAME_BYTES_MAX}"),
        ));
    }
    let mut bytes = vec![0u8; len];
    reader.read_exact(&mut bytes).await?;
    postcard::from_bytes(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
