//! The demo's cluster part: three real `artdb serve` processes (this binary) on 127.0.0.1 form
//! a raft cluster, each node keeping its raft log, vote and data in one artdb file. The demo
//! writes numbered keys through the client (each acknowledged once a majority made it durable),
//! finds the leader and kills it with SIGKILL, keeps writing (the two left elect a new leader;
//! the first write that succeeds marks the end of the outage), restarts the killed node with the
//! same command, waits until it has caught up, and reads every acknowledged key back: from the
//! leader (linearizable) and from the restarted node's own state.
//!
//! The nodes live in `<demo file>.cluster/` (their logs in `node-N.log` there), which the demo
//! replaces at the start and removes at the end.

use crate::demo::{step, DemoResult, KillOnDrop};
use crate::outln;
use artdb_raft::client::Client;
use artdb_raft::wire::Consistency;
use artdb_raft::NodeId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Nodes of the demo's cluster.
const NODES: u64 = 3;
/// Writes before the leader is killed, and again after.
const WRITES: u64 = 200;
/// The nodes' heartbeat: elections time out after 3 to 6 of them.
const HEARTBEAT_MS: u64 = 50;
/// How long any one wait of the demo (a node starting, an election, a catch-up) may take
/// before the demo gives up with an error.
const WAIT_MAX: Duration = Duration::from_secs(30);

fn key(i: u64) -> Vec<u8> {
    format!("order-{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("paid {}", i * 7 % 1000).into_bytes()
}

/// The directory of the demo's nodes beside `path`, emptied: refused if it holds anything but
/// an earlier demo's nodes.
fn fresh_dir(path: &Path) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let mut name = path.as_os_str().to_os_string();
    name.push(".cluster");
    let dir = PathBuf::from(name);
    if dir.exists() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?.file_name();
            let entry = entry.to_string_lossy();
            if !entry.starts_with("node-") {
                return Err(format!(
                    "{} holds {entry:?}, which no earlier demo made: move it away, or pass \
                     another --path",
                    dir.display()
                )
                .into());
            }
        }
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Addresses on 127.0.0.1 that were free a moment ago (the OS picks them).
fn free_addresses(count: u64) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let listeners = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<Vec<_>, _>>()?;
    listeners
        .iter()
        .map(|listener| Ok(listener.local_addr()?.to_string()))
        .collect()
}

/// Starts node `id` (`artdb serve`), its output in `node-<id>.log`.
fn spawn_node(
    dir: &Path,
    id: NodeId,
    address: &str,
) -> Result<KillOnDrop, Box<dyn std::error::Error>> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("node-{id}.log")))?;
    let child = Command::new(std::env::current_exe()?)
        .arg("serve")
        .arg("--id")
        .arg(id.to_string())
        .arg("--listen")
        .arg(address)
        .arg("--dir")
        .arg(dir.join(format!("node-{id}")))
        .arg("--heartbeat-ms")
        .arg(HEARTBEAT_MS.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()?;
    Ok(KillOnDrop(child))
}

/// Waits until `what` returns `Some`, polling, or fails after [`WAIT_MAX`] naming `waiting_for`.
async fn wait_for<T, F, Fut>(waiting_for: &str, mut what: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT_MAX;
    loop {
        if let Some(found) = what().await {
            return Ok(found);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the demo's cluster: no {waiting_for} after {} s",
                WAIT_MAX.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Writes `key(i) = value(i)` until a write is acknowledged; returns how many attempts failed
/// first (an attempt whose answer was lost may have been applied: writing the same value again
/// is harmless).
async fn write(client: &mut Client, i: u64) -> Result<u64, String> {
    let deadline = Instant::now() + WAIT_MAX;
    let mut failed = 0;
    loop {
        match client.put(&key(i), &value(i)).await {
            Ok(_) => return Ok(failed),
            Err(error) if Instant::now() >= deadline => {
                return Err(format!(
                    "the demo's cluster did not take write {i}: {error}"
                ))
            }
            Err(_) => {
                failed += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// The leader node `address` knows of, if it knows one.
async fn leader_seen_by(address: &str) -> Option<NodeId> {
    Client::new(vec![address.to_string()])
        .status()
        .await
        .ok()?
        .leader
}

/// Runs the cluster part of the demo beside the demo's file `path`.
pub fn run(path: &Path) -> DemoResult {
    outln!(
        "\ncluster: {NODES} `artdb serve` processes on 127.0.0.1 (raft; each node's log and data \
         in one artdb file);\n  {WRITES} writes acknowledged by a majority, then the leader is \
         killed with SIGKILL, {WRITES} more, and it restarts"
    )?;
    let dir = fresh_dir(path)?;
    let addresses = free_addresses(NODES)?;
    let members: BTreeMap<NodeId, String> = (1..=NODES).zip(addresses.iter().cloned()).collect();
    let mut nodes: BTreeMap<NodeId, KillOnDrop> = BTreeMap::new();
    for (id, address) in &members {
        nodes.insert(*id, spawn_node(&dir, *id, address)?);
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(drive(&dir, &members, &mut nodes));
    drop(nodes);
    match result {
        Ok(()) => {
            std::fs::remove_dir_all(&dir)?;
            Ok(())
        }
        Err(error) => Err(format!(
            "{error} (the nodes' logs are in {})",
            dir.join("node-N.log").display()
        )
        .into()),
    }
}

async fn drive(
    dir: &Path,
    members: &BTreeMap<NodeId, String>,
    nodes: &mut BTreeMap<NodeId, KillOnDrop>,
) -> Result<(), Box<dyn std::error::Error>> {
    let addresses: Vec<String> = members.values().cloned().collect();
    let started = Instant::now();
    for address in &addresses {
        wait_for(&format!("answer from the node at {address}"), || async {
            Client::new(vec![address.clone()]).status().await.ok()
        })
        .await?;
    }
    Client::new(vec![addresses[0].clone()])
        .initialize(members.clone())
        .await?;
    let first = wait_for("leader elected", || leader_seen_by(&addresses[0])).await?;
    step("cluster: start 3 nodes + elect", started.elapsed(), NODES)?;

    let mut client = Client::new(addresses.clone());
    let started = Instant::now();
    for i in 0..WRITES {
        write(&mut client, i).await?;
    }
    step("cluster: durable writes", started.elapsed(), WRITES)?;

    // The leader now (it may have changed since the election, rarely).
    let leader = wait_for("leader", || leader_seen_by(&addresses[0]))
        .await
        .unwrap_or(first);
    if let Some(mut victim) = nodes.remove(&leader) {
        victim.0.kill()?;
        victim.0.wait()?;
    }
    let killed = Instant::now();
    let mut client = Client::new(
        members
            .iter()
            .filter(|(id, _)| **id != leader)
            .map(|(_, address)| address.clone())
            .collect(),
    );
    let failed_first = write(&mut client, WRITES).await?;
    let outage = killed.elapsed();
    let started = Instant::now();
    for i in WRITES + 1..2 * WRITES {
        write(&mut client, i).await?;
    }
    step(
        "cluster: writes after the kill",
        started.elapsed(),
        WRITES - 1,
    )?;
    let survivor = members
        .iter()
        .find(|(id, _)| **id != leader)
        .map(|(_, address)| address.clone())
        .ok_or("the demo's cluster has one node")?;
    let new_leader = wait_for("new leader", || leader_seen_by(&survivor)).await?;
    let target = Client::new(vec![survivor.clone()])
        .status()
        .await?
        .last_applied_index;

    let started = Instant::now();
    let address = members
        .get(&leader)
        .ok_or("the killed node has no address")?;
    nodes.insert(leader, spawn_node(dir, leader, address)?);
    let caught_up = wait_for("catch-up of the restarted node", || async {
        let status = Client::new(vec![address.clone()]).status().await.ok()?;
        (status.last_applied_index >= target).then_some(())
    })
    .await;
    caught_up?;
    step("cluster: restart + catch up", started.elapsed(), 1)?;

    let started = Instant::now();
    let mut leader_reads = Client::new(addresses.clone());
    let mut own_reads = Client::new(vec![address.clone()]);
    for i in 0..2 * WRITES {
        let read = leader_reads.get(&key(i), Consistency::Linearizable).await?;
        let own = own_reads.get(&key(i), Consistency::Stale).await?;
        if read.as_deref() != Some(value(i).as_slice()) || own != read {
            return Err(format!(
                "the demo's cluster lost acknowledged write {i}: the leader reads {read:?}, the \
                 restarted node {own:?}"
            )
            .into());
        }
    }
    step(
        "cluster: read back, 2 nodes",
        started.elapsed(),
        2 * 2 * WRITES,
    )?;
    let retried = if failed_first > 0 {
        format!(" (after {failed_first} refused attempts)")
    } else {
        String::new()
    };
    outln!(
        "  leader node {leader} killed; node {new_leader} leads: the first write after the kill \
         was acknowledged {:.0} ms later{retried};\n  node {leader} restarted from its file and \
         caught up; all {} acknowledged writes read back from the leader (linearizable)\n  and \
         from node {leader}'s own state",
        outage.as_secs_f64() * 1e3,
        2 * WRITES
    )?;
    Ok(())
}
