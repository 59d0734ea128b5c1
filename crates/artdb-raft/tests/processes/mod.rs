//! Real `artdb-server` processes on 127.0.0.1 for the tests that need them (`server.rs`,
//! `porcupine.rs`).
#![allow(dead_code)]

use artdb_raft::client::Client;
use artdb_raft::wire::Status;
use artdb_raft::NodeId;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Longest wait for the cluster to reach a state.
pub const WAIT: Duration = Duration::from_secs(20);

pub fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = listener.local_addr().expect("its address").to_string();
    drop(listener);
    address
}

pub fn spawn(id: NodeId, address: &str, dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_artdb-server"))
        .args([
            "serve",
            "--id",
            &id.to_string(),
            "--listen",
            address,
            "--heartbeat-ms",
            "50",
        ])
        .arg("--dir")
        .arg(dir.join(format!("node-{id}")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("artdb-server starts")
}

pub async fn status(address: &str) -> Option<Status> {
    Client::new(vec![address.to_string()]).status().await.ok()
}

/// Waits until a node at one of `addresses` leads (and is not `not`); returns its id.
pub async fn wait_leader(addresses: &BTreeMap<NodeId, String>, not: Option<NodeId>) -> NodeId {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        for (&id, address) in addresses {
            if Some(id) == not {
                continue;
            }
            if let Some(status) = status(address).await {
                if status.state == "Leader" {
                    return id;
                }
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no leader within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub struct Processes(pub BTreeMap<NodeId, Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in self.0.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
