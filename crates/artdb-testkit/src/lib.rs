//! artdb-testkit: test support for the artdb engine (a dev-dependency only).
//!
//! - [`CrashStorage`]: a storage that buffers unsynced writes and, at a chosen sync, keeps, drops
//!   or tears them, then "dies" (every later call fails). The durable image is what a machine
//!   that lost power would find on disk; tests reopen it and check that exactly the last
//!   completed checkpoint is there.
//! - [`FaultStorage`]: wraps any storage and fails its N-th I/O call with `EIO` or `ENOSPC`.
//! - [`scale`]: the `ARTDB_TEST_SCALE` knob that sizes randomized tests.
//!
//! Why a buffering storage and not killing a process: a killed process's writes survive in the
//! page cache, so a kill never tests power loss; only dropping unsynced writes does.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
mod crash;
mod fault;

pub use crash::{CrashMode, CrashStorage};
pub use fault::{FaultKind, FaultStorage};

/// The test scale from the `ARTDB_TEST_SCALE` environment variable (default 1). Randomized
/// tests multiply their case counts and sizes by it, so CI stays fast and a long run is one
/// variable away.
pub fn scale() -> u64 {
    std::env::var("ARTDB_TEST_SCALE")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// The seed of a randomized test: `ARTDB_TEST_SEED` if set (to replay a failure), else random.
/// Tests print it so a failure can be replayed.
pub fn seed() -> u64 {
    std::env::var("ARTDB_TEST_SEED")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(rand::random)
}
