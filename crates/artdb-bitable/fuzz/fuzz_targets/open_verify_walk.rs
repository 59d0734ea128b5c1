//! Fuzz target: arbitrary bytes opened as a bitable, verified and walked; must never panic.
//! Run with `cargo fuzz run open_verify_walk` from `crates/artdb-bitable` (nightly).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    artdb_bitable::fuzz::open_verify_walk(data);
});
