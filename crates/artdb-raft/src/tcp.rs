//! tcp: openraft's network over TCP (each node's connection to a peer is one TCP stream that
//! carries one [`Request`] and its [`Reply`] at a time) and the node's server loop that answers
//! peers and clients on one listener.
//!
//! A connection is made on first use and dropped on any error, so the next RPC reconnects;
//! each RPC is bounded by openraft's hard time-to-live, after which the peer counts as
//! unreachable (a cut link hangs, it does not fail).

use crate::command::{Command, Response};
use crate::state_machine::Reader;
use crate::wire::{self, Consistency, Reply, Request, Status, SCAN_PAIRS_MAX};
use crate::{NodeId, Raft, TypeConfig};
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use std::collections::BTreeMap;
use std::io;
use std::ops::Bound;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, Semaphore};

/// The factory openraft asks for a connection to each peer.
#[derive(Clone, Default)]
pub struct TcpNetwork;

/// A connection to one peer (see the module docs).
pub struct TcpConnection {
    target: NodeId,
    address: String,
    stream: Option<TcpStream>,
}

impl RaftNetworkFactory<TypeConfig> for TcpNetwork {
    type Network = TcpConnection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> TcpConnection {
        TcpConnection {
            target,
            address: node.addr.clone(),
            stream: None,
        }
    }
}

type Rpc<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

#[derive(Debug)]
struct UnexpectedReply(String);

impl std::fmt::Display for UnexpectedReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the peer answered {}", self.0)
    }
}

impl std::error::Error for UnexpectedReply {}

// The RPC error type is openraft's, fixed by `RaftNetwork`'s signatures.
#[allow(clippy::result_large_err)]
impl TcpConnection {
    async fn exchange(&mut self, request: &Request) -> io::Result<Reply> {
        let stream = match &mut self.stream {
            Some(stream) => stream,
            None => {
                let stream = TcpStream::connect(&self.address).await?;
                stream.set_nodelay(true)?;
                self.stream.insert(stream)
            }
        };
        wire::write_frame(stream, request).await?;
        wire::read_frame(stream).await
    }

    /// Sends `request` within `option`'s hard time-to-live.
    async fn call<E: std::error::Error>(
        &mut self,
        request: Request,
        option: &RPCOption,
    ) -> Rpc<Reply, E> {
        let answer = tokio::time::timeout(option.hard_ttl(), self.exchange(&request)).await;
        match answer {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(error)) => {
                self.stream = None;
                Err(RPCError::Unreachable(Unreachable::new(&error)))
            }
            Err(elapsed) => {
                self.stream = None;
                Err(RPCError::Unreachable(Unreachable::new(&elapsed)))
            }
        }
    }

    fn unexpected<T, E: std::error::Error>(&self, reply: Reply) -> Rpc<T, E> {
        let error = UnexpectedReply(format!("{reply:?}"));
        Err(RPCError::Network(NetworkError::new(&error)))
    }

    fn remote<T, E: std::error::Error>(
        &self,
        result: Result<T, RaftError<NodeId, E>>,
    ) -> Rpc<T, E> {
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for TcpConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Rpc<AppendEntriesResponse<NodeId>> {
        match self.call(Request::AppendEntries(rpc), &option).await? {
            Reply::AppendEntries(result) => self.remote(result),
            other => self.unexpected(other),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Rpc<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        match self.call(Request::InstallSnapshot(rpc), &option).await? {
            Reply::InstallSnapshot(result) => self.remote(result),
            other => self.unexpected(other),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Rpc<VoteResponse<NodeId>> {
        match self.call(Request::Vote(rpc), &option).await? {
            Reply::Vote(result) => self.remote(result),
            other => self.unexpected(other),
        }
    }
}

/// Most client writes gathered into one log entry.
pub const WRITE_BATCH_MAX: usize = 256;

/// Most batches of writes submitted to raft and not yet answered: while they are all in
/// flight, new writes wait in the queue and form the next, larger batch.
const WRITE_BATCHES_IN_FLIGHT: usize = 4;

type PendingWrite = (Command, oneshot::Sender<Reply>);
type PendingRead = oneshot::Sender<Result<(), Reply>>;

/// A copy of an error reply (a redirect or a failure) for each request that shares it.
fn copy_error(reply: &Reply) -> Reply {
    match reply {
        Reply::NotLeader { leader } => Reply::NotLeader {
            leader: leader.clone(),
        },
        Reply::Failed { message } => Reply::Failed {
            message: message.clone(),
        },
        other => Reply::Failed {
            message: format!("{other:?}"),
        },
    }
}

/// The reply when the node's request queues are gone (it is stopping).
fn stopped() -> Reply {
    Reply::Failed {
        message: "the node is stopping".to_string(),
    }
}

/// One node as a server: its raft and its state machine's reader, and the queues that gather
/// concurrent client requests (see [`Node::new`]).
pub struct Node {
    /// The node's raft.
    pub raft: Raft,
    /// Reads of its state machine.
    pub reader: Reader,
    writes: mpsc::UnboundedSender<PendingWrite>,
    reads: mpsc::UnboundedSender<PendingRead>,
}

/// Gathers the writes waiting in `queue` into batches (one log entry each, see
/// [`Command::Batch`]) and submits them, up to [`WRITE_BATCHES_IN_FLIGHT`] at a time.
async fn batch_writes(raft: Raft, mut queue: mpsc::UnboundedReceiver<PendingWrite>) {
    let in_flight = Arc::new(Semaphore::new(WRITE_BATCHES_IN_FLIGHT));
    while let Some(first) = queue.recv().await {
        let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < WRITE_BATCH_MAX {
            match queue.try_recv() {
                Ok(write) => batch.push(write),
                Err(_) => break,
            }
        }
        let raft = raft.clone();
        tokio::spawn(async move {
            submit(&raft, batch).await;
            drop(permit);
        });
    }
}

/// Submits `batch` as one entry (a lone write as itself) and answers each of its writers.
async fn submit(raft: &Raft, mut batch: Vec<PendingWrite>) {
    if batch.len() == 1 {
        let (command, answer) = batch.remove(0);
        let reply = match raft.client_write(command).await {
            Ok(written) => Reply::Written(written.data),
            Err(error) => Reply::from_write_error(error),
        };
        let _ = answer.send(reply);
        return;
    }
    let (commands, answers): (Vec<Command>, Vec<oneshot::Sender<Reply>>) =
        batch.into_iter().unzip();
    match raft.client_write(Command::Batch(commands)).await {
        Ok(written) => match written.data {
            Response::Batch(responses) if responses.len() == answers.len() => {
                for (answer, response) in answers.into_iter().zip(responses) {
                    let _ = answer.send(Reply::Written(response));
                }
            }
            other => {
                let message = format!("a batch of writes was answered {other:?}");
                for answer in answers {
                    let _ = answer.send(Reply::Failed {
                        message: message.clone(),
                    });
                }
            }
        },
        Err(error) => {
            let reply = Reply::from_write_error(error);
            for answer in answers {
                let _ = answer.send(copy_error(&reply));
            }
        }
    }
}

/// Serves the linearizable reads waiting in `queue` by read index rounds: every read waiting
/// when a round starts shares it. A read that arrives during a round waits for the next one,
/// since the round's read index must be taken after the read arrived.
async fn batch_reads(raft: Raft, mut queue: mpsc::UnboundedReceiver<PendingRead>) {
    while let Some(first) = queue.recv().await {
        let mut waiting = vec![first];
        while let Ok(read) = queue.try_recv() {
            waiting.push(read);
        }
        let outcome = raft
            .ensure_linearizable()
            .await
            .map(drop)
            .map_err(Reply::from_read_error);
        for read in waiting {
            let _ = read.send(outcome.as_ref().map(|_| ()).map_err(copy_error));
        }
    }
}

impl Node {
    /// A node serving `raft` and `reader`; starts the tasks that gather concurrent writes
    /// into shared log entries and concurrent linearizable reads into shared read index rounds
    /// (on the current tokio runtime; they end when the node is dropped).
    pub fn new(raft: Raft, reader: Reader) -> Node {
        let (writes, write_queue) = mpsc::unbounded_channel();
        let (reads, read_queue) = mpsc::unbounded_channel();
        tokio::spawn(batch_writes(raft.clone(), write_queue));
        tokio::spawn(batch_reads(raft.clone(), read_queue));
        Node {
            raft,
            reader,
            writes,
            reads,
        }
    }

    /// Answers peers and clients on `listener` until it fails.
    pub async fn serve(self: Arc<Node>, listener: TcpListener) -> io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            stream.set_nodelay(true)?;
            let node = Arc::clone(&self);
            tokio::spawn(async move { node.connection(stream).await });
        }
    }

    /// Answers one connection's requests in turn until it closes.
    async fn connection(&self, mut stream: TcpStream) -> io::Result<()> {
        loop {
            let request: Request = match wire::read_frame(&mut stream).await {
                Ok(request) => request,
                Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(error) => return Err(error),
            };
            let reply = self.answer(request).await;
            wire::write_frame(&mut stream, &reply).await?;
        }
    }

    /// The reply to one request.
    pub async fn answer(&self, request: Request) -> Reply {
        match request {
            Request::AppendEntries(rpc) => {
                Reply::AppendEntries(self.raft.append_entries(rpc).await)
            }
            Request::Vote(rpc) => Reply::Vote(self.raft.vote(rpc).await),
            Request::InstallSnapshot(rpc) => {
                Reply::InstallSnapshot(self.raft.install_snapshot(rpc).await)
            }
            Request::Write(command) => {
                let (answer, answered) = oneshot::channel();
                if self.writes.send((command, answer)).is_err() {
                    return stopped();
                }
                answered.await.unwrap_or_else(|_| stopped())
            }
            Request::Get { key, consistency } => {
                self.read(consistency, || self.reader.get(&key).map(Reply::Value))
                    .await
            }
            Request::Range {
                start,
                end,
                limit,
                consistency,
            } => {
                self.read(consistency, || {
                    let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                    self.reader
                        .range(Bound::Included(&start), end, limit.min(SCAN_PAIRS_MAX))
                        .map(Reply::Pairs)
                })
                .await
            }
            Request::Prefix {
                prefix,
                limit,
                consistency,
            } => {
                self.read(consistency, || {
                    self.reader
                        .prefix(&prefix, limit.min(SCAN_PAIRS_MAX))
                        .map(Reply::Pairs)
                })
                .await
            }
            Request::Status => Reply::Status(self.status()),
            Request::Initialize { members } => {
                let members: BTreeMap<NodeId, BasicNode> = members
                    .into_iter()
                    .map(|(id, address)| (id, BasicNode::new(address)))
                    .collect();
                match self.raft.initialize(members).await {
                    Ok(()) => Reply::Done,
                    Err(error) => Reply::Failed {
                        message: error.to_string(),
                    },
                }
            }
            Request::AddLearner { id, address } => {
                match self
                    .raft
                    .add_learner(id, BasicNode::new(address), true)
                    .await
                {
                    Ok(_) => Reply::Done,
                    Err(error) => Reply::from_write_error(error),
                }
            }
            Request::ChangeMembership { voters } => {
                match self.raft.change_membership(voters, false).await {
                    Ok(_) => Reply::Done,
                    Err(error) => Reply::from_write_error(error),
                }
            }
        }
    }

    /// Serves a read: after a read index round for a linearizable one, at once for a stale one.
    async fn read(
        &self,
        consistency: Consistency,
        body: impl FnOnce() -> Result<Reply, crate::RaftStoreError>,
    ) -> Reply {
        if consistency == Consistency::Linearizable {
            let (answer, answered) = oneshot::channel();
            if self.reads.send(answer).is_err() {
                return stopped();
            }
            match answered.await {
                Ok(Ok(())) => {}
                Ok(Err(reply)) => return reply,
                Err(_) => return stopped(),
            }
        }
        body().unwrap_or_else(|error| Reply::Failed {
            message: error.to_string(),
        })
    }

    /// This node's view of the cluster, from its metrics.
    pub fn status(&self) -> Status {
        let metrics = self.raft.metrics().borrow().clone();
        let membership = metrics.membership_config.membership();
        Status {
            id: metrics.id,
            state: format!("{:?}", metrics.state),
            leader: metrics.current_leader,
            term: metrics.current_term,
            last_log_index: metrics.last_log_index,
            last_applied_index: metrics.last_applied.map(|id| id.index),
            voters: membership.voter_ids().collect(),
            nodes: membership
                .nodes()
                .map(|(id, node)| (*id, node.addr.clone()))
                .collect(),
        }
    }
}
