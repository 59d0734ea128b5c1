//! Errors in the input of `load` and `restore` name the line: in a file of millions of lines,
//! "key of 4097 bytes is longer than the limit" or "bad escape in ..." alone does not say where.

mod common;

use common::*;

#[test]
fn load_errors_name_the_line() {
    let dir = TempDir::new("load-input-lines");
    let file = dir.file("l.artdb");
    let file = path_str(&file);
    let long_key = "b".repeat(4097);
    for (input, line) in [
        (format!("a\t1\n{long_key}\t2\nc\t3\n"), "line 2:"),
        ("a\t1\nb\t2\nc\tv\\t\n".to_string(), "line 3:"),
        ("a\\q\t1\n".to_string(), "line 1:"),
    ] {
        let tsv = dir.file("in.tsv");
        std::fs::write(&tsv, input).unwrap();
        let stderr = fails(&["load", file, "--table", "t", path_str(&tsv)], 1);
        assert!(stderr.contains(line), "want {line:?}: {stderr}");
        assert!(!dir.file("l.artdb").exists());
    }
}

#[test]
fn restore_names_the_line_of_a_key_over_the_limit() {
    let dir = TempDir::new("restore-input-lines");
    let file = dir.file("r.artdb");
    let dump = format!(
        "VERSION=3\nformat=print\nHEADER=END\n a\n 1\n {}\n 2\nDATA=END\n",
        "b".repeat(4097)
    );
    let output = artdb_with_input(&["restore", path_str(&file)], dump.as_bytes());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("line 6:") && stderr.contains("4097"),
        "{stderr}"
    );
    assert!(!file.exists());
}

/// JSON lines: `scan --json`'s pairs, one per line, load back to the same table, every byte
/// value and multi-kilobyte values included (text as JSON strings, other bytes as hex), in a
/// shuffled order (a write batch) and sorted (a bulk load).
#[test]
fn json_lines_load_what_scan_json_prints() {
    let dir = TempDir::new("load-jsonl");
    let model = model(11);
    let table = &model["main"];
    let source = dir.file("source.artdb");
    let dump = model_dump(&model, &["main"]);
    let output = artdb_with_input(&["restore", path_str(&source)], dump.as_bytes());
    assert!(output.status.success(), "{output:?}");
    let scanned = json(&ok(&["scan", path_str(&source), "--json"]));
    let mut lines: Vec<String> = scanned
        .as_array()
        .expect("an array of pairs")
        .iter()
        .map(|pair| pair.to_string())
        .collect();
    assert_eq!(lines.len(), table.len());
    assert!(lines.iter().any(|line| line.contains("\"key_hex\"")));
    assert!(lines.iter().any(|line| line.contains("\"key\"")));
    let sorted = dir.file("sorted.jsonl");
    std::fs::write(&sorted, lines.join("\n") + "\n").unwrap();
    lines.reverse();
    let reversed = dir.file("reversed.ndjson");
    std::fs::write(&reversed, lines.join("\n")).unwrap();
    for (input, how) in [(&sorted, "bulk load"), (&reversed, "write batch")] {
        let file = dir.file(&format!("{how}.artdb"));
        let report = ok(&["load", path_str(&file), path_str(input)]);
        assert!(report.contains(how), "{report}");
        assert_eq!(&table_of(path_str(&file), "main"), table, "{how}");
    }
    // Standard input with --jsonl.
    let piped = dir.file("piped.artdb");
    let output = artdb_with_input(
        &["load", path_str(&piped), "--table", "t", "-", "--jsonl"],
        std::fs::read(&sorted).unwrap().as_slice(),
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(&table_of(path_str(&piped), "t"), table);
}

#[test]
fn json_lines_errors_name_the_line_and_the_field() {
    let dir = TempDir::new("load-jsonl-errors");
    let file = dir.file("j.artdb");
    let good = "{\"key\":\"a\",\"value\":\"1\"}\n";
    for (bad, says) in [
        ("{\"key\":\"b\"}", "no \"value\""),
        ("{\"key\":\"b\",\"value\":2}", "\"value\" is a number"),
        (
            "{\"key\":\"b\",\"key_hex\":\"62\",\"value\":\"\"}",
            "both \"key\" and \"key_hex\"",
        ),
        (
            "{\"key_hex\":\"6\",\"value\":\"\"}",
            "odd number of hex digits",
        ),
        ("{\"key_hex\":\"zz\",\"value\":\"\"}", "not two hex digits"),
        (
            "{\"key\":\"b\",\"value\":\"\",\"ttl\":1}",
            "unknown field \"ttl\"",
        ),
        ("[\"b\",\"1\"]", "not a JSON object"),
        ("b\t1", "not a JSON object"),
        ("", "not a JSON object"),
    ] {
        let input = dir.file("in.jsonl");
        std::fs::write(&input, format!("{good}{bad}\n{good}")).unwrap();
        let stderr = fails(&["load", path_str(&file), path_str(&input)], 1);
        assert!(
            stderr.contains("line 2:") && stderr.contains(says),
            "{bad:?}: want {says:?}: {stderr}"
        );
        assert!(!file.exists(), "a failed load made {}", file.display());
    }
    let long = format!("{{\"key\":\"{}\",\"value\":\"\"}}\n", "k".repeat(4097));
    let input = dir.file("long.jsonl");
    std::fs::write(&input, long).unwrap();
    let stderr = fails(&["load", path_str(&file), path_str(&input)], 1);
    assert!(
        stderr.contains("line 1:") && stderr.contains("4097"),
        "{stderr}"
    );
    let stderr = fails(&["load", path_str(&file), "-", "--csv", "--jsonl"], 2);
    assert!(
        stderr.contains("--jsonl") || stderr.contains("--csv"),
        "{stderr}"
    );
}

/// A path that is a pipe (`<(zcat pairs.tsv.gz)`, `/dev/stdin`) is read once: an unsorted input
/// is read twice (to find it unsorted, then to load it), and a second read of a pipe finds it
/// drained, which once loaded nothing and said "loaded 0 pairs".
#[test]
fn an_unsorted_input_through_a_pipe_path_loads_whole() {
    let dir = TempDir::new("load-pipe-path");
    for (input, name) in [
        (&b"b\t1\na\t2\nc\t3\n"[..], "unsorted"),
        (&b"a\t1\nb\t2\nc\t3\n"[..], "sorted"),
    ] {
        let file = dir.file(&format!("{name}.artdb"));
        let output = artdb_with_input(&["load", path_str(&file), "/dev/stdin"], input);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{name}: {output:?}");
        assert!(stdout.contains("loaded 3 pairs"), "{name}: {stdout}");
        assert_eq!(table_of(path_str(&file), "main").len(), 3, "{name}");
    }
}
