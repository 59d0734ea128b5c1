//! `artdb shell FILE`: an interactive prompt over one database (line editing, history, tab
//! completion of commands and table names), or a script runner when standard input is not a
//! terminal.
//!
//! Commands (`help` lists them with an example each): `tables`, `use TABLE`, `create TABLE`,
//! `drop TABLE`, `get KEY`,
//! `put KEY VALUE`, `del KEY`, `scan [PREFIX] [--from K] [--to K] [--limit N]`,
//! `count [PREFIX]`, `begin`, `commit`, `rollback`, `stats`, `verify`, `checkpoint`, `quit`.
//! Words are separated by spaces; `"..."` or `'...'` quote a word with spaces, and keys and
//! values use the same text form as the other commands (`\xNN` for any byte, `\\` for a
//! backslash; `\"`, `\'` and `\ ` for a quote or a space inside a word).
//!
//! Writes: outside `begin` each `put`/`del` commits on its own (a write batch; `put` creates
//! a missing table). Between `begin` and `commit` they go to one write transaction
//! (`Db::begin_write`): reads see its own writes, `rollback` discards them, and `commit` fails
//! with a conflict if another writer changed the same keys meanwhile. Durability is the
//! engine's: until the write-ahead log exists, commits are durable at `checkpoint` and at `quit`
//! (which checkpoints).
//!
//! Script mode (standard input not a terminal): no prompt, no paging; the first failing command
//! stops the script with its exit code (3 not found, 4 corruption, 1 anything else) and a
//! message naming its line. History: kept in `$ARTDB_HISTORY`, else `$HOME/.artdb_history`.

use crate::dbcommon::{exit_code, parse_bytes, show_bytes, Exit, EXIT_CORRUPT, EXIT_NOT_FOUND};
use crate::outln;
use artdb::{Db, Transaction, WriteOptions};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use std::cell::RefCell;
use std::io::{BufRead, IsTerminal};
use std::ops::Bound;
use std::path::PathBuf;
use std::rc::Rc;

type BoxError = Box<dyn std::error::Error>;
/// One item of a scan.
type PairResult<'a> = artdb::Result<(Vec<u8>, &'a [u8])>;

/// Options of `artdb shell`.
#[derive(clap::Args)]
pub struct Args {
    /// The database file (created if missing).
    file: PathBuf,
    /// The table to start in.
    #[arg(long, default_value = crate::dbcommon::TABLE_DEFAULT)]
    table: String,
    /// Pairs per page of `scan` at the prompt (at least 1).
    #[arg(
        long,
        default_value_t = 20,
        allow_negative_numbers = true,
        value_parser = crate::numbers::shell_page
    )]
    page: usize,
    /// Open read-only (writes are refused): to look into a file you may not write, or beside
    /// a writer or other readers in other processes.
    #[arg(long)]
    read_only: bool,
}

/// The commands, their use and an example (for `help` and completion).
const COMMANDS: &[(&str, &str, &str)] = &[
    ("tables", "list the tables and their keys", "tables"),
    ("use", "switch to a table (put creates it)", "use orders"),
    ("create", "create an empty table", "create orders"),
    ("drop", "drop a table and its pairs", "drop orders"),
    ("get", "print the value of a key", "get user:1"),
    ("put", "set a key to a value", "put user:1 \"Ada Lovelace\""),
    ("del", "remove a key", "del user:1"),
    (
        "scan",
        "list pairs in key order, a page at a time",
        "scan user: --limit 50",
    ),
    ("count", "count the pairs (with a prefix)", "count user:"),
    ("begin", "start a write transaction", "begin"),
    ("commit", "commit the transaction", "commit"),
    ("rollback", "discard the transaction", "rollback"),
    ("stats", "tables, keys and file size", "stats"),
    ("verify", "check every checksum and invariant", "verify"),
    ("checkpoint", "make every commit durable", "checkpoint"),
    ("help", "this list, or one command's", "help scan"),
    (
        "quit",
        "leave (checkpoints first; also exit, Ctrl-D)",
        "quit",
    ),
];

/// Tab completion: command names for the first word, table names after `use`.
struct ShellHelper {
    tables: Rc<RefCell<Vec<String>>>,
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before.rfind(' ').map_or(0, |space| space + 1);
        let word = &before[start..];
        let first = before[..start].split_whitespace().next();
        let candidates: Vec<String> = match first {
            None => COMMANDS
                .iter()
                .map(|(name, _, _)| (*name).to_string())
                .chain(["exit".to_string()])
                .collect(),
            Some("use" | "drop") => self.tables.borrow().clone(),
            Some(_) => Vec::new(),
        };
        let pairs = candidates
            .into_iter()
            .filter(|candidate| candidate.starts_with(word))
            .map(|candidate| Pair {
                display: candidate.clone(),
                replacement: format!("{candidate} "),
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}
impl Highlighter for ShellHelper {}
impl Validator for ShellHelper {}
impl Helper for ShellHelper {}

/// How `split_words` starts the error of a line whose quote is still open: the shell then reads
/// the next line as the rest of the word (a newline inside it), as psql and sqlite3 do.
const UNTERMINATED: &str = "unterminated";

/// Whether `line` ends inside a quote, so the command continues on the next line.
fn continues(line: &str) -> bool {
    matches!(split_words(line), Err(error) if error.to_string().starts_with(UNTERMINATED))
}

/// The prompt of a continuation line.
const PROMPT_CONTINUED: &str = "    ...> ";

/// Splits a command line into words (see the module docs for quoting).
fn split_words(line: &str) -> Result<Vec<String>, BoxError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(next @ ('"' | '\'' | ' ')) => word.push(next),
                    Some(next) => {
                        word.push('\\');
                        word.push(next);
                    }
                    None => return Err("a backslash ends the line; use \\\\ for one".into()),
                }
            }
            '"' | '\'' if quote.is_none() => {
                quote = Some(c);
                in_word = true;
            }
            c if Some(c) == quote => quote = None,
            c if c.is_whitespace() && quote.is_none() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if let Some(quote) = quote {
        return Err(format!("{UNTERMINATED} {quote} quote").into());
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// What the shell holds between commands.
struct Shell {
    db: Db,
    table: String,
    txn: Option<Transaction>,
    page: usize,
    tables: Rc<RefCell<Vec<String>>>,
}

/// What a command asks of the loop.
enum Next {
    Continue,
    Quit,
}

/// How `scan` pages its output: at the prompt it asks before each next page.
trait Pager {
    /// Whether to show another page (false: stop).
    fn more(&mut self) -> bool;
}

struct NoPaging;

impl Pager for NoPaging {
    fn more(&mut self) -> bool {
        true
    }
}

struct EditorPager<'e> {
    editor: &'e mut Editor<ShellHelper, DefaultHistory>,
}

impl Pager for EditorPager<'_> {
    fn more(&mut self) -> bool {
        match self
            .editor
            .readline("-- more: Enter for the next page, q to stop -- ")
        {
            Ok(answer) => !answer.trim().eq_ignore_ascii_case("q"),
            Err(_) => false,
        }
    }
}

fn usage(command: &str) -> BoxError {
    let example = COMMANDS
        .iter()
        .find(|(name, _, _)| *name == command)
        .map_or("", |(_, _, example)| example);
    format!("usage: {example} (help {command})").into()
}

fn not_found(key: &str) -> BoxError {
    Box::new(Exit {
        code: EXIT_NOT_FOUND,
        message: format!("key {key} not found"),
    })
}

impl Shell {
    fn refresh_tables(&self) {
        *self.tables.borrow_mut() = self.db.table_names();
    }

    fn prompt(&self) -> String {
        let marker = if self.txn.is_some() { "*" } else { "" };
        format!("artdb {}{marker}> ", self.table)
    }

    fn run(&mut self, words: &[String], pager: &mut dyn Pager) -> Result<Next, BoxError> {
        let Some((command, rest)) = words.split_first() else {
            return Ok(Next::Continue);
        };
        match (command.as_str(), rest) {
            ("help", []) => {
                for (name, what, example) in COMMANDS {
                    outln!("  {name:<11} {what:<44} e.g. {example}")?;
                }
                outln!("  keys and values: \\xNN for any byte, \\\\ for a backslash, quotes for spaces")?;
            }
            ("help", [name]) => match COMMANDS.iter().find(|(n, _, _)| n == name) {
                Some((name, what, example)) => outln!("{name}: {what}; e.g. {example}")?,
                None => return Err(format!("no command {name:?} (help lists them)").into()),
            },
            ("tables", []) => {
                let read = self.db.read();
                for name in read.table_names() {
                    outln!("{name}\t{} keys", read.table(&name)?.len())?;
                }
            }
            ("use", [table]) => {
                self.table = table.clone();
                if !self.db.table_names().contains(table) {
                    outln!("table {table:?} does not exist yet; put creates it")?;
                }
            }
            ("create", [table]) => {
                if self.txn.is_some() {
                    return Err("commit or rollback the transaction first".into());
                }
                crate::dbcommon::check_table_name(table)?;
                if self.db.table_names().contains(table) {
                    return Err(format!("table {table:?} already exists").into());
                }
                self.db.create_table(table)?;
                self.refresh_tables();
            }
            ("drop", [table]) => {
                if self.txn.is_some() {
                    return Err("commit or rollback the transaction first".into());
                }
                if !self.db.table_names().contains(table) {
                    return Err(format!("no table {table:?} (tables lists them)").into());
                }
                self.db.drop_table(table)?;
                self.refresh_tables();
            }
            ("get", [key]) => {
                let bytes = parse_bytes(key)?;
                let value = match &self.txn {
                    Some(txn) => txn.get(&self.table, &bytes)?.map(<[u8]>::to_vec),
                    None => self.db.read().get(&self.table, &bytes)?.map(<[u8]>::to_vec),
                };
                match value {
                    Some(value) => outln!("{}", show_bytes(&value))?,
                    None => return Err(not_found(key)),
                }
            }
            ("put", [key, value]) => {
                let (key, value) = (parse_bytes(key)?, parse_bytes(value)?);
                match &mut self.txn {
                    Some(txn) => {
                        if !txn.has_table(&self.table) {
                            txn.create_table(&self.table)?;
                        }
                        txn.insert(&self.table, &key, &value)?;
                    }
                    None => {
                        let mut batch = self.db.write()?;
                        if !batch.table_names().contains(&self.table) {
                            batch.create_table(&self.table)?;
                        }
                        batch.insert(&self.table, &key, &value)?;
                        batch.commit()?;
                        self.refresh_tables();
                    }
                }
            }
            ("del", [key]) => {
                let bytes = parse_bytes(key)?;
                let removed = match &mut self.txn {
                    Some(txn) => txn.remove(&self.table, &bytes)?,
                    None => {
                        let mut batch = self.db.write()?;
                        let removed = batch.remove(&self.table, &bytes)?.is_some();
                        batch.commit()?;
                        removed
                    }
                };
                if !removed {
                    return Err(not_found(key));
                }
            }
            ("scan", _) => self.scan(rest, pager, false)?,
            ("count", _) => self.scan(rest, pager, true)?,
            ("begin", []) => {
                if self.txn.is_some() {
                    return Err("a transaction is already open (commit or rollback it)".into());
                }
                self.txn = Some(self.db.begin_write(WriteOptions::default())?);
            }
            ("commit", []) => match self.txn.take() {
                Some(txn) => {
                    txn.commit()?;
                    self.refresh_tables();
                }
                None => return Err("no transaction is open (begin starts one)".into()),
            },
            ("rollback", []) => match self.txn.take() {
                Some(txn) => txn.abort(),
                None => return Err("no transaction is open (begin starts one)".into()),
            },
            ("stats", []) => {
                let stats = self.db.stats()?;
                outln!(
                    "file: {} bytes, {} pages, checkpoint {}",
                    stats.store.file_bytes,
                    stats.store.page_count,
                    stats.store.generation
                )?;
                for table in &stats.tables {
                    let dirty = if table.dirty {
                        " (changes not checkpointed)"
                    } else {
                        ""
                    };
                    outln!("table {:?}: {} keys{dirty}", table.name, table.keys)?;
                }
            }
            ("verify", []) => {
                let report = self.db.verify()?;
                for problem in &report.problems {
                    outln!("problem: {}", crate::dbcommon::describe_problem(problem))?;
                }
                outln!(
                    "{} tables, {} keys, {} problems",
                    report.tables_checked,
                    report.keys_checked,
                    report.problems.len()
                )?;
                if !report.is_ok() {
                    return Err(Box::new(Exit {
                        code: EXIT_CORRUPT,
                        message: format!("{} problems found", report.problems.len()),
                    }));
                }
            }
            ("checkpoint", []) => {
                let stats = self.db.checkpoint()?;
                outln!(
                    "checkpoint {}: {} bytes written",
                    stats.generation,
                    stats.bytes_written
                )?;
            }
            ("quit" | "exit", []) => return Ok(Next::Quit),
            (command, _) => {
                if COMMANDS.iter().any(|(name, _, _)| *name == command) {
                    return Err(usage(command));
                }
                return Err(format!("unknown command {command:?} (help lists them)").into());
            }
        }
        Ok(Next::Continue)
    }

    /// `scan`/`count [PREFIX] [--from K] [--to K] [--limit N]`.
    fn scan(&self, args: &[String], pager: &mut dyn Pager, count: bool) -> Result<(), BoxError> {
        let command = if count { "count" } else { "scan" };
        let mut prefix = Vec::new();
        let mut from = None;
        let mut to = None;
        let mut limit = u64::MAX;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--from" => from = Some(parse_bytes(args.next().ok_or_else(|| usage(command))?)?),
                "--to" => to = Some(parse_bytes(args.next().ok_or_else(|| usage(command))?)?),
                "--limit" => {
                    limit = args
                        .next()
                        .ok_or_else(|| usage(command))?
                        .parse()
                        .map_err(|_| usage(command))?
                }
                _ if arg.starts_with("--") => return Err(usage(command)),
                _ => prefix = parse_bytes(arg)?,
            }
        }
        let lower = match from {
            Some(from) if from > prefix => Bound::Included(from),
            _ => Bound::Included(prefix.clone()),
        };
        let upper = to.map_or(Bound::Unbounded, Bound::Excluded);
        let read;
        let iter: Box<dyn Iterator<Item = PairResult<'_>>> = match &self.txn {
            Some(txn) => Box::new(txn.range::<Vec<u8>, _>(&self.table, (lower, upper))?),
            None => {
                read = self.db.read();
                Box::new(read.table(&self.table)?.range::<Vec<u8>, _>((lower, upper)))
            }
        };
        let mut seen = 0u64;
        let mut on_page = 0usize;
        for item in iter {
            let (key, value) = item?;
            if !key.starts_with(&prefix) || seen >= limit {
                break;
            }
            seen += 1;
            if count {
                continue;
            }
            if on_page == self.page {
                if !pager.more() {
                    return Ok(());
                }
                on_page = 0;
            }
            outln!("{}\t{}", show_bytes(&key), show_bytes(value))?;
            on_page += 1;
        }
        if count {
            outln!("{seen}")?;
        } else if seen == 0 {
            outln!("(no pairs)")?;
        }
        Ok(())
    }
}

/// Runs `artdb shell`.
pub fn run(args: Args) -> Result<(), BoxError> {
    let db = if args.read_only {
        Db::open(&args.file, crate::dbcommon::options_read_only())?
    } else {
        crate::dbcommon::open_or_create_with(&args.file, crate::dbcommon::options())?
    };
    let tables = Rc::new(RefCell::new(db.table_names()));
    let mut shell = Shell {
        db,
        table: args.table,
        txn: None,
        page: args.page,
        tables,
    };
    let result = if std::io::stdin().is_terminal() {
        interactive(&mut shell)
    } else {
        script(&mut shell)
    };
    let Shell { db, txn, .. } = shell;
    if txn.is_some() {
        eprintln!("artdb: the open transaction was rolled back");
    }
    drop(txn);
    let closed = db.close();
    result?;
    closed?;
    Ok(())
}

fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("ARTDB_HISTORY") {
        return Some(PathBuf::from(path));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".artdb_history"))
}

fn interactive(shell: &mut Shell) -> Result<(), BoxError> {
    let mut editor: Editor<ShellHelper, DefaultHistory> = Editor::new()?;
    editor.set_helper(Some(ShellHelper {
        tables: Rc::clone(&shell.tables),
    }));
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    outln!(
        "artdb shell: table {:?} (help lists the commands, Tab completes, Ctrl-D leaves)",
        shell.table
    )?;
    loop {
        let mut line = match editor.readline(&shell.prompt()) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(error) => return Err(error.into()),
        };
        // An open quote continues on the next line; Ctrl-C drops the command, Ctrl-D leaves it
        // to split_words, which reports the open quote.
        let mut dropped = false;
        while continues(&line) {
            match editor.readline(PROMPT_CONTINUED) {
                Ok(more) => {
                    line.push('\n');
                    line.push_str(&more);
                }
                Err(ReadlineError::Interrupted) => {
                    dropped = true;
                    break;
                }
                Err(ReadlineError::Eof) => break,
                Err(error) => return Err(error.into()),
            }
        }
        if dropped {
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line.as_str());
        let words = match split_words(&line) {
            Ok(words) => words,
            Err(error) => {
                eprintln!("error: {error}");
                continue;
            }
        };
        let mut pager = EditorPager {
            editor: &mut editor,
        };
        match shell.run(&words, &mut pager) {
            Ok(Next::Continue) => {}
            Ok(Next::Quit) => break,
            Err(error) if crate::dbcommon::is_broken_pipe(&*error) => break,
            Err(error) => eprintln!("error: {error}"),
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}

fn script(shell: &mut Shell) -> Result<(), BoxError> {
    let stdin = std::io::stdin().lock();
    let mut lines = stdin.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        let mut line = line.map_err(|e| format!("line {number}: cannot read the script: {e}"))?;
        // An open quote continues on the next line (the error of an open quote at the end of
        // the script names the line the command began on).
        while continues(&line) {
            let Some((index, more)) = lines.next() else {
                break;
            };
            let more =
                more.map_err(|e| format!("line {}: cannot read the script: {e}", index + 1))?;
            line.push('\n');
            line.push_str(&more);
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let outcome = split_words(&line).and_then(|words| shell.run(&words, &mut NoPaging));
        match outcome {
            Ok(Next::Continue) => {}
            Ok(Next::Quit) => break,
            Err(error) if crate::dbcommon::is_broken_pipe(&*error) => break,
            Err(error) => {
                return Err(Box::new(Exit {
                    code: exit_code(&*error),
                    message: format!("line {number}: {trimmed}: {error}"),
                }))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_with_quotes_and_escapes() {
        let words = split_words(r#"put "a b" 'c d'  e\ f \x00\\ "q\"q""#).unwrap();
        assert_eq!(words, ["put", "a b", "c d", "e f", "\\x00\\\\", "q\"q"]);
        assert!(split_words("put \"a").is_err());
        assert_eq!(split_words("put \"\" x").unwrap(), ["put", "", "x"]);
    }
}
