//! `artdb export` / `artdb import` through bitable files (issue 12 item 2): exact round trip
//! against a model over keys with every byte value; an existing destination, bitables of the
//! wrong kind (a database file, text, a directory, a damaged table) and a table with keys are
//! clear errors that leave nothing behind.

mod common;

use common::*;

fn restore_model(file: &str, model: &Model) {
    let tables: Vec<&str> = model.keys().map(String::as_str).collect();
    let output = artdb_with_input(&["restore", file], model_dump(model, &tables).as_bytes());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn export_import_round_trip_matches_the_model() {
    let dir = TempDir::new("export-round-trip");
    let model = model(7);
    let source = dir.file("source.artdb");
    restore_model(path_str(&source), &model);
    let target = dir.file("target.artdb");
    for name in model.keys() {
        let table = dir.file(&format!("{}.bt", name.replace(' ', "_")));
        let exported = json(&ok(&[
            "export",
            path_str(&source),
            path_str(&table),
            "--table",
            name,
            "--json",
        ]));
        assert_eq!(exported["pairs"], model[name].len());
        ok(&["bitable", "verify", path_str(&table)]);
        // The bitable holds exactly the model (read with the bitable tool, in hex).
        let scanned = ok(&["bitable", "scan", path_str(&table), "--hex"]);
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = scanned
            .lines()
            .map(|line| {
                let (key, value) = line.split_once('\t').expect("key<TAB>value");
                (unhex(key), unhex(value))
            })
            .collect();
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model[name]
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert!(
            pairs == expected,
            "bitable of {name} differs from the model"
        );
        let imported = json(&ok(&[
            "import",
            path_str(&target),
            path_str(&table),
            "--table",
            name,
            "--json",
        ]));
        assert_eq!(imported["pairs"], model[name].len());
        assert!(
            table_of(path_str(&target), name) == model[name],
            "table {name} differs after the round trip"
        );
    }
    ok(&["verify", path_str(&target)]);
}

#[test]
fn export_import_bad_input() {
    let dir = TempDir::new("export-bad");
    let model = model(8);
    let source = dir.file("source.artdb");
    let source_str = path_str(&source);
    restore_model(source_str, &model);

    // An existing destination is refused and left alone.
    let existing = dir.file("existing.bt");
    std::fs::write(&existing, b"precious").unwrap();
    let stderr = fails(
        &["export", source_str, path_str(&existing), "--table", "main"],
        1,
    );
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(std::fs::read(&existing).unwrap(), b"precious");
    // A missing table: nothing written.
    let out = dir.file("nope.bt");
    fails(
        &["export", source_str, path_str(&out), "--table", "nope"],
        1,
    );
    assert!(!out.exists());

    // Bitables of the wrong kind, into a new database file: no file left behind.
    let good = dir.file("main.bt");
    ok(&["export", source_str, path_str(&good), "--table", "main"]);
    let mut damaged = std::fs::read(&good).unwrap();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x40;
    let damaged_path = dir.file("damaged.bt");
    std::fs::write(&damaged_path, damaged).unwrap();
    let text = dir.file("text.bt");
    std::fs::write(&text, "key\tvalue\n").unwrap();
    let empty = dir.file("empty.bt");
    std::fs::write(&empty, b"").unwrap();
    let sub = dir.file("subdir");
    std::fs::create_dir(&sub).unwrap();
    let cases = [
        (&source, "not a bitable"),
        (&text, "bitable"),
        (&empty, "bitable"),
        (&sub, "is a directory"),
        (&damaged_path, "left as it was"),
    ];
    for (input, expected) in cases {
        let target = dir.file("new.artdb");
        let stderr = fails(&["import", path_str(&target), path_str(input)], 1);
        assert!(stderr.contains(expected), "{}: {stderr}", input.display());
        assert!(
            !target.exists(),
            "{}: left a database file",
            input.display()
        );
    }
    // Into an existing database: the damaged bitable leaves no table, a table with keys is
    // refused.
    let target = dir.file("existing.artdb");
    let target_str = path_str(&target);
    ok(&["create", target_str]);
    ok(&["put", target_str, "--table", "full", "k", "v"]);
    fails(
        &[
            "import",
            target_str,
            path_str(&damaged_path),
            "--table",
            "t",
        ],
        1,
    );
    let stderr = fails(
        &["import", target_str, path_str(&good), "--table", "full"],
        1,
    );
    assert!(stderr.contains("already has 1 keys"), "{stderr}");
    let tables = json(&ok(&["stats", target_str, "--json", "--quick"]))["tables"].clone();
    assert_eq!(tables.as_array().map(Vec::len), Some(1), "{tables}");
    assert_eq!(ok(&["scan", target_str, "--table", "full"]), "k\tv\n");
    ok(&["verify", target_str]);
}
