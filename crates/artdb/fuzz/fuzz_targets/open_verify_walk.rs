//! Fuzz target: arbitrary bytes as an artdb database file and its log (`artdb::fuzz::run_input`:
//! a flags byte, then the file and the log, resealed with valid checksums if the flags ask),
//! opened read-only, as a salvage and read-write, verified, read through every read path and
//! written a little; must never panic, hang or read out of bounds.
//! Run with `cargo +nightly fuzz run open_verify_walk` from `crates/artdb` (docs/testing.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    artdb::fuzz::run_input(data);
});
