//! W8: a replicated cluster on loopback (issue "past one machine", `shared/BENCHMARKS.md` W8):
//! three artdb nodes (artdb-raft on openraft, each a real process: this binary's hidden
//! `w8-node`, which runs `artdb serve`'s code) beside three etcd members (Debian's
//! `etcd-server`, driven through its HTTP/JSON gateway by a small HTTP/1.1 client here), and one
//! artdb node alone as a one-node cluster. The same client load runs against each, every client
//! one tokio task with its own connection:
//! - durable writes: 1, 8 and 32 clients each putting new keys (100-byte values) one at a time
//!   for `--seconds`; writes/s and the p50/p99 latency of one put;
//! - linearizable reads: 32 clients reading random written keys (artdb's go to the leader,
//!   which confirms its leadership by a read index round; etcd's are spread over the members,
//!   as its own client spreads them, and each member runs etcd's read index);
//! - stale reads: 32 clients spread over the members, each read served from the member's own
//!   state (artdb `Consistency::Stale`, etcd `serializable`), after a barrier write is seen on
//!   every member so that every written key must be there;
//! - a killed node: SIGKILL a follower, write while it is down, restart it; `open_s` is until
//!   it answers at all (its database opened and its own log replayed), `back_s` until a stale
//!   read on it returns the barrier written after the last write of its downtime (it caught up
//!   with the leader's applied index);
//! - a new node: bulk-load `--keys` keys (multi-key transactions), start a fourth node, add it
//!   as a learner and promote it to voter; `add_s` from its start to the promotion, and the new
//!   member's peak resident memory (`VmHWM`) once it has caught up and been read back.
//!
//! Every read is checked against the value its key was written with (a value is a function of
//! its key); a wrong or missing value fails the run. Without an `etcd` binary the run says so
//! and measures artdb only, unless `ARTDB_REQUIRE_ETCD=1`.
//! JSON: `{"workload":"w8","seconds":S,"keys":N,"results":[{"system","metric","clients"?,
//! "value"}],"not_run":[{"system","why"}],"peers":{...},"etcd":"version"}`.

use crate::kv::Res;
use artdb_raft::client::Client;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of W8.
#[derive(clap::Args)]
pub struct Args {
    /// Quick scale (CI smoke): phases of 0.5 s, 2,000 keys held when a node is added.
    #[arg(long)]
    quick: bool,
    /// Length of each load phase in seconds (default 5; quick 0.5).
    #[arg(long)]
    seconds: Option<f64>,
    /// Keys bulk-loaded before a node is added (default 1,000,000; quick 2,000).
    #[arg(long)]
    keys: Option<u64>,
    /// Directory for the nodes' data (deleted after each system's run).
    #[arg(long, default_value = "target/w8-data")]
    dir: PathBuf,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Systems, comma-separated, of artdb, etcd and artdb-1 (one node alone); default all.
    #[arg(long)]
    systems: Option<String>,
}

/// Concurrent clients of the write phases.
const WRITE_CLIENTS: [usize; 3] = [1, 8, 32];
/// Concurrent clients of the read phases.
const READ_CLIENTS: usize = 32;
/// Bytes of every value.
const VALUE_BYTES: usize = 100;
/// Puts per transaction of the bulk load (etcd refuses more than 128 operations in one
/// transaction by default).
const LOAD_BATCH: usize = 128;
/// Clients of the bulk load and of the writes while a node is down.
const LOAD_CLIENTS: usize = 8;
/// Keys read back from a restarted or new node to check it.
const CHECK_KEYS: usize = 500;
/// Longest wait for a node or member to start, elect or catch up.
const WAIT_MAX: Duration = Duration::from_secs(60);
/// Longest wait for etcd's answer to one request.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// The barrier key (written after a phase's writes; its presence on a member means every
/// earlier write was applied there, since a log is applied in order).
const BARRIER: &[u8] = b"w8/barrier";

/// The value written under `key` (a function of the key, so every read can be checked).
fn value_of(key: &[u8]) -> Vec<u8> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
    }
    let word = format!("{hash:016x}");
    word.bytes().cycle().take(VALUE_BYTES).collect()
}

fn key_of(phase: &str, client: usize, i: u64) -> Vec<u8> {
    format!("w8/{phase}/{client:02}/{i:010}").into_bytes()
}

/// The barrier's value at `round` (each round writes a new one).
fn barrier_value(round: u64) -> Vec<u8> {
    format!("barrier {round}").into_bytes()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sys {
    Artdb,
    Etcd,
    ArtdbAlone,
}

impl Sys {
    fn name(self) -> &'static str {
        match self {
            Sys::Artdb => "artdb",
            Sys::Etcd => "etcd",
            Sys::ArtdbAlone => "artdb-1",
        }
    }

    fn parse_list(list: &str) -> Res<Vec<Sys>> {
        list.split(',')
            .filter(|name| !name.is_empty())
            .map(|name| match name {
                "artdb" => Ok(Sys::Artdb),
                "etcd" => Ok(Sys::Etcd),
                "artdb-1" => Ok(Sys::ArtdbAlone),
                other => Err(format!("unknown W8 system {other:?} (artdb, etcd, artdb-1)").into()),
            })
            .collect()
    }
}

/// A free loopback port (bound, then released for the node to take).
fn free_port() -> Res<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

mod http;
use http::{Conn, Http};

// ---------------------------------------------------------------- the clusters

/// A node or member process and what it takes to restart it.
struct Member {
    id: u64,
    client_address: String,
    command: Vec<String>,
    log: PathBuf,
    child: Option<Child>,
}

impl Member {
    fn start(&mut self) -> Res<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)?;
        let mut command = Command::new(&self.command[0]);
        // SAFETY: the closure runs in the child between fork and exec and only makes one
        // async-signal-safe system call.
        unsafe {
            use std::os::unix::process::CommandExt;
            // A member dies with this process, so an interrupted run leaves none behind.
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .args(&self.command[1..])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.command[0]))?;
        self.child = Some(child);
        Ok(())
    }

    /// The process's peak resident memory (Linux `VmHWM`), in MiB.
    fn peak_rss_mib(&self) -> Option<f64> {
        let pid = self.child.as_ref()?.id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
        let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib / 1024.0)
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}

struct Cluster {
    system: Sys,
    dir: PathBuf,
    members: Vec<Member>,
    /// etcd's peer URLs, by member id (the initial cluster of a new member).
    peer_urls: BTreeMap<u64, String>,
}

fn artdb_member(dir: &Path, id: u64) -> Res<Member> {
    let exe = std::env::current_exe()?;
    let address = format!("127.0.0.1:{}", free_port()?);
    let node_dir = dir.join(format!("node-{id}"));
    Ok(Member {
        id,
        client_address: address.clone(),
        command: vec![
            exe.display().to_string(),
            "w8-node".into(),
            "--id".into(),
            id.to_string(),
            "--listen".into(),
            address,
            "--dir".into(),
            node_dir.display().to_string(),
        ],
        log: dir.join(format!("node-{id}.log")),
        child: None,
    })
}

fn etcd_member(
    dir: &Path,
    id: u64,
    peer_url: &str,
    initial_cluster: &str,
    state: &str,
) -> Res<Member> {
    let client_url = format!("http://127.0.0.1:{}", free_port()?);
    let command: Vec<String> = [
        "etcd",
        "--name",
        &format!("m{id}"),
        "--data-dir",
        &dir.join(format!("m{id}")).display().to_string(),
        "--listen-client-urls",
        &client_url,
        "--advertise-client-urls",
        &client_url,
        "--listen-peer-urls",
        peer_url,
        "--initial-advertise-peer-urls",
        peer_url,
        "--initial-cluster",
        initial_cluster,
        "--initial-cluster-state",
        state,
        "--initial-cluster-token",
        "w8",
        "--logger",
        "zap",
        "--log-level",
        "error",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Ok(Member {
        id,
        client_address: client_url.trim_start_matches("http://").to_string(),
        command,
        log: dir.join(format!("m{id}.log")),
        child: None,
    })
}

fn initial_cluster(peer_urls: &BTreeMap<u64, String>) -> String {
    peer_urls
        .iter()
        .map(|(id, url)| format!("m{id}={url}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A wait for something to become ready, up to [`WAIT_MAX`].
struct Waiting {
    what: &'static str,
    start: Instant,
}

impl Waiting {
    fn new(what: &'static str) -> Waiting {
        Waiting {
            what,
            start: Instant::now(),
        }
    }

    /// Pauses before the next try, or fails with `last` once [`WAIT_MAX`] has passed.
    async fn retry(&self, last: impl std::fmt::Display) -> Res<()> {
        if self.start.elapsed() > WAIT_MAX {
            return Err(format!("{}: not ready after {WAIT_MAX:?} ({last})", self.what).into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        Ok(())
    }
}

/// Waits until the artdb node at `address` answers.
async fn wait_artdb_answers(address: &str, what: &'static str) -> Res<()> {
    let waiting = Waiting::new(what);
    loop {
        match Client::new(vec![address.to_string()]).status().await {
            Ok(_) => return Ok(()),
            Err(error) => waiting.retry(error).await?,
        }
    }
}

impl Cluster {
    async fn start(system: Sys, dir: &Path) -> Res<Cluster> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)?;
        let size = if system == Sys::ArtdbAlone { 1 } else { 3 };
        let mut cluster = Cluster {
            system,
            dir: dir.to_path_buf(),
            members: Vec::new(),
            peer_urls: BTreeMap::new(),
        };
        if system == Sys::Etcd {
            for id in 1..=size {
                let url = format!("http://127.0.0.1:{}", free_port()?);
                cluster.peer_urls.insert(id, url);
            }
            let initial = initial_cluster(&cluster.peer_urls);
            for id in 1..=size {
                let url = cluster.peer_urls[&id].clone();
                cluster
                    .members
                    .push(etcd_member(dir, id, &url, &initial, "new")?);
            }
        } else {
            for id in 1..=size {
                cluster.members.push(artdb_member(dir, id)?);
            }
        }
        for member in &mut cluster.members {
            member.start()?;
        }
        if system != Sys::Etcd {
            for member in &cluster.members {
                wait_artdb_answers(&member.client_address, "a node's first answer").await?;
            }
            let members = cluster
                .members
                .iter()
                .map(|m| (m.id, m.client_address.clone()))
                .collect();
            Client::new(vec![cluster.members[0].client_address.clone()])
                .initialize(members)
                .await?;
        }
        let mut conn = cluster.conn(0);
        let waiting = Waiting::new("a leader");
        while let Err(error) = conn.put(b"w8/hello", b"hello").await {
            waiting.retry(error).await?;
        }
        Ok(cluster)
    }

    /// A client that starts at the `index`-th running member (artdb's follows redirects to
    /// the leader; etcd's member forwards writes to its leader).
    fn conn(&self, index: usize) -> Conn {
        let running: Vec<&Member> = self.members.iter().filter(|m| m.child.is_some()).collect();
        let member = running[index % running.len()];
        match self.system {
            Sys::Etcd => Conn::Etcd(Http::new(member.client_address.clone())),
            _ => {
                let mut addresses = vec![member.client_address.clone()];
                addresses.extend(
                    self.members
                        .iter()
                        .map(|m| m.client_address.clone())
                        .filter(|a| *a != member.client_address),
                );
                Conn::Artdb(Client::new(addresses))
            }
        }
    }

    /// A client of the leader for artdb (reads there are linearizable), of member `index` for
    /// etcd (every member serves linearizable reads).
    fn linearizable_conn(&self, index: usize) -> Conn {
        match self.system {
            Sys::Etcd => self.conn(index),
            _ => self.conn(0),
        }
    }

    /// Index of a member that is not the leader.
    async fn follower(&self) -> Res<usize> {
        match self.system {
            Sys::Etcd => {
                let mut http = Http::new(self.members[0].client_address.clone());
                let status = http
                    .call("/v3/maintenance/status", serde_json::json!({}))
                    .await?;
                let leader = status["leader"].as_str().unwrap_or("").to_string();
                for (index, member) in self.members.iter().enumerate() {
                    let mut http = Http::new(member.client_address.clone());
                    let status = http
                        .call("/v3/maintenance/status", serde_json::json!({}))
                        .await?;
                    if status["header"]["member_id"].as_str() != Some(leader.as_str()) {
                        return Ok(index);
                    }
                }
                Err("every etcd member says it leads".into())
            }
            _ => {
                for (index, member) in self.members.iter().enumerate() {
                    let status = Client::new(vec![member.client_address.clone()])
                        .status()
                        .await?;
                    if status.leader.is_some() && status.leader != Some(status.id) {
                        return Ok(index);
                    }
                }
                Err("no artdb node is a follower".into())
            }
        }
    }

    /// Writes barrier `round`, then waits until every running member serves it stale.
    async fn barrier(&self, round: u64) -> Res<()> {
        self.conn(0).put(BARRIER, &barrier_value(round)).await?;
        for index in 0..self.members.len() {
            if self.members[index].child.is_some() {
                self.wait_barrier(index, round).await?;
            }
        }
        Ok(())
    }

    async fn wait_barrier(&self, index: usize, round: u64) -> Res<()> {
        let mut conn = self.stale_conn(index);
        let expected = barrier_value(round);
        let waiting = Waiting::new("a member to apply the barrier");
        loop {
            match conn.get(BARRIER, true).await {
                Ok(Some(value)) if value == expected => return Ok(()),
                Ok(other) => waiting.retry(format!("it holds {other:?}")).await?,
                Err(error) => waiting.retry(error).await?,
            }
        }
    }

    /// A client that reads member `index`'s own state (no redirect).
    fn stale_conn(&self, index: usize) -> Conn {
        let address = self.members[index].client_address.clone();
        match self.system {
            Sys::Etcd => Conn::Etcd(Http::new(address)),
            _ => Conn::Artdb(Client::new(vec![address])),
        }
    }

    fn stop(mut self) {
        for member in &mut self.members {
            member.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// ---------------------------------------------------------------- the phases

/// What one write phase did: per client, how many keys it wrote; the latencies in us.
struct Written {
    phase: String,
    per_client: Vec<u64>,
    latencies_us: Vec<u32>,
    seconds: f64,
}

impl Written {
    fn keys(&self) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        for (client, count) in self.per_client.iter().enumerate() {
            for i in 0..*count {
                keys.push(key_of(&self.phase, client, i));
            }
        }
        keys
    }

    fn total(&self) -> u64 {
        self.per_client.iter().sum()
    }
}

fn percentile_ms(sorted_us: &[u32], fraction: f64) -> f64 {
    if sorted_us.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted_us.len() as f64 * fraction) as usize).min(sorted_us.len() - 1);
    f64::from(sorted_us[index]) / 1000.0
}

/// `clients` clients each putting new keys of `phase` for `run_for`.
async fn write_phase(
    cluster: &Cluster,
    phase: &str,
    clients: usize,
    run_for: Duration,
) -> Res<Written> {
    let start = Instant::now();
    let deadline = start + run_for;
    let mut tasks = Vec::new();
    for client in 0..clients {
        let mut conn = cluster.conn(client);
        let phase = phase.to_string();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut i = 0;
            while Instant::now() < deadline {
                let key = key_of(&phase, client, i);
                let began = Instant::now();
                conn.put(&key, &value_of(&key)).await?;
                latencies.push(u32::try_from(began.elapsed().as_micros()).unwrap_or(u32::MAX));
                i += 1;
            }
            Res::Ok((i, latencies))
        }));
    }
    let mut written = Written {
        phase: phase.to_string(),
        per_client: Vec::new(),
        latencies_us: Vec::new(),
        seconds: 0.0,
    };
    for task in tasks {
        let (count, latencies) = task.await??;
        written.per_client.push(count);
        written.latencies_us.extend(latencies);
    }
    written.seconds = start.elapsed().as_secs_f64();
    written.latencies_us.sort_unstable();
    Ok(written)
}

/// `READ_CLIENTS` clients reading random keys of `keys` for `run_for`, each read checked;
/// reads/s.
async fn read_phase(
    cluster: &Cluster,
    keys: &Arc<Vec<Vec<u8>>>,
    stale: bool,
    run_for: Duration,
) -> Res<f64> {
    let start = Instant::now();
    let deadline = start + run_for;
    let mut tasks = Vec::new();
    for client in 0..READ_CLIENTS {
        let mut conn = if stale {
            cluster.stale_conn(client % cluster.members.len())
        } else {
            cluster.linearizable_conn(client)
        };
        let keys = Arc::clone(keys);
        tasks.push(tokio::spawn(async move {
            let mut rng = crate::w6r_rng(0x5eed ^ client as u64);
            let mut reads = 0u64;
            while Instant::now() < deadline {
                let key = &keys[(rng() % keys.len() as u64) as usize];
                conn.check(key, &value_of(key), stale).await?;
                reads += 1;
            }
            Res::Ok(reads)
        }));
    }
    let mut reads = 0;
    for task in tasks {
        reads += task.await??;
    }
    Ok(reads as f64 / start.elapsed().as_secs_f64())
}

/// Puts `keys` keys of `phase` as transactions of [`LOAD_BATCH`] from [`LOAD_CLIENTS`]
/// clients; keys/s.
async fn bulk_load(cluster: &Cluster, phase: &str, keys: u64) -> Res<f64> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    let per_client = keys.div_ceil(LOAD_CLIENTS as u64);
    for client in 0..LOAD_CLIENTS {
        let mut conn = cluster.conn(client);
        let phase = phase.to_string();
        let first = client as u64 * per_client;
        let end = (first + per_client).min(keys);
        tasks.push(tokio::spawn(async move {
            let mut i = first;
            while i < end {
                let last = (i + LOAD_BATCH as u64).min(end);
                let pairs: Vec<(Vec<u8>, Vec<u8>)> = (i..last)
                    .map(|i| {
                        let key = key_of(&phase, 0, i);
                        let value = value_of(&key);
                        (key, value)
                    })
                    .collect();
                conn.put_all(&pairs).await?;
                i = last;
            }
            Res::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(keys as f64 / start.elapsed().as_secs_f64())
}

/// Reads a sample of `keys` from member `index`'s own state, each checked.
async fn check_member(cluster: &Cluster, index: usize, keys: &[Vec<u8>]) -> Res<()> {
    let mut conn = cluster.stale_conn(index);
    let step = (keys.len() / CHECK_KEYS).max(1);
    for key in keys.iter().step_by(step) {
        conn.check(key, &value_of(key), true).await?;
    }
    Ok(())
}

/// SIGKILLs a follower, writes while it is down, restarts it: (open_s, back_s).
async fn kill_and_restart(cluster: &mut Cluster, down_writes: u64) -> Res<(f64, f64)> {
    let index = cluster.follower().await?;
    cluster.members[index].kill();
    bulk_load(cluster, "down", down_writes).await?;
    cluster.barrier(2).await?;
    let start = Instant::now();
    cluster.members[index].start()?;
    let address = cluster.members[index].client_address.clone();
    match cluster.system {
        Sys::Etcd => {
            let waiting = Waiting::new("the restarted member's first answer");
            let body = serde_json::json!({});
            while let Err(error) = Http::new(address.clone())
                .post("/v3/maintenance/status", &body)
                .await
            {
                waiting.retry(error).await?;
            }
        }
        _ => wait_artdb_answers(&address, "the restarted node's first answer").await?,
    }
    let open_s = start.elapsed().as_secs_f64();
    cluster.wait_barrier(index, 2).await?;
    let back_s = start.elapsed().as_secs_f64();
    let keys: Vec<Vec<u8>> = (0..down_writes).map(|i| key_of("down", 0, i)).collect();
    check_member(cluster, index, &keys).await?;
    Ok((open_s, back_s))
}

/// Starts a fourth member and makes it a voter: seconds from its start to its promotion.
/// Adds a member; returns the seconds it took and the new member's peak memory in MiB.
async fn add_member(cluster: &mut Cluster, keys: &[Vec<u8>]) -> Res<(f64, Option<f64>)> {
    let id = cluster.members.len() as u64 + 1;
    let start;
    match cluster.system {
        Sys::Etcd => {
            let url = format!("http://127.0.0.1:{}", free_port()?);
            // A new connection for each membership call: after an answer the gateway closes
            // oddly (a trailer past the body), a kept connection reads the next status line
            // from the middle of a header.
            let address = cluster.members[0].client_address.clone();
            // etcd refuses to change its membership until every member has been connected
            // for a few seconds (a restarted one too): the clock starts at the accepted add.
            let waiting = Waiting::new("etcd to accept a new member");
            let body = serde_json::json!({"peerURLs": [url], "isLearner": true});
            // An attempt refused or unanswered may still have been applied: the next one then
            // finds the peer URL (a port picked for this member alone) taken, and the member is
            // read back from the list; the clock starts at the first such attempt.
            let mut unanswered_since: Option<Instant> = None;
            let added = loop {
                let attempt = Instant::now();
                match Http::new(address.clone())
                    .post("/v3/cluster/member/add", &body)
                    .await
                {
                    Ok((200, json)) => {
                        start = attempt;
                        break json;
                    }
                    Ok((_, json)) if json.to_string().contains("Peer URLs already exists") => {
                        let (_, list) = Http::new(address.clone())
                            .post("/v3/cluster/member/list", &serde_json::json!({}))
                            .await?;
                        let member = list["members"]
                            .as_array()
                            .and_then(|members| {
                                members.iter().find(|member| {
                                    member["peerURLs"]
                                        .as_array()
                                        .is_some_and(|urls| urls.iter().any(|u| u == &url))
                                })
                            })
                            .cloned()
                            .ok_or_else(|| format!("etcd's member list lacks {url}: {list}"))?;
                        start = unanswered_since.unwrap_or(attempt);
                        break serde_json::json!({ "member": member });
                    }
                    Ok((status, json)) => {
                        unanswered_since.get_or_insert(attempt);
                        waiting.retry(format!("{status} {json}")).await?
                    }
                    Err(error) => {
                        unanswered_since.get_or_insert(attempt);
                        waiting.retry(error).await?
                    }
                }
            };
            let member_id = added["member"]["ID"]
                .as_str()
                .ok_or_else(|| format!("etcd's member/add answered {added}"))?
                .to_string();
            cluster.peer_urls.insert(id, url.clone());
            let initial = initial_cluster(&cluster.peer_urls);
            let mut member = etcd_member(&cluster.dir, id, &url, &initial, "existing")?;
            member.start()?;
            cluster.members.push(member);
            // etcd refuses the promotion until the learner has caught up with the leader.
            let waiting = Waiting::new("etcd's learner to be promoted");
            let body = serde_json::json!({ "ID": member_id });
            loop {
                match Http::new(address.clone())
                    .post("/v3/cluster/member/promote", &body)
                    .await
                {
                    Ok((200, _)) => break,
                    Ok((status, json)) => waiting.retry(format!("{status} {json}")).await?,
                    Err(error) => waiting.retry(error).await?,
                }
            }
        }
        _ => {
            let mut member = artdb_member(&cluster.dir, id)?;
            start = Instant::now();
            member.start()?;
            let address = member.client_address.clone();
            cluster.members.push(member);
            wait_artdb_answers(&address, "the new node's first answer").await?;
            let mut client = Client::new(vec![cluster.members[0].client_address.clone()]);
            client.add_learner(id, &address).await?;
            let voters: BTreeSet<u64> = (1..=id).collect();
            client.change_membership(voters).await?;
        }
    }
    let add_s = start.elapsed().as_secs_f64();
    cluster.barrier(3).await?;
    check_member(cluster, cluster.members.len() - 1, keys).await?;
    let peak = cluster.members.last().and_then(Member::peak_rss_mib);
    Ok((add_s, peak))
}

// ---------------------------------------------------------------- the run

struct Row {
    system: Sys,
    metric: &'static str,
    clients: Option<usize>,
    value: f64,
}

fn progress(system: Sys, what: &str) {
    eprintln!("w8: {}: {what}", system.name());
}

async fn run_system(
    system: Sys,
    dir: &Path,
    run_for: Duration,
    keys: u64,
    rows: &mut Vec<Row>,
) -> Res<()> {
    let mut cluster = Cluster::start(system, dir).await?;
    let mut push = |metric, clients, value| {
        rows.push(Row {
            system,
            metric,
            clients,
            value,
        })
    };
    let mut all_written = Vec::new();
    for clients in WRITE_CLIENTS {
        progress(system, &format!("durable writes, {clients} clients"));
        let written = write_phase(&cluster, &format!("c{clients}"), clients, run_for).await?;
        push(
            "writes_per_s",
            Some(clients),
            written.total() as f64 / written.seconds,
        );
        push(
            "write_p50_ms",
            Some(clients),
            percentile_ms(&written.latencies_us, 0.50),
        );
        push(
            "write_p99_ms",
            Some(clients),
            percentile_ms(&written.latencies_us, 0.99),
        );
        all_written.extend(written.keys());
    }
    progress(system, "reads");
    cluster.barrier(1).await?;
    let all_written = Arc::new(all_written);
    let linearizable = read_phase(&cluster, &all_written, false, run_for).await?;
    push("linearizable_reads_per_s", Some(READ_CLIENTS), linearizable);
    let stale = read_phase(&cluster, &all_written, true, run_for).await?;
    push("stale_reads_per_s", Some(READ_CLIENTS), stale);
    if system != Sys::ArtdbAlone {
        progress(system, "a killed follower");
        let down_writes = (keys / 10).clamp(1_000, 20_000);
        let (open_s, back_s) = kill_and_restart(&mut cluster, down_writes).await?;
        push("killed_open_s", None, open_s);
        push("killed_back_s", None, back_s);
        progress(system, &format!("bulk load of {keys} keys"));
        let load = bulk_load(&cluster, "load", keys).await?;
        push("bulk_load_keys_per_s", Some(LOAD_CLIENTS), load);
        let loaded: Vec<Vec<u8>> = (0..keys).map(|i| key_of("load", 0, i)).collect();
        progress(system, "a new node");
        let (add_s, peak_mib) = add_member(&mut cluster, &loaded).await?;
        push("add_node_s", None, add_s);
        if let Some(peak_mib) = peak_mib {
            push("add_node_peak_rss_mib", None, peak_mib);
        }
    }
    cluster.stop();
    Ok(())
}

fn etcd_version() -> Option<String> {
    let output = Command::new("etcd").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.lines()
        .find_map(|line| line.strip_prefix("etcd Version: "))
        .map(str::to_string)
}

fn value_of_row(rows: &[Row], system: Sys, metric: &str, clients: Option<usize>) -> Option<f64> {
    rows.iter()
        .find(|row| row.system == system && row.metric == metric && row.clients == clients)
        .map(|row| row.value)
}

fn print_tables(rows: &[Row], systems: &[Sys]) {
    println!(
        "{:<8} {:>8} {:>12} {:>10} {:>10}",
        "system", "clients", "writes/s", "p50 ms", "p99 ms"
    );
    for system in systems {
        for clients in WRITE_CLIENTS {
            let get =
                |metric| value_of_row(rows, *system, metric, Some(clients)).unwrap_or(f64::NAN);
            println!(
                "{:<8} {:>8} {:>12.0} {:>10.2} {:>10.2}",
                system.name(),
                clients,
                get("writes_per_s"),
                get("write_p50_ms"),
                get("write_p99_ms")
            );
        }
    }
    println!(
        "\n{:<8} {:>14} {:>12} {:>9} {:>9} {:>12} {:>9} {:>11}",
        "system", "lin reads/s", "stale/s", "open s", "back s", "load keys/s", "add s", "new MiB"
    );
    for system in systems {
        let get =
            |metric, clients| value_of_row(rows, *system, metric, clients).unwrap_or(f64::NAN);
        println!(
            "{:<8} {:>14.0} {:>12.0} {:>9.3} {:>9.3} {:>12.0} {:>9.3} {:>11.1}",
            system.name(),
            get("linearizable_reads_per_s", Some(READ_CLIENTS)),
            get("stale_reads_per_s", Some(READ_CLIENTS)),
            get("killed_open_s", None),
            get("killed_back_s", None),
            get("bulk_load_keys_per_s", Some(LOAD_CLIENTS)),
            get("add_node_s", None),
            get("add_node_peak_rss_mib", None)
        );
    }
    let ratio = |metric, clients| {
        let artdb = value_of_row(rows, Sys::Artdb, metric, clients)?;
        let etcd = value_of_row(rows, Sys::Etcd, metric, clients)?;
        Some(artdb / etcd)
    };
    if let (Some(writes), Some(reads)) = (
        ratio("writes_per_s", Some(32)),
        ratio("linearizable_reads_per_s", Some(READ_CLIENTS)),
    ) {
        println!(
            "\nartdb / etcd: durable writes/s at 32 clients {writes:.2}x (goal 1.5x), \
             linearizable reads/s {reads:.2}x (goal 2x)"
        );
    }
}

/// Runs W8.
pub fn run(args: Args) -> Res<()> {
    let seconds = args.seconds.unwrap_or(if args.quick { 0.5 } else { 5.0 });
    let keys = args
        .keys
        .unwrap_or(if args.quick { 2_000 } else { 1_000_000 });
    let run_for = Duration::from_secs_f64(seconds);
    let mut systems = match &args.systems {
        Some(list) => Sys::parse_list(list)?,
        None => vec![Sys::Artdb, Sys::Etcd, Sys::ArtdbAlone],
    };
    let etcd = etcd_version();
    let mut not_run = Vec::new();
    if systems.contains(&Sys::Etcd) && etcd.is_none() {
        if std::env::var("ARTDB_REQUIRE_ETCD").as_deref() == Ok("1") {
            return Err("ARTDB_REQUIRE_ETCD=1 but there is no etcd binary on the PATH".into());
        }
        println!("etcd is not installed (no `etcd` on the PATH): measuring artdb only");
        systems.retain(|system| *system != Sys::Etcd);
        not_run.push(serde_json::json!({"system": "etcd", "why": "no etcd binary on the PATH"}));
    }
    println!(
        "versions: artdb {} with openraft {} (this workspace); etcd {}",
        env!("CARGO_PKG_VERSION"),
        crate::versions::locked("openraft"),
        etcd.as_deref().unwrap_or("not installed")
    );
    println!("W8: phases of {seconds} s, {keys} keys held when a node is added");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut rows = Vec::new();
    for system in &systems {
        let dir = args.dir.join(system.name());
        runtime
            .block_on(run_system(*system, &dir, run_for, keys, &mut rows))
            .map_err(|e| format!("{}: {e}", system.name()))?;
    }
    print_tables(&rows, &systems);
    if let Some(path) = &args.json {
        let results: Vec<serde_json::Value> = rows
            .iter()
            .map(|row| {
                let mut object = serde_json::json!({
                    "system": row.system.name(),
                    "metric": row.metric,
                    "value": row.value,
                });
                if let Some(clients) = row.clients {
                    object["clients"] = serde_json::json!(clients);
                }
                object
            })
            .collect();
        let json = serde_json::json!({
            "workload": "w8",
            "seconds": seconds,
            "keys": keys,
            "results": results,
            "not_run": not_run,
            "peers": crate::versions::json(),
            "etcd": etcd,
        });
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
    }
    Ok(())
}

/// The hidden `w8-node` subcommand: one artdb node, exactly as `artdb serve` runs it.
pub fn node(args: artdb_raft::cli::ServeArgs) -> Res<()> {
    artdb_raft::cli::block_on(artdb_raft::cli::serve(args)).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_a_function_of_their_key() {
        assert_eq!(value_of(b"a"), value_of(b"a"));
        assert_ne!(value_of(b"a"), value_of(b"b"));
        assert_eq!(value_of(b"a").len(), VALUE_BYTES);
    }
}
