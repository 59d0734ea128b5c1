//! format: the bytes of the write-ahead log (docs/wal-format.md): two header slots, then
//! records at 8-byte aligned offsets, each a fixed record header and a payload of operations.
//!
//! ```text
//!  0            512          4096 (LOG_DATA_START)
//! +------------+------------+--------------------------------------------------------+
//! | header 0   | header 1   | record | record | ... | zeros or stale bytes            |
//! +------------+------------+--------------------------------------------------------+
//! ```
//! A header names the database (`file_id`), its cycle (`epoch`, bumped at every recycle, slot
//! `epoch % 2`) and the first LSN the cycle may hold. A record's CRC32C is seeded with the file
//! id and the epoch, so a record of another database or of an earlier cycle never validates.
//! Every length read from a file is checked against the bytes it claims before it is used.

use crate::error::{CorruptionKind, Error, Result};

/// Size reserved for one header slot.
pub const LOG_HEADER_SLOT_BYTES: u64 = 512;
/// Offsets of the two header slots.
pub const LOG_HEADER_OFFSETS: [u64; 2] = [0, LOG_HEADER_SLOT_BYTES];
/// Offset of the first record.
pub const LOG_DATA_START: u64 = 4096;
/// Records start at multiples of this.
pub const LOG_RECORD_ALIGN: u64 = 8;
/// Format version written in the header.
pub const LOG_FORMAT_VERSION: u32 = 1;
pub(crate) const LOG_MAGIC: [u8; 8] = *b"ARTDBLOG";

/// Header fields (offsets inside a header slot).
pub const LH_MAGIC_AT: usize = 0;
pub const LH_VERSION_AT: usize = 8;
pub const LH_FILE_ID_AT: usize = 16;
pub const LH_EPOCH_AT: usize = 24;
pub const LH_BASE_LSN_AT: usize = 32;
/// The log file's length when the header was written (0 in logs written before the field
/// existed: not checked).
pub const LH_PREALLOCATED_AT: usize = 40;
pub const LH_CRC_AT: usize = 56;
/// Bytes of a header that are written (the rest of the slot is zero).
pub const LOG_HEADER_LEN: usize = 64;

/// Record header fields (offsets from the record's start).
pub const LR_PAYLOAD_LEN_AT: usize = 0;
pub const LR_CRC_AT: usize = 4;
pub const LR_LSN_AT: usize = 8;
pub const LR_SYNCED_LSN_AT: usize = 16;
pub const LR_OP_COUNT_AT: usize = 24;
pub const LR_RESERVED_AT: usize = 28;
/// Length of a record header.
pub const LOG_RECORD_HEADER_LEN: usize = 32;
/// Largest payload of one record (a bigger transaction is refused with
/// `Error::TransactionTooLarge`).
pub const LOG_RECORD_PAYLOAD_BYTES_MAX: u64 = 1 << 30;

const _: () = assert!(LOG_HEADER_LEN as u64 <= LOG_HEADER_SLOT_BYTES);
const _: () = assert!(LH_CRC_AT + 4 <= LOG_HEADER_LEN);
const _: () = assert!(LH_PREALLOCATED_AT + 8 <= LH_CRC_AT);
const _: () = assert!(LR_RESERVED_AT + 4 == LOG_RECORD_HEADER_LEN);
const _: () = assert!(LOG_RECORD_HEADER_LEN as u64 % LOG_RECORD_ALIGN == 0);
const _: () = assert!(LOG_DATA_START % LOG_RECORD_ALIGN == 0);

/// Operation tags in a payload.
const OP_PUT: u8 = 1;
const OP_REMOVE: u8 = 2;
const OP_CREATE_TABLE: u8 = 3;
const OP_DROP_TABLE: u8 = 4;
const OP_BYPASS: u8 = 5;

/// One operation of a committed transaction, in the order it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Set `key` to `value` in `table`.
    Put {
        /// Table name.
        table: String,
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Remove `key` from `table`.
    Remove {
        /// Table name.
        table: String,
        /// The key.
        key: Vec<u8>,
    },
    /// Create the empty table.
    CreateTable {
        /// Table name.
        table: String,
    },
    /// Drop the table and its keys.
    DropTable {
        /// Table name.
        table: String,
    },
    /// A transaction that bypassed the log changed `table`: its nodes went straight into free
    /// pages of the database file, and it is committed exactly when the checkpoint of
    /// `generation` (which covers this record's LSN) is durable (docs/recovery.md, "Big
    /// transactions bypass the log"). Replay never applies it: a record the durable superblock
    /// covers is skipped like any other, and one it does not cover is a transaction that did not
    /// commit.
    Bypass {
        /// Table name.
        table: String,
        /// The generation of the superblock that makes the transaction durable.
        generation: u64,
    },
}

impl Op {
    fn table(&self) -> &str {
        match self {
            Op::Put { table, .. }
            | Op::Remove { table, .. }
            | Op::CreateTable { table }
            | Op::DropTable { table }
            | Op::Bypass { table, .. } => table,
        }
    }

    /// Bytes this op adds to a payload (besides its table's name, listed once).
    pub fn encoded_len(&self) -> u64 {
        match self {
            Op::Put { key, value, .. } => Op::put_len(key, value),
            Op::Remove { key, .. } => Op::remove_len(key),
            Op::CreateTable { .. } | Op::DropTable { .. } => Op::TABLE_OP_LEN,
            Op::Bypass { .. } => Op::TABLE_OP_LEN + 8,
        }
    }

    /// [`Op::encoded_len`] of a put of `key` and `value`: tag, table index, two lengths, bytes.
    pub fn put_len(key: &[u8], value: &[u8]) -> u64 {
        11 + key.len() as u64 + value.len() as u64
    }

    /// [`Op::encoded_len`] of a removal of `key`.
    pub fn remove_len(key: &[u8]) -> u64 {
        7 + key.len() as u64
    }

    /// [`Op::encoded_len`] of a create or drop: tag and table index (a bypass adds its
    /// generation's 8 bytes).
    pub const TABLE_OP_LEN: u64 = 3;
}

/// The header of a log cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogHeader {
    /// The database file's id (its header's `file_id`).
    pub file_id: u64,
    /// Recycle count; the header lives in slot `epoch % 2`.
    pub epoch: u64,
    /// The first LSN this cycle may hold.
    pub base_lsn: u64,
    /// The log file's length when this header was written (0: not recorded). Within a cycle
    /// the file only grows (the recycle that starts the next cycle is the only shrink, and it
    /// records the length it keeps), so a shorter file was truncated, not torn by a crash.
    pub preallocated_bytes: u64,
}

impl LogHeader {
    /// The slot this header is written to.
    pub fn slot(&self) -> usize {
        (self.epoch % 2) as usize
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; LOG_HEADER_LEN] {
        let mut bytes = [0u8; LOG_HEADER_LEN];
        bytes[LH_MAGIC_AT..LH_MAGIC_AT + 8].copy_from_slice(&LOG_MAGIC);
        put_u32(&mut bytes, LH_VERSION_AT, LOG_FORMAT_VERSION);
        put_u64(&mut bytes, LH_FILE_ID_AT, self.file_id);
        put_u64(&mut bytes, LH_EPOCH_AT, self.epoch);
        put_u64(&mut bytes, LH_BASE_LSN_AT, self.base_lsn);
        put_u64(&mut bytes, LH_PREALLOCATED_AT, self.preallocated_bytes);
        let crc = crc32c::crc32c(&bytes[..LH_CRC_AT]);
        put_u32(&mut bytes, LH_CRC_AT, crc);
        bytes
    }

    /// Parses a header slot; `None` if its magic or checksum is wrong or it sits in the wrong
    /// slot (a torn or never-written slot). A valid header of another version is an error.
    pub fn decode(bytes: &[u8; LOG_HEADER_LEN], slot: usize) -> Result<Option<LogHeader>> {
        if bytes[LH_MAGIC_AT..LH_MAGIC_AT + 8] != LOG_MAGIC
            || crc32c::crc32c(&bytes[..LH_CRC_AT]) != get_u32(bytes, LH_CRC_AT)
        {
            return Ok(None);
        }
        let version = get_u32(bytes, LH_VERSION_AT);
        if version != LOG_FORMAT_VERSION {
            return Err(Error::corruption(
                LOG_HEADER_OFFSETS[slot] + LH_VERSION_AT as u64,
                CorruptionKind::Log {
                    lsn: 0,
                    what: "unsupported log format version".into(),
                },
            ));
        }
        let header = LogHeader {
            file_id: get_u64(bytes, LH_FILE_ID_AT),
            epoch: get_u64(bytes, LH_EPOCH_AT),
            base_lsn: get_u64(bytes, LH_BASE_LSN_AT),
            preallocated_bytes: get_u64(bytes, LH_PREALLOCATED_AT),
        };
        if header.slot() != slot || header.base_lsn == 0 {
            return Ok(None);
        }
        Ok(Some(header))
    }
}

/// The fixed header of a record, as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Payload bytes after the header.
    pub payload_len: u64,
    /// The CRC32C stored in the record.
    pub crc: u32,
    /// The record's log sequence number.
    pub lsn: u64,
    /// The LSN known durable when the record was written: every record up to it was
    /// acknowledged, so a damaged one of them is corruption, not a torn tail.
    pub synced_lsn: u64,
    /// Operations in the payload.
    pub op_count: u32,
}

impl RecordHeader {
    /// Parses a record header (no checksum check: see [`record_crc`]).
    pub fn decode(bytes: &[u8; LOG_RECORD_HEADER_LEN]) -> RecordHeader {
        RecordHeader {
            payload_len: u64::from(get_u32(bytes, LR_PAYLOAD_LEN_AT)),
            crc: get_u32(bytes, LR_CRC_AT),
            lsn: get_u64(bytes, LR_LSN_AT),
            synced_lsn: get_u64(bytes, LR_SYNCED_LSN_AT),
            op_count: get_u32(bytes, LR_OP_COUNT_AT),
        }
    }

    /// Bytes the whole record occupies, padding included.
    pub fn record_len(&self) -> u64 {
        record_len(self.payload_len)
    }
}

/// Bytes a record of `payload_len` occupies, padding included.
pub fn record_len(payload_len: u64) -> u64 {
    (LOG_RECORD_HEADER_LEN as u64 + payload_len).next_multiple_of(LOG_RECORD_ALIGN)
}

/// The CRC of a record: CRC32C seeded with the file id and epoch, over the header from
/// `LR_LSN_AT` on and the payload. `record` is the header and payload (no padding).
pub fn record_crc(file_id: u64, epoch: u64, record: &[u8]) -> u32 {
    let mut seed = [0u8; 16];
    seed[..8].copy_from_slice(&file_id.to_le_bytes());
    seed[8..].copy_from_slice(&epoch.to_le_bytes());
    let crc = crc32c::crc32c(&seed);
    crc32c::crc32c_append(crc, &record[LR_LSN_AT..])
}

/// Encodes the record of `ops` (header, payload, zero padding to the alignment).
pub fn encode_record(
    file_id: u64,
    epoch: u64,
    lsn: u64,
    synced_lsn: u64,
    ops: &[Op],
) -> Result<Vec<u8>> {
    let mut names: Vec<&str> = Vec::new();
    let mut payload_len: u64 = 2;
    for op in ops {
        if !names.contains(&op.table()) {
            payload_len += 2 + op.table().len() as u64;
            names.push(op.table());
        }
        payload_len += op.encoded_len();
    }
    if payload_len > LOG_RECORD_PAYLOAD_BYTES_MAX
        || ops.len() > u32::MAX as usize
        || names.len() > usize::from(u16::MAX)
    {
        return Err(Error::TransactionTooLarge {
            bytes: payload_len,
            max: LOG_RECORD_PAYLOAD_BYTES_MAX,
        });
    }
    let total = record_len(payload_len) as usize;
    let mut bytes = Vec::with_capacity(total);
    bytes.resize(LOG_RECORD_HEADER_LEN, 0);
    put_u32(&mut bytes, LR_PAYLOAD_LEN_AT, payload_len as u32);
    put_u64(&mut bytes, LR_LSN_AT, lsn);
    put_u64(&mut bytes, LR_SYNCED_LSN_AT, synced_lsn);
    put_u32(&mut bytes, LR_OP_COUNT_AT, ops.len() as u32);
    bytes.extend_from_slice(&(names.len() as u16).to_le_bytes());
    for name in &names {
        bytes.extend_from_slice(&(name.len() as u16).to_le_bytes());
        bytes.extend_from_slice(name.as_bytes());
    }
    for op in ops {
        let index = names
            .iter()
            .position(|name| *name == op.table())
            .unwrap_or(0) as u16;
        let (tag, key, value) = match op {
            Op::Put { key, value, .. } => (OP_PUT, Some(key), Some(value)),
            Op::Remove { key, .. } => (OP_REMOVE, Some(key), None),
            Op::CreateTable { .. } => (OP_CREATE_TABLE, None, None),
            Op::DropTable { .. } => (OP_DROP_TABLE, None, None),
            Op::Bypass { .. } => (OP_BYPASS, None, None),
        };
        bytes.push(tag);
        bytes.extend_from_slice(&index.to_le_bytes());
        if let Op::Bypass { generation, .. } = op {
            bytes.extend_from_slice(&generation.to_le_bytes());
        }
        if let Some(key) = key {
            bytes.extend_from_slice(&(key.len() as u32).to_le_bytes());
        }
        if let Some(value) = value {
            bytes.extend_from_slice(&(value.len() as u32).to_le_bytes());
        }
        if let Some(key) = key {
            bytes.extend_from_slice(key);
        }
        if let Some(value) = value {
            bytes.extend_from_slice(value);
        }
    }
    debug_assert_eq!(
        bytes.len() as u64,
        LOG_RECORD_HEADER_LEN as u64 + payload_len
    );
    let crc = record_crc(file_id, epoch, &bytes);
    put_u32(&mut bytes, LR_CRC_AT, crc);
    bytes.resize(total, 0);
    Ok(bytes)
}

/// One operation of a recovered record, borrowed from the log's bytes (replay copies nothing
/// it does not keep: a 16 MiB log of small commits decoded into owned operations was two
/// allocations per pair).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpRef<'a> {
    /// [`Op::Put`].
    Put {
        /// Table name.
        table: &'a str,
        /// The key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
    /// [`Op::Remove`].
    Remove {
        /// Table name.
        table: &'a str,
        /// The key.
        key: &'a [u8],
    },
    /// [`Op::CreateTable`].
    CreateTable {
        /// Table name.
        table: &'a str,
    },
    /// [`Op::DropTable`].
    DropTable {
        /// Table name.
        table: &'a str,
    },
    /// [`Op::Bypass`].
    Bypass {
        /// Table name.
        table: &'a str,
        /// The generation of the superblock that makes the transaction durable.
        generation: u64,
    },
}

#[cfg(test)]
impl OpRef<'_> {
    /// The owned operation.
    pub fn to_op(self) -> Op {
        match self {
            OpRef::Put { table, key, value } => Op::Put {
                table: table.to_string(),
                key: key.to_vec(),
                value: value.to_vec(),
            },
            OpRef::Remove { table, key } => Op::Remove {
                table: table.to_string(),
                key: key.to_vec(),
            },
            OpRef::CreateTable { table } => Op::CreateTable {
                table: table.to_string(),
            },
            OpRef::DropTable { table } => Op::DropTable {
                table: table.to_string(),
            },
            OpRef::Bypass { table, generation } => Op::Bypass {
                table: table.to_string(),
                generation,
            },
        }
    }
}

/// Decodes the payload of a record whose checksum matched into owned operations
/// ([`decode_op_refs`]; the tests' comparison with what was encoded).
#[cfg(test)]
pub fn decode_ops(payload: &[u8], op_count: u32, at: u64, lsn: u64) -> Result<Vec<Op>> {
    Ok(decode_op_refs(payload, op_count, at, lsn)?
        .into_iter()
        .map(OpRef::to_op)
        .collect())
}

/// Decodes the payload of a record whose checksum matched. `at` (the record's offset in the
/// log) and `lsn` name the place in errors; a malformed payload under a good checksum means a
/// bug or a forged file, reported as corruption.
pub fn decode_op_refs(payload: &[u8], op_count: u32, at: u64, lsn: u64) -> Result<Vec<OpRef<'_>>> {
    let bad = |what: &str| {
        Error::corruption(
            at,
            CorruptionKind::Log {
                lsn,
                what: format!("malformed record payload: {what}"),
            },
        )
    };
    let mut reader = Reader {
        bytes: payload,
        position: 0,
    };
    let name_count = reader.u16().ok_or_else(|| bad("table count"))?;
    let mut names = Vec::with_capacity(usize::from(name_count));
    for _ in 0..name_count {
        let len = reader.u16().ok_or_else(|| bad("name length"))?;
        let name = reader.take(usize::from(len)).ok_or_else(|| bad("name"))?;
        let name = std::str::from_utf8(name).map_err(|_| bad("name is not UTF-8"))?;
        names.push(name);
    }
    // Each op takes at least 3 bytes: bound the allocation by what the payload can hold.
    let mut ops = Vec::with_capacity((op_count as usize).min(payload.len() / 3));
    for _ in 0..op_count {
        let tag = reader.u8().ok_or_else(|| bad("op tag"))?;
        let index = reader.u16().ok_or_else(|| bad("op table"))?;
        let table = *names
            .get(usize::from(index))
            .ok_or_else(|| bad("op table index"))?;
        let op = match tag {
            OP_PUT => {
                let key_len = reader.u32().ok_or_else(|| bad("key length"))?;
                let value_len = reader.u32().ok_or_else(|| bad("value length"))?;
                let key = reader.take(key_len as usize).ok_or_else(|| bad("key"))?;
                let value = reader
                    .take(value_len as usize)
                    .ok_or_else(|| bad("value"))?;
                OpRef::Put { table, key, value }
            }
            OP_REMOVE => {
                let key_len = reader.u32().ok_or_else(|| bad("key length"))?;
                let key = reader.take(key_len as usize).ok_or_else(|| bad("key"))?;
                OpRef::Remove { table, key }
            }
            OP_CREATE_TABLE => OpRef::CreateTable { table },
            OP_DROP_TABLE => OpRef::DropTable { table },
            OP_BYPASS => {
                let generation = reader.u64().ok_or_else(|| bad("bypass generation"))?;
                OpRef::Bypass { table, generation }
            }
            _ => return Err(bad("unknown op tag")),
        };
        ops.push(op);
    }
    if reader.position != payload.len() {
        return Err(bad("trailing bytes"));
    }
    Ok(ops)
}

struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let end = self.position.checked_add(len)?;
        let slice = self.bytes.get(self.position..end)?;
        self.position = end;
        Some(slice)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| get_u16(b, 0))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| get_u32(b, 0))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|b| get_u64(b, 0))
    }
}

pub(crate) use crate::bytes::{get_u16, get_u32, get_u64, put_u32, put_u64};

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_ops() -> Vec<Op> {
        vec![
            Op::CreateTable { table: "t".into() },
            Op::Put {
                table: "t".into(),
                key: b"k".to_vec(),
                value: b"value".to_vec(),
            },
            Op::Remove {
                table: "other".into(),
                key: Vec::new(),
            },
            Op::DropTable { table: "t".into() },
            Op::Bypass {
                table: "other".into(),
                generation: 0x0102_0304_0506_0708,
            },
        ]
    }

    #[test]
    fn record_round_trip_and_every_flip_fails_the_checksum() {
        let ops = sample_ops();
        let bytes = encode_record(9, 3, 17, 16, &ops).unwrap();
        assert_eq!(bytes.len() as u64 % LOG_RECORD_ALIGN, 0);
        let mut header_bytes = [0u8; LOG_RECORD_HEADER_LEN];
        header_bytes.copy_from_slice(&bytes[..LOG_RECORD_HEADER_LEN]);
        let header = RecordHeader::decode(&header_bytes);
        assert_eq!(
            (header.lsn, header.synced_lsn, header.op_count),
            (17, 16, 5)
        );
        assert_eq!(header.record_len(), bytes.len() as u64);
        let end = LOG_RECORD_HEADER_LEN + header.payload_len as usize;
        assert_eq!(record_crc(9, 3, &bytes[..end]), header.crc);
        assert_ne!(record_crc(9, 4, &bytes[..end]), header.crc, "other epoch");
        assert_ne!(record_crc(8, 3, &bytes[..end]), header.crc, "other file");
        let decoded = decode_ops(&bytes[LOG_RECORD_HEADER_LEN..end], 5, 0, 17).unwrap();
        assert_eq!(decoded, ops);
        for i in LR_LSN_AT..end {
            let mut flipped = bytes.clone();
            flipped[i] ^= 0x04;
            assert_ne!(record_crc(9, 3, &flipped[..end]), header.crc, "byte {i}");
        }
        for len in 0..end - LOG_RECORD_HEADER_LEN {
            let _ = decode_ops(
                &bytes[LOG_RECORD_HEADER_LEN..LOG_RECORD_HEADER_LEN + len],
                5,
                0,
                1,
            )
            .expect_err("truncated payload");
        }
    }

    #[test]
    fn header_round_trip_slot_and_flips() {
        let header = LogHeader {
            file_id: 5,
            epoch: 3,
            base_lsn: 10,
            preallocated_bytes: 1 << 20,
        };
        let bytes = header.encode();
        assert_eq!(LogHeader::decode(&bytes, 1).unwrap(), Some(header));
        assert_eq!(LogHeader::decode(&bytes, 0).unwrap(), None, "wrong slot");
        // Bytes past the CRC are reserved (zero, unchecked).
        for i in 0..LH_CRC_AT + 4 {
            let mut flipped = bytes;
            flipped[i] ^= 0x20;
            assert!(
                !matches!(LogHeader::decode(&flipped, 1), Ok(Some(_))),
                "byte {i}"
            );
        }
    }
}
