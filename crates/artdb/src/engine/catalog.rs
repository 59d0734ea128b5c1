//! catalog: the table names and roots of one checkpoint, stored as a blob named by the
//! superblock (docs/file-format.md#catalog-blob).
//!
//! ```text
//! 0  4  magic "CTLG"
//! 4  4  table count (u32)
//! 8  .. per table, in name order: name length (u16), name (UTF-8), root word (u64), keys (u64)
//! ```
//! The blob's CRC32C is in the superblock; decoding still checks every length against the blob
//! (a bug must not turn into a panic) and every root word's tag.

use crate::error::{CorruptionKind, Error, Result};
use crate::store::format_helpers::{get_u16, get_u32, get_u64};
use artdb_art::ChildWord;

use crate::error::TABLE_NAME_LEN_MAX;
const CATALOG_MAGIC: [u8; 4] = *b"CTLG";
const CATALOG_HEADER_LEN: usize = 8;

/// One table as the catalog records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The table's name.
    pub name: String,
    /// Root word of the table's persisted tree.
    pub root: ChildWord,
    /// Number of keys.
    pub len: u64,
}

/// The blob of `entries` (given in name order).
pub fn encode<'a>(entries: impl IntoIterator<Item = (&'a str, ChildWord, u64)>) -> Vec<u8> {
    let mut bytes = CATALOG_MAGIC.to_vec();
    bytes.extend_from_slice(&[0; 4]);
    let mut count = 0u32;
    for (name, root, len) in entries {
        debug_assert!(
            name.len() <= TABLE_NAME_LEN_MAX,
            "table names are checked at create"
        );
        bytes.extend_from_slice(&(name.len() as u16).to_le_bytes());
        bytes.extend_from_slice(name.as_bytes());
        bytes.extend_from_slice(&root.to_bits().to_le_bytes());
        bytes.extend_from_slice(&len.to_le_bytes());
        count += 1;
    }
    bytes[4..8].copy_from_slice(&count.to_le_bytes());
    bytes
}

/// The most keys the tables of a catalog may claim together: 2^56 (even dense packs of empty
/// values take more than 2^52 bytes of file for that many). A larger claim is damage; counters
/// summed from the claims must not overflow (found by the engine's fuzz body,
/// tests/fuzz_body.rs).
pub const CATALOG_KEYS_MAX: u64 = 1 << 56;

/// Parses a catalog blob read from byte `at`.
pub fn decode(bytes: &[u8], at: u64) -> Result<Vec<CatalogEntry>> {
    let bad = |what| Error::corruption(at, CorruptionKind::Metadata(what));
    if bytes.len() < CATALOG_HEADER_LEN || bytes[..4] != CATALOG_MAGIC {
        return Err(bad("catalog magic"));
    }
    let count = get_u32(bytes, 4) as usize;
    let mut entries: Vec<CatalogEntry> = Vec::new();
    let mut position = CATALOG_HEADER_LEN;
    let mut keys_total = 0u64;
    for _ in 0..count {
        let name_len = bytes
            .get(position..position + 2)
            .map(|b| get_u16(b, 0) as usize)
            .ok_or_else(|| bad("catalog truncated"))?;
        let end = position + 2 + name_len + 16;
        if name_len == 0 || name_len > TABLE_NAME_LEN_MAX || end > bytes.len() {
            return Err(bad("catalog entry length"));
        }
        let name = std::str::from_utf8(&bytes[position + 2..position + 2 + name_len])
            .map_err(|_| bad("table name is not UTF-8"))?
            .to_string();
        let root_bits = get_u64(bytes, position + 2 + name_len);
        let len = get_u64(bytes, position + 2 + name_len + 8);
        let root = ChildWord::from_bits(root_bits).ok_or_else(|| bad("table root word"))?;
        if entries.last().is_some_and(|last| last.name >= name) {
            return Err(bad("catalog names out of order"));
        }
        keys_total = keys_total.saturating_add(len);
        if keys_total > CATALOG_KEYS_MAX {
            return Err(bad("catalog key counts"));
        }
        entries.push(CatalogEntry { name, root, len });
        position = end;
    }
    if position != bytes.len() {
        return Err(bad("catalog trailing bytes"));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation_is_an_error() {
        let root = ChildWord::persisted(32768 * 3 + 24).unwrap();
        let bytes = encode([("a", ChildWord::EMPTY, 0), ("table", root, 7)]);
        let entries = decode(&bytes, 0).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            entries[1],
            CatalogEntry {
                name: "table".into(),
                root,
                len: 7
            }
        );
        for len in 0..bytes.len() {
            assert!(decode(&bytes[..len], 0).is_err(), "truncated to {len}");
        }
        let mut swapped = encode([("b", ChildWord::EMPTY, 0), ("a", ChildWord::EMPTY, 0)]);
        assert!(decode(&swapped, 0).is_err());
        swapped.push(0);
        assert!(decode(&swapped, 0).is_err());
        let claims = |lens: [u64; 2]| {
            decode(
                &encode([
                    ("a", ChildWord::EMPTY, lens[0]),
                    ("b", ChildWord::EMPTY, lens[1]),
                ]),
                0,
            )
        };
        assert!(claims([CATALOG_KEYS_MAX - 1, 1]).is_ok());
        assert!(claims([CATALOG_KEYS_MAX, 1]).is_err());
        assert!(claims([u64::MAX, u64::MAX]).is_err());
    }
}
