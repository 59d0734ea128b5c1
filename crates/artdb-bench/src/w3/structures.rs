//! structures: the four structures W3 times (bitable, `fst`, LMDB through `heed`, and a
//! memory-mapped sorted array), each behind the `Structure` trait of the driver in `w3.rs`.

use super::*;

pub(super) struct Bitable(artdb_bitable::Table);

impl Structure for Bitable {
    const NAME: &'static str = "bitable";
    const FLOOR: bool = true;

    fn build(input: &[u8], dir: &Path, durable: bool) -> Result<(), BoxError> {
        // A non-durable build is a scratch table: no write-behind, as its option's notes advise.
        let options = artdb_bitable::Options {
            write_behind: durable,
            ..artdb_bitable::Options::default()
        };
        let mut builder = artdb_bitable::Builder::with_options(dir.join("table.bt"), options)?;
        for pair in input.chunks_exact(PAIR_LEN) {
            builder.append(&pair[..KEY_LEN], &pair[KEY_LEN..])?;
        }
        let durability = if durable {
            artdb_bitable::Durability::Durable
        } else {
            artdb_bitable::Durability::NonDurable
        };
        builder.finish(durability)?;
        Ok(())
    }

    fn open(dir: &Path) -> Result<Self, BoxError> {
        Ok(Bitable(artdb_bitable::Table::open(dir.join("table.bt"))?))
    }

    fn files(dir: &Path) -> Vec<PathBuf> {
        vec![dir.join("table.bt")]
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key).ok().flatten().map(value_of)
    }

    fn scan(&self, key: &[u8], count: usize) -> u64 {
        let mut cursor = self.0.cursor();
        let mut sum = 0u64;
        if cursor.seek_lower_bound(key).unwrap_or(false) {
            sum = sum.wrapping_add(cursor.value().map_or(0, value_of));
            for _ in 0..count {
                if !cursor.next().unwrap_or(false) {
                    break;
                }
                sum = sum.wrapping_add(cursor.value().map_or(0, value_of));
            }
        }
        sum
    }

    fn sizes(&self, _dir: &Path) -> Vec<(&'static str, u64)> {
        let stats = self.0.stats();
        vec![
            ("leaf_bytes", stats.leaf_bytes()),
            ("branch_bytes", stats.branch_bytes()),
            ("file_bytes", stats.file_bytes),
        ]
    }

    fn merge(a: &Path, b: &Path, out: &Path) -> Option<Result<(), BoxError>> {
        let run = || -> Result<(), BoxError> {
            let a = artdb_bitable::Table::open(a.join("table.bt"))?;
            let b = artdb_bitable::Table::open(b.join("table.bt"))?;
            let mut builder = artdb_bitable::Builder::create(out.join("table.bt"))?;
            artdb_bitable::merge(
                &[&a, &b],
                &mut builder,
                artdb_bitable::MergeRule::NewestWins,
            )?;
            builder.finish(artdb_bitable::Durability::NonDurable)?;
            Ok(())
        };
        Some(run())
    }
}

pub(super) struct FstMap(fst::Map<Mmap>);

impl Structure for FstMap {
    const NAME: &'static str = "fst";
    const DURABLE_IS_SYNC: bool = true;

    fn build(input: &[u8], dir: &Path, durable: bool) -> Result<(), BoxError> {
        let file = File::create(dir.join("map.fst"))?;
        let mut builder = fst::MapBuilder::new(BufWriter::with_capacity(1 << 20, file))?;
        for pair in input.chunks_exact(PAIR_LEN) {
            builder.insert(&pair[..KEY_LEN], value_of(&pair[KEY_LEN..]))?;
        }
        let file = builder
            .into_inner()?
            .into_inner()
            .map_err(|e| e.into_error())?;
        if durable {
            file.sync_all()?;
            sync_directory(dir)?;
        }
        Ok(())
    }

    fn open(dir: &Path) -> Result<Self, BoxError> {
        Ok(FstMap(fst::Map::new(map_file(&dir.join("map.fst"))?)?))
    }

    fn files(dir: &Path) -> Vec<PathBuf> {
        vec![dir.join("map.fst")]
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.0.get(key)
    }

    fn scan(&self, key: &[u8], count: usize) -> u64 {
        use fst::{IntoStreamer, Streamer};
        let mut stream = self.0.range().ge(key).into_stream();
        let mut sum = 0u64;
        for _ in 0..=count {
            match stream.next() {
                Some((_, value)) => sum = sum.wrapping_add(value),
                None => break,
            }
        }
        sum
    }

    fn sizes(&self, dir: &Path) -> Vec<(&'static str, u64)> {
        vec![("file_bytes", dir_bytes(dir))]
    }

    fn merge(a: &Path, b: &Path, out: &Path) -> Option<Result<(), BoxError>> {
        let run = || -> Result<(), BoxError> {
            use fst::Streamer;
            let a = FstMap::open(a)?;
            let b = FstMap::open(b)?;
            let file = File::create(out.join("map.fst"))?;
            let mut builder = fst::MapBuilder::new(BufWriter::with_capacity(1 << 20, file))?;
            let mut union = fst::map::OpBuilder::new().add(&a.0).add(&b.0).union();
            while let Some((key, values)) = union.next() {
                let newest = values.iter().max_by_key(|v| v.index).map_or(0, |v| v.value);
                builder.insert(key, newest)?;
            }
            builder.finish()?;
            Ok(())
        };
        Some(run())
    }
}

pub(super) struct Lmdb {
    env: heed::Env,
    database: crate::kv::lmdb::MainDatabase,
    txn: heed::RoTxn<'static, heed::WithTls>,
}

impl Lmdb {
    fn env(dir: &Path, n_bytes: u64, durable: bool) -> Result<heed::Env, BoxError> {
        let map_size = ((n_bytes * 2 + (1 << 30)) as usize).next_multiple_of(1 << 20);
        let mut options = heed::EnvOpenOptions::new();
        options.map_size(map_size).max_dbs(1);
        if !durable {
            // SAFETY: NO_SYNC/NO_META_SYNC only weaken durability, which a non-durable build
            // gives up on purpose; the environment is used by this process alone.
            unsafe { options.flags(heed::EnvFlags::NO_SYNC | heed::EnvFlags::NO_META_SYNC) };
        }
        // SAFETY: heed requires that the environment is not opened twice in the process at once
        // and that its files are not modified by others: each benchmark directory is private and
        // every environment is closed (`close`) before its directory is reopened.
        let env = unsafe { options.open(dir) }?;
        Ok(env)
    }
}

impl Structure for Lmdb {
    const NAME: &'static str = "lmdb";
    const MERGES: bool = false;

    fn build(input: &[u8], dir: &Path, durable: bool) -> Result<(), BoxError> {
        let env = Lmdb::env(dir, input.len() as u64, durable)?;
        crate::kv::lmdb::create_main(&env, |database, txn| {
            for pair in input.chunks_exact(PAIR_LEN) {
                database.put_with_flags(
                    txn,
                    heed::PutFlags::APPEND,
                    &pair[..KEY_LEN],
                    &pair[KEY_LEN..],
                )?;
            }
            Ok(())
        })
        .map_err(|error| error as BoxError)?;
        env.prepare_for_closing().wait();
        Ok(())
    }

    fn open(dir: &Path) -> Result<Self, BoxError> {
        let size = dir_bytes(dir);
        let env = Lmdb::env(dir, size, true)?;
        let database = crate::kv::lmdb::open_main(&env).map_err(|error| error as BoxError)?;
        let database = database.ok_or("the LMDB environment has no main database")?;
        let txn = env.clone().static_read_txn()?;
        Ok(Lmdb { env, database, txn })
    }

    fn files(dir: &Path) -> Vec<PathBuf> {
        vec![dir.join("data.mdb")]
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        self.database
            .get(&self.txn, key)
            .ok()
            .flatten()
            .map(value_of)
    }

    fn scan(&self, key: &[u8], count: usize) -> u64 {
        use std::ops::Bound;
        let range = (Bound::Included(key), Bound::Unbounded);
        let mut sum = 0u64;
        if let Ok(iter) = self.database.range(&self.txn, &range) {
            for item in iter.take(count + 1) {
                match item {
                    Ok((_, value)) => sum = sum.wrapping_add(value_of(value)),
                    Err(_) => break,
                }
            }
        }
        sum
    }

    fn sizes(&self, dir: &Path) -> Vec<(&'static str, u64)> {
        let mut rows = vec![(
            "file_bytes",
            dir_bytes(&dir.join("data.mdb")).max(file_len(&dir.join("data.mdb"))),
        )];
        if let Ok(stat) = self.database.stat(&self.txn) {
            let page = u64::from(stat.page_size);
            rows.push(("leaf_bytes", stat.leaf_pages as u64 * page));
            rows.push(("branch_bytes", stat.branch_pages as u64 * page));
        }
        rows
    }

    fn merge(_a: &Path, _b: &Path, _out: &Path) -> Option<Result<(), BoxError>> {
        None
    }

    fn close(self) {
        let Lmdb { env, txn, .. } = self;
        drop(txn);
        env.prepare_for_closing().wait();
    }
}

pub(super) fn file_len(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The floor: fixed 32-byte records in a memory map, binary search.
pub(super) struct SortedArray(Mmap);

impl SortedArray {
    fn lower_bound(&self, key: &[u8]) -> usize {
        let records = self.0.len() / PAIR_LEN;
        let (mut low, mut high) = (0usize, records);
        while low < high {
            let middle = (low + high) / 2;
            let at = middle * PAIR_LEN;
            if &self.0[at..at + KEY_LEN] < key {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }
}

impl Structure for SortedArray {
    const NAME: &'static str = "array";
    const DURABLE_IS_SYNC: bool = true;

    fn build(input: &[u8], dir: &Path, durable: bool) -> Result<(), BoxError> {
        let mut file = File::create(dir.join("pairs.bin"))?;
        for chunk in input.chunks(1 << 20) {
            file.write_all(chunk)?;
        }
        if durable {
            file.sync_all()?;
            sync_directory(dir)?;
        }
        Ok(())
    }

    fn open(dir: &Path) -> Result<Self, BoxError> {
        Ok(SortedArray(map_file(&dir.join("pairs.bin"))?))
    }

    fn files(dir: &Path) -> Vec<PathBuf> {
        vec![dir.join("pairs.bin")]
    }

    #[inline]
    fn get(&self, key: &[u8]) -> Option<u64> {
        let index = self.lower_bound(key);
        let at = index * PAIR_LEN;
        (at < self.0.len() && &self.0[at..at + KEY_LEN] == key)
            .then(|| value_of(&self.0[at + KEY_LEN..at + PAIR_LEN]))
    }

    fn scan(&self, key: &[u8], count: usize) -> u64 {
        let start = self.lower_bound(key);
        let end = (start + count + 1).min(self.0.len() / PAIR_LEN);
        (start..end).fold(0u64, |sum, index| {
            let at = index * PAIR_LEN + KEY_LEN;
            sum.wrapping_add(value_of(&self.0[at..at + VALUE_LEN]))
        })
    }

    fn sizes(&self, _dir: &Path) -> Vec<(&'static str, u64)> {
        vec![("leaf_bytes", self.0.len() as u64), ("branch_bytes", 0)]
    }

    fn merge(a: &Path, b: &Path, out: &Path) -> Option<Result<(), BoxError>> {
        let run = || -> Result<(), BoxError> {
            let a = SortedArray::open(a)?;
            let b = SortedArray::open(b)?;
            let mut file = BufWriter::with_capacity(1 << 20, File::create(out.join("pairs.bin"))?);
            let (mut left, mut right) = (
                a.0.chunks_exact(PAIR_LEN).peekable(),
                b.0.chunks_exact(PAIR_LEN).peekable(),
            );
            loop {
                let next = match (left.peek(), right.peek()) {
                    (Some(l), Some(r)) => match l[..KEY_LEN].cmp(&r[..KEY_LEN]) {
                        std::cmp::Ordering::Less => left.next(),
                        std::cmp::Ordering::Greater => right.next(),
                        std::cmp::Ordering::Equal => {
                            left.next();
                            right.next()
                        }
                    },
                    (Some(_), None) => left.next(),
                    (None, Some(_)) => right.next(),
                    (None, None) => break,
                };
                if let Some(record) = next {
                    file.write_all(record)?;
                }
            }
            file.flush()?;
            Ok(())
        };
        Some(run())
    }
}
