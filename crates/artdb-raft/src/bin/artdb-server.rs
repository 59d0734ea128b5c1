//! artdb-server: one node of a replicated artdb cluster (`serve`), and the commands that talk
//! to a cluster over TCP (`init`, `status`, `put`, `get`, `delete`, `scan`, `add-learner`,
//! `change-membership`).
//!
//! A node keeps everything in one artdb database file in its `--dir`; it answers peers and
//! clients on one `--listen` address. Start every node with `serve`, then `init` one of them
//! with the full member list, once. Reads are linearizable (served by the leader after a read
//! index round) unless `--stale` asks any node for its own, possibly older, state.

use artdb_raft::client::Client;
use artdb_raft::tcp::{Node, TcpNetwork};
use artdb_raft::wire::Consistency;
use artdb_raft::{NodeId, Raft};
use clap::{Parser, Subcommand};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "artdb-server",
    about = "A node of a replicated artdb cluster, and its client"
)]
struct Cli {
    #[command(subcommand)]
    command: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Runs one node until it is stopped.
    Serve {
        /// This node's id (unique in the cluster, never reused).
        #[arg(long)]
        id: NodeId,
        /// Address to listen on for peers and clients, e.g. 127.0.0.1:7001.
        #[arg(long)]
        listen: String,
        /// Directory of the node's database (created if absent).
        #[arg(long)]
        dir: PathBuf,
        /// Raft heartbeat interval in milliseconds (elections time out after 3 to 6 of them).
        #[arg(long, default_value_t = 100)]
        heartbeat_ms: u64,
    },
    /// Starts a new cluster from the node at --node with these members (id=address), once.
    Init {
        /// A node of the cluster.
        #[arg(long)]
        node: String,
        /// Members as id=address, e.g. 1=127.0.0.1:7001.
        #[arg(long = "member", required = true)]
        members: Vec<String>,
    },
    /// Prints a node's view of the cluster.
    Status {
        /// The node to ask.
        #[arg(long)]
        node: String,
    },
    /// Sets a key.
    Put {
        /// Nodes to try, comma-separated.
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// Prints a key's value.
    Get {
        /// Nodes to try, comma-separated (with --stale the first one answers).
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// Read the node's own state, which may be behind the leader's.
        #[arg(long)]
        stale: bool,
        /// The key.
        key: String,
    },
    /// Removes a key.
    Delete {
        /// Nodes to try, comma-separated.
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// The key.
        key: String,
    },
    /// Prints the pairs whose keys start with a prefix.
    Scan {
        /// Nodes to try, comma-separated.
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// Read the node's own state, which may be behind the leader's.
        #[arg(long)]
        stale: bool,
        /// Most pairs to print.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// The prefix (empty: every key).
        #[arg(default_value = "")]
        prefix: String,
    },
    /// Adds a node as a learner and waits until it caught up.
    AddLearner {
        /// Nodes to try, comma-separated.
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// The new node's id.
        #[arg(long)]
        id: NodeId,
        /// The new node's address.
        #[arg(long)]
        address: String,
    },
    /// Makes these nodes the voters (promotes learners, removes voters not named).
    ChangeMembership {
        /// Nodes to try, comma-separated.
        #[arg(long, value_delimiter = ',')]
        nodes: Vec<String>,
        /// The voters, comma-separated ids.
        #[arg(long, value_delimiter = ',', required = true)]
        voters: Vec<NodeId>,
    },
}

async fn serve(id: NodeId, listen: String, dir: PathBuf, heartbeat_ms: u64) -> Result<(), String> {
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("node.artdb");
    let (log_store, state_machine) = artdb_raft::open(&path, artdb::Options::default())
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let reader = state_machine.reader();
    let config = openraft::Config {
        cluster_name: "artdb".to_string(),
        heartbeat_interval: heartbeat_ms,
        election_timeout_min: heartbeat_ms * 3,
        election_timeout_max: heartbeat_ms * 6,
        ..openraft::Config::default()
    }
    .validate()
    .map_err(|e| format!("bad raft settings: {e}"))?;
    let raft = Raft::new(id, Arc::new(config), TcpNetwork, log_store, state_machine)
        .await
        .map_err(|e| format!("raft did not start: {e}"))?;
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    eprintln!(
        "artdb-server: node {id} serving on {listen}, database {}",
        path.display()
    );
    let node = Arc::new(Node {
        raft: raft.clone(),
        reader,
    });
    tokio::select! {
        served = node.serve(listener) => served.map_err(|e| format!("the listener failed: {e}"))?,
        _ = tokio::signal::ctrl_c() => eprintln!("artdb-server: node {id} stopping"),
    }
    raft.shutdown()
        .await
        .map_err(|e| format!("raft did not stop cleanly: {e}"))?;
    Ok(())
}

fn members(specs: &[String]) -> Result<BTreeMap<NodeId, String>, String> {
    specs
        .iter()
        .map(|spec| {
            let (id, address) = spec
                .split_once('=')
                .ok_or_else(|| format!("member {spec:?} is not id=address"))?;
            let id = id
                .parse()
                .map_err(|_| format!("member {spec:?}: {id:?} is not a node id"))?;
            Ok((id, address.to_string()))
        })
        .collect()
}

fn consistency(stale: bool) -> Consistency {
    if stale {
        Consistency::Stale
    } else {
        Consistency::Linearizable
    }
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn run(action: Action) -> Result<(), String> {
    let error = |e: artdb_raft::client::ClientError| e.to_string();
    match action {
        Action::Serve {
            id,
            listen,
            dir,
            heartbeat_ms,
        } => serve(id, listen, dir, heartbeat_ms).await,
        Action::Init {
            node,
            members: specs,
        } => Client::new(vec![node])
            .initialize(members(&specs)?)
            .await
            .map_err(error),
        Action::Status { node } => {
            let status = Client::new(vec![node]).status().await.map_err(error)?;
            println!(
                "node {} {} term {} leader {:?} last log {:?} applied {:?} voters {:?}",
                status.id,
                status.state,
                status.term,
                status.leader,
                status.last_log_index,
                status.last_applied_index,
                status.voters
            );
            for (id, address) in status.nodes {
                println!("  node {id} at {address}");
            }
            Ok(())
        }
        Action::Put { nodes, key, value } => {
            Client::new(nodes)
                .put(key.as_bytes(), value.as_bytes())
                .await
                .map_err(error)?;
            Ok(())
        }
        Action::Get { nodes, stale, key } => {
            match Client::new(nodes)
                .get(key.as_bytes(), consistency(stale))
                .await
                .map_err(error)?
            {
                Some(value) => println!("{}", show(&value)),
                None => return Err(format!("no key {key:?}")),
            }
            Ok(())
        }
        Action::Delete { nodes, key } => {
            Client::new(nodes)
                .delete(key.as_bytes())
                .await
                .map_err(error)?;
            Ok(())
        }
        Action::Scan {
            nodes,
            stale,
            limit,
            prefix,
        } => {
            let pairs = Client::new(nodes)
                .prefix(prefix.as_bytes(), limit, consistency(stale))
                .await
                .map_err(error)?;
            for (key, value) in pairs {
                println!("{} = {}", show(&key), show(&value));
            }
            Ok(())
        }
        Action::AddLearner { nodes, id, address } => Client::new(nodes)
            .add_learner(id, &address)
            .await
            .map_err(error),
        Action::ChangeMembership { nodes, voters } => {
            let voters: BTreeSet<NodeId> = voters.into_iter().collect();
            Client::new(nodes)
                .change_membership(voters)
                .await
                .map_err(error)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("artdb-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("artdb-server: {message}");
            ExitCode::FAILURE
        }
    }
}
