//! The fuzz body for `open` + `verify` + cursor walks over arbitrary bytes.
//!
//! Run by the cargo-fuzz target in `fuzz/` and, briefly, by `cargo test` (tests/fuzz_body.rs)
//! over mutations of valid tables. The property: whatever the bytes, nothing panics or reads out
//! of bounds, and every walk ends (each is bounded by the pair count the header claims, capped).

use crate::table::Table;

/// Pairs a walk visits at most (keeps a fuzz iteration short whatever the header claims).
const WALK_PAIRS_MAX: usize = 10_000;

/// Opens `bytes` as a table and exercises every read path; returns how many pairs the walks saw.
/// Errors are expected outcomes; a panic is a bug.
pub fn open_verify_walk(bytes: &[u8]) -> usize {
    let Ok(table) = Table::from_bytes(bytes.to_vec()) else {
        return 0;
    };
    let _ = table.verify();
    table.forget_verified();
    let _ = table.stats();
    let mut seen = 0usize;
    let mut keys = Vec::new();
    let mut cursor = table.cursor();
    let mut moved = cursor.first();
    while let Ok(true) = moved {
        if seen >= WALK_PAIRS_MAX {
            break;
        }
        if let Some(key) = cursor.key() {
            if keys.len() < 64 {
                keys.push(key);
            }
        }
        seen += 1;
        moved = cursor.next();
    }
    let mut moved = cursor.last();
    let mut back = 0usize;
    while let Ok(true) = moved {
        if back >= WALK_PAIRS_MAX {
            break;
        }
        back += 1;
        moved = cursor.prev();
    }
    for key in keys {
        let _ = table.get(key);
        let _ = cursor.seek_lower_bound(key);
        let _ = cursor.seek_upper_bound(key);
        let _ = cursor.prev();
        let _ = table.prefix(key).take(4).count();
    }
    let _ = table.get(b"");
    let _ = table.get(&[0xff; 40]);
    seen + back
}

/// Recomputes the header checksum and every page checksum of `bytes` as far as its header
/// describes them, so that mutations reach the structural checks behind the checksums (crafted
/// files rather than damaged ones). Best effort: stops where the header makes no sense.
pub fn reseal(bytes: &mut [u8]) {
    use crate::format::*;
    if bytes.len() < HEADER_LEN {
        return;
    }
    let page_size = read_u32(bytes, H_PAGE_SIZE) as usize;
    if check_page_size(page_size).is_err() {
        return;
    }
    let level_count = (read_u32(bytes, H_LEVEL_COUNT) as usize).min(LEVELS_MAX);
    for level in 0..level_count {
        let at = H_LEVELS + level * H_LEVEL_ENTRY_LEN;
        let start = read_u64(bytes, at);
        let count = read_u64(bytes, at + 8).min(1 << 20);
        for index in 0..count {
            let Some(page_start) = start
                .checked_add(index)
                .and_then(|page| page.checked_mul(page_size as u64))
                .map(|offset| offset as usize)
            else {
                break;
            };
            let Some(page) = bytes.get_mut(page_start..page_start.saturating_add(page_size)) else {
                break;
            };
            let checksum = page_checksum(index, page);
            write_u32(page, P_CHECKSUM, checksum);
        }
    }
    let checksum = crc32c::crc32c(&bytes[..H_CHECKSUM]);
    write_u32(bytes, H_CHECKSUM, checksum);
}
