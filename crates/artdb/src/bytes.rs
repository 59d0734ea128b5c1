//! bytes: little-endian integer fields at byte offsets, shared by every on-disk format of the
//! engine (the database file's header, superblocks and pages in `store`, the log in `wal`).
//!
//! The lowest module of the engine: it names no other. Callers check lengths before reading
//! (each format checks a record's or block's size first); an offset past the slice is a
//! programmer error, not a file's.

pub(crate) fn put_u16(bytes: &mut [u8], at: usize, value: u16) {
    bytes[at..at + 2].copy_from_slice(&value.to_le_bytes());
}
pub(crate) fn put_u32(bytes: &mut [u8], at: usize, value: u32) {
    bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
}
pub(crate) fn put_u64(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}
pub(crate) fn get_u16(bytes: &[u8], at: usize) -> u16 {
    let mut word = [0u8; 2];
    word.copy_from_slice(&bytes[at..at + 2]);
    u16::from_le_bytes(word)
}
pub(crate) fn get_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}
pub(crate) fn get_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}
