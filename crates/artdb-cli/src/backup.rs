//! `artdb backup FILE DEST` and `artdb compact FILE`.
//!
//! Backup copies one committed state of every table (`Db::copy_into`: one snapshot, writers of
//! the source not blocked) into a new database written under a temporary name beside DEST
//! (`.DEST.backup-PID`), verifies it, then links it to DEST, which must not exist (the link
//! fails rather than replace a file created meanwhile), removes the temporary name and syncs
//! the directory. So DEST is either absent or a complete, verified, durable copy; the
//! temporary copy of a killed backup is removed by the next backup to the same DEST. The copy is
//! a logical one written by bulk loads, so it is always compacted (`--compact` is accepted for
//! `mdb_copy -c` users and changes nothing).
//!
//! A source that another process has open for writing (its lock excludes this one) is read
//! without the lock, optimistically: the database file and then its log are copied byte for
//! byte to `.DEST.snapshot-PID` (and `.wal`), and that copy is opened read-only (replaying the
//! log's committed tail) and verified in full. Every page names the checkpoint generation that
//! wrote it and carries a checksum, and the log's header names the cycle and the LSN it starts
//! at: a page the writer reused or was writing during the copy, a superblock newer than pages
//! copied before it, or a log recycled past the copied checkpoint all fail that open or verify,
//! and the copy is taken again (up to 8 times). A copy that opens and verifies is one committed
//! state: the newest checkpoint the copy holds plus the log records committed after it. The
//! writer is never blocked; the cost is reading the whole file (free pages included) once per
//! attempt. This needs the writer not to damage pages a reader holds, which the engine cannot
//! promise across processes: hence the check and retry, never a silent inconsistent copy.
//!
//! Compact rewrites every table densely in place (`Db::compact`, which shrinks the file in the
//! same call) and reports the file's size before and after.

use crate::dbcommon::options_no_checkpoint_on_drop;
use crate::outln;
use artdb::{Db, Options};
use std::path::{Path, PathBuf};

type BoxError = Box<dyn std::error::Error>;

/// Options of `artdb backup`.
#[derive(clap::Args)]
pub struct BackupArgs {
    /// The database file to copy.
    file: PathBuf,
    /// The copy to create (must not exist).
    dest: PathBuf,
    /// Write the copy compacted (backups are always compacted; accepted for mdb_copy users).
    #[arg(long)]
    compact: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `artdb compact`.
#[derive(clap::Args)]
pub struct CompactArgs {
    /// The database file.
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `.DEST.KIND-PID` beside `dest`: where a command builds a new database before linking it into
/// place, so that no half-built database ever exists under its name.
pub(crate) fn temp_path(dest: &Path, kind: &str) -> Result<PathBuf, BoxError> {
    let name = dest
        .file_name()
        .ok_or_else(|| format!("{} does not name a file", dest.display()))?
        .to_string_lossy()
        .into_owned();
    let directory = match dest.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok(directory.join(format!(".{name}.{kind}-{}", std::process::id())))
}

/// Removes the temporary files that killed commands building the same destination left
/// (`.DEST.KIND-PID`, its log, readers file and the engine's `.creating` file, of a process that
/// is gone; told by `/proc`, so nothing is removed where `/proc` is not mounted).
pub(crate) fn remove_stale_temps(temp: &Path) {
    let (Some(directory), Some(name)) = (temp.parent(), temp.file_name()) else {
        return;
    };
    let name = name.to_string_lossy();
    let Some((prefix, _)) = name.rsplit_once('-') else {
        return;
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    let directory = if directory.as_os_str().is_empty() {
        Path::new(".")
    } else {
        directory
    };
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        // `PREFIX-PID`, its log `PREFIX-PID.wal`, and the engine's own temporary file of a
        // create killed inside (`.PREFIX-PID.N.creating`).
        let Some(rest) = file_name
            .strip_prefix(prefix)
            .or_else(|| file_name.strip_prefix('.')?.strip_prefix(prefix))
            .and_then(|rest| rest.strip_prefix('-'))
        else {
            continue;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (pid, tail) = rest.split_at(digits);
        let ours =
            tail.is_empty() || tail == ".wal" || tail == ".readers" || tail.ends_with(".creating");
        if pid.is_empty() || !ours {
            continue;
        }
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Syncs the directory holding `path` (so a link or removal in it is durable).
pub(crate) fn sync_directory(path: &Path) -> std::io::Result<()> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::File::open(directory)?.sync_all()
}

/// Runs `artdb backup`.
pub fn backup(args: BackupArgs) -> Result<(), BoxError> {
    let _ = args.compact;
    if args.dest.exists() || args.dest.is_symlink() {
        return Err(format!(
            "{} already exists; remove it or choose another name (backup never overwrites)",
            args.dest.display()
        )
        .into());
    }
    let started = std::time::Instant::now();
    let mut snapshot_copy = None;
    // No waiting for the lock: a writer that holds it is copied live, below.
    let no_wait = artdb::Options {
        lock_wait_max: std::time::Duration::ZERO,
        ..crate::dbcommon::options_read_only()
    };
    let source = match Db::open(&args.file, no_wait) {
        Ok(source) => source,
        // A writer in another process holds the file: copy it without the lock (module docs).
        Err(artdb::Error::Locked { .. }) => {
            let snapshot = temp_path(&args.dest, "snapshot")?;
            remove_stale_temps(&snapshot);
            let opened = open_live_copy(&args.file, &snapshot);
            snapshot_copy = Some(snapshot);
            match opened {
                Ok(db) => db,
                Err(error) => {
                    if let Some(snapshot) = &snapshot_copy {
                        remove_temp(snapshot);
                    }
                    return Err(error);
                }
            }
        }
        Err(error) => return Err(error.into()),
    };
    let temp = temp_path(&args.dest, "backup")?;
    remove_stale_temps(&temp);
    let _ = std::fs::remove_file(&temp);
    let result = copy_verified(&source, &temp);
    drop(source);
    if let Some(snapshot) = &snapshot_copy {
        remove_temp(snapshot);
    }
    let pairs = match result {
        Ok(pairs) => pairs,
        Err(error) => {
            remove_temp(&temp);
            return Err(error);
        }
    };
    let linked = std::fs::hard_link(&temp, &args.dest);
    remove_temp(&temp);
    if let Err(error) = linked {
        return Err(format!(
            "cannot create {}: {error} (nothing was written there)",
            args.dest.display()
        )
        .into());
    }
    sync_directory(&args.dest)?;
    let bytes = std::fs::metadata(&args.dest)?.len();
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        outln!(
            "{}",
            serde_json::json!({
                "dest": args.dest.display().to_string(),
                "pairs": pairs,
                "file_bytes": bytes,
                "verified": true,
                "seconds": seconds,
            })
        )?;
    } else {
        outln!(
            "backed up {} to {}: {pairs} pairs, {bytes} bytes, verified, in {seconds:.3} s",
            args.file.display(),
            args.dest.display()
        )?;
    }
    Ok(())
}

/// Removes the temporary copy and its write-ahead log (the copy was closed, so its log holds
/// nothing the file does not: DEST starts a fresh log at its first open).
pub(crate) fn remove_temp(temp: &Path) {
    let _ = std::fs::remove_file(temp);
    let _ = std::fs::remove_file(artdb::db::log_path(temp));
    let _ = std::fs::remove_file(artdb::io::readers_path(temp));
}

/// Copies the database `file` (locked by a writer in another process) and its log to `copy`
/// (and `copy.wal`) byte for byte, opens the copy read-only and verifies it; takes the copy again
/// when the writer changed what was being copied (see the module docs).
fn open_live_copy(file: &Path, copy: &Path) -> Result<Db, BoxError> {
    const ATTEMPTS: usize = 8;
    let log = artdb::db::log_path(file);
    let copy_log = artdb::db::log_path(copy);
    let mut last_problem = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_millis(20 << attempt.min(5)));
        }
        remove_temp(copy);
        std::fs::copy(file, copy)
            .map_err(|error| format!("cannot copy {}: {error}", file.display()))?;
        match std::fs::copy(&log, &copy_log) {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(format!("cannot copy {}: {error}", log.display()).into()),
        }
        let options = artdb::Options {
            read_only: true,
            ..options_no_checkpoint_on_drop()
        };
        let db = match Db::open(copy, options) {
            Ok(db) => db,
            Err(error @ (artdb::Error::Corruption { .. } | artdb::Error::LogMissing { .. })) => {
                last_problem = error.to_string();
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        let report = db.verify()?;
        if report.is_ok() {
            return Ok(db);
        }
        last_problem = report
            .problems
            .first()
            .map(crate::dbcommon::describe_problem)
            .unwrap_or_default();
    }
    Err(format!(
        "{} is open for writing in another process and {ATTEMPTS} copies taken beside it were          each changed while being read (last: {last_problem}); try again when it writes less,          or back up from the writing process (Db::copy_into)",
        file.display()
    )
    .into())
}

/// Copies `source` into a new database at `temp`, closes it and verifies it reopened.
fn copy_verified(source: &Db, temp: &Path) -> Result<u64, BoxError> {
    let total: u64 = {
        let read = source.read();
        let mut total = 0;
        for name in read.table_names() {
            total += read.table(&name)?.len();
        }
        total
    };
    let bar = crate::progress::items(total, "pairs");
    let target = Db::create(temp, Options::default())?;
    let pairs = source.copy_into(&target, &mut |done| bar.set_position(done))?;
    target.close()?;
    bar.finish_and_clear();
    let copy = Db::open(temp, options_no_checkpoint_on_drop())?;
    let report = copy.verify()?;
    if !report.is_ok() {
        return Err(format!(
            "the copy did not verify ({} problems; first: {}); nothing was written to the \
             destination",
            report.problems.len(),
            report
                .problems
                .first()
                .map(crate::dbcommon::describe_problem)
                .unwrap_or_default()
        )
        .into());
    }
    Ok(pairs)
}

/// Runs `artdb compact`.
pub fn compact(args: CompactArgs) -> Result<(), BoxError> {
    let before = std::fs::metadata(&args.file)
        .map_err(|e| format!("{}: {e}", args.file.display()))?
        .len();
    let started = std::time::Instant::now();
    let db = Db::open(&args.file, crate::dbcommon::options())?;
    let bar = crate::progress::spinner("compacting");
    let stats = db.compact()?;
    db.close()?;
    bar.finish_and_clear();
    let after = std::fs::metadata(&args.file)?.len();
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        outln!(
            "{}",
            serde_json::json!({
                "file_bytes_before": before,
                "file_bytes_after": after,
                "bytes_written": stats.bytes_written,
                "generation": stats.generation,
                "shrunk": after < before,
                "compaction": compaction_outcome(stats.compaction),
                "seconds": seconds,
            })
        )?;
    } else {
        outln!(
            "compacted {}: {before} -> {after} bytes ({:+} bytes) in {seconds:.3} s",
            args.file.display(),
            after as i64 - before as i64
        )?;
        match stats.compaction {
            artdb::Compaction::NothingToGain {
                page_count,
                estimated_page_count,
            } => outln!(
                "note: nothing to gain, the file was left as it is: a compacted copy would take \
                 {estimated_page_count} pages, the file has {page_count}"
            )?,
            artdb::Compaction::SnapshotHeld => outln!(
                "note: the file was left as it is: a snapshot held the old pages; compact again \
                 once it has ended"
            )?,
            _ if after >= before => {
                outln!("note: the file did not shrink: it held little free space")?
            }
            _ => {}
        }
    }
    Ok(())
}

/// What `Db::compact` did, for `--json`.
fn compaction_outcome(compaction: artdb::Compaction) -> &'static str {
    match compaction {
        artdb::Compaction::Rewritten => "rewritten",
        artdb::Compaction::NothingToGain { .. } => "nothing to gain",
        artdb::Compaction::SnapshotHeld => "snapshot held",
        _ => "none",
    }
}
