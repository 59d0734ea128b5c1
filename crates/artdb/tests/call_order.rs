//! Calls in the wrong order on one thread: anything that needs the writer while this thread
//! holds a write batch (`Db::write`) is `Error::BatchHeldByThisThread`, never a hang. Before,
//! `let batch = db.write()?; db.create_table("x")` (or `db.checkpoint()`, a second
//! `db.write()`, a bulk load, a transaction's commit) waited forever for the batch its own
//! thread held: the writer lock is not reentrant.

use artdb::{Db, Error, Options, WriteOptions};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `body` on a thread of its own and fails the test if it does not finish in 20 s.
fn within_deadline(name: &'static str, body: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(20)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{name}: hung (deadlock)"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{name}: panicked"),
    }
}

fn held(result: artdb::Result<impl Sized>, what: &str) {
    match result {
        Err(Error::BatchHeldByThisThread { .. }) => {}
        Err(other) => panic!("{what}: expected BatchHeldByThisThread, got {other}"),
        Ok(_) => panic!("{what}: expected BatchHeldByThisThread, got Ok"),
    }
}

#[test]
fn calls_needing_the_writer_while_this_thread_holds_a_batch_are_errors() {
    within_deadline("calls beside a held batch", || {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::create(dir.path().join("db"), Options::default()).unwrap();
        db.create_table("t").unwrap();
        let mut txn = db.begin_write(WriteOptions::default()).unwrap();
        txn.insert("t", b"from txn", b"1").unwrap();
        let mut batch = db.write().unwrap();
        batch.insert("t", b"k", b"v").unwrap();
        held(db.write().map(drop), "write");
        held(db.create_table("x"), "create_table");
        held(db.drop_table("t"), "drop_table");
        held(db.checkpoint(), "checkpoint");
        held(db.bulk_load("t", [(b"a", b"b")]), "bulk_load");
        held(txn.commit(), "a transaction's commit");
        // Reads go on.
        assert_eq!(db.read().table("t").unwrap().len(), 0);
        batch.commit().unwrap();
        // Once the batch is gone, everything works again.
        db.create_table("x").unwrap();
        db.checkpoint().unwrap();
        let read = db.read();
        assert_eq!(read.table("t").unwrap().get(b"k").unwrap(), Some(&b"v"[..]));
        drop(read);
        assert!(db.verify().unwrap().is_ok());
    });
}

/// Other threads still wait for the batch (the check is per thread).
#[test]
fn another_thread_waits_for_the_batch_as_before() {
    within_deadline("another thread", || {
        let dir = tempfile::tempdir().unwrap();
        let db =
            std::sync::Arc::new(Db::create(dir.path().join("db"), Options::default()).unwrap());
        db.create_table("t").unwrap();
        let mut batch = db.write().unwrap();
        batch.insert("t", b"k", b"v").unwrap();
        let other = {
            let db = std::sync::Arc::clone(&db);
            std::thread::spawn(move || db.create_table("x"))
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !other.is_finished(),
            "the other thread did not wait for the batch"
        );
        batch.commit().unwrap();
        other.join().unwrap().unwrap();
        assert_eq!(db.table_names(), ["t", "x"]);
    });
}
