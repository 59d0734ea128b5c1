//! The command line of a node and of a cluster's client, shared by the `artdb-server` binary
//! and the main `artdb` CLI (`artdb serve`, `artdb cluster ...`).
//!
//! A node keeps everything in one artdb database file in its `--dir`; it answers peers and
//! clients on one `--listen` address. Start every node with `serve`, then `init` one of them
//! with the full member list, once. Reads are linearizable (served by the leader after a read
//! index round) unless `--stale` asks any node for its own, possibly older, state.

use crate::client::Client;
use crate::tcp::{Node, TcpNetwork};
use crate::wire::Consistency;
use crate::{NodeId, Raft};
use clap::{Args, Subcommand};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// `text` as a whole number in `range`, or a message stating the range (clap prefixes the
/// option's name and exits with code 2).
pub fn whole_number_in(text: &str, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(number) if range.contains(&number) => Ok(number),
        _ => Err(format!(
            "must be a whole number from {} to {}",
            range.start(),
            range.end()
        )),
    }
}

/// A node id: 1 or more (openraft's ids are any `u64`; 0 is kept out so it can never be a
/// default mistaken for a node).
pub fn node_id(text: &str) -> Result<NodeId, String> {
    whole_number_in(text, 1..=u64::MAX)
}

/// The most milliseconds `--heartbeat-ms` accepts: elections time out after up to six
/// heartbeats, and a cluster that takes longer than a minute to notice a lost leader is a
/// mistake, not a setting.
pub const HEARTBEAT_MS_MAX: u64 = 10_000;

/// The fewest milliseconds `--heartbeat-ms` accepts: below it, timer and scheduling noise
/// alone would start elections.
pub const HEARTBEAT_MS_MIN: u64 = 10;

/// `serve --heartbeat-ms`: from [`HEARTBEAT_MS_MIN`] to [`HEARTBEAT_MS_MAX`].
pub fn heartbeat_ms(text: &str) -> Result<u64, String> {
    whole_number_in(text, HEARTBEAT_MS_MIN..=HEARTBEAT_MS_MAX)
}

/// `scan --limit`: any count (0 prints nothing).
pub fn scan_limit(text: &str) -> Result<usize, String> {
    let largest = u64::try_from(usize::MAX).unwrap_or(u64::MAX);
    let limit = whole_number_in(text, 0..=largest)?;
    Ok(usize::try_from(limit).unwrap_or(usize::MAX))
}

/// Runs `future` on a new multi-threaded runtime (the commands are one-shot programs).
pub fn block_on<T>(
    future: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::runtime::Runtime::new()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?
        .block_on(future)
}

/// `serve`: runs one node until it is stopped (SIGINT stops it cleanly; any other end, even
/// SIGKILL, is recovered from at the next start). Each setting comes from its flag, else from
/// the `--config` file, else its default.
#[derive(Args, Debug, Clone, Default)]
#[command(
    after_help = "A --config file is TOML with any of the flags' names, e.g.\n\n  \
                        id = 1\n  listen = \"127.0.0.1:7001\"\n  dir = \"/var/lib/artdb-1\"\n  \
                        heartbeat_ms = 100\n  log_level = \"info\"\n  log_format = \"json\""
)]
pub struct ServeArgs {
    /// A TOML file of the settings below (a flag given as well overrides it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// This node's id (unique in the cluster, never reused; 1 or more). Required, here or in
    /// the config file.
    #[arg(long, allow_negative_numbers = true, value_parser = node_id)]
    pub id: Option<NodeId>,
    /// Address to listen on for peers and clients, e.g. 127.0.0.1:7001. Required.
    #[arg(long)]
    pub listen: Option<String>,
    /// Directory of the node's database (created if absent). Required.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Raft heartbeat interval in milliseconds (elections time out after 3 to 6 of them;
    /// default 100).
    #[arg(long, allow_negative_numbers = true, value_parser = heartbeat_ms)]
    pub heartbeat_ms: Option<u64>,
    /// What to log to stderr: a level (error, warn, info, debug, trace) or per-module filters
    /// such as `warn,openraft=info` (default `warn`).
    #[arg(long)]
    pub log_level: Option<String>,
    /// How to log: `text` (default) or `json` (one object a line, for log collectors).
    #[arg(long)]
    pub log_format: Option<String>,
}

/// What a `--config` file may hold (every key optional; an unknown key is an error, so a typo
/// is not silently ignored).
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    id: Option<NodeId>,
    listen: Option<String>,
    dir: Option<PathBuf>,
    heartbeat_ms: Option<u64>,
    log_level: Option<String>,
    log_format: Option<String>,
}

/// The settings of a node, each resolved from its flag, the config file or its default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSettings {
    /// This node's id.
    pub id: NodeId,
    /// Where it listens.
    pub listen: String,
    /// Its database's directory.
    pub dir: PathBuf,
    /// Its heartbeat in milliseconds.
    pub heartbeat_ms: u64,
    /// The log filter.
    pub log_level: String,
    /// Whether logs are JSON lines.
    pub log_json: bool,
}

impl ServeArgs {
    /// The settings: flags over the config file over defaults; a missing required one, a bad
    /// file or a value out of range is an error naming it.
    pub fn settings(&self) -> Result<NodeSettings, String> {
        let file = match &self.config {
            None => ConfigFile::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
                toml::from_str(&text)
                    .map_err(|e| format!("the config file {}: {e}", path.display()))?
            }
        };
        let missing =
            |what: &str| format!("no {what}: give --{what} or `{what} = ...` in a --config file");
        let id = match self.id.or(file.id) {
            None => return Err(missing("id")),
            Some(0) => return Err("id in the config file must be 1 or more".to_string()),
            Some(id) => id,
        };
        let heartbeat = match (self.heartbeat_ms, file.heartbeat_ms) {
            (Some(ms), _) => ms,
            (None, Some(ms)) => heartbeat_ms(&ms.to_string())
                .map_err(|e| format!("heartbeat_ms in the config file {e}"))?,
            (None, None) => HEARTBEAT_MS_DEFAULT,
        };
        let log_format = self
            .log_format
            .clone()
            .or(file.log_format)
            .unwrap_or_else(|| "text".to_string());
        let log_json = match log_format.as_str() {
            "text" => false,
            "json" => true,
            other => return Err(format!("log format {other:?} is neither text nor json")),
        };
        Ok(NodeSettings {
            id,
            listen: self
                .listen
                .clone()
                .or(file.listen)
                .ok_or_else(|| missing("listen"))?,
            dir: self
                .dir
                .clone()
                .or(file.dir)
                .ok_or_else(|| missing("dir"))?,
            heartbeat_ms: heartbeat,
            log_level: self
                .log_level
                .clone()
                .or(file.log_level)
                .unwrap_or_else(|| "warn".to_string()),
            log_json,
        })
    }
}

/// Default of `serve --heartbeat-ms`.
pub const HEARTBEAT_MS_DEFAULT: u64 = 100;

/// Sends openraft's and this crate's `tracing` events to stderr, filtered by `level`.
fn start_logs(level: &str, json: bool) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .map_err(|e| format!("log level {level:?}: {e}"))?;
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A subscriber set already (a test running several nodes in one process) stays.
    let _ = if json {
        logs.json().try_init()
    } else {
        logs.with_ansi(false).try_init()
    };
    Ok(())
}

/// The commands that talk to a running cluster over TCP.
#[derive(Subcommand, Debug, Clone)]
pub enum ClusterCommand {
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
        #[arg(long, default_value_t = 100, allow_negative_numbers = true, value_parser = scan_limit)]
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
        #[arg(long, allow_negative_numbers = true, value_parser = node_id)]
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
        #[arg(long, value_delimiter = ',', required = true, allow_negative_numbers = true, value_parser = node_id)]
        voters: Vec<NodeId>,
    },
}

/// Runs one node (see [`ServeArgs`]) until SIGINT.
pub async fn serve(args: ServeArgs) -> Result<(), String> {
    let NodeSettings {
        id,
        listen,
        dir,
        heartbeat_ms,
        log_level,
        log_json,
    } = args.settings()?;
    start_logs(&log_level, log_json)?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("node.artdb");
    let (log_store, state_machine) = crate::open(&path, artdb::Options::default())
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
        "artdb: node {id} serving on {listen}, database {}",
        path.display()
    );
    let node = Arc::new(Node::new(raft.clone(), reader));
    tokio::select! {
        served = node.serve(listener) => served.map_err(|e| format!("the listener failed: {e}"))?,
        _ = tokio::signal::ctrl_c() => eprintln!("artdb: node {id} stopping"),
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

/// Runs one cluster command, printing what it read.
pub async fn run(command: ClusterCommand) -> Result<(), String> {
    let error = |e: crate::client::ClientError| e.to_string();
    match command {
        ClusterCommand::Init {
            node,
            members: specs,
        } => Client::new(vec![node])
            .initialize(members(&specs)?)
            .await
            .map_err(error),
        ClusterCommand::Status { node } => {
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
        ClusterCommand::Put { nodes, key, value } => {
            Client::new(nodes)
                .put(key.as_bytes(), value.as_bytes())
                .await
                .map_err(error)?;
            Ok(())
        }
        ClusterCommand::Get { nodes, stale, key } => {
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
        ClusterCommand::Delete { nodes, key } => {
            Client::new(nodes)
                .delete(key.as_bytes())
                .await
                .map_err(error)?;
            Ok(())
        }
        ClusterCommand::Scan {
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
        ClusterCommand::AddLearner { nodes, id, address } => Client::new(nodes)
            .add_learner(id, &address)
            .await
            .map_err(error),
        ClusterCommand::ChangeMembership { nodes, voters } => {
            let voters: BTreeSet<NodeId> = voters.into_iter().collect();
            Client::new(nodes)
                .change_membership(voters)
                .await
                .map_err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_file(text: &str, args: ServeArgs) -> Result<NodeSettings, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = dir.path().join("node.toml");
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        ServeArgs {
            config: Some(path),
            ..args
        }
        .settings()
    }

    #[test]
    fn flags_override_the_config_file_which_overrides_defaults() {
        let file = "id = 3\nlisten = \"127.0.0.1:7003\"\ndir = \"/d\"\nlog_format = \"json\"\n";
        let settings = with_file(file, ServeArgs::default()).unwrap();
        assert_eq!(
            settings,
            NodeSettings {
                id: 3,
                listen: "127.0.0.1:7003".to_string(),
                dir: PathBuf::from("/d"),
                heartbeat_ms: HEARTBEAT_MS_DEFAULT,
                log_level: "warn".to_string(),
                log_json: true,
            }
        );
        let flags = ServeArgs {
            id: Some(4),
            heartbeat_ms: Some(50),
            log_format: Some("text".to_string()),
            ..ServeArgs::default()
        };
        let settings = with_file(file, flags).unwrap();
        assert_eq!((settings.id, settings.heartbeat_ms), (4, 50));
        assert!(!settings.log_json);
        assert_eq!(settings.listen, "127.0.0.1:7003");
    }

    #[test]
    fn a_missing_setting_a_bad_value_or_an_unknown_key_is_an_error_naming_it() {
        let no_id = with_file("listen = \"a:1\"\ndir = \"/d\"\n", ServeArgs::default());
        assert!(no_id.unwrap_err().contains("no id"));
        let no_dir = ServeArgs {
            id: Some(1),
            listen: Some("a:1".to_string()),
            ..ServeArgs::default()
        }
        .settings();
        assert!(no_dir.unwrap_err().contains("no dir"));
        let zero = with_file(
            "id = 0\nlisten = \"a:1\"\ndir = \"/d\"\n",
            ServeArgs::default(),
        );
        assert!(zero.unwrap_err().contains("1 or more"));
        let fast = with_file(
            "id = 1\nlisten = \"a:1\"\ndir = \"/d\"\nheartbeat_ms = 1\n",
            ServeArgs::default(),
        );
        assert!(fast.unwrap_err().contains("from 10 to 10000"));
        let typo = with_file("id = 1\nlisen = \"a:1\"\n", ServeArgs::default());
        assert!(
            typo.unwrap_err().contains("lisen"),
            "unknown keys are refused"
        );
        let format = with_file(
            "id = 1\nlisten = \"a:1\"\ndir = \"/d\"\nlog_format = \"xml\"\n",
            ServeArgs::default(),
        );
        assert!(format.unwrap_err().contains("xml"));
        let unreadable = ServeArgs {
            config: Some(PathBuf::from("/nonexistent/node.toml")),
            ..ServeArgs::default()
        }
        .settings();
        assert!(unreadable.unwrap_err().contains("/nonexistent/node.toml"));
        assert!(start_logs("warn,openraft=[", false).is_err());
    }
}
