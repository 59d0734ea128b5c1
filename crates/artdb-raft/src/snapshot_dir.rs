//! snapshot_dir: the files of a node's snapshots, in a directory beside its database.
//!
//! A snapshot is one file, `snapshot-<generation>`, in the format of [`crate::snapshot`]. It is
//! written whole under a `.part` name, synced, renamed and the directory synced before the
//! database records its name (`sm_meta`'s `snapshot_file`), so a recorded name always names a
//! whole, durable file. A file the database does not name (a build or a receive cut short by a
//! crash, a snapshot replaced) is removed when the node opens ([`SnapshotDir::remove_all_but`])
//! or when the one that replaced it is recorded.
//!
//! Generations only grow within a process; at open the counter starts above every generation
//! the database still names, so a new file never takes the name of a recorded one.

use crate::codec::{io_error, RaftStoreError};
use parking_lot::Mutex;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const PREFIX: &str = "snapshot-";
const PART: &str = ".part";
const RECEIVING: &str = "receiving-";

/// Bytes of the buffers between the encoder or decoder and a snapshot file.
pub const BUFFER_BYTES: usize = 1 << 20;

/// The identity of an open file (device and inode), to find the path of a received snapshot.
type FileId = (u64, u64);

/// A node's snapshot directory (see the module docs).
#[derive(Debug)]
pub struct SnapshotDir {
    path: PathBuf,
    next: AtomicU64,
    /// Files being received (their path and identity), most recent last.
    receiving: Mutex<Vec<(PathBuf, Option<FileId>)>>,
}

#[cfg(unix)]
fn file_id(file: &File) -> io::Result<Option<FileId>> {
    use std::os::unix::fs::MetadataExt;
    let metadata = file.metadata()?;
    Ok(Some((metadata.dev(), metadata.ino())))
}

#[cfg(not(unix))]
fn file_id(_file: &File) -> io::Result<Option<FileId>> {
    Ok(None)
}

/// The generation in a snapshot file's name, if it is one.
pub fn generation_of_file(name: &str) -> Option<u64> {
    name.strip_prefix(PREFIX)?.parse().ok()
}

impl SnapshotDir {
    /// The directory at `path`, created if absent.
    pub fn open(path: impl AsRef<Path>) -> Result<SnapshotDir, RaftStoreError> {
        let path = path.as_ref().to_path_buf();
        fs::create_dir_all(&path).map_err(io_error(format!(
            "creating the snapshot directory {}",
            path.display()
        )))?;
        Ok(SnapshotDir {
            path,
            next: AtomicU64::new(1),
            receiving: Mutex::new(Vec::new()),
        })
    }

    /// The directory's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the generations taken from now on greater than `generation`.
    pub fn start_above(&self, generation: u64) {
        self.next
            .fetch_max(generation.saturating_add(1), Ordering::Relaxed);
    }

    /// A generation no file or table of this node has.
    pub fn next_generation(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The file name of generation `generation`.
    pub fn file_name(generation: u64) -> String {
        format!("{PREFIX}{generation}")
    }

    fn sync_dir(&self) -> Result<(), RaftStoreError> {
        #[cfg(unix)]
        File::open(&self.path)
            .and_then(|dir| dir.sync_all())
            .map_err(io_error(format!(
                "syncing the snapshot directory {}",
                self.path.display()
            )))?;
        Ok(())
    }

    fn rename_durably(&self, from: &Path, name: &str) -> Result<(), RaftStoreError> {
        let to = self.path.join(name);
        fs::rename(from, &to).map_err(io_error(format!(
            "renaming {} to {}",
            from.display(),
            to.display()
        )))?;
        self.sync_dir()
    }

    /// Writes the snapshot file of `generation` through `write` and makes it durable; returns
    /// its name. On an error nothing is left under that name.
    pub fn write_new(
        &self,
        generation: u64,
        write: impl FnOnce(&mut BufWriter<File>) -> Result<(), RaftStoreError>,
    ) -> Result<String, RaftStoreError> {
        let name = SnapshotDir::file_name(generation);
        let part = self.path.join(format!("{name}{PART}"));
        let result = (|| {
            let file =
                File::create(&part).map_err(io_error(format!("creating {}", part.display())))?;
            let mut out = BufWriter::with_capacity(BUFFER_BYTES, file);
            write(&mut out)?;
            out.into_inner()
                .map_err(|error| error.into_error())
                .and_then(|file| file.sync_all())
                .map_err(io_error(format!("writing {}", part.display())))?;
            self.rename_durably(&part, &name)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&part);
        }
        result.map(|()| name)
    }

    /// A new, empty file to receive a snapshot into. Files of earlier receives are removed:
    /// openraft receives one snapshot at a time, so a new one means the earlier was abandoned.
    pub fn begin_receiving(&self) -> Result<File, RaftStoreError> {
        let generation = self.next_generation();
        let path = self.path.join(format!("{RECEIVING}{generation}{PART}"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_error(format!("creating {}", path.display())))?;
        let id = file_id(&file).map_err(io_error(format!("reading {}", path.display())))?;
        let mut receiving = self.receiving.lock();
        for (earlier, _) in receiving.drain(..) {
            let _ = fs::remove_file(earlier);
        }
        receiving.push((path, id));
        Ok(file)
    }

    /// Makes `file`, a whole received snapshot, the durable snapshot file of `generation`;
    /// returns its name. A file this directory did not hand out is copied.
    pub fn adopt_received(
        &self,
        file: &mut File,
        generation: u64,
    ) -> Result<String, RaftStoreError> {
        let name = SnapshotDir::file_name(generation);
        file.sync_all()
            .map_err(io_error("syncing a received snapshot"))?;
        let id = file_id(file).map_err(io_error("reading a received snapshot"))?;
        let path = {
            let mut receiving = self.receiving.lock();
            let found =
                id.and_then(|id| receiving.iter().position(|(_, known)| *known == Some(id)));
            found.map(|at| receiving.remove(at).0)
        };
        match path {
            Some(path) => {
                self.rename_durably(&path, &name)?;
                Ok(name)
            }
            None => {
                use std::io::Seek;
                file.seek(io::SeekFrom::Start(0))
                    .map_err(io_error("reading a received snapshot"))?;
                self.write_new(generation, |out| {
                    io::copy(file, out)
                        .map(|_| ())
                        .map_err(io_error("copying a received snapshot"))
                })
            }
        }
    }

    /// Opens the snapshot file `name` for reading.
    pub fn open_file(&self, name: &str) -> io::Result<File> {
        File::open(self.path.join(name))
    }

    /// Removes the snapshot file `name` (an absent one is no error: removal is cleanup).
    pub fn remove(&self, name: &str) {
        let _ = fs::remove_file(self.path.join(name));
    }

    /// Removes every file but `keep` (see the module docs), and makes new generations greater
    /// than every one left.
    pub fn remove_all_but(&self, keep: Option<&str>) -> Result<(), RaftStoreError> {
        let entries = fs::read_dir(&self.path).map_err(io_error(format!(
            "listing the snapshot directory {}",
            self.path.display()
        )))?;
        for entry in entries {
            let entry = entry.map_err(io_error(format!(
                "listing the snapshot directory {}",
                self.path.display()
            )))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if Some(&*name) == keep {
                if let Some(generation) = generation_of_file(&name) {
                    self.start_above(generation);
                }
                continue;
            }
            let is_ours = name.starts_with(PREFIX) || name.starts_with(RECEIVING);
            if is_ours && entry.file_type().is_ok_and(|kind| kind.is_file()) {
                fs::remove_file(entry.path())
                    .map_err(io_error(format!("removing {}", entry.path().display())))?;
            }
        }
        Ok(())
    }
}
