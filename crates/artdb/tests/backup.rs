//! `Db::copy_into` (what `artdb backup` runs) while a writer commits continuously: every copy
//! verifies and equals one committed state of the source (all tables agree on the same commit),
//! and the writer keeps committing while the copy runs (it is not blocked for the copy's
//! duration). The writer also checkpoints and compacts, so pages are freed and reused while the
//! copy reads its snapshot.

use artdb::{Db, Options};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:09}").into_bytes()
}

/// One commit: `a` and `b` gain key i, `meta/counter` becomes i.
fn commit(db: &Db, i: u64) {
    let mut batch = db.write().unwrap();
    batch.insert("a", &key(i), &i.to_le_bytes()).unwrap();
    batch.insert("b", &key(i), &(i * 3).to_le_bytes()).unwrap();
    batch.insert("meta", b"counter", &i.to_le_bytes()).unwrap();
    batch.commit().unwrap();
}

#[test]
fn backup_while_a_writer_commits_is_one_committed_state() {
    let scale: u64 = std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let dir = tempfile::tempdir().unwrap();
    // NoSync: the writer must commit many times while a copy runs; an fsync per commit (Sync)
    // can make it too slow for that on a busy disk, and durability is not what this tests.
    let options = Options {
        durability: artdb::Durability::NoSync,
        ..Options::default()
    };
    let source = Arc::new(Db::create(dir.path().join("source.artdb"), options).unwrap());
    for table in ["a", "b", "meta"] {
        source.create_table(table).unwrap();
    }
    let prefill = 40_000 * scale;
    let mut batch = source.write().unwrap();
    for i in 0..prefill {
        batch.insert("a", &key(i), &i.to_le_bytes()).unwrap();
        batch.insert("b", &key(i), &(i * 3).to_le_bytes()).unwrap();
    }
    batch
        .insert("meta", b"counter", &(prefill - 1).to_le_bytes())
        .unwrap();
    batch.commit().unwrap();
    source.checkpoint().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(prefill - 1));
    let writer = {
        let (source, stop, committed) = (source.clone(), stop.clone(), committed.clone());
        std::thread::spawn(move || {
            let mut i = prefill;
            while !stop.load(Ordering::Relaxed) {
                commit(&source, i);
                committed.store(i, Ordering::Release);
                if i % 64 == 0 {
                    source.checkpoint().unwrap();
                }
                if i % 512 == 0 {
                    source.compact().unwrap();
                }
                i += 1;
            }
        })
    };
    for round in 0..3 {
        let path = dir.path().join(format!("copy-{round}.artdb"));
        let target = Db::create(&path, Options::default()).unwrap();
        let before = committed.load(Ordering::Acquire);
        // Halfway through the copy, wait for the writer to commit a few more times: if the
        // copy blocked writers, this would time out.
        let mut waited = false;
        let copied = source
            .copy_into(&target, &mut |done| {
                if done < 8192 || waited {
                    return;
                }
                waited = true;
                let goal = committed.load(Ordering::Acquire) + 3;
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
                while committed.load(Ordering::Acquire) < goal {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "round {round}: the writer made no progress while the copy ran"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            })
            .unwrap();
        assert!(waited, "the copy never reported progress");
        let after = committed.load(Ordering::Acquire);
        target.close().unwrap();
        assert!(after >= before + 3);
        // The copy opens, verifies, and is exactly the state after one commit.
        let copy = Db::open(&path, Options::default()).unwrap();
        assert!(copy.verify().unwrap().is_ok());
        let read = copy.read();
        let counter = read.get("meta", b"counter").unwrap().expect("counter");
        let counter = u64::from_le_bytes(counter.try_into().unwrap());
        assert!(
            counter >= before && counter <= after,
            "{before} <= {counter} <= {after}"
        );
        for (name, factor) in [("a", 1), ("b", 3)] {
            let table = read.table(name).unwrap();
            assert_eq!(table.len(), counter + 1, "table {name}");
            for (i, item) in table.iter().enumerate() {
                let (k, v) = item.unwrap();
                let i = i as u64;
                assert_eq!(k, key(i));
                assert_eq!(v, (i * factor).to_le_bytes());
            }
        }
        assert_eq!(copied, 2 * (counter + 1) + 1);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(source.verify().unwrap().is_ok());
}

#[test]
fn copy_into_refuses_a_target_with_the_same_table() {
    let dir = tempfile::tempdir().unwrap();
    let source = Db::create(dir.path().join("s.artdb"), Options::default()).unwrap();
    source.create_table("t").unwrap();
    let target = Db::create(dir.path().join("t.artdb"), Options::default()).unwrap();
    target.create_table("t").unwrap();
    assert!(matches!(
        source.copy_into(&target, &mut |_| {}),
        Err(artdb::Error::TableExists { .. })
    ));
}
