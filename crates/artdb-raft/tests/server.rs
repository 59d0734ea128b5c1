//! The TCP server and client: three `artdb-server` processes on 127.0.0.1 (the binary Cargo
//! built for this test), initialized through the client; writes, compare-and-set, a
//! transaction, linearizable and stale reads, prefix scans, a client pointed at a follower
//! being redirected to the leader; then the leader is killed with SIGKILL and a new leader must
//! serve every acknowledged write; the killed node restarts and catches up.

mod processes;

use artdb_raft::client::{Client, ClientError};
use artdb_raft::wire::Consistency;
use artdb_raft::{Condition, NodeId, Operation};
use processes::{free_address, spawn, status, wait_leader, Processes, WAIT};
use std::collections::BTreeMap;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_serve_survive_a_sigkill_and_catch_up() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let addresses: BTreeMap<NodeId, String> = (1..=3).map(|id| (id, free_address())).collect();
    let mut processes = Processes(BTreeMap::new());
    for (&id, address) in &addresses {
        processes.0.insert(id, spawn(id, address, dir.path()));
    }
    let every: Vec<String> = addresses.values().cloned().collect();
    let deadline = tokio::time::Instant::now() + WAIT;
    while status(&addresses[&1]).await.is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "node 1 never listened"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Client::new(vec![addresses[&1].clone()])
        .initialize(addresses.clone())
        .await
        .expect("the cluster initializes");
    let leader = wait_leader(&addresses, None).await;

    // A client that knows only a follower is redirected to the leader.
    let follower = addresses
        .keys()
        .copied()
        .find(|&id| id != leader)
        .expect("a follower");
    let mut client = Client::new(vec![addresses[&follower].clone()]);
    for index in 0..50u32 {
        let key = format!("item/{index:03}");
        client
            .put(key.as_bytes(), index.to_string().as_bytes())
            .await
            .expect("put");
    }
    assert_eq!(
        client.put(b"item/000", b"zero").await.expect("put"),
        Some(b"0".to_vec())
    );
    let (set, current) = client
        .compare_and_set(b"item/001", Some(b"1"), Some(b"one"))
        .await
        .expect("cas");
    assert!(set && current == Some(b"one".to_vec()));
    let (set, _) = client
        .compare_and_set(b"item/001", Some(b"1"), None)
        .await
        .expect("cas");
    assert!(!set, "a compare-and-set against a stale value must fail");
    let applied = client
        .transaction(
            vec![Condition {
                key: b"item/002".to_vec(),
                expected: Some(b"2".to_vec()),
            }],
            vec![
                Operation::Delete {
                    key: b"item/002".to_vec(),
                },
                Operation::Put {
                    key: b"moved/002".to_vec(),
                    value: b"2".to_vec(),
                },
            ],
        )
        .await
        .expect("transaction");
    assert!(applied);
    assert_eq!(
        client.delete(b"item/003").await.expect("delete"),
        Some(b"3".to_vec())
    );
    assert_eq!(
        client
            .get(b"item/002", Consistency::Linearizable)
            .await
            .expect("get"),
        None
    );
    assert_eq!(
        client
            .get(b"moved/002", Consistency::Linearizable)
            .await
            .expect("get"),
        Some(b"2".to_vec())
    );
    let items = client
        .prefix(b"item/", 1000, Consistency::Linearizable)
        .await
        .expect("scan");
    assert_eq!(items.len(), 48);
    let range = client
        .range(
            b"item/010",
            Some(b"item/020"),
            1000,
            Consistency::Linearizable,
        )
        .await
        .expect("range");
    assert_eq!(range.len(), 10);
    let oversized = client.put(&vec![b'k'; 5000], b"v").await;
    assert!(
        matches!(oversized, Err(ClientError::Failed { .. })),
        "{oversized:?}"
    );

    // A stale read on a follower catches up to what the leader acknowledged.
    let mut stale = Client::new(vec![addresses[&follower].clone()]);
    let deadline = tokio::time::Instant::now() + WAIT;
    while stale
        .get(b"moved/002", Consistency::Stale)
        .await
        .expect("stale get")
        != Some(b"2".to_vec())
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the follower never applied the write"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // SIGKILL the leader: a new one serves every acknowledged write.
    let killed = processes.0.remove(&leader).map(|mut child| {
        let _ = child.kill();
        child.wait()
    });
    assert!(killed.is_some());
    let new_leader = wait_leader(&addresses, Some(leader)).await;
    let mut client = Client::new(every.clone());
    let items = client
        .prefix(b"item/", 1000, Consistency::Linearizable)
        .await
        .expect("scan after the kill");
    assert_eq!(
        items.len(),
        48,
        "acknowledged writes lost when leader {leader} was killed"
    );
    client
        .put(b"after/kill", b"1")
        .await
        .expect("a write under the new leader");

    // The killed node restarts from its files and catches up.
    processes
        .0
        .insert(leader, spawn(leader, &addresses[&leader], dir.path()));
    let last = status(&addresses[&new_leader])
        .await
        .and_then(|s| s.last_log_index);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let restarted = status(&addresses[&leader]).await;
        if restarted.is_some_and(|s| s.last_applied_index >= last) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "node {leader} never caught up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut on_restarted = Client::new(vec![addresses[&leader].clone()]);
    assert_eq!(
        on_restarted
            .get(b"after/kill", Consistency::Stale)
            .await
            .expect("stale get"),
        Some(b"1".to_vec())
    );
}
