//! Power loss under the raft store: the node's database and log on artdb-testkit's crash
//! storage, the power cut at each sync in turn (the unsynced writes kept, dropped or torn), the
//! node reopened from the synced bytes only. Every append and vote that was acknowledged must
//! survive, and the state machine must be exactly the effect of its applied prefix (the data
//! and the applied id are one transaction).

use artdb::io::Storage;
use artdb::Db;
use artdb_raft::{Command, LogStore, StateMachine, TypeConfig};
use artdb_testkit::{CrashMode, CrashStorage};
use openraft::storage::{RaftLogReader, RaftLogStorage, RaftLogStorageExt, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, Vote};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Entries each run tries to append and apply.
const ENTRIES: u64 = 12;

fn entry(index: u64) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Command::Put {
            key: format!("key-{}", index % 3).into_bytes(),
            value: index.to_string().into_bytes(),
        }),
    }
}

/// The data after applying entries 1..=applied.
fn model(applied: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut map = BTreeMap::new();
    for index in 1..=applied {
        map.insert(
            format!("key-{}", index % 3).into_bytes(),
            index.to_string().into_bytes(),
        );
    }
    map.into_iter().collect()
}

struct Acknowledged {
    appended: u64,
    voted: bool,
}

/// Appends, votes and applies until the storage dies; returns what was acknowledged.
async fn run(log_store: &mut LogStore, state_machine: &mut StateMachine) -> Acknowledged {
    let mut acknowledged = Acknowledged {
        appended: 0,
        voted: false,
    };
    if log_store.save_vote(&Vote::new(1, 1)).await.is_err() {
        return acknowledged;
    }
    acknowledged.voted = true;
    for index in 1..=ENTRIES {
        if log_store.blocking_append([entry(index)]).await.is_err() {
            return acknowledged;
        }
        acknowledged.appended = index;
        if state_machine.apply([entry(index)]).await.is_err() {
            return acknowledged;
        }
    }
    acknowledged
}

async fn crash_once(sync_offset: u64, mode: CrashMode) -> bool {
    // The snapshot files live on a real directory: this test builds no snapshot.
    let snapshots = tempfile::tempdir().expect("snapshot directory");
    let file = Arc::new(CrashStorage::new().expect("storage"));
    let log = Arc::new(file.sibling(&[]).expect("log storage"));
    let db = Db::create_in_with_log(
        Arc::clone(&file) as Arc<dyn Storage>,
        Arc::clone(&log) as Arc<dyn Storage>,
        artdb::Options::default(),
    )
    .expect("create");
    let (mut log_store, mut state_machine) =
        artdb_raft::on_db(Arc::new(db), snapshots.path()).expect("tables");
    file.crash_at_sync(file.syncs() + sync_offset, mode);
    let acknowledged = run(&mut log_store, &mut state_machine).await;
    drop((log_store, state_machine));
    let crashed = file.crashed();

    let file = CrashStorage::from_image(&file.durable_image()).expect("file image");
    let log = file.sibling(&log.durable_image()).expect("log image");
    let db = Db::open_in_with_log(Arc::new(file), Arc::new(log), artdb::Options::default())
        .unwrap_or_else(|e| panic!("reopen after a crash at sync +{sync_offset} ({mode:?}): {e}"));
    let (mut log_store, mut state_machine) =
        artdb_raft::on_db(Arc::new(db), snapshots.path()).expect("tables");
    if acknowledged.voted {
        assert_eq!(
            log_store.read_vote().await.expect("vote reads"),
            Some(Vote::new(1, 1))
        );
    }
    let entries = log_store
        .try_get_log_entries(1..=acknowledged.appended)
        .await
        .expect("the log reads");
    assert_eq!(
        entries.len() as u64,
        acknowledged.appended,
        "acknowledged appends lost at sync +{sync_offset} ({mode:?})"
    );
    let (applied, _) = state_machine
        .applied_state()
        .await
        .expect("applied state reads");
    let applied = applied.map_or(0, |id| id.index);
    assert!(applied <= ENTRIES);
    let state = state_machine.reader().state().expect("state reads");
    assert_eq!(
        state.pairs,
        model(applied),
        "data and applied id {applied} disagree"
    );
    crashed
}

#[tokio::test]
async fn acknowledged_raft_writes_survive_power_loss_at_every_sync() {
    let mut crashes = 0;
    for sync_offset in 1..=ENTRIES + 3 {
        for mode in [
            CrashMode::Keep,
            CrashMode::Drop,
            CrashMode::Tear { seed: sync_offset },
        ] {
            if crash_once(sync_offset, mode).await {
                crashes += 1;
            }
        }
    }
    assert!(
        crashes > 30,
        "only {crashes} runs reached their planned crash"
    );
}
