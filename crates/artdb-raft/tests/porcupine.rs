//! Linearizability of real processes, checked by porcupine: three `artdb-server` processes on
//! 127.0.0.1, four concurrent clients doing puts and linearizable gets on a few keys while the
//! leader is killed with SIGKILL and later restarted. Every operation is recorded with its call
//! and return times (a put whose answer was lost is recorded as one that may take effect at any
//! time after its call; a failed get is left out: it read nothing). `ARTDB_TEST_SCALE` kill
//! cycles (one at the default scale; `scripts/raft-soak.sh` runs many). The history goes to
//! porcupine (`porcupine/`, a Go program on github.com/anishathalye/porcupine) with a register
//! per key, which must find it linearizable; the same history with one read changed to a value
//! nobody wrote must be refused, so the check can fail.
//!
//! Needs `go` on the PATH (the checker is Go). Without it the test says so and passes, unless
//! `ARTDB_REQUIRE_GO=1` (as `.ci/run` sets), when it fails.

mod processes;

use artdb_raft::client::Client;
use artdb_raft::wire::Consistency;
use artdb_raft::NodeId;
use artdb_testkit::scale;
use processes::{free_address, spawn, wait_leader, Processes};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One recorded operation (a line of the history).
#[derive(Clone)]
struct Record {
    client: usize,
    put: bool,
    key: String,
    value: String,
    found: bool,
    call: u128,
    /// `None`: a put whose answer was lost.
    returned: Option<u128>,
}

impl Record {
    fn line(&self) -> String {
        let returned = self.returned.map_or(-1, |at| at as i128);
        format!(
            "{{\"client\":{},\"op\":\"{}\",\"key\":\"{}\",\"value\":\"{}\",\"found\":{},\
             \"call\":{},\"return\":{}}}",
            self.client,
            if self.put { "put" } else { "get" },
            self.key,
            self.value,
            self.found,
            self.call,
            returned
        )
    }
}

const CLIENTS: usize = 4;

/// Runs the checker on `history`; its exit code and output.
fn check(history: &Path) -> (Option<i32>, String) {
    let checker = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("porcupine");
    let output = Command::new("go")
        .arg("run")
        .arg(".")
        .arg(history)
        .current_dir(checker)
        .output()
        .expect("go runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

fn go_available() -> bool {
    Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|output| output.status.success())
}

async fn client_loop(
    client: usize,
    addresses: Vec<String>,
    start: Instant,
    stop: Arc<AtomicBool>,
    history: Arc<Mutex<Vec<Record>>>,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5EED + client as u64);
    let mut connection = Client::new(addresses);
    let mut written = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // More keys at a larger scale keep each key's history (one porcupine partition) short.
        let key = format!("k{}", rng.gen_range(0..2 + scale()));
        let call = start.elapsed().as_nanos();
        if rng.gen_bool(0.5) {
            written += 1;
            let value = format!("c{client}-{written}");
            let outcome = connection.put(key.as_bytes(), value.as_bytes()).await;
            // Any failed put may have been applied before its answer was lost.
            let returned = outcome.ok().map(|_| start.elapsed().as_nanos());
            history.lock().unwrap().push(Record {
                client,
                put: true,
                key,
                value,
                found: false,
                call,
                returned,
            });
        } else if let Ok(read) = connection
            .get(key.as_bytes(), Consistency::Linearizable)
            .await
        {
            let returned = Some(start.elapsed().as_nanos());
            history.lock().unwrap().push(Record {
                client,
                put: false,
                key,
                found: read.is_some(),
                value: read
                    .map(|value| String::from_utf8_lossy(&value).into_owned())
                    .unwrap_or_default(),
                call,
                returned,
            });
        }
    }
}

#[test]
fn a_history_through_a_leader_kill_is_linearizable_by_porcupine() {
    if !go_available() {
        assert!(
            std::env::var("ARTDB_REQUIRE_GO").is_err(),
            "ARTDB_REQUIRE_GO is set but `go` does not run: the porcupine check needs it"
        );
        eprintln!("skipped: `go` is not on the PATH, and the porcupine checker is a Go program");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let records = runtime.block_on(async {
        let addresses: BTreeMap<NodeId, String> = (1..=3).map(|id| (id, free_address())).collect();
        let mut processes = Processes(BTreeMap::new());
        for (&id, address) in &addresses {
            processes.0.insert(id, spawn(id, address, dir.path()));
        }
        let all: Vec<String> = addresses.values().cloned().collect();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut init = Client::new(vec![all[0].clone()]);
            if init.initialize(addresses.clone()).await.is_ok() {
                break;
            }
            assert!(Instant::now() < deadline, "the cluster never initialized");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let leader = wait_leader(&addresses, None).await;

        let start = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let history = Arc::new(Mutex::new(Vec::new()));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                tokio::spawn(client_loop(
                    client,
                    all.clone(),
                    start,
                    Arc::clone(&stop),
                    Arc::clone(&history),
                ))
            })
            .collect();
        let phase = Duration::from_millis(1000);
        let mut leader = leader;
        for _ in 0..scale() {
            tokio::time::sleep(phase).await;
            if let Some(mut child) = processes.0.remove(&leader) {
                child.kill().unwrap();
                child.wait().unwrap();
            }
            tokio::time::sleep(phase).await;
            processes
                .0
                .insert(leader, spawn(leader, &addresses[&leader], dir.path()));
            tokio::time::sleep(phase).await;
            leader = wait_leader(&addresses, None).await;
        }
        stop.store(true, Ordering::Relaxed);
        for client in clients {
            client.await.unwrap();
        }
        let records: Vec<Record> = history.lock().unwrap().clone();
        records
    });
    let in_doubt = records
        .iter()
        .filter(|record| record.returned.is_none())
        .count();
    eprintln!(
        "history: {} operations, {in_doubt} puts in doubt (their answer lost)",
        records.len()
    );

    let answered = |put: bool| {
        records
            .iter()
            .filter(|record| record.put == put && record.returned.is_some())
            .count()
    };
    assert!(answered(true) > 20, "too few acknowledged puts to check");
    assert!(answered(false) > 20, "too few reads to check");
    assert!(
        records.iter().any(|record| !record.put && record.found),
        "no read found a value"
    );
    let history = dir.path().join("history.jsonl");
    let write = |records: &[Record]| {
        let text: String = records.iter().map(|r| r.line() + "\n").collect();
        std::fs::write(&history, text).unwrap();
    };
    write(&records);
    let (code, out) = check(&history);
    assert_eq!(code, Some(0), "porcupine: {out}");
    assert!(out.contains("linearizable"), "{out}");

    // The check can fail: one read changed to a value nobody wrote is refused.
    let mut changed = records.clone();
    let read = changed
        .iter_mut()
        .find(|record| !record.put && record.found)
        .unwrap();
    read.value = "never-written".to_string();
    write(&changed);
    let (code, out) = check(&history);
    assert_eq!(code, Some(1), "a changed read passed porcupine: {out}");
}
