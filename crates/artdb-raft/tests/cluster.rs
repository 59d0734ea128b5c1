//! An in-process cluster of artdb-raft nodes on real database files in a temporary directory,
//! over an in-memory network that cuts and restores links (one-way too), under a seeded fault
//! schedule, with concurrent clients whose history is checked for linearizability.
//!
//! The run, on three nodes and on five: they elect a leader; clients write (put, delete, compare-and-set) through
//! the leader and read linearizably (openraft's read index: `ensure_linearizable`, then an
//! artdb read on the leader) while the schedule cuts links and heals them; the leader is killed
//! (its `Raft` shut down and its database dropped without a checkpoint, so it reopens by
//! replaying its log) and a new one must take over; while it is down the new leader builds a
//! snapshot and purges its log, so the killed node, restarted, must catch up by snapshot;
//! then one more node joins as a learner, is promoted, and a voter is removed. At the end every
//! live node must hold the same state at the same applied index, every key is read once more,
//! and the whole history must be linearizable; a copy of it with one read corrupted must not.
//!
//! Replay: the seed is printed; `ARTDB_RAFT_SEED=<seed> cargo test -p artdb-raft --test
//! cluster` runs the same schedule and the same client choices (thread timing still varies).

#[path = "cluster/history.rs"]
mod history;
#[path = "cluster/network.rs"]
mod network;

use artdb_raft::{Command, NodeId, Raft, Reader, Response};
use history::{Call, Event, History, Outcome, VALUE_UNREADABLE};
use network::Router;
use openraft::{BasicNode, Config, ServerState, SnapshotPolicy};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Keys the clients share (few, so that operations on a key overlap).
const KEYS: u32 = 3;
/// Concurrent clients.
const CLIENTS: usize = 3;
/// Longest wait for a client operation before its outcome counts as unknown.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait for the cluster to reach a state (a leader, a caught-up node).
const WAIT: Duration = Duration::from_secs(10);
/// Fault steps of the partition phase.
const FAULT_STEPS: usize = 6;

struct Node {
    raft: Raft,
    reader: Reader,
}

struct Cluster {
    dir: tempfile::TempDir,
    router: Router,
    config: Arc<Config>,
    nodes: Mutex<BTreeMap<NodeId, Node>>,
}

fn config() -> Arc<Config> {
    let config = Config {
        cluster_name: "artdb-raft-test".to_string(),
        heartbeat_interval: 50,
        election_timeout_min: 200,
        election_timeout_max: 400,
        // Snapshots only when the test asks, so that a snapshot on the restarted node can only
        // have come from the leader.
        snapshot_policy: SnapshotPolicy::Never,
        max_in_snapshot_log_to_keep: 0,
        purge_batch_size: 1,
        ..Config::default()
    };
    Arc::new(config.validate().expect("the test's raft config is valid"))
}

impl Cluster {
    fn new() -> Cluster {
        Cluster {
            dir: tempfile::tempdir().expect("a temporary directory"),
            router: Router::default(),
            config: config(),
            nodes: Mutex::new(BTreeMap::new()),
        }
    }

    fn nodes(&self) -> std::sync::MutexGuard<'_, BTreeMap<NodeId, Node>> {
        self.nodes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn path(&self, id: NodeId) -> PathBuf {
        self.dir.path().join(format!("node-{id}.artdb"))
    }

    /// Opens node `id`'s database (new or left by a kill) and starts its raft.
    async fn start(&self, id: NodeId) {
        let options = artdb::Options {
            checkpoint_on_drop: false,
            ..artdb::Options::default()
        };
        let (log_store, state_machine) =
            artdb_raft::open(self.path(id), options).expect("the node's database opens");
        let reader = state_machine.reader();
        let raft = Raft::new(
            id,
            Arc::clone(&self.config),
            self.router.network(id),
            log_store,
            state_machine,
        )
        .await
        .expect("raft starts");
        self.router.add(id, raft.clone());
        self.nodes().insert(id, Node { raft, reader });
    }

    /// Stops node `id` as a crash would leave it: unreachable at once, its raft shut down, its
    /// database dropped without a checkpoint.
    async fn kill(&self, id: NodeId) {
        self.router.remove(id);
        let node = self.nodes().remove(&id);
        if let Some(node) = node {
            let _ = node.raft.shutdown().await;
        }
    }

    fn raft(&self, id: NodeId) -> Option<Raft> {
        self.nodes().get(&id).map(|node| node.raft.clone())
    }

    /// The live node that a live node takes for the leader, and that says so itself.
    fn leader(&self) -> Option<(NodeId, Raft, Reader)> {
        let nodes = self.nodes();
        nodes.values().find_map(|node| {
            let metrics = node.raft.metrics().borrow().clone();
            let leader = nodes.get(&metrics.current_leader?)?;
            let own = leader.raft.metrics().borrow().clone();
            (own.state == ServerState::Leader)
                .then(|| (own.id, leader.raft.clone(), leader.reader.clone()))
        })
    }

    async fn wait_leader(&self, not: Option<NodeId>) -> NodeId {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some((id, _, _)) = self.leader() {
                if Some(id) != not {
                    return id;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no leader within {WAIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn value_bytes(value: u32) -> Vec<u8> {
    value.to_string().into_bytes()
}

fn value_of(bytes: Option<Vec<u8>>) -> Option<u32> {
    bytes.map(|bytes| {
        std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| text.parse().ok())
            .unwrap_or(VALUE_UNREADABLE)
    })
}

/// A write through the leader; `None` if no leader was known (nothing was sent).
async fn write(cluster: &Cluster, command: Command) -> Option<Option<Response>> {
    let (_, raft, _) = cluster.leader()?;
    let answer = tokio::time::timeout(CLIENT_TIMEOUT, raft.client_write(command)).await;
    // Every error counts as an unknown outcome: a leader that stepped down may or may not have
    // had the entry committed by its successor.
    Some(match answer {
        Ok(Ok(response)) => Some(response.data),
        _ => None,
    })
}

/// A linearizable read on the leader; `None` if it did not complete.
async fn read(cluster: &Cluster, key: &[u8]) -> Option<Option<Vec<u8>>> {
    let (_, raft, reader) = cluster.leader()?;
    let ensured = tokio::time::timeout(CLIENT_TIMEOUT, raft.ensure_linearizable()).await;
    match ensured {
        Ok(Ok(_)) => reader.get(key).ok(),
        _ => None,
    }
}

/// One client operation on `key`, recorded in `history`.
async fn client_step(
    cluster: &Cluster,
    history: &History,
    client: usize,
    rng: &mut StdRng,
    next: &mut u32,
) {
    let key = rng.gen_range(0..KEYS);
    let key_bytes = format!("key-{key}").into_bytes();
    let fresh = (client as u32 + 1) * 1_000_000 + *next;
    *next += 1;
    let choice = rng.gen_range(0..10);
    let invoked = history.now();
    if choice < 4 {
        if let Some(found) = read(cluster, &key_bytes).await {
            history.record(
                client,
                key,
                Call::Get,
                Outcome::Read(value_of(found)),
                invoked,
            );
        }
        return;
    }
    let (call, command) = match choice {
        4..=6 => (
            Call::Put(fresh),
            Command::Put {
                key: key_bytes,
                value: value_bytes(fresh),
            },
        ),
        7 => (Call::Delete, Command::Delete { key: key_bytes }),
        _ => {
            let expected = value_of(read(cluster, &key_bytes).await.flatten());
            (
                Call::CompareAndSet {
                    expected,
                    new: fresh,
                },
                Command::CompareAndSet {
                    key: key_bytes,
                    expected: expected.map(value_bytes),
                    new: Some(value_bytes(fresh)),
                },
            )
        }
    };
    let Some(answer) = write(cluster, command).await else {
        return;
    };
    let outcome = match answer {
        None => Outcome::Unknown,
        Some(Response::CompareAndSet { succeeded, .. }) => Outcome::CompareAndSet(succeeded),
        Some(Response::Written { .. }) => Outcome::Written,
        Some(other) => panic!("a client write answered {other:?}"),
    };
    history.record(client, key, call, outcome, invoked);
}

async fn run_clients(
    cluster: Arc<Cluster>,
    history: Arc<History>,
    seed: u64,
    stop: Arc<AtomicBool>,
) {
    let mut tasks = Vec::new();
    for client in 0..CLIENTS {
        let (cluster, history, stop) = (
            Arc::clone(&cluster),
            Arc::clone(&history),
            Arc::clone(&stop),
        );
        tasks.push(tokio::spawn(async move {
            let mut rng =
                StdRng::seed_from_u64(seed ^ (client as u64 + 1).wrapping_mul(0x9e37_79b9));
            let mut next = 0;
            while !stop.load(Ordering::SeqCst) {
                client_step(&cluster, &history, client, &mut rng, &mut next).await;
                tokio::time::sleep(Duration::from_millis(rng.gen_range(1..15))).await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("a client task ends");
    }
}

/// The partition phase: seeded cuts (one-way, both ways, a node isolated) and heals.
async fn partitions(cluster: &Cluster, rng: &mut StdRng, voters: &[NodeId]) {
    for step in 0..FAULT_STEPS {
        let a = voters[rng.gen_range(0..voters.len())];
        let b = voters[rng.gen_range(0..voters.len())];
        match rng.gen_range(0..4) {
            0 if a != b => cluster.router.cut(a, b),
            1 if a != b => {
                cluster.router.cut(a, b);
                cluster.router.cut(b, a);
            }
            2 => {
                for &other in voters.iter().filter(|&&other| other != a) {
                    cluster.router.cut(a, other);
                    cluster.router.cut(other, a);
                }
            }
            _ => cluster.router.heal(),
        }
        println!("fault step {step}: cut links {:?}", cluster.router.cuts());
        tokio::time::sleep(Duration::from_millis(rng.gen_range(200..600))).await;
    }
    cluster.router.heal();
}

/// Kills the leader, checks a new one takes over, snapshots and purges on it, restarts the old
/// leader and checks it caught up by snapshot.
async fn kill_leader_and_catch_up_by_snapshot(cluster: &Cluster) -> NodeId {
    let old = cluster.wait_leader(None).await;
    let old_last = cluster
        .raft(old)
        .and_then(|r| r.metrics().borrow().last_log_index)
        .unwrap_or(0);
    cluster.kill(old).await;
    println!("killed leader {old} at log index {old_last}");
    let new = cluster.wait_leader(Some(old)).await;
    println!("new leader {new}");
    let raft = cluster.raft(new).expect("the new leader is live");
    raft.wait(Some(WAIT))
        .metrics(
            |m| m.last_applied.is_some_and(|id| id.index >= old_last + 10),
            "writes after the kill",
        )
        .await
        .expect("writes go on under the new leader");
    raft.trigger().snapshot().await.expect("snapshot trigger");
    let metrics = raft
        .wait(Some(WAIT))
        .metrics(
            |m| m.snapshot.is_some_and(|id| id.index > old_last),
            "snapshot built",
        )
        .await
        .expect("the new leader builds a snapshot");
    let snapshot_index = metrics.snapshot.map(|id| id.index).unwrap_or(0);
    raft.trigger()
        .purge_log(snapshot_index)
        .await
        .expect("purge trigger");
    raft.wait(Some(WAIT))
        .metrics(
            |m| m.purged.is_some_and(|id| id.index >= snapshot_index),
            "log purged",
        )
        .await
        .expect("the new leader purges its log");
    cluster.start(old).await;
    let restarted = cluster.raft(old).expect("restarted");
    restarted
        .wait(Some(WAIT))
        .metrics(
            |m| m.snapshot.is_some_and(|id| id.index >= snapshot_index),
            "caught up by snapshot",
        )
        .await
        .expect("the restarted node installs the leader's snapshot");
    println!("node {old} caught up by a snapshot at index {snapshot_index}");
    new
}

/// Adds node `voters + 1` as a learner, promotes it, and removes voter `removed`.
async fn change_membership(cluster: &Cluster, voters: NodeId, removed: NodeId) -> BTreeSet<NodeId> {
    let joining = voters + 1;
    cluster.start(joining).await;
    let leader = cluster.wait_leader(None).await;
    let raft = cluster.raft(leader).expect("leader");
    raft.add_learner(joining, BasicNode::new(format!("node-{joining}")), true)
        .await
        .expect("the new node joins as a learner");
    let voters: BTreeSet<NodeId> = (1..=joining).collect();
    raft.change_membership(voters.clone(), false)
        .await
        .expect("the new node is promoted");
    let remaining: BTreeSet<NodeId> = voters.iter().copied().filter(|&id| id != removed).collect();
    let leader = cluster.wait_leader(None).await;
    let raft = cluster.raft(leader).expect("leader");
    raft.change_membership(remaining.clone(), false)
        .await
        .expect("a voter is removed");
    let metrics = raft.metrics().borrow().clone();
    let members: BTreeSet<NodeId> = metrics.membership_config.membership().voter_ids().collect();
    assert_eq!(
        members, remaining,
        "the membership after removing {removed}"
    );
    println!("membership now {members:?}");
    remaining
}

/// Waits until every node in `members` applied the leader's last log index, then checks they
/// all hold the same state at the same applied id.
async fn check_same_state(cluster: &Cluster, members: &BTreeSet<NodeId>) {
    let leader = cluster.wait_leader(None).await;
    let raft = cluster.raft(leader).expect("leader");
    let last = raft.metrics().borrow().last_log_index;
    let mut states = Vec::new();
    for &id in members {
        let node = cluster.raft(id).expect("a member is live");
        node.wait(Some(WAIT))
            .applied_index_at_least(last, "caught up")
            .await
            .expect("every member applies the leader's log");
        let reader = cluster
            .nodes()
            .get(&id)
            .map(|n| n.reader.clone())
            .expect("reader");
        states.push((id, reader.state().expect("the state reads")));
    }
    let (first_id, first) = &states[0];
    for (id, state) in &states[1..] {
        assert_eq!(
            state.applied, first.applied,
            "nodes {first_id} and {id} applied different ids"
        );
        assert_eq!(
            state.pairs, first.pairs,
            "nodes {first_id} and {id} differ at {:?}",
            state.applied
        );
    }
    println!(
        "{} members agree on {} keys at {:?}",
        states.len(),
        first.pairs.len(),
        first.applied
    );
}

fn corrupt_one_read(events: &[Event]) -> Vec<Event> {
    let mut corrupted = events.to_vec();
    let read = corrupted
        .iter_mut()
        .rev()
        .find(|e| matches!(e.outcome, Outcome::Read(_)))
        .expect("the history has a completed read");
    read.outcome = Outcome::Read(Some(VALUE_UNREADABLE - 1));
    corrupted
}

/// The history with one read made stale: it returns a value that a completed put had written
/// before another completed put overwrote it, both before the read was invoked (values are
/// unique, so no later write brings it back). `None` if the history holds no such triple.
fn make_one_read_stale(events: &[Event]) -> Option<Vec<Event>> {
    let puts: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.call, Call::Put(_)) && e.outcome == Outcome::Written)
        .collect();
    for (index, read) in events.iter().enumerate() {
        if !matches!(read.outcome, Outcome::Read(_)) {
            continue;
        }
        let overwritten = puts.iter().find_map(|old| {
            let Call::Put(value) = old.call else {
                return None;
            };
            let overwriter = puts.iter().any(|new| {
                new.key == read.key && new.invoked > old.returned && new.returned < read.invoked
            });
            (old.key == read.key && overwriter).then_some(value)
        });
        if let Some(value) = overwritten {
            let mut stale = events.to_vec();
            stale[index].outcome = Outcome::Read(Some(value));
            return Some(stale);
        }
    }
    None
}

/// The whole run (module docs) on `voters` nodes.
async fn run(voters: NodeId) {
    let seed: u64 = std::env::var("ARTDB_RAFT_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(rand::random);
    println!("{voters}-node cluster seed {seed} (replay: ARTDB_RAFT_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);
    let cluster = Arc::new(Cluster::new());
    let ids: Vec<NodeId> = (1..=voters).collect();
    for &id in &ids {
        cluster.start(id).await;
    }
    let members: BTreeMap<NodeId, BasicNode> = ids
        .iter()
        .map(|&id| (id, BasicNode::new(format!("node-{id}"))))
        .collect();
    cluster
        .raft(1)
        .expect("node 1")
        .initialize(members)
        .await
        .expect("the cluster initializes");
    let first = cluster.wait_leader(None).await;
    println!("first leader {first}");

    let history = Arc::new(History::default());
    let stop = Arc::new(AtomicBool::new(false));
    let clients = tokio::spawn(run_clients(
        Arc::clone(&cluster),
        Arc::clone(&history),
        seed,
        Arc::clone(&stop),
    ));

    partitions(&cluster, &mut rng, &ids).await;
    let leader = kill_leader_and_catch_up_by_snapshot(&cluster).await;
    let removable: Vec<NodeId> = ids.iter().copied().filter(|&id| id != leader).collect();
    let removed = removable[rng.gen_range(0..removable.len())];
    let members = change_membership(&cluster, voters, removed).await;
    cluster.kill(removed).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    clients.await.expect("the clients end");

    check_same_state(&cluster, &members).await;
    for key in 0..KEYS {
        let invoked = history.now();
        let found = read(&cluster, format!("key-{key}").as_bytes())
            .await
            .expect("a final read completes");
        history.record(
            usize::MAX,
            key,
            Call::Get,
            Outcome::Read(value_of(found)),
            invoked,
        );
    }
    let events = history.events();
    let unknown = events
        .iter()
        .filter(|e| e.outcome == Outcome::Unknown)
        .count();
    println!(
        "history: {} operations, {unknown} with unknown outcome",
        events.len()
    );
    assert!(
        events.len() > 50,
        "too few operations ({}) to check anything",
        events.len()
    );
    if let Err(problem) = history::check(&events) {
        panic!("not linearizable (seed {seed}): {problem}");
    }
    assert!(
        history::check(&corrupt_one_read(&events)).is_err(),
        "a corrupted read was not caught (seed {seed})"
    );
    let stale = make_one_read_stale(&events).expect("the history has a read after two puts");
    assert!(
        history::check(&stale).is_err(),
        "a stale read was not caught (seed {seed})"
    );
    for id in members {
        cluster.kill(id).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_under_faults_stay_linearizable() {
    run(3).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_nodes_under_faults_stay_linearizable() {
    run(5).await;
}
