//! The C test program `tests/c/api_test.c`, compiled with the system C compiler against the
//! built libraries and run: against the static library, the shared one, with AddressSanitizer
//! (when the compiler has it), and under valgrind (when it is installed).
//!
//! The C program checks every result itself and exits non-zero at the first wrong one; this
//! test fails with its output. The static and shared runs always happen (a C compiler is part
//! of the Rust toolchain's requirements on Linux); the sanitizer and valgrind runs print that
//! they were skipped when their tool is missing, so a machine without them still tests the C
//! API.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where cargo put `libartdb_capi.{a,so}` for this build: the `deps` folder that holds this
/// test's binary (`cargo test` leaves them there), or the profile folder above it (where
/// `cargo build` copies them).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the deps folder").to_path_buf();
    let profile = deps.parent().expect("the profile folder").to_path_buf();
    [deps, profile]
        .into_iter()
        .find(|dir| dir.join("libartdb_capi.a").exists() && dir.join("libartdb_capi.so").exists())
        .unwrap_or_else(|| panic!("libartdb_capi.a and .so are not beside {exe:?}"))
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Whether the C compiler builds and links a program with AddressSanitizer.
fn sanitizer_available(dir: &Path) -> bool {
    let source = dir.join("probe.c");
    std::fs::write(&source, "int main(void) { return 0; }\n").expect("write probe.c");
    Command::new(compiler())
        .args(["-fsanitize=address,undefined", "-o"])
        .arg(dir.join("probe"))
        .arg(&source)
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Compiles the C test into `out` with `extra` flags and link arguments.
fn compile(out: &Path, extra: &[&str]) {
    let mut command = Command::new(compiler());
    command
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join("tests/c/api_test.c"))
        .arg("-o")
        .arg(out)
        .args(extra);
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run the C compiler {:?}: {error}", compiler()));
    assert!(
        output.status.success(),
        "compiling api_test.c failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs `program` (with `wrapper` in front, if any) on a fresh directory; panics with its
/// output unless it exits 0.
fn run(label: &str, wrapper: &[&str], program: &Path) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (first, rest) = match wrapper.split_first() {
        Some((first, rest)) => (first.to_string(), rest.to_vec()),
        None => (program.display().to_string(), Vec::new()),
    };
    let mut command = Command::new(first);
    command.args(rest);
    if !wrapper.is_empty() {
        command.arg(program);
    }
    let output = command.arg(dir.path()).output().expect("run the C test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{label}: the C test failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains(" passed, 0 failed"), "{label}:\n{stdout}");
    println!("{label}: {}", stdout.lines().last().unwrap_or(""));
}

fn system_libraries() -> [&'static str; 3] {
    ["-lpthread", "-ldl", "-lm"]
}

#[test]
fn c_test_against_the_static_library() {
    let out = tempfile::tempdir().expect("a temporary directory");
    let program = out.path().join("api_test_static");
    let library = library_dir().join("libartdb_capi.a");
    let mut extra = vec![library.to_str().expect("a UTF-8 path")];
    extra.extend(system_libraries());
    compile(&program, &extra);
    run("static", &[], &program);
}

#[test]
fn c_test_against_the_shared_library_and_under_valgrind() {
    let out = tempfile::tempdir().expect("a temporary directory");
    let program = out.path().join("api_test_shared");
    let dir = library_dir();
    let dir = dir.to_str().expect("a UTF-8 path");
    let rpath = format!("-Wl,-rpath,{dir}");
    let search = format!("-L{dir}");
    compile(&program, &[&search, "-lartdb_capi", &rpath]);
    run("shared", &[], &program);

    let valgrind = Command::new("valgrind").arg("--version").output();
    if !valgrind.is_ok_and(|output| output.status.success()) {
        println!("valgrind is not installed: the valgrind run was skipped");
        return;
    }
    run(
        "valgrind",
        &[
            "valgrind",
            "--quiet",
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect",
        ],
        &program,
    );
}

#[test]
fn c_test_with_address_sanitizer() {
    let out = tempfile::tempdir().expect("a temporary directory");
    let program = out.path().join("api_test_asan");
    let library = library_dir().join("libartdb_capi.a");
    let mut extra = vec![
        "-fsanitize=address,undefined",
        "-fno-omit-frame-pointer",
        library.to_str().expect("a UTF-8 path"),
    ];
    extra.extend(system_libraries());
    if !sanitizer_available(out.path()) {
        println!("the C compiler has no AddressSanitizer: the sanitizer run was skipped");
        return;
    }
    compile(&program, &extra);
    run("address sanitizer", &[], &program);
}
