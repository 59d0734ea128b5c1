//! CrashStorage: simulates power loss at a chosen sync.
//!
//! Two images: *live* (every write, what the running process reads and maps, like the page
//! cache) and *durable* (what survives power loss). A sync moves the pending writes into the
//! durable image, except the planned one: there the pending writes are kept (the sync finished,
//! then the power went), dropped (nothing reached the disk) or torn (the disk wrote an arbitrary
//! subset of the writes in any order, and of some only a prefix), and the storage dies: this and
//! every later call fails, as if the process had stopped.
//!
//! Several files of one machine (a database file and its write-ahead log): [`CrashStorage::sibling`]
//! makes another file that shares the sync count, the plan and the crash. Syncs of either file
//! count; at the planned one the syncing file's pending writes are kept, dropped or torn, the
//! other files' pending writes are dropped (or torn, in tear mode), and every file dies.

use artdb::io::{Map, MemoryStorage, Storage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io;
use std::sync::{Arc, Mutex};

/// What happens to the unsynced writes at the planned sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// All of them reach the disk (the crash comes right after the sync).
    Keep,
    /// None of them reaches the disk.
    Drop,
    /// A random subset reaches the disk, some only in part (a prefix), chosen by the seed.
    Tear {
        /// Seed of the choice.
        seed: u64,
    },
}

enum Pending {
    Write { offset: u64, data: Vec<u8> },
    SetLen(u64),
}

struct FileState {
    durable: Vec<u8>,
    pending: Vec<Pending>,
}

struct State {
    files: Vec<FileState>,
    syncs: u64,
    plan: Option<(u64, CrashMode)>,
    crashed: bool,
}

/// A storage that simulates power loss (see the module docs).
pub struct CrashStorage {
    live: MemoryStorage,
    state: Arc<Mutex<State>>,
    index: usize,
}

fn dead() -> io::Error {
    io::Error::other("simulated crash: the storage is gone")
}

impl CrashStorage {
    /// An empty storage.
    pub fn new() -> io::Result<CrashStorage> {
        CrashStorage::from_image(&[])
    }

    /// A storage whose durable and live images are `image`.
    pub fn from_image(image: &[u8]) -> io::Result<CrashStorage> {
        let live = MemoryStorage::from_image(image)?;
        let state = State {
            files: vec![FileState {
                durable: image.to_vec(),
                pending: Vec::new(),
            }],
            syncs: 0,
            plan: None,
            crashed: false,
        };
        Ok(CrashStorage {
            live,
            state: Arc::new(Mutex::new(state)),
            index: 0,
        })
    }

    /// Another file of the same machine holding `image` (see the module docs).
    pub fn sibling(&self, image: &[u8]) -> io::Result<CrashStorage> {
        let live = MemoryStorage::from_image(image)?;
        let mut state = self.state();
        state.files.push(FileState {
            durable: image.to_vec(),
            pending: Vec::new(),
        });
        let index = state.files.len() - 1;
        drop(state);
        Ok(CrashStorage {
            live,
            state: Arc::clone(&self.state),
            index,
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Plans the crash at the `sync_number`-th sync since creation (1-based).
    pub fn crash_at_sync(&self, sync_number: u64, mode: CrashMode) {
        self.state().plan = Some((sync_number, mode));
    }

    /// Syncs so far.
    pub fn syncs(&self) -> u64 {
        self.state().syncs
    }

    /// Whether the planned crash happened.
    pub fn crashed(&self) -> bool {
        self.state().crashed
    }

    /// What of this file survives power loss now.
    pub fn durable_image(&self) -> Vec<u8> {
        self.state().files[self.index].durable.clone()
    }

    fn check_alive(&self) -> io::Result<()> {
        if self.state().crashed {
            return Err(dead());
        }
        Ok(())
    }
}

fn apply(durable: &mut Vec<u8>, pending: &Pending) {
    match pending {
        Pending::Write { offset, data } => apply_write(durable, *offset, data),
        Pending::SetLen(len) => durable.resize(*len as usize, 0),
    }
}

fn apply_write(durable: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if durable.len() < end {
        durable.resize(end, 0);
    }
    durable[offset as usize..end].copy_from_slice(data);
}

fn tear(durable: &mut Vec<u8>, pending: &[Pending], seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..pending.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.gen_range(0..=i));
    }
    for index in order {
        match (&pending[index], rng.gen_range(0..3)) {
            (_, 0) => {}
            (Pending::Write { offset, data }, 1) if !data.is_empty() => {
                let prefix = rng.gen_range(0..data.len());
                apply_write(durable, *offset, &data[..prefix]);
            }
            (pending, _) => apply(durable, pending),
        }
    }
}

impl Storage for CrashStorage {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.check_alive()?;
        self.live.read_at(offset, buf)
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut state = self.state();
        if state.crashed {
            return Err(dead());
        }
        self.live.write_at(offset, data)?;
        state.files[self.index].pending.push(Pending::Write {
            offset,
            data: data.to_vec(),
        });
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut state = self.state();
        if state.crashed {
            return Err(dead());
        }
        state.syncs += 1;
        let index = self.index;
        let pending = std::mem::take(&mut state.files[index].pending);
        match state.plan {
            Some((at, mode)) if at == state.syncs => {
                for (other, file) in state.files.iter_mut().enumerate() {
                    let other_pending = std::mem::take(&mut file.pending);
                    let (mine, seed) = if other == index {
                        (&pending, 0)
                    } else {
                        (&other_pending, 1 + other as u64)
                    };
                    match mode {
                        CrashMode::Keep if other == index => {
                            mine.iter().for_each(|p| apply(&mut file.durable, p))
                        }
                        CrashMode::Keep | CrashMode::Drop => {}
                        CrashMode::Tear { seed: base } => {
                            tear(&mut file.durable, mine, base.wrapping_add(seed))
                        }
                    }
                }
                state.crashed = true;
                Err(dead())
            }
            _ => {
                let file = &mut state.files[index];
                pending.iter().for_each(|p| apply(&mut file.durable, p));
                Ok(())
            }
        }
    }

    fn len(&self) -> io::Result<u64> {
        self.check_alive()?;
        self.live.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = self.state();
        if state.crashed {
            return Err(dead());
        }
        self.live.set_len(len)?;
        state.files[self.index].pending.push(Pending::SetLen(len));
        Ok(())
    }

    fn map(&self, len: u64) -> io::Result<Map> {
        self.check_alive()?;
        self.live.map(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_writes_are_kept_dropped_or_torn() {
        for (mode, expect) in [
            (CrashMode::Keep, Some(b"xy".as_slice())),
            (CrashMode::Drop, None),
        ] {
            let storage = CrashStorage::new().unwrap();
            storage.write_at(0, b"ab").unwrap();
            storage.sync().unwrap();
            storage.write_at(0, b"xy").unwrap();
            storage.crash_at_sync(2, mode);
            assert!(storage.sync().is_err());
            assert!(storage.crashed());
            assert!(
                storage.read_at(0, &mut [0; 2]).is_err(),
                "dead after the crash"
            );
            assert_eq!(storage.durable_image(), expect.unwrap_or(b"ab"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let storage = CrashStorage::new().unwrap();
            storage.write_at(0, b"0000").unwrap();
            storage.sync().unwrap();
            storage.write_at(0, b"11").unwrap();
            storage.write_at(2, b"22").unwrap();
            storage.crash_at_sync(2, CrashMode::Tear { seed });
            let _ = storage.sync();
            seen.insert(storage.durable_image());
        }
        assert!(seen.len() >= 5, "tears produce many outcomes: {seen:?}");
    }
}
