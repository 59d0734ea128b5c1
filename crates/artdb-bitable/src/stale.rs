//! Removal of the temporary files that killed builds leave behind.
//!
//! A [`crate::Builder`] writes `NAME` under `.NAME.PID-N.building` in the same directory and
//! renames it into place at `finish` (or removes it on error and on drop). A process killed in
//! between leaves that file forever. [`remove_stale_temp_files`] removes the ones whose process
//! is gone; a new builder calls it for its own target, and `artdb bitable verify` for the file it
//! checks.
//!
//! "Gone" means `/proc/PID` does not exist (Linux). Where `/proc` is not mounted nothing is
//! removed, so a live build is never touched there. A file whose PID has been reused by another
//! live process is kept (the safe side; the next cleanup after that process ends removes it).
//! Hazard: a builder in another PID namespace sharing the directory looks gone from here; its
//! `finish` then fails with an I/O error (the rename finds no file) rather than producing a bad
//! table.

use std::path::{Path, PathBuf};

/// The PID in `file_name` if it is a temporary file of a build of `name`
/// (`.NAME.PID-N.building`).
fn temp_file_pid(file_name: &str, name: &str) -> Option<u32> {
    let middle = file_name
        .strip_prefix('.')?
        .strip_prefix(name)?
        .strip_prefix('.')?
        .strip_suffix(".building")?;
    let (pid, counter) = middle.split_once('-')?;
    if counter.is_empty() || !counter.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    if pid.is_empty() || !pid.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether a process with this id may be running (true when it cannot be told).
fn process_may_run(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return true;
    }
    proc_root.join(pid.to_string()).exists()
}

/// Removes the temporary files of killed builds of the table `target` (in its directory) and
/// returns their paths. Files of running builds, and anything that is not such a temporary file,
/// are left alone. Errors (an unreadable directory, a file removed meanwhile) skip that entry:
/// cleanup is best effort and never fails a build.
pub fn remove_stale_temp_files(target: impl AsRef<Path>) -> Vec<PathBuf> {
    let target = target.as_ref();
    let directory = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = target.file_name().and_then(|name| name.to_str()) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&directory) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(file_name) = file_name.to_str() else {
            continue;
        };
        let Some(pid) = temp_file_pid(file_name, name) else {
            continue;
        };
        if process_may_run(pid) {
            continue;
        }
        let path = entry.path();
        if std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_parse() {
        assert_eq!(temp_file_pid(".t.bt.123-0.building", "t.bt"), Some(123));
        assert_eq!(temp_file_pid(".t.bt.123-17.building", "t.bt"), Some(123));
        assert_eq!(temp_file_pid(".t.bt.123.building", "t.bt"), None);
        assert_eq!(temp_file_pid(".u.bt.123-0.building", "t.bt"), None);
        assert_eq!(temp_file_pid("t.bt", "t.bt"), None);
        assert_eq!(temp_file_pid(".t.bt.x-0.building", "t.bt"), None);
        assert_eq!(temp_file_pid(".t.bt.1-0.buildingx", "t.bt"), None);
    }
}
