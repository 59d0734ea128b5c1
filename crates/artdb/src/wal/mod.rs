//! wal: the write-ahead log beside the database file (`<file>.wal`), over the io seam.
//!
//! One record per commit, appended at the end of the current *cycle*; a checkpoint whose
//! superblock covers every record recycles the log (a new header with the next epoch and base
//! LSN, the first record header zeroed), so the file keeps its length and its blocks: an append
//! overwrites allocated, zero-filled or stale blocks and `fdatasync` need not update metadata.
//! Bytes format: `format.rs`, docs/wal-format.md. Protocols and crash cases: docs/recovery.md.
//!
//! States of the writer: Open (appending) -> Recycled (a new cycle; back to Open). Transitions:
//! `append` (commit lock held), `recycle` (writer lock held, after the covering superblock is
//! durable). The writer never syncs on its own except in `create` and `recycle`: commits sync
//! through the pipeline (group commit, `group.rs`), which calls [`Storage::sync`] on [`Wal::storage`].
//!
//! Recovery (`open`): pick the valid header slot of the highest epoch, check it names this
//! database and is a cycle the durable checkpoint allows ([`LogCheckpoint`]: the checkpoint's
//! cycle, or the next one starting right after it; never an earlier one, never a file shorter
//! than the header records, never with a valid record of the next epoch at the data start,
//! which would mean the newer header is damaged), then scan records from the data start: each must have the next LSN and a matching CRC (seeded with file id and epoch).
//! The scan stops at zeros or at the end of the file (a clean end), or at a record that fails.
//! A failing record is a torn tail, cut, unless a later valid record of this cycle says (by its
//! `synced_lsn`) that the failing one had been acknowledged: then it is `Error::Corruption`
//! naming the LSN, never skipped; after the scan, a log of the checkpoint's own cycle must reach
//! the LSN it covers. [`RecoveryMode::Strict`] refuses a damaged or cut-short tail too. Bounds: a record's payload is at most
//! [`LOG_RECORD_PAYLOAD_BYTES_MAX`]; the scan reads at most the file's length once.

mod format;
pub(crate) mod group;

pub use format::{Op, OpRef, LOG_DATA_START, LOG_RECORD_PAYLOAD_BYTES_MAX};
/// The log's layout constants the fuzz module (`crate::fuzz`) reseals mutated logs with.
pub(crate) mod layout {
    pub(crate) use super::format::{
        LH_CRC_AT, LH_EPOCH_AT, LH_FILE_ID_AT, LOG_HEADER_LEN, LOG_HEADER_OFFSETS, LOG_MAGIC,
        LOG_RECORD_HEADER_LEN, LR_CRC_AT, LR_LSN_AT,
    };
}

use crate::error::{CorruptionKind, Error, Result};
use crate::io::Storage;
use format::{
    decode_op_refs, encode_record, record_crc, LogHeader, RecordHeader, LOG_HEADER_LEN,
    LOG_HEADER_OFFSETS, LOG_RECORD_ALIGN, LOG_RECORD_HEADER_LEN,
};
use std::sync::Arc;

mod follow;

/// The log grows in steps written as zeros, so that appends land in allocated blocks (an append
/// past the end would make every fdatasync update the inode): a step is the log's current size,
/// at least this many bytes...
pub const LOG_GROW_BYTES_MIN: u64 = 64 << 10;
/// ...and at most this many.
pub const LOG_GROW_BYTES_MAX: u64 = 4 << 20;

/// A record recovered from the log, newer than the checkpoint: where its payload lies in
/// [`Recovery::log`] (checked when the log was scanned; [`Recovery::ops`] decodes it again,
/// borrowing the keys and values).
#[derive(Debug)]
pub struct Recovered {
    /// The record's LSN.
    pub lsn: u64,
    /// Its offset in the log file (for errors).
    pub at: u64,
    /// Operations in its payload.
    pub op_count: u32,
    /// Its payload's bytes in [`Recovery::log`].
    pub payload: std::ops::Range<usize>,
    /// The generation its `Bypass` operations name, if it is the record of a transaction that
    /// bypassed the log (noted by the scan, so recovery need not decode every record again).
    pub bypass_generation: Option<u64>,
}

impl Recovery {
    /// The operations of `record` (one of `self.records`), borrowing from the log's bytes.
    pub fn ops(&self, record: &Recovered) -> Result<Vec<OpRef<'_>>> {
        let payload = self.log.get(record.payload.clone()).ok_or_else(|| {
            log_corruption(
                record.at,
                record.lsn,
                "record payload out of range".to_string(),
            )
        })?;
        decode_op_refs(payload, record.op_count, record.at, record.lsn)
    }
}

/// What `open` found in the log.
#[derive(Debug, Default)]
pub struct Recovery {
    /// Records after the checkpoint, in LSN order.
    pub records: Vec<Recovered>,
    /// The log's bytes from its data start, as read by the scan (the records' payloads).
    pub log: Vec<u8>,
    /// Records of this cycle already covered by the checkpoint (skipped).
    pub covered_records: u64,
    /// Offset where a torn tail was cut (`None`: the log ended cleanly).
    pub tail_cut_at: Option<u64>,
    /// Whether the log must be recycled before the next append (a cut tail, or a log whose
    /// records end before the checkpoint's LSN).
    pub needs_recycle: bool,
    /// Bytes the scan checksummed (records and candidate records after a failing one): at
    /// most about the log's length, whatever stale bytes it holds (the bound that keeps
    /// recovery linear; tested, since a timing would not be).
    pub checksummed_bytes: u64,
}

/// How recovery treats a log whose last record is damaged or missing (`Options::recovery`).
/// A torn final write, of a commit that was never acknowledged, looks exactly like damage to
/// the last records or a log cut short: only the disk's trustworthiness decides which it is.
///
/// ```
/// use artdb::{Db, Options, RecoveryMode};
/// # let dir = tempfile::tempdir()?;
/// // For a disk whose writes are not trusted: a damaged end of the log refuses the open.
/// let options = Options { recovery: RecoveryMode::Strict, ..Options::default() };
/// let db = Db::open_or_create(dir.path().join("strict.artdb"), options)?;
/// db.close()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Cut the log at the first record that fails, unless a later valid record proves it was
    /// acknowledged (then `Corruption`): what a crash leaves is opened, and damage confined to
    /// the final unacknowledged records loses only those (RocksDB's
    /// `kTolerateCorruptedTailRecords`).
    #[default]
    TolerateTornTail,
    /// Refuse (`Corruption` of kind `Log`) a log whose expected next record is present but
    /// damaged or cut short, or which ends without the room every append leaves after it: no
    /// commit is ever dropped without an error, at the price that a power loss during a commit
    /// can leave a log that only the default mode opens (RocksDB's `kAbsoluteConsistency`).
    Strict,
}

/// What the database file's durable checkpoint says about its log, for [`Wal::open`].
#[derive(Debug, Clone, Copy)]
pub struct LogCheckpoint {
    /// The LSN of the last record the checkpoint covers (0: none).
    pub covered_lsn: u64,
    /// The checkpoint was written at close: no record follows `covered_lsn`.
    pub closed_cleanly: bool,
    /// The log cycle (epoch) that held the log's end when the checkpoint was written (0: not
    /// recorded, a file from before the field). The log is then in that cycle, or in the next
    /// one begun right after it by the recycle that followed (base `covered_lsn + 1`).
    pub log_epoch: u64,
    /// How a damaged or missing tail is treated.
    pub recovery: RecoveryMode,
    /// Replay no record past this LSN (a reader beside a live writer: what the writer
    /// published as durable; later records may be unsynced or half written).
    pub lsn_limit: Option<u64>,
}

impl LogCheckpoint {
    /// Whether a log in the cycle of `header` can follow this checkpoint (see `log_epoch`).
    fn accepts_cycle(&self, header: &LogHeader) -> bool {
        if self.log_epoch == 0 {
            return header.base_lsn <= self.covered_lsn + 1;
        }
        header.epoch == self.log_epoch
            || (header.epoch == self.log_epoch + 1 && header.base_lsn == self.covered_lsn + 1)
    }

    /// Refuses a log that no crash leaves beside this checkpoint (module docs, Recovery).
    fn check_cycle(&self, header: &LogHeader, len: u64) -> Result<()> {
        if header.preallocated_bytes > len {
            return Err(log_header_corruption(&format!(
                "the log file is {len} bytes, shorter than the {} bytes it had when its cycle \
                 began: it was truncated (a crash never shortens it); restore the log from a \
                 backup, or open with `--open-without-log` (`Options::open_without_log`) to \
                 open the last checkpoint without the commits since it",
                header.preallocated_bytes
            )));
        }
        let older_log = self.log_epoch != 0 && header.epoch < self.log_epoch;
        if older_log {
            return Err(log_header_corruption(&format!(
                "the log is of cycle {}, but the database's last checkpoint was written in cycle \
                 {}: it is an older copy of the log, and the commits since the checkpoint are \
                 not in it; put the current log back, or open with `--open-without-log` \
                 (`Options::open_without_log`) to open the last checkpoint without them",
                header.epoch, self.log_epoch
            )));
        }
        if !self.accepts_cycle(header) || header.base_lsn > self.covered_lsn + 1 {
            return Err(log_corruption(
                0,
                header.base_lsn,
                format!(
                    "the log (cycle {}, from LSN {}) is newer than the database file, whose \
                     newest checkpoint covers up to LSN {} in cycle {}: the newest checkpoint \
                     of the database file is damaged or missing, and the commits in between \
                     are lost; restore from a backup, or open with the salvage option \
                     (`artdb --salvage`) to copy out the previous checkpoint read-only",
                    header.epoch, header.base_lsn, self.covered_lsn, self.log_epoch
                ),
            ));
        }
        Ok(())
    }

    /// After the scan: the records of the checkpoint's own cycle up to `covered_lsn` were
    /// durable before its superblock was written, so a log of that cycle that ends before them
    /// was truncated, zeroed, or replaced by an older copy (or its newer header is damaged and
    /// the records were zeroed by the recycle to it).
    fn check_reached(&self, header: &LogHeader, last_lsn: u64) -> Result<()> {
        let own_cycle = self.log_epoch != 0 && header.epoch == self.log_epoch;
        if !own_cycle || header.base_lsn > self.covered_lsn || last_lsn >= self.covered_lsn {
            return Ok(());
        }
        Err(log_corruption(
            0,
            last_lsn + 1,
            format!(
                "the log's records end at LSN {last_lsn}, but the database's last checkpoint \
                 saw its cycle ({}) durable up to LSN {}: the log was truncated, damaged or \
                 replaced by an older copy, or its newer header is damaged; restore the log \
                 from a backup, or open with `--open-without-log` \
                 (`Options::open_without_log`) to open the last checkpoint without it",
                header.epoch, self.covered_lsn
            ),
        ))
    }
}

/// How many cycles before the current one strict recovery tries, to tell a stale record of a
/// cut tail (which may carry an LSN the current cycle reuses) from the expected one damaged.
const STALE_EPOCHS_CHECKED: u64 = 8;

/// The log writer (see the module docs).
pub struct Wal {
    storage: Arc<dyn Storage>,
    header: LogHeader,
    /// Where the next record goes.
    end: u64,
    /// Bytes known to exist in the file (written zeros or stale records).
    allocated: u64,
    next_lsn: u64,
    records: u64,
    /// Bytes checksummed by the recovery scan (`Recovery::checksummed_bytes`).
    checksummed: std::cell::Cell<u64>,
}

impl Wal {
    /// Formats `storage` (empty or stale) as the log of database `file_id`, starting at
    /// `base_lsn` in cycle `epoch` (1 for a new database; after the epochs a stale log or the
    /// database's checkpoint names, when a lost or unusable log is replaced), and syncs it.
    pub fn create(
        storage: Arc<dyn Storage>,
        file_id: u64,
        base_lsn: u64,
        epoch: u64,
    ) -> Result<Wal> {
        let first_len = LOG_DATA_START + LOG_RECORD_HEADER_LEN as u64;
        let header = LogHeader {
            file_id,
            epoch: epoch.max(1),
            base_lsn,
            preallocated_bytes: first_len,
        };
        let mut first = vec![0u8; first_len as usize];
        let slot_at = LOG_HEADER_OFFSETS[header.slot()] as usize;
        first[slot_at..slot_at + LOG_HEADER_LEN].copy_from_slice(&header.encode());
        storage
            .set_len(0)
            .map_err(Error::io("truncate the log file"))?;
        storage
            .write_at(0, &first)
            .map_err(Error::io("write the log header"))?;
        storage.sync().map_err(Error::io("sync the log header"))?;
        Ok(Wal {
            storage,
            header,
            end: LOG_DATA_START,
            allocated: first_len,
            next_lsn: base_lsn,
            records: 0,
            checksummed: std::cell::Cell::new(0),
        })
    }

    /// Opens the log of database `file_id` for the checkpoint `checkpoint` describes, and reads
    /// the records after it (module docs, Recovery). Refuses, as `Corruption` of kind `Log`, a
    /// log that no crash can leave: another database's, one of an earlier cycle than the
    /// checkpoint names, one shorter than when its cycle began, one whose newer header is
    /// damaged (records of the next epoch follow the header it has), and one that ends before
    /// records the checkpoint saw durable.
    pub fn open(
        storage: Arc<dyn Storage>,
        file_id: u64,
        checkpoint: &LogCheckpoint,
    ) -> Result<(Wal, Recovery)> {
        let len = storage.len().map_err(Error::io("read the log length"))?;
        let covered_lsn = checkpoint.covered_lsn;
        let header = match read_header(&*storage, len)? {
            Some(header) => header,
            // No header was ever made durable (a crash inside `create`: headers are written
            // only there and by `recycle`, which leaves the other slot intact), or the log is
            // new, or (closed cleanly) the log was lost with nothing in it: it starts afresh
            // after the checkpoint, in a cycle after the one the checkpoint names.
            None if nothing_at_data_start(&*storage, len)? => {
                let wal = Wal::create(storage, file_id, covered_lsn + 1, checkpoint.log_epoch + 1)?;
                return Ok((wal, Recovery::default()));
            }
            None => {
                return Err(log_header_corruption(
                    "neither log header is valid but the log holds records: the commits since \
                     the last checkpoint cannot be read; restore the database and its log from \
                     a backup, or open with `--open-without-log` \
                     (`Options::open_without_log`) to open the last checkpoint without them",
                ))
            }
        };
        if header.file_id != file_id {
            return Err(log_header_corruption(&format!(
                "the log belongs to another database (file id {:#x}, this one is {file_id:#x}); \
                 move the .wal file away to open without it",
                header.file_id
            )));
        }
        let mut wal = Wal {
            storage,
            header,
            end: LOG_DATA_START,
            allocated: len,
            next_lsn: header.base_lsn,
            records: 0,
            checksummed: std::cell::Cell::new(0),
        };
        // After a clean close no record follows the checkpoint (the flag is cleared, durably,
        // before the first one): a log with nothing at its data start holds nothing to lose,
        // whichever cycle its header names, so it is only started afresh when it is not the
        // cycle the checkpoint expects.
        let empty_after_close = checkpoint.closed_cleanly && wal.first_header_is_zero()?;
        if empty_after_close {
            if !checkpoint.accepts_cycle(&header) {
                let epoch = header.epoch.max(checkpoint.log_epoch) + 1;
                let wal = Wal::create(wal.storage, file_id, covered_lsn + 1, epoch)?;
                return Ok((wal, Recovery::default()));
            }
        } else {
            checkpoint.check_cycle(&header, len)?;
            wal.check_newer_header_absent(len)?;
        }
        let mut recovery = wal.scan(len, checkpoint, empty_after_close)?;
        if !empty_after_close {
            checkpoint.check_reached(&header, wal.last_lsn())?;
        }
        wal.skip_covered(&mut recovery, covered_lsn);
        Ok((wal, recovery))
    }

    /// Records of the next epoch exist only once its header was durable (a recycle syncs the
    /// header before any append), and a durable header is not lost to a crash: so a valid
    /// record of the next epoch at the data start, under a header of this one, means the newer
    /// header was damaged since. Opening would cut that cycle's records as a torn tail, losing
    /// every commit since the checkpoint.
    fn check_newer_header_absent(&self, len: u64) -> Result<()> {
        let Some(epoch) = self.header.epoch.checked_add(1) else {
            return Ok(());
        };
        let Some(lsn) = self.record_valid_under(LOG_DATA_START, len, epoch)? else {
            return Ok(());
        };
        Err(log_header_corruption(&format!(
            "the log header of cycle {epoch} (slot {}) is damaged: the log holds that cycle's \
             records (the first is LSN {lsn}), but only the header of cycle {} is valid, and \
             opening with it would lose every commit since the last checkpoint; restore the \
             log from a backup, or open with `--open-without-log` \
             (`Options::open_without_log`) to open the last checkpoint without those commits",
            epoch % 2,
            self.header.epoch
        )))
    }

    /// The LSN of the record at `at` if it is a whole record with a matching CRC under
    /// `epoch` (whatever its LSN).
    fn record_valid_under(&self, at: u64, len: u64, epoch: u64) -> Result<Option<u64>> {
        if at + LOG_RECORD_HEADER_LEN as u64 > len {
            return Ok(None);
        }
        let mut fixed = [0u8; LOG_RECORD_HEADER_LEN];
        self.storage
            .read_at(at, &mut fixed)
            .map_err(Error::io("read the log"))?;
        if fixed.iter().all(|&byte| byte == 0) {
            return Ok(None);
        }
        let header = RecordHeader::decode(&fixed);
        let end = at + LOG_RECORD_HEADER_LEN as u64 + header.payload_len;
        if header.payload_len > LOG_RECORD_PAYLOAD_BYTES_MAX || end > len {
            return Ok(None);
        }
        let mut record = vec![0u8; (end - at) as usize];
        self.storage
            .read_at(at, &mut record)
            .map_err(Error::io("read the log"))?;
        self.checksummed
            .set(self.checksummed.get() + record.len() as u64);
        let crc = record_crc(self.header.file_id, epoch, &record);
        Ok((crc == header.crc).then_some(header.lsn))
    }

    fn scan(
        &mut self,
        len: u64,
        checkpoint: &LogCheckpoint,
        empty_after_close: bool,
    ) -> Result<Recovery> {
        let covered_lsn = checkpoint.covered_lsn;
        let strict = checkpoint.recovery == RecoveryMode::Strict;
        let mut recovery = Recovery::default();
        if empty_after_close {
            return Ok(recovery);
        }
        if len < LOG_DATA_START + LOG_RECORD_HEADER_LEN as u64 {
            if strict {
                return Err(self.strict_refusal(LOG_DATA_START, "the log ends before its data"));
            }
            return Ok(recovery);
        }
        let region_len =
            usize::try_from(len - LOG_DATA_START).map_err(|_| Error::FileTooLarge { len })?;
        let mut bytes = vec![0u8; region_len];
        self.storage
            .read_at(LOG_DATA_START, &mut bytes)
            .map_err(Error::io("read the log"))?;
        let mut position = 0usize;
        loop {
            if checkpoint
                .lsn_limit
                .is_some_and(|limit| self.next_lsn > limit)
            {
                break;
            }
            match self.parse_at(&bytes, position, self.next_lsn) {
                Parsed::End => {
                    // Zeros (not the end of the file) end the log only if no record written
                    // after the expected one was durable follows: zeros over acknowledged
                    // records are damage, not an end (a silent rollback otherwise).
                    if position + LOG_RECORD_HEADER_LEN <= bytes.len() {
                        self.check_torn(&bytes, position)?;
                    } else if strict {
                        // Every append leaves room for the next record header (`reserve`),
                        // so a durable log never ends right after a record.
                        return Err(self.strict_refusal(
                            LOG_DATA_START + position as u64,
                            "the log file ends right after the record before it (cut short)",
                        ));
                    }
                    break;
                }
                Parsed::Record { header, total_len } => {
                    let at = LOG_DATA_START + position as u64;
                    if header.lsn > covered_lsn {
                        recovery
                            .records
                            .push(recovered(&bytes, position, &header, at)?);
                    } else {
                        recovery.covered_records += 1;
                    }
                    self.next_lsn = header.lsn + 1;
                    self.records += 1;
                    position += total_len;
                }
                Parsed::Bad => {
                    self.check_torn(&bytes, position)?;
                    if strict && self.is_damaged_record(&bytes, position) {
                        return Err(self.strict_refusal(
                            LOG_DATA_START + position as u64,
                            "the record fails its checksum or is cut short (a torn final \
                             write, or damage)",
                        ));
                    }
                    recovery.tail_cut_at = Some(LOG_DATA_START + position as u64);
                    break;
                }
            }
        }
        self.end = LOG_DATA_START + position as u64;
        if !recovery.records.is_empty() {
            recovery.log = bytes;
        }
        recovery.needs_recycle = recovery.tail_cut_at.is_some();
        recovery.checksummed_bytes = self.checksummed.get();
        Ok(recovery)
    }

    /// Under strict recovery: whether the failed bytes at `position` are the expected record,
    /// damaged or cut short, rather than bytes of an older cycle (which end the log). They are
    /// when their header names the expected LSN and they are no record of the previous cycles
    /// (a cut tail's records can carry LSNs this cycle reuses), or when they would be a valid
    /// record but for the LSN field (damage to the LSN itself).
    fn is_damaged_record(&self, bytes: &[u8], position: usize) -> bool {
        let Some(header_bytes) = bytes.get(position..position + LOG_RECORD_HEADER_LEN) else {
            return false;
        };
        let lsn = format::get_u64(header_bytes, format::LR_LSN_AT);
        let expected = self.next_lsn;
        let payload_len = u64::from(format::get_u32(header_bytes, format::LR_PAYLOAD_LEN_AT));
        let end = (position as u64)
            .saturating_add(LOG_RECORD_HEADER_LEN as u64)
            .saturating_add(payload_len);
        let whole = payload_len <= LOG_RECORD_PAYLOAD_BYTES_MAX && end <= bytes.len() as u64;
        let crc_under = |epoch: u64, with_lsn: u64| -> bool {
            if !whole {
                return false;
            }
            let mut record = bytes[position..end as usize].to_vec();
            record[format::LR_LSN_AT..format::LR_LSN_AT + 8]
                .copy_from_slice(&with_lsn.to_le_bytes());
            let stored = format::get_u32(&record, format::LR_CRC_AT);
            record_crc(self.header.file_id, epoch, &record) == stored
        };
        if lsn == expected {
            let older_epochs =
                self.header.epoch.saturating_sub(STALE_EPOCHS_CHECKED)..self.header.epoch;
            return !older_epochs.into_iter().any(|epoch| crc_under(epoch, lsn));
        }
        crc_under(self.header.epoch, expected)
    }

    fn strict_refusal(&self, at: u64, what: &str) -> Error {
        log_corruption(
            at,
            self.next_lsn,
            format!(
                "strict recovery (`Options::recovery`, `artdb --strict-recovery`) refuses a \
                 damaged or missing log tail where record {} was expected: {what}; open with \
                 the default recovery to cut the tail there (the commits from that record on \
                 are dropped: they were not acknowledged if the damage is a torn final write), \
                 or restore the log from a backup",
                self.next_lsn
            ),
        )
    }

    /// A log whose records end before the checkpoint's LSN (a crash after the superblock, before
    /// or during the recycle) continues after that LSN, in a new cycle (`needs_recycle`): an
    /// append must never leave a gap in the LSNs of a cycle.
    fn skip_covered(&mut self, recovery: &mut Recovery, covered_lsn: u64) {
        if self.next_lsn <= covered_lsn {
            self.next_lsn = covered_lsn + 1;
            recovery.needs_recycle = true;
        }
    }

    fn first_header_is_zero(&self) -> Result<bool> {
        let mut first = [0u8; LOG_RECORD_HEADER_LEN];
        self.storage
            .read_at(LOG_DATA_START, &mut first)
            .map_err(Error::io("read the log"))?;
        Ok(first.iter().all(|&byte| byte == 0))
    }

    /// The record at `position` of the data region if it is valid with LSN `lsn`.
    fn parse_at(&self, bytes: &[u8], position: usize, lsn: u64) -> Parsed {
        let Some(header_bytes) = bytes.get(position..position + LOG_RECORD_HEADER_LEN) else {
            return Parsed::End;
        };
        if header_bytes.iter().all(|&byte| byte == 0) {
            return Parsed::End;
        }
        let mut fixed = [0u8; LOG_RECORD_HEADER_LEN];
        fixed.copy_from_slice(header_bytes);
        let header = RecordHeader::decode(&fixed);
        if header.lsn != lsn || header.payload_len > LOG_RECORD_PAYLOAD_BYTES_MAX {
            return Parsed::Bad;
        }
        let end = position + LOG_RECORD_HEADER_LEN + header.payload_len as usize;
        let total_len = header.record_len() as usize;
        if position + total_len > bytes.len() {
            return Parsed::Bad;
        }
        self.checksummed
            .set(self.checksummed.get() + (end - position) as u64);
        let crc = record_crc(
            self.header.file_id,
            self.header.epoch,
            &bytes[position..end],
        );
        if crc != header.crc {
            return Parsed::Bad;
        }
        Parsed::Record { header, total_len }
    }

    /// A record failed (or a zero header was found) at `position`, where LSN `self.next_lsn` was
    /// expected. If a later valid record of this cycle was written after that LSN was durable,
    /// the failing record had been acknowledged: corruption. Otherwise it is a torn tail (its
    /// group was never acknowledged) or the log's end.
    fn check_torn(&self, bytes: &[u8], position: usize) -> Result<()> {
        let expected = self.next_lsn;
        // Records of this cycle that can still follow: at most one per header length. The
        // bytes after a torn tail are mostly the previous cycle's records and zeros, and a
        // candidate costs a checksum over its payload, so only headers whose LSNs could be this
        // cycle's are checked (a candidate's own LSN is always above the LSN it says was
        // synced). Without this bound, old bytes that happen to look like headers made the
        // scan checksum up to the rest of the file per candidate: minutes on a recycled log.
        let records_max = ((bytes.len() - position) / LOG_RECORD_HEADER_LEN) as u64;
        let lsn_max = expected.saturating_add(records_max);
        let mut candidate = position + LOG_RECORD_ALIGN as usize;
        while candidate + LOG_RECORD_HEADER_LEN <= bytes.len() {
            let lsn = format::get_u64(bytes, candidate + format::LR_LSN_AT);
            let synced_lsn = format::get_u64(bytes, candidate + format::LR_SYNCED_LSN_AT);
            if lsn > expected && lsn <= lsn_max && synced_lsn >= expected && synced_lsn < lsn {
                if let Parsed::Record { .. } = self.parse_at(bytes, candidate, lsn) {
                    return Err(log_corruption(
                        LOG_DATA_START + position as u64,
                        expected,
                        format!(
                            "record {expected} fails its checksum or length, but record {lsn} \
                             written after it was durable follows"
                        ),
                    ));
                }
            }
            candidate += LOG_RECORD_ALIGN as usize;
        }
        Ok(())
    }

    /// Encodes the record of `ops` as the next one (the LSN after the last one written); `synced_lsn` is the
    /// LSN known durable now. Fails only if the record is too large (nothing is written).
    pub fn encode(&self, ops: &[Op], synced_lsn: u64) -> Result<Vec<u8>> {
        encode_record(
            self.header.file_id,
            self.header.epoch,
            self.next_lsn,
            synced_lsn,
            ops,
        )
    }

    /// Writes a record made by [`Wal::encode`] since the last write (no sync); returns its LSN.
    pub fn write(&mut self, record: &[u8]) -> Result<u64> {
        let lsn = self.next_lsn;
        let record_len = record.len() as u64;
        self.reserve(self.end + record_len + LOG_RECORD_HEADER_LEN as u64)?;
        self.storage
            .write_at(self.end, record)
            .map_err(Error::io("append to the log"))?;
        self.end += record_len;
        self.next_lsn += 1;
        self.records += 1;
        Ok(lsn)
    }

    /// [`Wal::encode`] then [`Wal::write`]; returns the LSN and the record's length in bytes.
    #[cfg(test)]
    pub fn append(&mut self, ops: &[Op], synced_lsn: u64) -> Result<(u64, u64)> {
        let record = self.encode(ops, synced_lsn)?;
        let lsn = self.write(&record)?;
        Ok((lsn, record.len() as u64))
    }

    /// Makes sure bytes up to `needed` exist in the file, writing zeros in steps of
    /// between [`LOG_GROW_BYTES_MIN`] and [`LOG_GROW_BYTES_MAX`] (the zeros also end the log for
    /// the scan).
    fn reserve(&mut self, needed: u64) -> Result<()> {
        if needed <= self.allocated {
            return Ok(());
        }
        let step = self.allocated.clamp(LOG_GROW_BYTES_MIN, LOG_GROW_BYTES_MAX);
        let target = needed.next_multiple_of(step);
        let zeros = vec![0u8; step.min(target - self.allocated) as usize];
        while self.allocated < target {
            let step = (target - self.allocated).min(zeros.len() as u64) as usize;
            self.storage
                .write_at(self.allocated, &zeros[..step])
                .map_err(Error::io("preallocate the log"))?;
            self.allocated += step as u64;
        }
        Ok(())
    }

    /// Starts a new cycle after a checkpoint that covers `covered_lsn` (every record) is
    /// durable: writes the next epoch's header into the other slot and syncs; only then zeroes
    /// the first record header (so the next open stops there at once) and shrinks the file to
    /// `keep_bytes` if it grew past them. Zeroing before the new header is durable could tear
    /// the first record of a cycle whose header is still the valid one, which the next open
    /// would have to call corruption. The zeroing and the shrink are not synced here (one sync
    /// fewer while the checkpoint holds the writer lock): the next commit's sync covers them
    /// (same file), and if a crash loses them first, the old record there fails the new epoch's
    /// checksum with no valid record of the new epoch after it (a cut tail: open checkpoints
    /// and recycles again), and a longer file is harmless.
    pub fn recycle(&mut self, covered_lsn: u64, keep_bytes: u64) -> Result<()> {
        debug_assert!(
            covered_lsn + 1 >= self.next_lsn,
            "the checkpoint covers every record"
        );
        let keep = keep_bytes.max(LOG_DATA_START + LOG_GROW_BYTES_MAX);
        let header = LogHeader {
            file_id: self.header.file_id,
            epoch: self.header.epoch + 1,
            base_lsn: covered_lsn + 1,
            preallocated_bytes: self.allocated.min(keep),
        };
        self.storage
            .write_at(LOG_HEADER_OFFSETS[header.slot()], &header.encode())
            .map_err(Error::io("write the log header"))?;
        self.storage
            .sync()
            .map_err(Error::io("sync the log header"))?;
        self.header = header;
        self.end = LOG_DATA_START;
        self.next_lsn = covered_lsn + 1;
        self.records = 0;
        self.storage
            .write_at(LOG_DATA_START, &[0u8; LOG_RECORD_HEADER_LEN])
            .map_err(Error::io("reset the log"))?;
        if self.allocated > keep {
            self.storage
                .set_len(keep)
                .map_err(Error::io("shrink the log"))?;
            self.allocated = keep;
        }
        Ok(())
    }

    /// The log's current cycle (its header's epoch): a checkpoint records it
    /// ([`LogCheckpoint::log_epoch`]).
    pub fn epoch(&self) -> u64 {
        self.header.epoch
    }

    /// The LSN of the last record written (or the cycle's base minus one).
    pub fn last_lsn(&self) -> u64 {
        self.next_lsn - 1
    }

    /// Bytes of records in the current cycle.
    pub fn bytes(&self) -> u64 {
        self.end - LOG_DATA_START
    }

    /// Records in the current cycle.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The log's storage (the pipeline syncs it without the commit lock).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Length of the log file as far as the writer knows (preallocated space included).
    pub fn file_bytes(&self) -> u64 {
        self.allocated
    }
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("header", &self.header)
            .field("end", &self.end)
            .field("next_lsn", &self.next_lsn)
            .finish()
    }
}

enum Parsed {
    End,
    Record {
        header: RecordHeader,
        total_len: usize,
    },
    Bad,
}

/// The record whose header `header` was parsed at `position` of `bytes` (file offset `at`): its
/// operations checked now (decoded again at replay, `Recovery::ops`).
fn recovered(bytes: &[u8], position: usize, header: &RecordHeader, at: u64) -> Result<Recovered> {
    let start = position + LOG_RECORD_HEADER_LEN;
    let payload = start..start + header.payload_len as usize;
    let ops = decode_op_refs(&bytes[payload.clone()], header.op_count, at, header.lsn)?;
    let bypass_generation = ops.iter().find_map(|op| match op {
        OpRef::Bypass { generation, .. } => Some(*generation),
        _ => None,
    });
    Ok(Recovered {
        lsn: header.lsn,
        at,
        op_count: header.op_count,
        payload,
        bypass_generation,
    })
}

fn log_corruption(at: u64, lsn: u64, what: String) -> Error {
    Error::corruption(at, CorruptionKind::Log { lsn, what })
}

/// A problem of the log's header (LSN 0 in the error names the header).
fn log_header_corruption(what: &str) -> Error {
    log_corruption(0, 0, what.to_string())
}

fn nothing_at_data_start(storage: &dyn Storage, len: u64) -> Result<bool> {
    if len < LOG_DATA_START + LOG_RECORD_HEADER_LEN as u64 {
        return Ok(true);
    }
    let mut first = [0u8; LOG_RECORD_HEADER_LEN];
    storage
        .read_at(LOG_DATA_START, &mut first)
        .map_err(Error::io("read the log"))?;
    Ok(first.iter().all(|&byte| byte == 0))
}

/// Whether `storage` looks like no log at all: no valid header and nothing at the data start
/// (a missing or empty file, or one cut before its header), which [`Wal::open`] would take for
/// a new log. Every database's log had a header before the database file existed (create
/// writes and syncs it first), so such a log was lost. (No valid header but records present
/// is corruption, reported by `open`.)
pub fn is_lost(storage: &dyn Storage) -> Result<bool> {
    let len = storage.len().map_err(Error::io("read the log length"))?;
    Ok(read_header(storage, len)?.is_none() && nothing_at_data_start(storage, len)?)
}

fn read_header(storage: &dyn Storage, len: u64) -> Result<Option<LogHeader>> {
    let mut best: Option<LogHeader> = None;
    for (slot, &offset) in LOG_HEADER_OFFSETS.iter().enumerate() {
        if offset + LOG_HEADER_LEN as u64 > len {
            continue;
        }
        let mut bytes = [0u8; LOG_HEADER_LEN];
        storage
            .read_at(offset, &mut bytes)
            .map_err(Error::io("read the log header"))?;
        if let Some(header) = LogHeader::decode(&bytes, slot)? {
            if best.map_or(true, |b| header.epoch > b.epoch) {
                best = Some(header);
            }
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemoryStorage;

    fn put(key: &[u8]) -> Op {
        Op::Put {
            table: "t".into(),
            key: key.to_vec(),
            value: b"v".to_vec(),
        }
    }

    /// A checkpoint covering `covered_lsn` that records no log cycle (as files from before
    /// the field): only the header's own checks apply.
    fn legacy(covered_lsn: u64) -> LogCheckpoint {
        LogCheckpoint {
            covered_lsn,
            closed_cleanly: false,
            log_epoch: 0,
            recovery: RecoveryMode::TolerateTornTail,
            lsn_limit: None,
        }
    }

    fn storage() -> Arc<dyn Storage> {
        Arc::new(MemoryStorage::with_capacity(64 << 20).unwrap())
    }

    #[test]
    fn append_reopen_recycle() {
        let storage = storage();
        let mut wal = Wal::create(Arc::clone(&storage), 7, 1, 1).unwrap();
        for i in 0..10u8 {
            let (lsn, _) = wal.append(&[put(&[i])], u64::from(i)).unwrap();
            assert_eq!(lsn, u64::from(i) + 1);
        }
        let (reopened, recovery) = Wal::open(Arc::clone(&storage), 7, &legacy(4)).unwrap();
        assert_eq!(recovery.records.len(), 6);
        assert_eq!(recovery.records[0].lsn, 5);
        assert_eq!(recovery.covered_records, 4);
        assert_eq!(recovery.tail_cut_at, None);
        assert_eq!(reopened.last_lsn(), 10);
        assert!(
            Wal::open(Arc::clone(&storage), 8, &legacy(4)).is_err(),
            "other database"
        );
        wal.recycle(10, 0).unwrap();
        let (mut reopened, recovery) = Wal::open(Arc::clone(&storage), 7, &legacy(10)).unwrap();
        assert!(recovery.records.is_empty() && !recovery.needs_recycle);
        assert_eq!(reopened.append(&[put(b"x")], 10).unwrap().0, 11);
        assert!(
            Wal::open(Arc::clone(&storage), 7, &legacy(9)).is_err(),
            "log newer than checkpoint"
        );
    }

    /// Regression (2a6fd70, no test then): recovery was quadratic on a recycled log. After a
    /// torn record, every later 8-byte position whose bytes read like a header with a higher
    /// LSN was checksummed over the length its stale bytes claimed, up to the rest of the file:
    /// 239 s to reopen the demo's 32 MiB log. Here the bytes after the torn record are fake
    /// headers of exactly that kind (an LSN far above any this cycle can reach, each claiming
    /// the rest of the file); the scan must checksum about the log's length, not its square.
    #[test]
    fn a_torn_tail_before_stale_header_lookalikes_costs_linear_checksumming() {
        let storage = storage();
        let mut wal = Wal::create(Arc::clone(&storage), 7, 1, 1).unwrap();
        let mut torn_at = 0;
        for i in 0..4u64 {
            torn_at = LOG_DATA_START + wal.bytes();
            wal.append(&[put(&[i as u8])], i).unwrap();
        }
        let stale_from = (LOG_DATA_START + wal.bytes()).next_multiple_of(LOG_RECORD_ALIGN);
        let stale_len: u64 = 1 << 20;
        let mut stale = vec![0u8; stale_len as usize];
        for at in (0..stale.len() - LOG_RECORD_HEADER_LEN).step_by(LOG_RECORD_ALIGN as usize) {
            let claims = (stale.len() - at - LOG_RECORD_HEADER_LEN) as u32;
            stale[at + format::LR_PAYLOAD_LEN_AT..][..4].copy_from_slice(&claims.to_le_bytes());
            stale[at + format::LR_LSN_AT..][..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
            stale[at + format::LR_SYNCED_LSN_AT..][..8].copy_from_slice(&5u64.to_le_bytes());
            stale[at + format::LR_OP_COUNT_AT..][..4].copy_from_slice(&1u32.to_le_bytes());
        }
        storage.write_at(stale_from, &stale).unwrap();
        // Tear the last real record (LSN 4): the scan cuts there and looks beyond it.
        let mut byte = [0u8];
        storage.read_at(torn_at + 40, &mut byte).unwrap();
        storage.write_at(torn_at + 40, &[byte[0] ^ 1]).unwrap();
        let (_, recovery) = Wal::open(Arc::clone(&storage), 7, &legacy(0)).unwrap();
        assert_eq!(recovery.records.len(), 3);
        assert_eq!(recovery.tail_cut_at, Some(torn_at));
        let log_len = storage.len().unwrap();
        assert!(
            recovery.checksummed_bytes <= 2 * log_len,
            "checksummed {} bytes of a {log_len}-byte log",
            recovery.checksummed_bytes
        );
    }

    #[test]
    fn torn_tail_is_cut_and_acknowledged_damage_is_corruption() {
        let storage = storage();
        let mut wal = Wal::create(Arc::clone(&storage), 7, 1, 1).unwrap();
        let mut offsets = Vec::new();
        for i in 0..6u64 {
            offsets.push(LOG_DATA_START + wal.bytes());
            // Records 1..=3 are "synced" one by one; 4..=6 share one unsynced group.
            wal.append(&[put(&[i as u8])], i.min(3)).unwrap();
        }
        let flip = |at: u64| {
            let mut byte = [0u8];
            storage.read_at(at, &mut byte).unwrap();
            storage.write_at(at, &[byte[0] ^ 1]).unwrap();
        };
        flip(offsets[4] + 40);
        let (_, recovery) = Wal::open(Arc::clone(&storage), 7, &legacy(0)).unwrap();
        assert_eq!(recovery.records.len(), 4, "record 5 torn: 5 and 6 cut");
        assert_eq!(recovery.tail_cut_at, Some(offsets[4]));
        flip(offsets[4] + 40);
        flip(offsets[1] + 40);
        match Wal::open(Arc::clone(&storage), 7, &legacy(0)) {
            Err(Error::Corruption {
                kind: CorruptionKind::Log { lsn, .. },
                ..
            }) => assert_eq!(lsn, 2),
            other => panic!("expected corruption naming LSN 2, got {other:?}"),
        }
    }
}
