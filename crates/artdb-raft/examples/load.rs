//! A small load driver for a running cluster: `clients` concurrent clients, each with its own
//! connection, put distinct keys (durable writes through the leader) for `seconds`, then
//! read them back linearizably and stale; prints operations per second and the p50 and p99
//! write latency.
//!
//! `cargo run --release -p artdb-raft --example load -- ADDR[,ADDR...] CLIENTS SECONDS`

use artdb_raft::client::Client;
use artdb_raft::wire::Consistency;
use std::time::{Duration, Instant};

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[index]
}

async fn phase(
    addresses: &[String],
    clients: usize,
    seconds: u64,
    consistency: Option<Consistency>,
) -> (usize, Vec<Duration>) {
    let mut tasks = Vec::new();
    for client in 0..clients {
        let addresses = addresses.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut connection = Client::new(addresses);
            let deadline = Instant::now() + Duration::from_secs(seconds);
            let mut latencies = Vec::new();
            let mut index = 0u64;
            while Instant::now() < deadline {
                let key = format!("load/{client:03}/{index:09}");
                let start = Instant::now();
                let done = match consistency {
                    None => connection
                        .put(key.as_bytes(), b"value-of-some-bytes")
                        .await
                        .map(|_| ()),
                    Some(consistency) => {
                        let key = format!("load/{client:03}/{:09}", index % 1000);
                        connection
                            .get(key.as_bytes(), consistency)
                            .await
                            .map(|_| ())
                    }
                };
                if let Err(error) = done {
                    eprintln!("client {client}: {error}");
                    continue;
                }
                latencies.push(start.elapsed());
                index += 1;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap_or_default());
    }
    all.sort();
    (all.len(), all)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: load ADDR[,ADDR...] CLIENTS SECONDS");
        std::process::exit(2);
    }
    let addresses: Vec<String> = args[1].split(',').map(str::to_string).collect();
    let clients: usize = args[2].parse().unwrap_or(1);
    let seconds: u64 = args[3].parse().unwrap_or(5);
    for (name, consistency) in [
        ("durable writes", None),
        ("linearizable reads", Some(Consistency::Linearizable)),
        ("stale reads", Some(Consistency::Stale)),
    ] {
        let (count, latencies) = phase(&addresses, clients, seconds, consistency).await;
        println!(
            "{name}: {clients} clients, {:.0} ops/s, p50 {:?}, p99 {:?}",
            count as f64 / seconds as f64,
            percentile(&latencies, 0.50),
            percentile(&latencies, 0.99)
        );
    }
}
