//! The fuzz body for the engine: arbitrary bytes of a database file (and of its log) opened
//! read-only, as a salvage and read-write, then verified and read through every read path.
//!
//! Run by the cargo-fuzz target in `crates/artdb/fuzz/` and, briefly, by `cargo test`
//! (`tests/fuzz_body.rs`) over mutations of valid databases. The property: whatever the bytes,
//! nothing panics, reads out of bounds or hangs; errors are expected outcomes. Every walk is
//! capped at [`WALK_PAIRS_MAX`] pairs so an iteration stays short whatever the file claims.
//!
//! The bytes go into [`MemoryStorage`]s, not files: the store, log and tree code that parses
//! them is the same, and an iteration costs no file system calls (the file-only code, locking
//! and temporary names, reads nothing the file says).
//!
//! [`reseal`] and [`reseal_log`] recompute every checksum a reader checks, so that mutated bytes
//! get past the checksums to the structural checks behind them (crafted files, not damaged
//! ones). They re-derive the layout from docs/file-format.md and docs/wal-format.md on purpose
//! (an independent reading of the format); a unit test checks that they leave the bytes of a
//! valid database unchanged.

use crate::db::{Db, Options};
use crate::io::{MemoryStorage, Storage};
use crate::Table;
use std::sync::Arc;

/// Pairs a walk visits at most.
pub const WALK_PAIRS_MAX: usize = 10_000;
/// Keys per table kept from the walks for point reads, seeks and prefix scans.
const KEYS_KEPT: usize = 48;
/// Pairs read from each short range or prefix scan.
const SCAN_PAIRS: usize = 4;

// The layout, from the format modules themselves (so a format change cannot leave the reseal
// behind), as the `usize` offsets this module indexes with.
use crate::store::layout as file;
use crate::wal::layout as log;
const PAGE: usize = file::PAGE_SIZE as usize;
const HEADER_CRC_AT: usize = file::HEADER_CRC_AT;
const SUPERBLOCK_COPIES: [usize; 4] = [
    (file::SUPERBLOCK_OFFSETS[0] + file::SUPERBLOCK_COPY_OFFSETS[0]) as usize,
    (file::SUPERBLOCK_OFFSETS[0] + file::SUPERBLOCK_COPY_OFFSETS[1]) as usize,
    (file::SUPERBLOCK_OFFSETS[1] + file::SUPERBLOCK_COPY_OFFSETS[0]) as usize,
    (file::SUPERBLOCK_OFFSETS[1] + file::SUPERBLOCK_COPY_OFFSETS[1]) as usize,
];
const SUPERBLOCK_MAGIC: &[u8; 8] = &file::SUPERBLOCK_MAGIC;
const SB_CATALOG_OFFSET_AT: usize = file::SB_CATALOG_OFFSET_AT;
const SB_CATALOG_LEN_AT: usize = file::SB_CATALOG_LEN_AT;
const SB_CATALOG_CRC_AT: usize = file::SB_CATALOG_CRC_AT;
const SB_SPACE_OFFSET_AT: usize = file::SB_SPACE_OFFSET_AT;
const SB_SPACE_LEN_AT: usize = file::SB_SPACE_LEN_AT;
const SB_SPACE_CRC_AT: usize = file::SB_SPACE_CRC_AT;
const SB_CRC_AT: usize = file::SB_CRC_AT;
const DATA_PAGE_FIRST: usize = file::DATA_PAGE_FIRST as usize;
const PAGE_KIND_AT: usize = file::PAGE_KIND_AT;
const PAGE_KIND_PACKED: u8 = file::PAGE_KIND_PACKED;
const PAGE_KIND_EXTENT: u8 = file::PAGE_KIND_EXTENT;
const PAGE_EXTENT_PAGES_AT: usize = file::PAGE_EXTENT_PAGES_AT;

const LOG_MAGIC: &[u8; 8] = &log::LOG_MAGIC;
const LOG_HEADER_SLOTS: [usize; 2] = [
    log::LOG_HEADER_OFFSETS[0] as usize,
    log::LOG_HEADER_OFFSETS[1] as usize,
];
const LH_FILE_ID_AT: usize = log::LH_FILE_ID_AT;
const LH_EPOCH_AT: usize = log::LH_EPOCH_AT;
const LH_CRC_AT: usize = log::LH_CRC_AT;
const LOG_HEADER_LEN: usize = log::LOG_HEADER_LEN;
const LOG_DATA_START: usize = crate::wal::LOG_DATA_START as usize;
const LR_HEADER_LEN: usize = log::LOG_RECORD_HEADER_LEN;
const LR_CRC_AT: usize = log::LR_CRC_AT;
const LR_LSN_AT: usize = log::LR_LSN_AT;

/// Opens `db` (with `wal` as its log, or no log) read-only, as a salvage of the previous
/// checkpoint and read-write, and exercises every read path of each (and, read-write, a small
/// commit and a checkpoint). Returns how many pairs the walks saw. Errors are expected
/// outcomes; a panic is a bug.
pub fn open_verify_walk(db: &[u8], wal: Option<&[u8]>) -> usize {
    let mut seen = 0;
    for mode in [Mode::ReadOnly, Mode::Salvage, Mode::ReadWrite] {
        seen += open_and_read(db, wal, mode);
    }
    seen
}

/// Flag of an input's first byte: a log follows the database file.
pub const INPUT_HAS_LOG: u8 = 1;
/// Flag of an input's first byte: reseal the file and the log ([`reseal`], [`reseal_log`])
/// before opening, so that the fuzzer's mutations reach the checks behind the checksums.
pub const INPUT_RESEAL: u8 = 2;

/// Runs one fuzz input (see [`split_input`]): resealed if its flags ask, then
/// [`open_verify_walk`].
pub fn run_input(data: &[u8]) -> usize {
    let flags = data.first().copied().unwrap_or(0);
    let (db, wal) = split_input(data);
    if flags & INPUT_RESEAL == 0 {
        return open_verify_walk(db, wal);
    }
    let mut db = db.to_vec();
    reseal(&mut db);
    let mut wal = wal.map(<[u8]>::to_vec);
    if let Some(wal) = &mut wal {
        reseal_log(wal);
    }
    open_verify_walk(&db, wal.as_deref())
}

/// Splits one fuzz input into a database file and an optional log. Byte 0 holds flags
/// ([`INPUT_HAS_LOG`], [`INPUT_RESEAL`]); without a log the rest is the file; with one, bytes
/// 1..5 are the file's length (little-endian, cut to what is there), the file follows and the
/// log is the rest.
pub fn split_input(data: &[u8]) -> (&[u8], Option<&[u8]>) {
    let Some((&flags, rest)) = data.split_first() else {
        return (data, None);
    };
    if flags & INPUT_HAS_LOG == 0 {
        return (rest, None);
    }
    let Some((len, rest)) = rest.split_first_chunk::<4>() else {
        return (rest, None);
    };
    let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (file, log) = rest.split_at(len);
    (file, Some(log))
}

/// The inverse of [`split_input`]: one fuzz input holding `db` and `wal`, with the reseal flag
/// if `reseal`.
pub fn join_input(db: &[u8], wal: Option<&[u8]>, reseal: bool) -> Vec<u8> {
    let mut data = Vec::with_capacity(db.len() + wal.map_or(0, <[u8]>::len) + 5);
    let flags = if reseal { INPUT_RESEAL } else { 0 };
    match wal {
        None => data.push(flags),
        Some(_) => {
            data.push(flags | INPUT_HAS_LOG);
            data.extend_from_slice(&(db.len() as u32).to_le_bytes());
        }
    }
    data.extend_from_slice(db);
    data.extend_from_slice(wal.unwrap_or_default());
    data
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    ReadOnly,
    Salvage,
    ReadWrite,
}

fn open_and_read(db: &[u8], wal: Option<&[u8]>, mode: Mode) -> usize {
    let Ok(storage) = MemoryStorage::from_image(db) else {
        return 0;
    };
    let log = match wal {
        Some(bytes) => MemoryStorage::from_image(bytes),
        None => MemoryStorage::new(),
    };
    let Ok(log) = log else {
        return 0;
    };
    let options = Options {
        read_only: mode == Mode::ReadOnly,
        salvage_previous_checkpoint: mode == Mode::Salvage,
        open_without_log: wal.is_none(),
        ..Options::default()
    };
    let storage: Arc<dyn Storage> = Arc::new(storage);
    let Ok(db) = Db::open_in_with_log(storage, Arc::new(log), options) else {
        return 0;
    };
    let mut seen = read_everything(&db);
    if mode == Mode::ReadWrite {
        write_a_little(&db);
        seen += read_everything(&db);
    }
    let _ = db.close();
    seen
}

fn read_everything(db: &Db) -> usize {
    let _ = db.stats();
    if let Ok(report) = db.verify() {
        let _ = report.is_ok();
    }
    let read = db.read();
    let mut seen = 0;
    for name in read.table_names() {
        let Ok(table) = read.table(&name) else {
            continue;
        };
        seen += read_table(&table);
        let _ = db.table_tree_stats(&name);
    }
    let _ = read.table("no such table");
    seen
}

fn read_table(table: &Table<'_>) -> usize {
    let _ = (table.len(), table.is_empty(), table.first(), table.last());
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut seen = 0;
    let mut cursor = table.cursor();
    let mut moved = cursor.seek_first();
    while let Ok(true) = moved {
        if seen >= WALK_PAIRS_MAX {
            break;
        }
        if keys.len() < KEYS_KEPT && (seen % 7 == 0 || seen < 8) {
            keys.push(cursor.key().to_vec());
        }
        let _ = cursor.value().len();
        seen += 1;
        moved = cursor.next();
    }
    let mut back = 0;
    let mut moved = cursor.seek_last();
    while let Ok(true) = moved {
        if back >= WALK_PAIRS_MAX {
            break;
        }
        if keys.len() < KEYS_KEPT && back < 4 {
            keys.push(cursor.key().to_vec());
        }
        back += 1;
        moved = cursor.prev();
    }
    seen += back;
    seen += table
        .iter()
        .take(WALK_PAIRS_MAX)
        .take_while(Result::is_ok)
        .count();
    seen += table
        .iter()
        .rev()
        .take(WALK_PAIRS_MAX)
        .take_while(Result::is_ok)
        .count();
    for key in &keys {
        let _ = table.get(key);
        let _ = cursor.seek(key).map(|_| cursor.prev());
        let _ = cursor.seek(key).map(|_| cursor.next());
        let _ = table.range(key.as_slice()..).take(SCAN_PAIRS).count();
        let _ = table.range(..key.as_slice()).rev().take(SCAN_PAIRS).count();
        let _ = table
            .range(key.as_slice()..=key.as_slice())
            .take(SCAN_PAIRS)
            .count();
        let _ = table.prefix(&key[..key.len() / 2]).take(SCAN_PAIRS).count();
        let _ = table.prefix(key).rev().take(SCAN_PAIRS).count();
        let mut past = key.clone();
        past.push(0);
        let _ = table.get(&past);
        let _ = cursor.seek(&past);
    }
    let mut probes: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    probes.extend_from_slice(&[b"", &[0xff; 40], b"\x00", b"\x7f\x7f"]);
    probes.sort_unstable();
    let mut out = Vec::new();
    let _ = table.get_many(&probes, &mut out);
    probes.reverse();
    let _ = table.get_many(&probes, &mut out);
    let _ = table.get(b"");
    let _ = cursor.seek(&[0xff; 40]);
    seen
}

/// Read-write only: a put into, and a remove from, every table, a new table, a commit, a
/// checkpoint and a compaction, all over whatever the file holds.
fn write_a_little(db: &Db) {
    let names = db.table_names();
    let read = db.read();
    if let Ok(mut txn) = db.write() {
        for name in &names {
            let first = read.table(name).ok().and_then(|t| t.first().ok().flatten());
            if let Some((key, _)) = first {
                let _ = txn.remove(name, &key);
            }
            let _ = txn.insert(name, b"fuzz-key", b"fuzz-value");
        }
        let _ = txn.create_table("fuzz-table");
        let _ = txn.insert("fuzz-table", b"k", b"v");
        let _ = txn.commit();
    }
    drop(read);
    let _ = db.checkpoint();
    let _ = db.compact();
}

fn get_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let chunk = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(chunk.try_into().ok()?))
}

fn get_u64(bytes: &[u8], at: usize) -> Option<u64> {
    let chunk = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(chunk.try_into().ok()?))
}

fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    if let Some(chunk) = at.checked_add(4).and_then(|end| bytes.get_mut(at..end)) {
        chunk.copy_from_slice(&value.to_le_bytes());
    }
}

/// A blob (catalog or space) a superblock copy names: (offset, length), if inside `len` bytes.
fn blob(bytes: &[u8], sb: usize, offset_at: usize, len: u64) -> Option<(usize, usize)> {
    let offset = usize::try_from(get_u64(bytes, sb + offset_at)?).ok()?;
    let len = usize::try_from(len).ok()?;
    let end = offset.checked_add(len)?;
    (end <= bytes.len()).then_some((offset, end))
}

fn sealed_superblocks(bytes: &[u8]) -> Vec<usize> {
    SUPERBLOCK_COPIES
        .into_iter()
        .filter(|&at| {
            bytes.len() >= at + SB_CRC_AT + 4
                && bytes.get(at..at + 8) == Some(SUPERBLOCK_MAGIC.as_slice())
        })
        .collect()
}

fn blobs_of(bytes: &[u8], sb: usize) -> [Option<(usize, usize)>; 2] {
    let catalog = get_u32(bytes, sb + SB_CATALOG_LEN_AT)
        .and_then(|len| blob(bytes, sb, SB_CATALOG_OFFSET_AT, u64::from(len)));
    let space = get_u64(bytes, sb + SB_SPACE_LEN_AT)
        .and_then(|len| blob(bytes, sb, SB_SPACE_OFFSET_AT, len));
    [catalog, space]
}

/// Recomputes the checksums of `bytes`, a database file: of every node page and extent (a page
/// outside every blob a superblock copy names whose kind byte says packed or extent), of the
/// catalog and space blobs each superblock copy with the magic names, of those copies, and of
/// the header. Best effort: what lies outside the bytes is left alone.
pub fn reseal(bytes: &mut [u8]) {
    let superblocks = sealed_superblocks(bytes);
    let blobs: Vec<(usize, usize)> = superblocks
        .iter()
        .flat_map(|&sb| blobs_of(bytes, sb))
        .flatten()
        .collect();
    let in_blob = |start: usize| {
        blobs
            .iter()
            .any(|&(from, to)| start < to && start + PAGE > from)
    };
    let pages = bytes.len() / PAGE;
    let mut page = DATA_PAGE_FIRST;
    while page < pages {
        let start = page * PAGE;
        page += 1;
        if in_blob(start) {
            continue;
        }
        let covered = match bytes[start + PAGE_KIND_AT] {
            PAGE_KIND_PACKED => 1,
            PAGE_KIND_EXTENT => match get_u32(bytes, start + PAGE_EXTENT_PAGES_AT) {
                Some(n) if n >= 1 && (n as usize) <= pages - (page - 1) => n as usize,
                _ => continue,
            },
            _ => continue,
        };
        let end = start + covered * PAGE;
        let crc = crc32c::crc32c(&bytes[start + 4..end]);
        put_u32(bytes, start, crc);
        page += covered - 1;
    }
    for &sb in &superblocks {
        let [catalog, space] = blobs_of(bytes, sb);
        if let Some((from, to)) = catalog {
            let crc = crc32c::crc32c(&bytes[from..to]);
            put_u32(bytes, sb + SB_CATALOG_CRC_AT, crc);
        }
        if let Some((from, to)) = space {
            let crc = crc32c::crc32c(&bytes[from..to]);
            put_u32(bytes, sb + SB_SPACE_CRC_AT, crc);
        }
        let crc = crc32c::crc32c(&bytes[sb..sb + SB_CRC_AT]);
        put_u32(bytes, sb + SB_CRC_AT, crc);
    }
    if bytes.len() >= HEADER_CRC_AT + 4 {
        let crc = crc32c::crc32c(&bytes[..HEADER_CRC_AT]);
        put_u32(bytes, HEADER_CRC_AT, crc);
    }
}

/// Recomputes the checksums of `bytes`, a log: of both header slots that carry the magic, and
/// of every record the scan from the data start would read under the header of the higher
/// epoch (up to a zero header or one whose payload runs past the end).
pub fn reseal_log(bytes: &mut [u8]) {
    let mut best: Option<(u64, u64)> = None;
    for at in LOG_HEADER_SLOTS {
        if bytes.len() < at + LOG_HEADER_LEN || bytes.get(at..at + 8) != Some(LOG_MAGIC.as_slice())
        {
            continue;
        }
        let crc = crc32c::crc32c(&bytes[at..at + LH_CRC_AT]);
        put_u32(bytes, at + LH_CRC_AT, crc);
        if let (Some(file_id), Some(epoch)) = (
            get_u64(bytes, at + LH_FILE_ID_AT),
            get_u64(bytes, at + LH_EPOCH_AT),
        ) {
            if best.map_or(true, |(_, e)| epoch > e) {
                best = Some((file_id, epoch));
            }
        }
    }
    let Some((file_id, epoch)) = best else {
        return;
    };
    let mut seed = [0u8; 16];
    seed[..8].copy_from_slice(&file_id.to_le_bytes());
    seed[8..].copy_from_slice(&epoch.to_le_bytes());
    let seed_crc = crc32c::crc32c(&seed);
    let mut at = LOG_DATA_START;
    while let Some(header) = bytes.get(at..at + LR_HEADER_LEN) {
        if header.iter().all(|&b| b == 0) {
            break;
        }
        let Some(payload_len) = get_u32(bytes, at).map(|len| len as usize) else {
            break;
        };
        let Some(end) = (at + LR_HEADER_LEN)
            .checked_add(payload_len)
            .filter(|&end| end <= bytes.len())
        else {
            break;
        };
        let crc = crc32c::crc32c_append(seed_crc, &bytes[at + LR_LSN_AT..end]);
        put_u32(bytes, at + LR_CRC_AT, crc);
        at = end.next_multiple_of(8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Vec<u8>, Vec<u8>) {
        let storage = Arc::new(MemoryStorage::new().expect("storage"));
        let log = Arc::new(MemoryStorage::new().expect("log"));
        let options = Options {
            checkpoint_on_drop: false,
            ..Options::default()
        };
        let db = Db::create_in_with_log(
            Arc::clone(&storage) as Arc<dyn Storage>,
            Arc::clone(&log) as Arc<dyn Storage>,
            options,
        )
        .expect("create");
        db.create_table("a").expect("table");
        let mut txn = db.write().expect("write");
        for i in 0u32..300 {
            let value = vec![7; (i as usize * 997) % 36_000 * usize::from(i < 40)];
            txn.insert("a", &i.to_be_bytes(), &value).expect("insert");
        }
        txn.commit().expect("commit");
        db.checkpoint().expect("checkpoint");
        let mut txn = db.write().expect("write");
        for i in 0u32..50 {
            txn.insert("a", &(i * 3).to_be_bytes(), b"again")
                .expect("insert");
        }
        txn.commit().expect("commit");
        let images = (storage.image(), log.image());
        drop(db);
        images
    }

    #[test]
    fn reseal_leaves_valid_bytes_unchanged() {
        let (db, log) = sample();
        let mut resealed = db.clone();
        reseal(&mut resealed);
        assert!(resealed == db, "reseal changed a valid database file");
        let mut resealed = log.clone();
        reseal_log(&mut resealed);
        assert!(resealed == log, "reseal_log changed a valid log");
        assert!(open_verify_walk(&db, Some(&log)) > 0);
    }

    #[test]
    fn reseal_makes_a_flipped_byte_pass_the_checksums() {
        let (db, log) = sample();
        let verify = |bytes: &[u8]| {
            let storage = Arc::new(MemoryStorage::from_image(bytes).expect("storage"));
            let log = Arc::new(MemoryStorage::from_image(&log).expect("log"));
            let options = Options {
                read_only: true,
                ..Options::default()
            };
            // Opening replays the log, which may read the damaged page: an error then.
            Db::open_in_with_log(storage, log, options)
                .and_then(|db| db.verify())
                .is_ok_and(|report| report.is_ok())
        };
        assert!(verify(&db), "the sample verifies");
        // The last byte of a packed page that is not full: no image reads it, only the checksum.
        let page = (DATA_PAGE_FIRST..db.len() / PAGE)
            .find(|&page| {
                let start = page * PAGE;
                let used = u16::from_le_bytes([db[start + 6], db[start + 7]]) as usize;
                db[start + PAGE_KIND_AT] == PAGE_KIND_PACKED && used > 0 && used < PAGE - 8
            })
            .expect("a packed page with room");
        let mut changed = db.clone();
        changed[page * PAGE + PAGE - 1] ^= 0x5a;
        assert!(!verify(&changed), "a flipped byte fails the page checksum");
        reseal(&mut changed);
        assert!(verify(&changed), "resealed, the page passes again");
        // A record's LSN flipped: resealing rewrites its checksum.
        let mut flipped = log.clone();
        flipped[LOG_DATA_START + LR_LSN_AT] ^= 0x40;
        let mut resealed = flipped.clone();
        reseal_log(&mut resealed);
        assert!(
            resealed != flipped,
            "reseal_log rewrote the record's checksum"
        );
    }

    #[test]
    fn split_and_join_are_inverse() {
        for (db, wal) in [
            (&b"abc"[..], None),
            (&b""[..], Some(&b"log"[..])),
            (&b"file"[..], Some(&b""[..])),
        ] {
            for reseal in [false, true] {
                let data = join_input(db, wal, reseal);
                assert_eq!(split_input(&data), (db, wal));
                assert_eq!(data[0] & INPUT_RESEAL != 0, reseal);
            }
        }
        assert_eq!(split_input(b""), (&b""[..], None));
        assert_eq!(split_input(b"\x01ab"), (&b"ab"[..], None));
        assert_eq!(
            split_input(b"\x05\xff\0\0\0xy"),
            (&b"xy"[..], Some(&b""[..]))
        );
        assert_eq!(split_input(b"\x02xy"), (&b"xy"[..], None));
    }

    #[test]
    fn run_input_reseals_when_asked() {
        let (db, log) = sample();
        // A reserved byte of the header: nothing reads it but the header's checksum.
        let mut damaged = db.clone();
        damaged[30] ^= 0x20;
        assert!(open_verify_walk(&db, Some(&log)) > 0);
        let plain = run_input(&join_input(&damaged, Some(&log), false));
        let resealed = run_input(&join_input(&damaged, Some(&log), true));
        assert_eq!(plain, 0, "the damaged file does not open");
        assert!(resealed > 0, "resealed, it opens and reads");
    }
}
