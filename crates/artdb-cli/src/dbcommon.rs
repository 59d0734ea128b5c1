//! Shared pieces of the database subcommands (`create`, `stats`, `verify`, `checkpoint`, `get`,
//! `put`, `del`, `scan`, `count`, `load`): the text form of keys and values, JSON output, exit
//! codes.
//!
//! Text form of bytes: printable text (UTF-8) stands for itself, `\\` for a backslash and
//! `\xNN` for any byte (two hex digits). Output uses the same form, escaping only control
//! characters and bytes that are not UTF-8, so what `scan` prints `get` accepts. JSON output
//! gives UTF-8 as a JSON string (`"key"`) and other bytes in hex (`"key_hex"`).
//!
//! Exit codes: 0 success; 1 an error (I/O, bad input, locked file); 2 bad command line (clap);
//! 3 the key was not found (`get`, `del`); 4 the file is corrupt or `verify` found problems.

use std::fmt;

/// Default table of the key-value subcommands.
pub const TABLE_DEFAULT: &str = "main";

/// An error with its own exit code.
#[derive(Debug)]
pub struct Exit {
    /// The process exit code.
    pub code: u8,
    /// What to tell the user.
    pub message: String,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// Exit code 3: the key was not found.
pub const EXIT_NOT_FOUND: u8 = 3;
/// Exit code 4: corruption, or a file that is no artdb database.
pub const EXIT_CORRUPT: u8 = 4;

/// The exit code for an error returned by a subcommand.
pub fn exit_code(error: &(dyn std::error::Error + 'static)) -> u8 {
    if let Some(exit) = error.downcast_ref::<Exit>() {
        return exit.code;
    }
    if let Some(artdb::Error::Corruption { .. } | artdb::Error::NotADatabase { .. }) =
        error.downcast_ref::<artdb::Error>()
    {
        return EXIT_CORRUPT;
    }
    1
}

/// The message the CLI prints for `error`: the engine's, but where the engine's advice names a
/// library call, the command that does it instead.
pub fn message(error: &(dyn std::error::Error + 'static)) -> String {
    match error.downcast_ref::<artdb::Error>() {
        Some(artdb::Error::TableNotFound { name }) => {
            let shown = show_bytes(name.as_bytes());
            format!(
                "no table named \"{shown}\"; `artdb table create FILE '{shown}'` makes it, \
                 `artdb table list FILE` lists the tables"
            )
        }
        _ => error.to_string(),
    }
}

/// Options that never checkpoint on drop (commands that must not write unless they succeed,
/// and commands that only read).
#[allow(clippy::needless_update)] // Options grows fields (read-only opening, durability).
pub fn options_no_checkpoint_on_drop() -> artdb::Options {
    artdb::Options {
        checkpoint_on_drop: false,
        ..options()
    }
}

/// The default options, with `--open-without-log` and `--strict-recovery` applied.
pub fn options() -> artdb::Options {
    let strict = STRICT_RECOVERY.load(std::sync::atomic::Ordering::Relaxed);
    artdb::Options {
        open_without_log: OPEN_WITHOUT_LOG.load(std::sync::atomic::Ordering::Relaxed),
        recovery: if strict {
            artdb::RecoveryMode::Strict
        } else {
            artdb::RecoveryMode::TolerateTornTail
        },
        ..artdb::Options::default()
    }
}

/// Whether `--strict-recovery` was given (set once by `main` before any command runs).
static STRICT_RECOVERY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every open refuse a damaged or cut-short end of the log (`--strict-recovery`).
pub fn set_strict_recovery() {
    STRICT_RECOVERY.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `--open-without-log` was given (set once by `main` before any command runs).
static OPEN_WITHOUT_LOG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every open accept a missing write-ahead log (`--open-without-log`).
pub fn set_open_without_log() {
    OPEN_WITHOUT_LOG.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Options of the commands that only read (`get`, `scan`, `count`, `stats`, `verify`, `dump`,
/// `export`, `backup`'s source): a read-only open, so several of them run at once, beside a
/// writer in another process too (they read its durable commits), and a read-only file can be
/// read: see docs/recovery.md, "Readers in other processes".
pub fn options_read_only() -> artdb::Options {
    artdb::Options {
        read_only: true,
        salvage_previous_checkpoint: SALVAGE.load(std::sync::atomic::Ordering::Relaxed),
        ..options_no_checkpoint_on_drop()
    }
}

/// Whether `--salvage` was given (set once by `main` before any command runs).
static SALVAGE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes the read commands open the checkpoint before the newest (`--salvage`).
pub fn set_salvage() {
    SALVAGE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The engine's rule for table names, checked before a command does any work (the engine
/// checks it again where it creates the table).
pub fn check_table_name(name: &str) -> Result<(), artdb::Error> {
    if name.is_empty() || name.len() > artdb::db::TABLE_NAME_LEN_MAX {
        return Err(artdb::Error::InvalidTableName {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// One problem `verify` found, as a line for the user: where it is and what is wrong, without
/// the advice an open failing on it gives (which names `verify` itself), and with the byte
/// strings of tree invariants (the engine formats those with `Debug`, as lists of numbers) in
/// the text form of keys.
pub fn describe_problem(problem: &artdb::Error) -> String {
    readable_byte_lists(&artdb::VerifyReport::describe(problem))
}

/// Rewrites each `[107, 101, 121]` (a `Vec<u8>` printed by `Debug`) as `"key"` in the text form
/// of bytes; anything else is copied as it is.
fn readable_byte_lists(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let bytes = after.find(']').and_then(|close| {
            let list = &after[..close];
            let bytes: Option<Vec<u8>> = if list.trim().is_empty() {
                Some(Vec::new())
            } else {
                list.split(',')
                    .map(|item| item.trim().parse().ok())
                    .collect()
            };
            bytes.map(|bytes| (bytes, close))
        });
        match bytes {
            Some((bytes, close)) => {
                out.push('"');
                out.push_str(&show_bytes(&bytes));
                out.push('"');
                rest = &after[close + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Opens `path` for writing, creating it if it is missing or empty: the rule of every command
/// that writes (`put`, `load`, `restore`, `import`, `shell`, `table create`); commands that only
/// read never create a file.
pub fn open_or_create(path: &std::path::Path) -> Result<artdb::Db, artdb::Error> {
    open_or_create_with(path, options_no_checkpoint_on_drop())
}

/// [`open_or_create`] with `options`. A symbolic link to nothing is opened (and its error
/// reported), never created through.
pub fn open_or_create_with(
    path: &std::path::Path,
    options: artdb::Options,
) -> Result<artdb::Db, artdb::Error> {
    if path.is_symlink() && !path.exists() {
        return artdb::Db::open(path, options);
    }
    artdb::Db::open_or_create(path, options)
}

/// Whether `path` is missing, or is an empty (0-byte) file, as `touch` and Python's `tempfile`
/// make one: an empty file holds nothing to lose and becomes a new database, as sqlite3 and
/// LMDB treat it.
pub fn is_missing_or_empty(path: &std::path::Path) -> bool {
    match std::fs::metadata(path) {
        Ok(metadata) => metadata.is_file() && metadata.len() == 0,
        Err(_) => !path.is_symlink(),
    }
}

/// Whether `error` is (or wraps) a write to a closed pipe.
pub fn is_broken_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        current = error.source();
    }
    false
}

/// [`parse_bytes`] of a command-line argument: a bad escape is a bad command line (exit 2).
pub fn parse_arg(text: &str) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    parse_bytes(text).map_err(|error| -> Box<dyn std::error::Error> {
        Box::new(Exit {
            code: 2,
            message: error.to_string(),
        })
    })
}

/// Parses the text form of bytes (see the module docs).
pub fn parse_bytes(text: &str) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut chars = text.bytes();
    while let Some(byte) = chars.next() {
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        match chars.next() {
            Some(b'\\') => bytes.push(b'\\'),
            Some(b'x') => {
                let high = chars.next().and_then(hex_digit);
                let low = chars.next().and_then(hex_digit);
                match (high, low) {
                    (Some(high), Some(low)) => bytes.push(high << 4 | low),
                    _ => {
                        return Err(
                            format!("bad escape in \"{text}\": \\x needs two hex digits").into(),
                        )
                    }
                }
            }
            _ => return Err(format!("bad escape in \"{text}\": use \\\\ or \\xNN").into()),
        }
    }
    Ok(bytes)
}

fn hex_digit(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

/// The text form of bytes (see the module docs): valid UTF-8 as it is, except a backslash
/// (`\\`) and characters that are not printable (control characters, which would move the
/// cursor or split a line, as `\xNN` of each of their bytes); bytes that are not UTF-8 as
/// `\xNN`. [`parse_bytes`] reads every output back to the same bytes.
pub fn show_bytes(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => text.push_str("\\\\"),
                c if c.is_control() => {
                    let mut buffer = [0u8; 4];
                    for byte in c.encode_utf8(&mut buffer).bytes() {
                        text.push_str(&format!("\\x{byte:02x}"));
                    }
                }
                c => text.push(c),
            }
        }
        for byte in chunk.invalid() {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

/// The JSON fields of bytes named `name`: `{name: "text"}` (a JSON string of the bytes
/// themselves) when they are valid UTF-8, else `{name_hex: "6b..."}`; hex, as `dump` writes
/// bytes by default.
pub fn json_bytes(map: &mut serde_json::Map<String, serde_json::Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => map.insert(name.to_string(), text.into()),
        Err(_) => {
            let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
            map.insert(format!("{name}_hex"), hex.into())
        }
    };
}

/// A JSON object of a key and value (`json_bytes`); `value` `None` is `"value": null`.
pub fn json_pair(key: &[u8], value: Option<&[u8]>) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    json_bytes(&mut map, "key", key);
    match value {
        Some(value) => json_bytes(&mut map, "value", value),
        None => {
            map.insert("value".to_string(), serde_json::Value::Null);
        }
    }
    serde_json::Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(parse_bytes(&show_bytes(&all)).unwrap(), all);
        assert_eq!(parse_bytes("a\\x00b\\\\").unwrap(), b"a\x00b\\");
        assert!(parse_bytes("\\x1").is_err());
        assert!(parse_bytes("\\n").is_err());
        let text = "gr\u{fc}\u{df}e \u{1f600}\n\u{85}";
        assert_eq!(
            show_bytes(text.as_bytes()),
            "gr\u{fc}\u{df}e \u{1f600}\\x0a\\xc2\\x85"
        );
        assert_eq!(
            parse_bytes(&show_bytes(text.as_bytes())).unwrap(),
            text.as_bytes()
        );
    }

    #[test]
    fn byte_lists_become_text() {
        assert_eq!(
            readable_byte_lists("Unreadable { path: [107, 101, 121], error: x }, [], [a, 1]"),
            "Unreadable { path: \"key\", error: x }, \"\", [a, 1]"
        );
    }
}
