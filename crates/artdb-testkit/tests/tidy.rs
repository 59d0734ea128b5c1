//! Tidy: the rules of `shared/STYLE.md` that clippy cannot see, checked as a test over the
//! workspace's sources.
//!
//! - layering: each crate depends only on the artdb crates below it (DESIGN.md's layer diagram);
//!   `artdb-bitable` and `artdb-key` depend on no other artdb crate;
//! - the engine's module layers: `io`, `store`, `wal`, `engine` and `txn` never name `db` (the
//!   public API above them), nor the items the crate root re-exports from it; and each names
//!   only the layers below it (db -> txn -> engine -> {store, wal} -> io, all -> error), but for
//!   the listed debt;
//! - the engine's I/O seam: inside `crates/artdb/src`, only the `io` module opens, syncs or maps
//!   a file;
//! - no `#[ignore]` without a reason string;
//! - ASCII-only Rust sources (so diffs, greps and terminals agree on every byte);
//! - every library source file opens with a `//!` header;
//! - comments in `crates/*/src` keep the reason and drop the figures: no session or issue
//!   numbers, dates, callgrind counts, time or throughput figures (they go stale at the next
//!   measurement; docs/benchmarks.md holds the figures, the issues the history);
//! - no library source file over 1,000 lines, but for the listed debt;
//! - the engine's `error.rs` names nothing above it (every layer imports it);
//! - `unsafe` in `artdb-art` only in its `raw/` module, but for the listed debt, whose counts
//!   may only fall.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn all_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(&workspace_root().join("crates"), &mut files);
    files.sort();
    files
}

/// The artdb crates each crate may depend on (normal dependencies; dev-dependencies are free).
const ALLOWED_LAYERS: &[(&str, &[&str])] = &[
    ("artdb-key", &[]),
    ("artdb-art", &["artdb-key"]),
    ("artdb-bitable", &[]),
    ("artdb-tidstore", &["artdb-art", "artdb-key"]),
    ("artdb", &["artdb-art", "artdb-key", "artdb-bitable"]),
    ("artdb-testkit", &["artdb", "artdb-art", "artdb-key"]),
];

#[test]
fn crates_depend_only_on_lower_layers() {
    let mut problems = Vec::new();
    for (crate_name, allowed) in ALLOWED_LAYERS {
        let manifest = workspace_root()
            .join("crates")
            .join(crate_name)
            .join("Cargo.toml");
        let text = fs::read_to_string(&manifest).unwrap_or_default();
        let mut section = String::new();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line.to_string();
                continue;
            }
            if section != "[dependencies]" {
                continue;
            }
            let dep = line.split(['=', '.', ' ']).next().unwrap_or("").trim();
            if dep.starts_with("artdb") && !allowed.contains(&dep) {
                problems.push(format!(
                    "{crate_name} depends on {dep}, a layer it must not name"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "layering violations:\n{}",
        problems.join("\n")
    );
}

/// The engine's modules below `db` (DESIGN.md: db over txn over engine over wal and store over
/// io).
const ENGINE_LOWER_MODULES: &[&str] = &["io", "store", "wal", "engine", "txn"];

/// Paths by which a lower module would name `db` (directly or through the crate root's
/// re-exports of it).
const NAMES_OF_DB: &[&str] = &[
    "crate::db",
    "super::db",
    "crate::Db",
    "crate::ReadTxn",
    "crate::WriteTxn",
    "crate::Options",
    "crate::Table",
    "crate::DbStats",
];

#[test]
fn engine_modules_below_db_never_name_it() {
    let engine = workspace_root().join("crates/artdb/src");
    let mut problems = Vec::new();
    for module in ENGINE_LOWER_MODULES {
        let mut files = Vec::new();
        rust_files(&engine.join(module), &mut files);
        let single = engine.join(format!("{module}.rs"));
        if single.exists() {
            files.push(single);
        }
        for file in files {
            let text = fs::read_to_string(&file).unwrap_or_default();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for name in NAMES_OF_DB {
                    let hit = code.match_indices(name).any(|(at, _)| {
                        // A longer identifier (`crate::Dbx`) is another name.
                        let next = code[at + name.len()..].chars().next();
                        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    });
                    if hit {
                        problems.push(format!(
                            "{}:{}: names `{name}`, a higher layer",
                            file.display(),
                            number + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "engine layering violations:\n{}",
        problems.join("\n")
    );
}

/// The engine's layer arrows (DESIGN.md): db -> txn -> engine -> {store, wal} -> io, and every
/// layer -> error (and `bytes`, the field helpers below every format). Each module with the
/// modules it may name; `store` and `wal` are side by side and name neither each other.
const ENGINE_LAYERS: &[(&str, &[&str])] = &[
    ("io", &["error"]),
    ("store", &["io", "error", "bytes"]),
    ("wal", &["io", "error", "bytes"]),
    ("engine", &["store", "wal", "io", "error", "bytes"]),
    ("txn", &["engine", "store", "wal", "io", "error", "bytes"]),
    (
        "db",
        &[
            "txn",
            "engine",
            "store",
            "wal",
            "io",
            "error",
            "bytes",
            "verify_report",
        ],
    ),
];

/// The engine modules the layer rule knows: a module outside this list (the crate root,
/// `typed`, `fuzz`) sits above the layers and is not checked.
const ENGINE_LAYER_NAMES: &[&str] = &[
    "io",
    "store",
    "wal",
    "engine",
    "txn",
    "db",
    "error",
    "bytes",
    "verify_report",
    "fuzz",
    "typed",
];

/// Arrows that run up against [`ENGINE_LAYERS`] today, each `(file, named module)`: debt to
/// pay down, not a licence; an entry no longer met must leave the list.
const ENGINE_ARROWS_ALLOWED: &[(&str, &str)] = &[];

/// The engine modules `code` (one line, comments cut) names through `crate::` (or, in a
/// module's root file, through `super::`, which is then the crate root).
fn named_modules(code: &str, root_file: bool) -> Vec<&'static str> {
    let mut named = Vec::new();
    for module in ENGINE_LAYER_NAMES {
        let prefixes: &[&str] = if root_file {
            &["crate::", "super::"]
        } else {
            &["crate::"]
        };
        for prefix in prefixes {
            let path = format!("{prefix}{module}");
            let hit = code.match_indices(&path).any(|(at, _)| {
                let before = code[..at].chars().next_back();
                let after = code[at + path.len()..].chars().next();
                !before.is_some_and(|c| is_identifier_char(c) || c == ':')
                    && !after.is_some_and(is_identifier_char)
            });
            if hit && !named.contains(module) {
                named.push(*module);
            }
        }
    }
    named
}

#[test]
fn engine_modules_name_only_the_layers_below_them() {
    let engine = workspace_root().join("crates/artdb/src");
    let mut problems = Vec::new();
    let mut met = Vec::new();
    for (module, allowed) in ENGINE_LAYERS {
        let mut files = Vec::new();
        rust_files(&engine.join(module), &mut files);
        let single = engine.join(format!("{module}.rs"));
        if single.exists() {
            files.push(single.clone());
        }
        for file in files {
            let name = shown(&file);
            let root_file = file == single || file == engine.join(module).join("mod.rs");
            let text = fs::read_to_string(&file).unwrap_or_default();
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for named in named_modules(code, root_file) {
                    if named == *module || allowed.contains(&named) {
                        continue;
                    }
                    let debt = ENGINE_ARROWS_ALLOWED
                        .iter()
                        .find(|(path, to)| *path == name && *to == named);
                    match debt {
                        Some(entry) => met.push(*entry),
                        None => problems.push(format!(
                            "{name}:{}: `{module}` names `{named}`, which is not below it \
                             (db -> txn -> engine -> {{store, wal}} -> io, all -> error)",
                            number + 1
                        )),
                    }
                }
            }
        }
    }
    for entry in ENGINE_ARROWS_ALLOWED {
        if !met.contains(entry) {
            problems.push(format!(
                "{} no longer names `{}`: take it off ENGINE_ARROWS_ALLOWED",
                entry.0, entry.1
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "engine layer arrows:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_layer_rule_reads_paths_not_words() {
    assert_eq!(named_modules("use crate::txn::History;", false), ["txn"]);
    assert_eq!(named_modules("use super::db::Db;", true), ["db"]);
    assert!(named_modules("use super::db::Db;", false).is_empty());
    assert!(named_modules("let x = crate::txnx::y;", false).is_empty());
    assert!(named_modules("artdb::crate::db", false).is_empty());
}

#[test]
fn only_the_io_module_touches_files() {
    let engine = workspace_root().join("crates/artdb/src");
    let mut files = Vec::new();
    rust_files(&engine, &mut files);
    let forbidden = [
        "File::open",
        "File::create",
        "OpenOptions",
        "sync_all",
        "sync_data",
        "Mmap",
    ];
    let mut problems = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&engine)
            .unwrap_or(&file)
            .to_string_lossy()
            .to_string();
        if relative == "io.rs" || relative.starts_with("io/") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap_or_default();
        for word in forbidden {
            if text.contains(word) {
                problems.push(format!(
                    "crates/artdb/src/{relative} uses {word} outside io"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "I/O outside the io seam:\n{}",
        problems.join("\n")
    );
}

#[test]
fn ignored_tests_say_why() {
    let mut problems = Vec::new();
    for file in all_sources() {
        let text = fs::read_to_string(&file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.starts_with("#[ignore]") {
                problems.push(format!(
                    "{}:{}: #[ignore] without a reason",
                    file.display(),
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn sources_are_ascii() {
    let mut problems = Vec::new();
    for file in all_sources() {
        let text = fs::read_to_string(&file).unwrap_or_default();
        for (number, line) in text.lines().enumerate() {
            if !line.is_ascii() {
                problems.push(format!(
                    "{}:{}: non-ASCII character",
                    file.display(),
                    number + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn library_files_open_with_a_header() {
    let mut problems = Vec::new();
    for file in all_sources() {
        let path = file.to_string_lossy();
        if !path.contains("/src/") {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap_or_default();
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        if !first.starts_with("//!") {
            problems.push(format!("{}: no `//!` header", file.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The `crates/*/src` files: the library and binary sources (not `tests/`, `benches/` or
/// `examples/`).
fn crate_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(crates) = fs::read_dir(workspace_root().join("crates")) else {
        return files;
    };
    for entry in crates.flatten() {
        rust_files(&entry.path().join("src"), &mut files);
    }
    files.sort();
    files
}

/// A path relative to the workspace root, for messages a reader can paste.
fn shown(file: &Path) -> String {
    let root = workspace_root();
    let relative = file.strip_prefix(&root).unwrap_or(file);
    relative.to_string_lossy().replace('\\', "/")
}

fn is_identifier_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether a raw string literal (`r"`, `r#"`, `br"`, `br#"`) starts at `at`; `r#name` is a raw
/// identifier, not a string.
fn raw_string_at(chars: &[char], at: usize) -> bool {
    let mut k = at;
    if chars.get(k) == Some(&'b') {
        k += 1;
    }
    if chars.get(k) != Some(&'r') {
        return false;
    }
    k += 1;
    while chars.get(k) == Some(&'#') {
        k += 1;
    }
    chars.get(k) == Some(&'"')
}

/// The comments of a Rust source as (1-based line, text) pairs: line comments (`//`, `///`,
/// `//!`) and each line of a block comment. String, raw string and char literals are skipped, so
/// the `//` of `"http://..."` is not a comment. A lexer of its own rather than a parser
/// dependency: the test needs only where comments are, and a mistake shows as a false hit.
fn comments(text: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '\n' {
            line += 1;
            at += 1;
        } else if c == '/' && next == Some('/') {
            let start = at;
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
            out.push((line, chars[start..at].iter().collect()));
        } else if c == '/' && next == Some('*') {
            // Block comments nest; each of their lines is reported at its own number.
            let mut depth = 0usize;
            let mut current = String::new();
            while at < chars.len() {
                let c = chars[at];
                let next = chars.get(at + 1).copied();
                if c == '/' && next == Some('*') {
                    depth += 1;
                    at += 2;
                } else if c == '*' && next == Some('/') {
                    depth -= 1;
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else if c == '\n' {
                    out.push((line, std::mem::take(&mut current)));
                    line += 1;
                    at += 1;
                } else {
                    current.push(c);
                    at += 1;
                }
            }
            out.push((line, current));
        } else if raw_string_at(&chars, at) {
            while chars[at] != '#' && chars[at] != '"' {
                at += 1;
            }
            let mut hashes = 0;
            while chars[at] == '#' {
                hashes += 1;
                at += 1;
            }
            at += 1;
            while at < chars.len() {
                if chars[at] == '"' && (1..=hashes).all(|k| chars.get(at + k) == Some(&'#')) {
                    at += 1 + hashes;
                    break;
                }
                if chars[at] == '\n' {
                    line += 1;
                }
                at += 1;
            }
        } else if c == '"' {
            at += 1;
            while at < chars.len() && chars[at] != '"' {
                if chars[at] == '\n' {
                    line += 1;
                }
                // An escape skips the character it escapes (which may be a quote or a newline).
                if chars[at] == '\\' && chars.get(at + 1) == Some(&'\n') {
                    line += 1;
                }
                at += if chars[at] == '\\' { 2 } else { 1 };
            }
            at += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{7f}', '"') closes with a quote; a lifetime ('a)
            // does not.
            if next == Some('\\') {
                at += 2;
                while at < chars.len() && chars[at] != '\'' {
                    at += 1;
                }
                at += 1;
            } else if chars.get(at + 2) == Some(&'\'') {
                at += 3;
            } else {
                at += 1;
            }
        } else if is_identifier_char(c) {
            // A whole identifier, so the `r` ending `for"` (never valid) or `br` inside `abr`
            // is not taken for a raw string's start.
            while at < chars.len() && is_identifier_char(chars[at]) {
                at += 1;
            }
        } else {
            at += 1;
        }
    }
    out
}

/// Why a comment breaks the "reason, not figures" rule, if it does: the history (session and
/// issue numbers, dates) and the measurements (callgrind counts, time and throughput figures)
/// that go stale at the next measurement. Limits and format sizes ("256 entries", "16 bytes") are design facts
/// and pass.
fn stale_figure(comment: &str) -> Option<&'static str> {
    let text = comment.to_lowercase();
    let bytes = text.as_bytes();
    let digit_after = |word: &str| {
        text.match_indices(word).any(|(at, _)| {
            let rest = text[at + word.len()..].trim_start_matches(['#', ' ']);
            let starts_word =
                at == 0 || !is_identifier_char(text[..at].chars().last().unwrap_or(' '));
            starts_word && rest.starts_with(|c: char| c.is_ascii_digit())
        })
    };
    if digit_after("session ") || digit_after("sessions ") {
        return Some("a session number (history belongs in docs/journal/, not the code)");
    }
    if digit_after("issue ") || digit_after("issues ") {
        return Some("an issue number (say the reason; the issue tracker keeps the history)");
    }
    if text.contains("callgrind") {
        return Some("a callgrind count (measured figures live in docs/benchmarks.md)");
    }
    for (at, _) in text.char_indices() {
        if !bytes[at].is_ascii_digit() || (at > 0 && bytes[at - 1].is_ascii_digit()) {
            continue;
        }
        let digits = text[at..].bytes().take_while(u8::is_ascii_digit).count();
        let after = &text[at + digits..];
        // An ISO date: 20dd-dd-dd.
        let date = digits == 4
            && text[at..].starts_with("20")
            && after.len() >= 6
            && after.as_bytes()[0] == b'-'
            && after.as_bytes()[1..3].iter().all(u8::is_ascii_digit)
            && after.as_bytes()[3] == b'-'
            && after.as_bytes()[4..6].iter().all(u8::is_ascii_digit);
        if date {
            return Some("a date (history belongs in docs/journal/, not the code)");
        }
        // A time figure: a number (with an optional fraction) and a unit, "12 ns", "3.5us".
        let after = after
            .strip_prefix('.')
            .map(|f| f.trim_start_matches(|c: char| c.is_ascii_digit()))
            .unwrap_or(after);
        let unit = after.strip_prefix(' ').unwrap_or(after);
        for name in ["ns", "us", "\u{b5}s", "ms"] {
            if let Some(end) = unit.strip_prefix(name) {
                if !end.starts_with(is_identifier_char) {
                    return Some(
                        "a time figure (measured figures live in docs/benchmarks.md; \
                         name the workload instead)",
                    );
                }
            }
        }
        if is_rate(unit) {
            return Some(
                "a throughput figure (measured figures live in docs/benchmarks.md; \
                 name the workload instead)",
            );
        }
    }
    None
}

/// Whether the text after a number names a rate: "0.7 Mops", "12k ops", "0.40M scans/s",
/// "3 GB/s", "900 commits per second". A unit without a number before it ("reads/s and
/// commits/s", "Mkeys/s: each seek reads 100 pairs") names what a report prints and passes.
fn is_rate(unit: &str) -> bool {
    let unit = unit
        .strip_prefix(['k', 'm', 'g'])
        .filter(|rest| rest.starts_with(' '))
        .unwrap_or(unit)
        .trim_start_matches(' ');
    let word_len = unit
        .find(|c: char| !is_identifier_char(c))
        .unwrap_or(unit.len());
    let (word, rest) = unit.split_at(word_len);
    if ["ops", "kops", "mops", "gops"].contains(&word) {
        return true;
    }
    !word.is_empty()
        && (rest.starts_with("/s") && !rest[2..].starts_with(is_identifier_char)
            || rest.starts_with(" per second")
            || rest.starts_with(" per cpu second"))
}

/// The text of a comment without its markers (`//`, `///`, `//!`).
fn comment_text(comment: &str) -> &str {
    comment
        .trim_start()
        .trim_start_matches('/')
        .trim_start_matches('!')
        .trim()
}

/// Why two consecutive comment lines break the rule together when neither does alone: a
/// wrapped comment can put "session" at the end of one line and its number at the start of the
/// next, or a figure and its unit on two lines.
fn stale_across_lines(previous: &str, current: &str) -> Option<&'static str> {
    let (previous, current) = (comment_text(previous), comment_text(current));
    if stale_figure(previous).is_some() || stale_figure(current).is_some() {
        return None;
    }
    stale_figure(&format!("{previous} {current}"))
}

#[test]
fn comments_keep_the_reason_and_drop_the_figures() {
    let mut problems = Vec::new();
    for file in crate_sources() {
        let text = fs::read_to_string(&file).unwrap_or_default();
        // A doc comment's fenced example is code (its keys may well look like dates).
        let mut in_example = false;
        let mut previous: Option<(usize, String)> = None;
        for (line, comment) in comments(&text) {
            if comment_text(&comment).starts_with("```") {
                in_example = !in_example;
                previous = None;
                continue;
            }
            if in_example {
                continue;
            }
            if let Some(rule) = stale_figure(&comment) {
                problems.push(format!(
                    "{}:{line}: comment carries {rule}: {}",
                    shown(&file),
                    comment.trim()
                ));
            }
            if let Some((previous_line, previous_comment)) = &previous {
                let wrapped = *previous_line + 1 == line;
                if let Some(rule) =
                    stale_across_lines(previous_comment, &comment).filter(|_| wrapped)
                {
                    problems.push(format!(
                        "{}:{previous_line}-{line}: comment carries {rule} across two lines: {} {}",
                        shown(&file),
                        comment_text(previous_comment),
                        comment_text(&comment)
                    ));
                }
            }
            previous = Some((line, comment));
        }
    }
    assert!(
        problems.is_empty(),
        "comments keep the reason and drop the figures (STYLE.md, 'Names and comments'); \
         {} to rewrite:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Most lines in one `crates/*/src` file: past it a file holds more than one thing to
/// understand (STYLE.md: "a monolith file").
const SOURCE_LINES_MAX: usize = 1_000;

/// Files allowed over [`SOURCE_LINES_MAX`], each with its length: debt to pay down, not a
/// licence. Empty: every source file is within the limit. A file that drops under the limit
/// or moves must leave this list, so the list stays the debt as it is.
const LONG_FILES_ALLOWED: &[(&str, usize)] = &[];

#[test]
fn source_files_stay_short() {
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for file in crate_sources() {
        let name = shown(&file);
        let lines = fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .count();
        let allowed = LONG_FILES_ALLOWED.iter().find(|(path, _)| *path == name);
        match allowed {
            Some((path, _)) => {
                seen.push(*path);
                if lines <= SOURCE_LINES_MAX {
                    problems.push(format!(
                        "{name}: {lines} lines, now within {SOURCE_LINES_MAX}: take it off \
                         LONG_FILES_ALLOWED"
                    ));
                }
            }
            None if lines > SOURCE_LINES_MAX => problems.push(format!(
                "{name}: {lines} lines, over the {SOURCE_LINES_MAX}-line limit: split it by \
                 what its parts are"
            )),
            None => {}
        }
    }
    for (path, _) in LONG_FILES_ALLOWED {
        if !seen.contains(path) {
            problems.push(format!(
                "{path}: listed in LONG_FILES_ALLOWED but gone: take it off the list"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The engine modules above `error` (every one of them returns its `Error`, so `error` naming
/// one would close an import circle through the whole engine).
const ABOVE_ERROR: &[&str] = &["db", "txn", "engine", "wal", "store", "io", "fuzz", "bytes"];

#[test]
fn engine_error_names_nothing_above_it() {
    let file = workspace_root().join("crates/artdb/src/error.rs");
    let text = fs::read_to_string(&file).unwrap_or_default();
    let mut problems = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for module in ABOVE_ERROR {
            for prefix in ["crate::", "super::"] {
                let path = format!("{prefix}{module}");
                let hit = code.match_indices(&path).any(|(at, _)| {
                    let next = code[at + path.len()..].chars().next();
                    !next.is_some_and(is_identifier_char)
                });
                if hit {
                    problems.push(format!(
                        "{}:{}: names `{path}`, a layer above error",
                        shown(&file),
                        number + 1
                    ));
                }
            }
        }
        // A `use` of anything but std, core, alloc or error's own items (`self::`,
        // `crate::error::`, and `super::` inside a nested module such as its tests, where
        // `super` is error itself).
        let trimmed = code.trim_start();
        let nested = trimmed.len() < code.len();
        if let Some(path) = trimmed.strip_prefix("use ") {
            let path = path.trim();
            let root = path.split("::").next().unwrap_or("");
            let own =
                root == "self" || path.starts_with("crate::error::") || (root == "super" && nested);
            if !own && !["std", "core", "alloc"].contains(&root) {
                problems.push(format!(
                    "{}:{}: imports `{}`: error may use only std and its own items",
                    shown(&file),
                    number + 1,
                    path.trim_end_matches(';')
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_figure_rule_catches_history_and_measurements_and_passes_limits() {
    for stale in [
        "// measured in session 21",
        "/// (Issue 13, item 2)",
        "//! callgrind: 5,160,113",
        "// 32.3-35.3 ns without it",
        "// about 2 us",
        "// took 1.7ms",
        "// 2026-11-26: slower",
        "// 17.5 -> 11.5 Mops per CPU second",
        "// (0.40M scans/s without)",
        "// 12k ops with it",
        "// 3 GB/s of writes",
        "// 900 commits per second",
    ] {
        assert!(stale_figure(stale).is_some(), "{stale} passed");
    }
    for fact in [
        "// 256 entries, 16 bytes, at most 1 GiB",
        "// the issue tracker; sessions of the reader",
        "// 10 msgs, 3 nsec-free, a 4 usize word",
        "// reads/s and commits/s per phase; Mkeys/s: each seek reads 100 pairs",
        "// 2 operations, 4 opsets, 8 bytes/slot, 1 M entries",
    ] {
        assert_eq!(stale_figure(fact), None, "{fact} was flagged");
    }
    assert!(
        stale_across_lines("//! the machine of sessions", "//! 14-17 swung as much").is_some(),
        "a session number wrapped onto the next line passed"
    );
    assert!(stale_across_lines("/// took 32.5", "/// ns a lookup").is_some());
    assert_eq!(stale_across_lines("// at most 256", "// entries"), None);
    assert_eq!(
        stale_across_lines("// issue 2 and", "// session 3"),
        None,
        "a figure either line carries alone is reported once, for that line"
    );
    let source = "let url = \"http://session 1\"; // issue 2\nlet c = '\"'; /* callgrind\n */ 'a';";
    let found: Vec<usize> = comments(source).iter().map(|(line, _)| *line).collect();
    assert_eq!(found, [1, 2, 3], "{:?}", comments(source));
    assert!(comments(source).iter().all(|(_, c)| !c.contains("session")));
    // Code and strings are not comments: a figure in an error message or a time in code passes.
    let code = "let d = Duration::from_nanos(12); // a short wait\n\
                let e = format!(\"took 12 ns, 0.7 Mops, session 3: {}\", d.as_nanos());";
    assert_eq!(comments(code).len(), 1, "{:?}", comments(code));
    let flagged: Vec<_> = comments(code)
        .into_iter()
        .filter(|(_, c)| stale_figure(c).is_some())
        .collect();
    assert!(flagged.is_empty(), "{flagged:?}");
}

/// Where `artdb-art` still has `unsafe` outside `raw/` (the arena, image views, allocation, SIMD
/// search), with how many times the word occurs in code: a ceiling that may only fall. Each entry
/// says why it is not behind a safe function in `raw/` yet. The common reason: a heap word is an
/// address, and whether its image is alive and unwritten is a property of the tree (reachable
/// from a live version: docs/art.md, "Unsafe code"), not of anything `raw/` can check, so a safe
/// function taking the address would be unsound; fencing these needs a typed handle that carries
/// that proof (a borrowed version's word), which is not built yet.
const UNSAFE_ALLOWED: &[(&str, usize)] = &[
    // `unsafe impl Image` beside each struct whose layout (repr(C), only u8) is the argument.
    ("node/node4.rs", 1),
    ("node/node16.rs", 1),
    ("node/node48.rs", 1),
    ("node/node256.rs", 1),
    // The same for the inner header; views, mutable views and freeing of heap inner nodes by
    // address (unsafe fns whose contract is the tree's invariants), and their callers' blocks.
    ("node/mod.rs", 15),
    // The same for the leaf header and heap leaves by address.
    ("node/leaf.rs", 12),
    // Unchecked 8-byte record loads of the hinted probe (bounds argued once by the caller: a
    // checked load cost the lookups instructions); its test frees the packs it made.
    ("node/pack/hinted.rs", 4),
    // The heap lookup's steps read images through their words' addresses.
    ("lookup/heap.rs", 27),
    // The resolver's heap views and the calls of the heap lookup from a live version's root.
    ("lookup/mod.rs", 6),
    ("lookup/snapshot.rs", 1),
    ("tree.rs", 1),
    // The writer's views and mutable views of the images it created in its unpublished
    // version, and its frees of what it unlinked.
    ("write/writer.rs", 7),
    ("write/fast.rs", 5),
    ("write/pack.rs", 2),
    // Freeing retired images and whole trees once nothing can reach them.
    ("write/cow.rs", 8),
    ("write/rollback.rs", 3),
    ("build/stream.rs", 2),
    // The quick persisted walk's unchecked reads at offsets checked against its bound.
    ("persist/source.rs", 3),
    // Views of heap inner nodes while persisting, and freeing a tree that persisting replaced.
    ("persist/mod.rs", 3),
    // The timing diagnostic behind the `probe-ladder` feature (not in default builds).
    ("ladder.rs", 3),
];

/// Occurrences of the word `unsafe` in the code of a Rust source (comments left out, so a
/// `// SAFETY:` argument that names it does not count).
fn unsafe_count(text: &str) -> usize {
    let commented: std::collections::HashSet<usize> =
        comments(text).into_iter().map(|(line, _)| line).collect();
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            // A line that holds a comment counts only its code before the comment opens (none
            // inside a block comment).
            let code = if commented.contains(&(index + 1)) {
                let opens = [line.find("//"), line.find("/*")]
                    .into_iter()
                    .flatten()
                    .min();
                opens.map_or("", |at| &line[..at])
            } else {
                line
            };
            code.match_indices("unsafe")
                .filter(|(at, word)| {
                    let before = code[..*at].chars().next_back();
                    let after = code[at + word.len()..].chars().next();
                    !before.is_some_and(is_identifier_char)
                        && !after.is_some_and(is_identifier_char)
                })
                .count()
        })
        .sum()
}

#[test]
fn art_unsafe_stays_in_raw() {
    let src = workspace_root().join("crates/artdb-art/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&src)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        if relative.starts_with("raw/") {
            continue;
        }
        let count = unsafe_count(&fs::read_to_string(&file).unwrap_or_default());
        let allowed = UNSAFE_ALLOWED.iter().find(|(path, _)| *path == relative);
        match allowed {
            Some((path, ceiling)) => {
                seen.push(*path);
                if count > *ceiling {
                    problems.push(format!(
                        "crates/artdb-art/src/{relative}: `unsafe` {count} times, over its \
                         ceiling of {ceiling}: put the new unsafe behind a safe function in raw/"
                    ));
                } else if count < *ceiling {
                    problems.push(format!(
                        "crates/artdb-art/src/{relative}: `unsafe` {count} times, below its \
                         ceiling of {ceiling}: lower it in UNSAFE_ALLOWED (or take the file off)"
                    ));
                }
            }
            None if count > 0 => problems.push(format!(
                "crates/artdb-art/src/{relative}: `unsafe` outside raw/: put it behind a safe \
                 function in raw/ (with its SAFETY argument)"
            )),
            None => {}
        }
    }
    for (path, _) in UNSAFE_ALLOWED {
        if !seen.contains(path) {
            problems.push(format!(
                "crates/artdb-art/src/{path}: listed in UNSAFE_ALLOWED but gone: take it off"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "artdb-art's unsafe outside raw/:\n{}",
        problems.join("\n")
    );
}

#[test]
fn unsafe_count_skips_comments_and_longer_words() {
    let text = "// unsafe in a comment\nlet a = unsafe { f() }; // SAFETY: unsafe\n\
                unsafe fn g() {}\nlet not_unsafe_word = 1;\n/* unsafe */\n";
    assert_eq!(unsafe_count(text), 2);
}

/// The attribute every library crate root carries: outside tests, an `unwrap` or `expect` is a
/// lint error, so a panic in library code is a choice made in the open (an `#[allow]` beside a
/// comment that says why the value is always there), never an accident.
const NO_UNWRAP_ATTRIBUTE: &str =
    "#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]";

#[test]
fn library_crates_deny_unwrap_outside_tests() {
    let mut problems = Vec::new();
    let mut roots = 0;
    let crates = fs::read_dir(workspace_root().join("crates")).expect("the crates directory");
    for entry in crates.flatten() {
        let root = entry.path().join("src").join("lib.rs");
        let Ok(text) = fs::read_to_string(&root) else {
            continue;
        };
        roots += 1;
        if !text.lines().any(|line| line.trim() == NO_UNWRAP_ATTRIBUTE) {
            problems.push(format!(
                "{}: add `{NO_UNWRAP_ATTRIBUTE}` after the crate docs",
                shown(&root)
            ));
        }
    }
    assert!(roots > 0, "no library crate roots found under crates/");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
