//! Snapshots as streamed files: a snapshot built on one node installs on another through the
//! file openraft writes, a damaged one changes nothing, a power cut at any sync of an install
//! leaves the old state or the new one (never a mix, never a named file that is not whole), a
//! crash's leftovers are removed at open, and a database of the earlier layout (snapshot bytes in
//! `sm_snapshot`) is brought to this one.

use artdb::io::Storage;
use artdb::Db;
use artdb_raft::state_machine::State;
use artdb_raft::{Command, StateMachine, TypeConfig, TABLE_SM_DATA};
use artdb_testkit::{CrashMode, CrashStorage};
use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::{BasicNode, CommittedLeaderId, Entry, EntryPayload, LogId, SnapshotMeta};
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type Meta = SnapshotMeta<u64, BasicNode>;

fn put(index: u64, key: Vec<u8>, value: Vec<u8>) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
        payload: EntryPayload::Normal(Command::Put { key, value }),
    }
}

/// `count` puts of keys of mixed lengths and shared prefixes, seeded, from log index 1.
fn entries(seed: u64, count: u64) -> Vec<Entry<TypeConfig>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (1..=count)
        .map(|index| {
            let key = match rng.gen_range(0..3) {
                0 => format!("user/{:08}", rng.gen_range(0..count * 2)).into_bytes(),
                1 => rng.gen::<u64>().to_be_bytes().to_vec(),
                _ => (0..rng.gen_range(1..40)).map(|_| rng.gen()).collect(),
            };
            let value = (0..rng.gen_range(0..300)).map(|_| rng.gen()).collect();
            put(index, key, value)
        })
        .collect()
}

fn node(dir: &Path) -> StateMachine {
    artdb_raft::open(dir.join("node.artdb"), artdb::Options::default())
        .expect("the node opens")
        .1
}

async fn build(state_machine: &mut StateMachine) -> (Meta, Vec<u8>) {
    let mut builder = state_machine.get_snapshot_builder().await;
    let mut snapshot = builder.build_snapshot().await.expect("a snapshot builds");
    let mut bytes = Vec::new();
    snapshot
        .snapshot
        .read_to_end(&mut bytes)
        .await
        .expect("the snapshot file reads");
    (snapshot.meta, bytes)
}

async fn install(
    state_machine: &mut StateMachine,
    meta: &Meta,
    bytes: &[u8],
) -> Result<(), openraft::StorageError<u64>> {
    let mut file = state_machine
        .begin_receiving_snapshot()
        .await
        .expect("a receiving file");
    file.write_all(bytes).await.expect("the chunks write");
    file.shutdown().await.expect("the file flushes");
    state_machine.install_snapshot(meta, file).await
}

async fn current_bytes(state_machine: &mut StateMachine) -> Option<(Meta, Vec<u8>)> {
    let mut snapshot = state_machine
        .get_current_snapshot()
        .await
        .expect("the current snapshot reads")?;
    let mut bytes = Vec::new();
    snapshot
        .snapshot
        .read_to_end(&mut bytes)
        .await
        .expect("its file reads");
    Some((snapshot.meta, bytes))
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the snapshot directory lists")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

fn data_tables(db: &Db) -> Vec<String> {
    db.table_names()
        .into_iter()
        .filter(|name| name.starts_with(TABLE_SM_DATA))
        .collect()
}

/// A source node holding `count` seeded puts, and its built snapshot.
async fn source(dir: &Path, count: u64) -> (State, Meta, Vec<u8>) {
    let mut state_machine = node(dir);
    state_machine
        .apply(entries(7, count))
        .await
        .expect("the entries apply");
    let (meta, bytes) = build(&mut state_machine).await;
    (state_machine.reader().state().expect("state"), meta, bytes)
}

#[tokio::test]
async fn a_snapshot_streams_from_one_node_into_another_and_replaces_its_state() {
    let count = 2_000 * artdb_testkit::scale();
    let source_dir = tempfile::tempdir().expect("dir");
    let (source_state, meta, bytes) = source(source_dir.path(), count).await;
    assert_eq!(meta.last_log_id.map(|id| id.index), Some(count));

    let target_dir = tempfile::tempdir().expect("dir");
    let mut target = node(target_dir.path());
    target
        .apply(entries(99, 50))
        .await
        .expect("the target's own entries apply");
    for round in 0..2 {
        install(&mut target, &meta, &bytes)
            .await
            .expect("the snapshot installs");
        assert_eq!(target.reader().state().expect("state"), source_state);
        assert_eq!(
            data_tables(target.db()).len(),
            1,
            "round {round}: the old data table was dropped"
        );
        let (current_meta, current) = current_bytes(&mut target).await.expect("a snapshot");
        assert_eq!(current_meta, meta);
        assert!(current == bytes, "the stored snapshot is the received one");
        let snapshot_files = files(target.snapshot_dir());
        assert_eq!(snapshot_files.len(), 1, "left: {snapshot_files:?}");
    }

    // Reads and applies after the install go to the new table, and a restart keeps it.
    let next = count + 1;
    target
        .apply([put(next, b"after".to_vec(), b"install".to_vec())])
        .await
        .expect("an apply after the install");
    assert_eq!(
        target.reader().get(b"after").expect("get"),
        Some(b"install".to_vec())
    );
    let expected = target.reader().state().expect("state");
    drop(target);
    let mut target = node(target_dir.path());
    assert_eq!(target.reader().state().expect("state"), expected);
    let (rebuilt_meta, _) = build(&mut target).await;
    assert_eq!(rebuilt_meta.last_log_id.map(|id| id.index), Some(next));
    assert_eq!(files(target.snapshot_dir()).len(), 1);
}

#[tokio::test]
async fn a_damaged_snapshot_is_refused_and_changes_nothing() {
    let source_dir = tempfile::tempdir().expect("dir");
    let (_, meta, bytes) = source(source_dir.path(), 300).await;
    let target_dir = tempfile::tempdir().expect("dir");
    let mut target = node(target_dir.path());
    target.apply(entries(5, 40)).await.expect("apply");
    let (target_meta, target_bytes) = build(&mut target).await;
    let before = target.reader().state().expect("state");
    let tables = target.db().table_names();
    let snapshot_files = files(target.snapshot_dir());

    let middle = bytes.len() / 2;
    let mut damages: Vec<(String, Vec<u8>)> = Vec::new();
    for at in [0, 9, 13, middle, bytes.len() - 13, bytes.len() - 1] {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x20;
        damages.push((format!("a flip at byte {at}"), damaged));
    }
    damages.push(("cut in the middle".into(), bytes[..middle].to_vec()));
    damages.push((
        "cut before the checksum".into(),
        bytes[..bytes.len() - 4].to_vec(),
    ));
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"tail");
    damages.push(("bytes after the trailer".into(), longer));
    damages.push(("empty".into(), Vec::new()));
    for (what, damaged) in damages {
        let error = install(&mut target, &meta, &damaged)
            .await
            .expect_err(&what);
        assert!(
            error.to_string().contains("snapshot"),
            "{what}: the error names the snapshot: {error}"
        );
        assert_eq!(target.reader().state().expect("state"), before, "{what}");
        assert_eq!(target.db().table_names(), tables, "{what}");
        let (current_meta, current) = current_bytes(&mut target).await.expect("a snapshot");
        assert_eq!(current_meta, target_meta, "{what}");
        assert!(
            current == target_bytes,
            "{what}: the stored snapshot is untouched"
        );
        let left = files(target.snapshot_dir());
        assert!(
            left.iter()
                .all(|name| snapshot_files.contains(name) || name.starts_with("receiving-")),
            "{what}: {left:?}"
        );
    }
    // The good snapshot still installs after all that.
    install(&mut target, &meta, &bytes).await.expect("installs");
}

/// Installs `bytes` on a node on crash storage with the power cut at sync `+sync_offset`;
/// reopens from the synced bytes and checks the state is the old one or the new one.
async fn install_with_power_cut(
    sync_offset: u64,
    mode: CrashMode,
    meta: &Meta,
    bytes: &[u8],
    new_state: &State,
) -> bool {
    let snapshots = tempfile::tempdir().expect("snapshot directory");
    let file = Arc::new(CrashStorage::new().expect("storage"));
    let log = Arc::new(file.sibling(&[]).expect("log storage"));
    let db = Db::create_in_with_log(
        Arc::clone(&file) as Arc<dyn Storage>,
        Arc::clone(&log) as Arc<dyn Storage>,
        artdb::Options::default(),
    )
    .expect("create");
    let (_log_store, mut state_machine) =
        artdb_raft::on_db(Arc::new(db), snapshots.path()).expect("tables");
    state_machine.apply(entries(3, 30)).await.expect("apply");
    let (_, old_bytes) = build(&mut state_machine).await;
    let old_state = state_machine.reader().state().expect("state");
    file.crash_at_sync(file.syncs() + sync_offset, mode);
    let installed = install(&mut state_machine, meta, bytes).await.is_ok();
    drop(state_machine);
    let crashed = file.crashed();

    let file = CrashStorage::from_image(&file.durable_image()).expect("file image");
    let log = file.sibling(&log.durable_image()).expect("log image");
    let db = Db::open_in_with_log(Arc::new(file), Arc::new(log), artdb::Options::default())
        .unwrap_or_else(|e| panic!("reopen after a cut at sync +{sync_offset} ({mode:?}): {e}"));
    let (_log_store, mut state_machine) = artdb_raft::on_db(Arc::new(db), snapshots.path())
        .unwrap_or_else(|e| panic!("the raft tables after a cut at +{sync_offset}: {e}"));
    let state = state_machine.reader().state().expect("state");
    let (current_meta, current) = current_bytes(&mut state_machine)
        .await
        .expect("a snapshot is stored, the old or the new");
    if state == *new_state {
        assert_eq!(current_meta, *meta, "cut at +{sync_offset} ({mode:?})");
        assert!(
            current == bytes,
            "cut at +{sync_offset}: the new file is whole"
        );
    } else {
        assert!(
            !installed,
            "cut at +{sync_offset} ({mode:?}): an acknowledged install was lost"
        );
        assert_eq!(
            state, old_state,
            "cut at +{sync_offset} ({mode:?}): a mixed state"
        );
        assert!(
            current == old_bytes,
            "cut at +{sync_offset}: the old file is whole"
        );
    }
    assert_eq!(
        data_tables(state_machine.db()).len(),
        1,
        "cut at +{sync_offset}: a half-made data table was left"
    );
    assert_eq!(
        files(snapshots.path()).len(),
        1,
        "cut at +{sync_offset}: leftover files {:?}",
        files(snapshots.path())
    );
    crashed
}

#[tokio::test]
async fn a_power_cut_at_any_sync_of_an_install_leaves_the_old_state_or_the_new() {
    let source_dir = tempfile::tempdir().expect("dir");
    let (new_state, meta, bytes) = source(source_dir.path(), 500).await;
    let mut crashes = 0;
    let mut sync_offset = 1;
    loop {
        let mut reached = false;
        for mode in [
            CrashMode::Keep,
            CrashMode::Drop,
            CrashMode::Tear { seed: sync_offset },
        ] {
            if install_with_power_cut(sync_offset, mode, &meta, &bytes, &new_state).await {
                crashes += 1;
                reached = true;
            }
        }
        if !reached {
            break;
        }
        sync_offset += 1;
        assert!(
            sync_offset < 64,
            "an install takes more syncs than expected"
        );
    }
    println!(
        "{crashes} cuts over the install's first {} syncs",
        sync_offset - 1
    );
    assert!(
        crashes >= 6,
        "only {crashes} runs reached their planned cut"
    );
}

#[tokio::test]
async fn what_a_crash_left_half_made_is_removed_at_open() {
    let dir = tempfile::tempdir().expect("dir");
    let mut state_machine = node(dir.path());
    state_machine.apply(entries(1, 100)).await.expect("apply");
    let (_, bytes) = build(&mut state_machine).await;
    let state = state_machine.reader().state().expect("state");
    let snapshot_dir = state_machine.snapshot_dir().to_path_buf();
    let kept = files(&snapshot_dir);
    // An install's load that was never switched to, and files of cut builds and receives.
    state_machine
        .db()
        .bulk_load("sm_data.77", [(b"orphan".to_vec(), b"row".to_vec())])
        .expect_err("bulk_load wants an existing table");
    state_machine
        .db()
        .bulk_load_new_table_try::<_, _, _, artdb::Error>(
            "sm_data.77",
            [Ok((b"orphan".to_vec(), b"row".to_vec()))],
        )
        .expect("an orphan data table");
    for name in ["snapshot-90", "snapshot-91.part", "receiving-92.part"] {
        std::fs::write(snapshot_dir.join(name), b"half").expect("a leftover file");
    }
    std::fs::write(snapshot_dir.join("operator-notes.txt"), b"mine").expect("a foreign file");
    drop(state_machine);

    let mut state_machine = node(dir.path());
    assert_eq!(state_machine.reader().state().expect("state"), state);
    assert_eq!(
        data_tables(state_machine.db()),
        vec![TABLE_SM_DATA.to_string()]
    );
    let mut expected = kept.clone();
    expected.push("operator-notes.txt".to_string());
    expected.sort();
    assert_eq!(files(&snapshot_dir), expected);
    let (_, current) = current_bytes(&mut state_machine).await.expect("a snapshot");
    assert!(current == bytes);
}

#[tokio::test]
async fn a_database_of_the_earlier_layout_keeps_its_snapshot() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("node.artdb");
    let source_dir = tempfile::tempdir().expect("dir");
    let (state, meta, bytes) = source(source_dir.path(), 400).await;
    {
        // The earlier layout: the data in `sm_data`, the snapshot's bytes in small chunks.
        let db = Db::create(&path, artdb::Options::default()).expect("create");
        for table in ["raft_log", "raft_meta", "sm_meta", "sm_data", "sm_snapshot"] {
            db.create_table(table).expect("table");
        }
        let mut txn = db.begin_write(artdb::WriteOptions::default()).expect("txn");
        for (key, value) in &state.pairs {
            txn.insert("sm_data", key, value).expect("insert");
        }
        let applied = postcard::to_allocvec(&meta.last_log_id).expect("encode");
        let membership = postcard::to_allocvec(&meta.last_membership).expect("encode");
        txn.insert("sm_meta", b"applied", &applied).expect("insert");
        txn.insert("sm_meta", b"membership", &membership)
            .expect("insert");
        let meta_bytes = postcard::to_allocvec(&meta).expect("encode");
        txn.insert("sm_meta", b"snapshot", &meta_bytes)
            .expect("insert");
        for (number, chunk) in bytes.chunks(1000).enumerate() {
            let key = artdb_key::scalar::encode_u32(number as u32);
            txn.insert("sm_snapshot", &key, chunk).expect("insert");
        }
        txn.commit().expect("commit");
        db.close().expect("close");
    }
    let mut state_machine = node(dir.path());
    assert_eq!(state_machine.reader().state().expect("state"), state);
    assert!(!state_machine
        .db()
        .table_names()
        .contains(&"sm_snapshot".to_string()));
    let (current_meta, current) = current_bytes(&mut state_machine).await.expect("a snapshot");
    assert_eq!(current_meta, meta);
    assert!(current == bytes, "the chunks became the snapshot file");
    drop(state_machine);
    let mut state_machine = node(dir.path());
    let (_, again) = current_bytes(&mut state_machine).await.expect("a snapshot");
    assert!(again == bytes);
}
