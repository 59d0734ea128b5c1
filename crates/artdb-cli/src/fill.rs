//! Filling tables all-or-nothing, for `restore`, `import` and `load` (and the shell's future
//! loads).
//!
//! A [`Target`] opens (or creates) the database without checkpointing on drop and remembers
//! what the command changed: the database file if it created it, each table it created or
//! filled. Tables must be new or empty. A new table is created by its load's own commit
//! (`Db::bulk_load_new_table_try`, or the write batch), so a failed or killed load leaves no
//! empty table behind. On success [`Target::close`] checkpoints; on any error
//! [`Target::abandon`] undoes what was done: filled tables are dropped (and re-created empty if
//! they existed before), on a fresh open if the error poisoned the handle, and a database file
//! this command created is removed. Each table's load itself is atomic (`Db::bulk_load_try`,
//! or one write batch).
//!
//! A database file the command creates is built under a temporary name beside it
//! (`.NAME.KIND-PID`, of `backup::temp_path`, KIND naming the command: `restore`, `load`) and
//! linked into place only after it was closed (checkpointed, its log closed) and its directory
//! synced: a crash or a kill midway leaves no database under NAME, only the temporary file,
//! which the next command of that kind to NAME removes once its process is gone. Into an existing database, each table's bulk load is
//! durable when it returns, so a crash (not an error) between two tables of one command leaves
//! the earlier tables filled; the command's own output never reported success then.

use crate::dbcommon::options_no_checkpoint_on_drop;
use artdb::{Db, Error};
use std::path::{Path, PathBuf};

type BoxError = Box<dyn std::error::Error>;

/// A database being filled (see the module docs).
pub struct Target {
    db: Db,
    path: PathBuf,
    /// Where the new database is built when this command creates the file (else `None`).
    temp: Option<PathBuf>,
    /// Whether an empty (0-byte) file is at `path`, which the new database replaces.
    replaces_empty: bool,
    /// Tables changed by this command, and whether they existed before.
    touched: Vec<(String, bool)>,
}

impl Target {
    /// Opens `path`, creating it (as `.NAME.KIND-PID`, see the module docs) if it does not
    /// exist or is an empty file.
    pub fn open(path: &Path, kind: &str) -> Result<Target, BoxError> {
        let replaces_empty =
            path.exists() && !path.is_symlink() && crate::dbcommon::is_missing_or_empty(path);
        let (db, temp) = if !crate::dbcommon::is_missing_or_empty(path) {
            (Db::open(path, options_no_checkpoint_on_drop())?, None)
        } else {
            let temp = crate::backup::temp_path(path, kind)?;
            crate::backup::remove_stale_temps(&temp);
            crate::backup::remove_temp(&temp);
            (
                Db::create(&temp, options_no_checkpoint_on_drop())?,
                Some(temp),
            )
        };
        Ok(Target {
            db,
            path: path.to_path_buf(),
            temp,
            replaces_empty,
            touched: Vec::new(),
        })
    }

    /// The database being filled (under its temporary name when this command creates it).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Makes `name` ready to be filled: created if missing; an error if it has keys.
    pub fn prepare(&mut self, name: &str) -> Result<(), BoxError> {
        if self.touched.iter().any(|(touched, _)| touched == name) {
            return Err(format!("table {name:?} appears twice in the input").into());
        }
        let existed = self.db.table_names().iter().any(|table| table == name);
        if existed {
            let keys = self.db.read().table(name)?.len();
            if keys > 0 {
                return Err(format!(
                    "table {name:?} already has {keys} keys; restore or import into a new or \
                     empty table (or into another database file)"
                )
                .into());
            }
        } else {
            crate::dbcommon::check_table_name(name)?;
        }
        self.touched.push((name.to_string(), existed));
        Ok(())
    }

    /// Whether `name` (prepared) is new: the load's own commit creates it, so a failed or
    /// killed load leaves no empty table behind.
    fn is_new(&self, name: &str) -> bool {
        self.touched
            .iter()
            .any(|(touched, existed)| touched == name && !existed)
    }

    /// Loads sorted pairs into the prepared table `name` (all or nothing). Keys out of order
    /// are an error that `what_unsorted` explains.
    pub fn load_sorted(
        &self,
        name: &str,
        pairs: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), BoxError>>,
        what_unsorted: &str,
    ) -> Result<u64, BoxError> {
        let loaded = if self.is_new(name) {
            self.db.bulk_load_new_table_try(name, pairs)
        } else {
            self.db.bulk_load_try(name, pairs)
        };
        loaded.map_err(|error| match error.downcast_ref::<Error>() {
            Some(Error::Unsorted { index }) => {
                format!("table {name:?}: pair {index} {what_unsorted}").into()
            }
            Some(Error::Duplicate { index }) => {
                format!("table {name:?}: pair {index} repeats the key before it").into()
            }
            _ => error,
        })
    }

    /// Loads pairs in any order into the prepared table `name` in one write batch; a repeated
    /// key is an error.
    pub fn load_unsorted(
        &self,
        name: &str,
        pairs: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), BoxError>>,
    ) -> Result<u64, BoxError> {
        let mut batch = self.db.write()?;
        if self.is_new(name) {
            batch.create_table(name)?;
        }
        let mut count = 0u64;
        for pair in pairs {
            let (key, value) = pair?;
            if batch.insert(name, &key, &value)?.is_some() {
                return Err(format!("table {name:?}: a key appears twice (pair {count})").into());
            }
            count += 1;
        }
        batch.commit()?;
        Ok(count)
    }

    /// Checkpoints and closes: the command succeeded.
    pub fn close(self) -> Result<(), BoxError> {
        let Target {
            db,
            path,
            temp,
            replaces_empty,
            ..
        } = self;
        db.checkpoint()?;
        db.close()?;
        let Some(temp) = temp else {
            return Ok(());
        };
        // Closed cleanly, so the new file needs no log: NAME starts a fresh one at its first
        // open. A link never replaces a file that appeared meanwhile; an empty file at NAME is
        // replaced by a rename, only if it is still empty (it holds nothing to lose).
        let _ = std::fs::remove_file(artdb::db::log_path(&temp));
        let linked = if replaces_empty && crate::dbcommon::is_missing_or_empty(&path) {
            std::fs::rename(&temp, &path)
        } else {
            std::fs::hard_link(&temp, &path)
        };
        crate::backup::remove_temp(&temp);
        linked.map_err(|error| {
            format!(
                "cannot create {}: {error} (nothing was written there)",
                path.display()
            )
        })?;
        crate::backup::sync_directory(&path)?;
        Ok(())
    }

    /// Undoes what this command did (see the module docs) and returns the error's message for
    /// the user: `error` and that the database was left as it was, or, if the undo failed too,
    /// what is left and how to remove it.
    pub fn abandon(self, error: &dyn std::fmt::Display) -> String {
        let Target {
            db,
            path,
            temp,
            touched,
            ..
        } = self;
        if let Some(temp) = temp {
            drop(db);
            crate::backup::remove_temp(&temp);
            return format!("{error}; {} was left as it was", path.display());
        }
        match undo_tables(db, &path, &touched) {
            Ok(()) => format!("{error}; {} was left as it was", path.display()),
            Err(undo) => format!(
                "{error}; undoing the partial changes to {} failed too ({undo}): the tables {} \
                 may be left filled, or emptied; check them with `artdb stats`",
                path.display(),
                touched
                    .iter()
                    .map(|(name, _)| format!("{name:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// Drops the tables a failed command filled or created (re-creating empty the ones that
/// existed before: `touched` holds each name and whether it existed). A failed
/// write poisons the handle (writes are refused until the database is reopened, since the
/// outcome of the failed I/O is unknown), so if the undo fails on `db` it is retried once on a
/// fresh open of `path` (which recovers to the last committed state first).
pub fn undo_tables(db: Db, path: &Path, touched: &[(String, bool)]) -> Result<(), BoxError> {
    let undo = |db: &Db| -> Result<(), BoxError> {
        for (name, existed) in touched {
            if db.table_names().contains(name) {
                db.drop_table(name)?;
            }
            if *existed {
                db.create_table(name)?;
            }
        }
        Ok(())
    };
    // Each undo step is a durable commit of its own, so the handle is then dropped without a
    // checkpoint (which a full disk could fail after the undo succeeded).
    if undo(&db).is_ok() {
        return Ok(());
    }
    drop(db);
    let db = Db::open(path, options_no_checkpoint_on_drop())?;
    undo(&db)
}
