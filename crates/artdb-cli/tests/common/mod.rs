//! Helpers of the CLI's end-to-end tests: run the `artdb` binary, temporary directories.
#![allow(dead_code)]

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
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_artdb"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run artdb");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().expect("wait for artdb");
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
