//! The in-memory network of the cluster test: each RPC is a direct call of the target node's
//! `Raft` handle, through a router that knows which nodes are up and which links are cut.
//!
//! Links are one-way: a cut `a -> b` loses every request from `a` to `b` and every response
//! from `a` to `b` (so a request `b -> a` is carried out by `a` but `b` never hears the answer,
//! as with a real lost reply). Cutting both directions is a partition.

use artdb_raft::{NodeId, Raft, TypeConfig};
use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct RouterState {
    nodes: BTreeMap<NodeId, Raft>,
    cut: BTreeSet<(NodeId, NodeId)>,
}

/// Which nodes are up and which links are cut; shared by every node's network.
#[derive(Clone, Default)]
pub struct Router {
    state: Arc<Mutex<RouterState>>,
}

#[derive(Debug)]
struct LinkDown {
    from: NodeId,
    to: NodeId,
}

impl std::fmt::Display for LinkDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the link {} -> {} is cut or the node is down",
            self.from, self.to
        )
    }
}

impl std::error::Error for LinkDown {}

impl Router {
    fn lock(&self) -> std::sync::MutexGuard<'_, RouterState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Makes `raft` reachable as node `id`.
    pub fn add(&self, id: NodeId, raft: Raft) {
        self.lock().nodes.insert(id, raft);
    }

    /// Makes node `id` unreachable and returns its handle.
    pub fn remove(&self, id: NodeId) -> Option<Raft> {
        self.lock().nodes.remove(&id)
    }

    /// Cuts the link `from -> to`.
    pub fn cut(&self, from: NodeId, to: NodeId) {
        self.lock().cut.insert((from, to));
    }

    /// Restores every link.
    pub fn heal(&self) {
        self.lock().cut.clear();
    }

    /// The cut links.
    pub fn cuts(&self) -> Vec<(NodeId, NodeId)> {
        self.lock().cut.iter().copied().collect()
    }

    /// The target's handle if `from -> to` is up.
    fn route(&self, from: NodeId, to: NodeId) -> Result<Raft, Unreachable> {
        let state = self.lock();
        match state.nodes.get(&to) {
            Some(raft) if !state.cut.contains(&(from, to)) => Ok(raft.clone()),
            _ => Err(Unreachable::new(&LinkDown { from, to })),
        }
    }

    /// Whether the answer `to -> from` gets through (checked after the call).
    fn reply(&self, from: NodeId, to: NodeId) -> Result<(), Unreachable> {
        let state = self.lock();
        if state.cut.contains(&(to, from)) || !state.nodes.contains_key(&from) {
            return Err(Unreachable::new(&LinkDown { from: to, to: from }));
        }
        Ok(())
    }

    /// The network of node `from`.
    pub fn network(&self, from: NodeId) -> Network {
        Network {
            router: self.clone(),
            from,
        }
    }
}

/// One node's view of the network.
pub struct Network {
    router: Router,
    from: NodeId,
}

/// A node's connection to one target.
pub struct Connection {
    router: Router,
    from: NodeId,
    to: NodeId,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Connection {
        Connection {
            router: self.router.clone(),
            from: self.from,
            to: target,
        }
    }
}

type Rpc<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl Connection {
    // The error type is openraft's, fixed by `RaftNetwork`'s signatures.
    #[allow(clippy::result_large_err)]
    fn finish<T, E: std::error::Error>(
        &self,
        result: Result<T, RaftError<NodeId, E>>,
    ) -> Rpc<T, E> {
        self.router.reply(self.from, self.to)?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.to, e)))
    }
}

impl RaftNetwork<TypeConfig> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Rpc<AppendEntriesResponse<NodeId>> {
        let raft = self.router.route(self.from, self.to)?;
        let result = raft.append_entries(rpc).await;
        self.finish(result)
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Rpc<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        let raft = self.router.route(self.from, self.to)?;
        let result = raft.install_snapshot(rpc).await;
        self.finish(result)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Rpc<VoteResponse<NodeId>> {
        let raft = self.router.route(self.from, self.to)?;
        let result = raft.vote(rpc).await;
        self.finish(result)
    }
}
