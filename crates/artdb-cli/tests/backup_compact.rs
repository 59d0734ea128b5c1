//! `artdb backup` and `artdb compact` (issue 12 items 4 and 5) end to end: the copy verifies
//! and dumps identically to the source, an existing destination is refused and left alone, no
//! temporary file is left behind, and compact reports sizes and keeps every pair. The backup
//! taken while a writer commits continuously is tested in-process where the writer can run
//! beside it: crates/artdb/tests/backup.rs.

mod common;

use common::*;

#[test]
fn backup_copies_verifies_and_never_overwrites() {
    let dir = TempDir::new("backup");
    let model = model(11);
    let source = dir.file("source.artdb");
    let source_str = path_str(&source);
    let tables: Vec<&str> = model.keys().map(String::as_str).collect();
    let output = artdb_with_input(
        &["restore", source_str],
        model_dump(&model, &tables).as_bytes(),
    );
    assert!(output.status.success());
    let dest = dir.file("copy.artdb");
    let report = json(&ok(&["backup", source_str, path_str(&dest), "--json"]));
    assert_eq!(report["verified"], true);
    let pairs: usize = model.values().map(|t| t.len()).sum();
    assert_eq!(report["pairs"], pairs);
    ok(&["verify", path_str(&dest)]);
    assert_eq!(
        dump_without_mapsize(path_str(&dest)),
        dump_without_mapsize(source_str)
    );
    // `--compact` is accepted (backups are always compacted).
    let dest2 = dir.file("copy2.artdb");
    ok(&["backup", source_str, path_str(&dest2), "--compact"]);
    ok(&["verify", path_str(&dest2)]);

    // The temporary copy of a killed backup (a PID that cannot exist) goes at the next backup
    // to the same destination; one of a live process (this test) stays.
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(4_194_304);
    let stale = dir.file(&format!(".copy3.artdb.backup-{}", pid_max + 1));
    let live = dir.file(&format!(".copy3.artdb.backup-{}", std::process::id()));
    std::fs::write(&stale, b"partial").unwrap();
    std::fs::write(&live, b"partial").unwrap();
    ok(&["backup", source_str, path_str(&dir.file("copy3.artdb"))]);
    assert!(!stale.exists());
    assert!(live.exists());
    std::fs::remove_file(&live).unwrap();

    // An existing destination is refused and left alone.
    let existing = dir.file("existing.artdb");
    std::fs::write(&existing, b"precious").unwrap();
    let stderr = fails(&["backup", source_str, path_str(&existing)], 1);
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(std::fs::read(&existing).unwrap(), b"precious");
    // A source that is not a database: nothing created.
    let nothing = dir.file("nothing.artdb");
    fails(&["backup", path_str(&existing), path_str(&nothing)], 4);
    assert!(!nothing.exists());
    // No temporary files anywhere.
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn compact_reports_sizes_and_keeps_the_data() {
    let dir = TempDir::new("compact");
    let model = model(12);
    let file = dir.file("db.artdb");
    let file_str = path_str(&file);
    let tables: Vec<&str> = model.keys().map(String::as_str).collect();
    let output = artdb_with_input(
        &["restore", file_str],
        model_dump(&model, &tables).as_bytes(),
    );
    assert!(output.status.success());
    let before_dump = dump_without_mapsize(file_str);
    let report = json(&ok(&["compact", file_str, "--json"]));
    let before = report["file_bytes_before"].as_u64().unwrap();
    let after = report["file_bytes_after"].as_u64().unwrap();
    assert!(before > 0 && after > 0);
    assert_eq!(after, std::fs::metadata(&file).unwrap().len());
    let text = ok(&["compact", file_str]);
    assert!(text.contains(" -> ") && text.contains("bytes"), "{text}");
    ok(&["verify", file_str]);
    assert_eq!(dump_without_mapsize(file_str), before_dump);
    fails(&["compact", path_str(&dir.file("missing.artdb"))], 1);
}

/// Regression (issue 8 item 9, issue 12 item 5). Symptom: `artdb compact` and `artdb checkpoint
/// --compact` left a churned file as large as before (the next checkpoint shrank it, partly).
/// Cause: the dense copy was written beside the old version, whose pages are freed only after.
/// Now `Db::compact` moves the copy down and cuts the file's tail in the same call.
#[test]
fn compact_shrinks_a_churned_file_in_the_same_command() {
    let dir = TempDir::new("compact-shrinks");
    let file = dir.file("db.artdb");
    let file_str = path_str(&file);
    let churn = |rounds: u32| {
        let options = artdb::Options {
            checkpoint_on_drop: false,
            ..artdb::Options::default()
        };
        let db = if file.exists() {
            artdb::Db::open(&file, options).unwrap()
        } else {
            let db = artdb::Db::create(&file, options).unwrap();
            db.create_table("t").unwrap();
            db
        };
        for round in 0..rounds {
            let mut batch = db.write().unwrap();
            for i in 0u32..20_000 {
                let key = (i.wrapping_mul(2_654_435_761) % 40_000).to_be_bytes();
                batch.insert("t", &key, &[round as u8; 30]).unwrap();
            }
            batch.commit().unwrap();
            db.checkpoint().unwrap();
        }
        db.close().unwrap();
    };
    churn(6);
    let keys = ok(&["count", file_str, "--table", "t"]);
    // A backup is written densely by bulk loads: the size a compacted file should come near.
    let copy = dir.file("copy.artdb");
    ok(&["backup", file_str, path_str(&copy)]);
    let dense = std::fs::metadata(&copy).unwrap().len();
    let report = json(&ok(&["compact", file_str, "--json"]));
    let before = report["file_bytes_before"].as_u64().unwrap();
    let after = report["file_bytes_after"].as_u64().unwrap();
    assert!(
        after < before && after * 10 <= dense * 13,
        "compact: {before} -> {after} bytes; a dense copy has {dense}"
    );
    assert_eq!(after, std::fs::metadata(&file).unwrap().len());
    assert_eq!(ok(&["count", file_str, "--table", "t"]), keys);
    ok(&["verify", file_str]);
    churn(6);
    let before = std::fs::metadata(&file).unwrap().len();
    ok(&["checkpoint", file_str, "--compact"]);
    let after = std::fs::metadata(&file).unwrap().len();
    assert!(
        after < before && after * 10 <= dense * 13,
        "checkpoint --compact: {before} -> {after} bytes; a dense copy has {dense}"
    );
    ok(&["verify", file_str]);
}

/// Issue 12 item 4: a backup while another process writes. The writer here is this test
/// process (its lock excludes `artdb backup`, a separate process), committing numbered
/// transactions (key `n` and `counter` = n in each) with checkpoints and compactions between, so
/// pages are reused and the log is recycled while the backups copy. Every backup must be one
/// committed state: `counter` = n and exactly the keys 0..=n.
///
/// No timing is assumed: the backups start once the writer has committed 50 transactions, and
/// go on (5 at least, 50 at most) until it has committed one more while they ran (a loaded
/// machine once let a durable writer commit only 100 in the 300 ms this test used to sleep).
#[test]
fn backup_while_another_process_writes_is_one_committed_state() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::{Duration, Instant};
    let dir = TempDir::new("backup-live");
    let file = dir.file("db.artdb");
    let db = artdb::Db::create(&file, artdb::Options::default()).unwrap();
    db.create_table("t").unwrap();
    let stop = AtomicBool::new(false);
    let committed = AtomicU32::new(0);
    let backups = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = db.write().unwrap();
                batch.insert("t", &n.to_be_bytes(), &[7u8; 40]).unwrap();
                batch.insert("t", b"counter", &n.to_be_bytes()).unwrap();
                batch.commit().unwrap();
                if n % 500 == 250 {
                    db.checkpoint().unwrap();
                }
                if n % 2000 == 1999 {
                    db.compact().unwrap();
                }
                n += 1;
                committed.store(n, Ordering::Relaxed);
            }
            n
        });
        let mut made = Vec::new();
        let waited = Instant::now();
        while committed.load(Ordering::Relaxed) < 50 && waited.elapsed() < Duration::from_secs(120)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let before = committed.load(Ordering::Relaxed);
        let mut round = 0;
        while before >= 50
            && (round < 5 || (committed.load(Ordering::Relaxed) == before && round < 50))
        {
            let dest = dir.file(&format!("copy{round}.artdb"));
            let output = artdb(&["backup", path_str(&file), path_str(&dest)]);
            made.push((dest, output));
            round += 1;
        }
        let during = committed.load(Ordering::Relaxed) - before;
        // Stop the writer before any assertion, so a failure cannot leave the scope waiting.
        stop.store(true, Ordering::Relaxed);
        let written = writer.join().unwrap();
        assert!(
            before >= 50,
            "the writer committed only {before} transactions in 120 s"
        );
        for (round, (_, output)) in made.iter().enumerate() {
            assert!(
                output.status.success(),
                "backup {round}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        assert!(
            during > 0,
            "the writer committed nothing during {round} backups ({written} in all)"
        );
        made.into_iter().map(|(dest, _)| dest).collect::<Vec<_>>()
    });
    for dest in &backups {
        let dest = path_str(dest);
        ok(&["verify", dest]);
        let pairs = table_of(dest, "t");
        let counter = pairs[&b"counter".to_vec()].clone();
        let n = u32::from_be_bytes(counter.try_into().unwrap());
        assert_eq!(pairs.len() as u32, n + 2, "{dest}: counter {n}");
        for i in 0..=n {
            assert!(
                pairs.contains_key(i.to_be_bytes().as_slice()),
                "{dest}: key {i}"
            );
        }
    }
}
