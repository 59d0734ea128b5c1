//! The probe ladder: a timing diagnostic that cuts heap lookups short at a chosen stage of a
//! hinted pack's probe, or changes what the probe waits on, so that a timed run prices each
//! stage. Built only with the `probe-ladder` feature; a default build has none of it, and its
//! lookups are exactly as they are without this module.
//!
//! Every stage but [`Stage::Full`] and [`Stage::ExactRecord`] answers wrongly on purpose: it
//! is for timing only, through `examples/lookup_profile.rs` (`LADDER=...` with the feature on;
//! docs/journal/art.md, "Where a random lookup's time goes"). Only lookups through `get`'s heap
//! walk (not the group walk of `get_many`) take the stages, and only at a hinted pack. The
//! stages:
//! - [`Stage::Walk`]: the inner levels and the pack's prefetches; no pack line is waited on.
//! - [`Stage::Header`]: the pack's header word is loaded and a predictable branch waits on it.
//! - [`Stage::Window`]: the fence window's run is found from its lines (as the probe finds it,
//!   count from the header) and a predictable branch waits on it.
//! - [`Stage::EmptyBranch`]: as `Window`, then the probe's branch on an empty run (for absent
//!   random keys in packs of ~150 entries, taken about half the time).
//! - [`Stage::HeaderDependent`]`(n)`: as `Header`, with `24 * n` more instructions (four chains
//!   of register adds) that wait for the header, then the branch.
//! - [`Stage::ExactRecord`]: the whole probe, its answers right, but the pack's record lines
//!   are prefetched at the record's true address from [`set_record_oracle`]'s list instead of
//!   at the word's guess. The list holds one address per hinted pack met, in order, so it
//!   suits `get` on a tree whose every lookup meets one hinted pack (random 8-byte keys); for
//!   absent keys it holds 0s, and no record line is prefetched.

use core::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

/// A stage of the ladder (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The whole lookup (the default).
    Full,
    /// Stop at the pack's word.
    Walk,
    /// Stop after waiting on the header.
    Header,
    /// Stop after the fence window's run.
    Window,
    /// Stop after the empty-run branch.
    EmptyBranch,
    /// Stop after `24 * n` (n at most 10) instructions that wait on the header.
    HeaderDependent(u8),
    /// The whole lookup, with the record lines prefetched from the oracle's list.
    ExactRecord,
}

const FULL: u8 = 0;
pub(crate) const WALK: u8 = 1;
pub(crate) const HEADER: u8 = 2;
pub(crate) const WINDOW: u8 = 3;
pub(crate) const EMPTY_BRANCH: u8 = 4;
pub(crate) const EXACT_RECORD: u8 = 5;
/// `HeaderDependent(n)` is `DEPENDENT + n`.
pub(crate) const DEPENDENT: u8 = 10;
/// The largest `n` of `HeaderDependent`.
const DEPENDENT_MAX: u8 = 10;

static STAGE: AtomicU8 = AtomicU8::new(FULL);
static ORACLE: AtomicPtr<usize> = AtomicPtr::new(core::ptr::null_mut());
static ORACLE_LEN: AtomicUsize = AtomicUsize::new(0);
static ORACLE_NEXT: AtomicUsize = AtomicUsize::new(0);

/// Sets the stage at which hinted pack lookups stop (process-wide).
pub fn set_stage(stage: Stage) {
    let code = match stage {
        Stage::Full => FULL,
        Stage::Walk => WALK,
        Stage::Header => HEADER,
        Stage::Window => WINDOW,
        Stage::EmptyBranch => EMPTY_BRANCH,
        Stage::HeaderDependent(n) => DEPENDENT + n.min(DEPENDENT_MAX),
        Stage::ExactRecord => EXACT_RECORD,
    };
    STAGE.store(code, Ordering::Relaxed);
}

/// The stage set now, as its code.
#[inline(always)]
pub(crate) fn stage() -> u8 {
    STAGE.load(Ordering::Relaxed)
}

/// Gives [`Stage::ExactRecord`] its list: `addresses[i]` is where the record of the `i`-th
/// lookup from now starts (0: prefetch nothing). Lookups past the list's end prefetch nothing.
///
/// # Safety
/// `addresses` stays alive and unmoved until the next call (or [`clear_record_oracle`]), and
/// only one thread looks up while it is set.
pub unsafe fn set_record_oracle(addresses: &[usize]) {
    ORACLE.store(addresses.as_ptr().cast_mut(), Ordering::Relaxed);
    ORACLE_LEN.store(addresses.len(), Ordering::Relaxed);
    ORACLE_NEXT.store(0, Ordering::Relaxed);
}

/// Forgets the oracle's list.
pub fn clear_record_oracle() {
    ORACLE_LEN.store(0, Ordering::Relaxed);
    ORACLE.store(core::ptr::null_mut(), Ordering::Relaxed);
}

/// The next lookup's record address from the oracle's list (0 past its end).
#[inline(always)]
pub(crate) fn next_record() -> usize {
    let next = ORACLE_NEXT.load(Ordering::Relaxed);
    if next >= ORACLE_LEN.load(Ordering::Relaxed) {
        return 0;
    }
    ORACLE_NEXT.store(next + 1, Ordering::Relaxed);
    // SAFETY: `next` is below the list's length, and the list is alive and unmoved while set
    // (`set_record_oracle`'s contract).
    unsafe { *ORACLE.load(Ordering::Relaxed).add(next) }
}

/// `24 * n` register adds that wait on `seed`, folded into the result.
#[inline(always)]
pub(crate) fn dependent_adds(seed: u64, n: u8) -> u64 {
    let (mut a, mut b, mut c, mut d) = (seed, seed ^ 1, seed ^ 2, seed ^ 3);
    for _ in 0..n {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: register arithmetic only: no memory, no stack, no flags the caller reads.
        unsafe {
            core::arch::asm!(
                ".rept 6",
                "add {a}, 1",
                "add {b}, 1",
                "add {c}, 1",
                "add {d}, 1",
                ".endr",
                a = inout(reg) a,
                b = inout(reg) b,
                c = inout(reg) c,
                d = inout(reg) d,
                options(nomem, nostack)
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            for _ in 0..6 {
                a = core::hint::black_box(a) + 1;
                b = core::hint::black_box(b) + 1;
                c = core::hint::black_box(c) + 1;
                d = core::hint::black_box(d) + 1;
            }
        }
    }
    a ^ b ^ c ^ d
}
