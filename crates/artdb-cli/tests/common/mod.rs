//! Helpers of the CLI's end-to-end tests: run the `artdb` binary, temporary directories.
#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `artdb` with `args`.
pub fn artdb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_artdb"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run artdb")
}

/// Runs `artdb` with `args` and `input` on standard input.
pub fn artdb_with_input(args: &[&str], input: &[u8]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_artdb"));
    command.args(args);
    output_with_input(command, input)
}

/// Runs `command` with `input` on standard input (written from another thread, so a child that
/// writes much output before reading all its input cannot deadlock) and collects its output.
pub fn output_with_input(mut command: Command, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the command");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().expect("wait for the command");
    let _ = writer.join();
    output
}

/// Runs `artdb` with `args`, asserts success and returns standard output.
pub fn ok(args: &[&str]) -> String {
    let output = artdb(args);
    assert!(
        output.status.success(),
        "artdb {args:?} failed ({:?}): {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).to_string()
}

/// Runs `artdb` with `args`, asserts it exits with `code` and returns standard error.
pub fn fails(args: &[&str], code: i32) -> String {
    let output = artdb(args);
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(
        output.status.code(),
        Some(code),
        "artdb {args:?}: stdout {} stderr {stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        !stderr.contains("panicked"),
        "artdb {args:?} panicked: {stderr}"
    );
    stderr
}

/// The path as `&str` (temporary paths are ASCII).
pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// A directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("artdb-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The JSON document `artdb` printed.
pub fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

pub type Model = BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>;

/// Tables whose keys cover every byte value (alone, doubled, at every position of random keys)
/// and whose values include empty and multi-kilobyte ones.
pub fn model(seed: u64) -> Model {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut model = Model::new();
    for name in ["main", "orders", "by name"] {
        let table = model.entry(name.to_string()).or_default();
        for byte in 0..=255u8 {
            table.insert(vec![byte], vec![byte; usize::from(byte % 7)]);
            table.insert(vec![byte, byte], vec![]);
        }
        for _ in 0..600 {
            let len = rng.gen_range(1..60);
            let key: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let value_len = if rng.gen_bool(0.05) {
                rng.gen_range(1000..6000)
            } else {
                rng.gen_range(0..40)
            };
            let value: Vec<u8> = (0..value_len).map(|_| rng.gen()).collect();
            table.insert(key, value);
        }
    }
    model
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The model as a hex dump, written here independently of the tool (the default table first
/// and unnamed, as `mdb_load` needs).
pub fn model_dump(model: &Model, tables: &[&str]) -> String {
    let mut text = String::new();
    for name in tables {
        text.push_str("VERSION=3\nformat=bytevalue\n");
        if *name != "main" {
            text.push_str(&format!("database={name}\n"));
        }
        text.push_str("type=btree\nmapsize=67108864\nHEADER=END\n");
        for (key, value) in &model[*name] {
            text.push_str(&format!(" {}\n {}\n", hex(key), hex(value)));
        }
        text.push_str("DATA=END\n");
    }
    text
}

/// The pairs of one table, read back through `artdb scan --json` and unescaped.
pub fn table_of(file: &str, table: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let dump = ok(&["dump", file, "--table", table]);
    let mut pairs = BTreeMap::new();
    let mut lines = dump
        .lines()
        .skip_while(|line| *line != "HEADER=END")
        .skip(1)
        .take_while(|line| *line != "DATA=END");
    while let (Some(key), Some(value)) = (lines.next(), lines.next()) {
        pairs.insert(unhex(&key[1..]), unhex(&value[1..]));
    }
    pairs
}

pub fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex"))
        .collect()
}

/// `artdb dump FILE` without the `mapsize=` lines (which follow the file's size).
pub fn dump_without_mapsize(file: &str) -> String {
    ok(&["dump", file])
        .lines()
        .filter(|line| !line.starts_with("mapsize="))
        .map(|line| format!("{line}\n"))
        .collect()
}
