#!/bin/sh
# Runs the SIGKILL loop of crates/artdb/tests/sigkill.rs for many cycles (default 1000):
# a child process commits numbered transactions and is killed at random moments; after each
# kill the database must hold every printed commit, at most one more, never part of one.
# Usage: scripts/sigkill-loop.sh [CYCLES]   (replay a failure with ARTDB_TEST_SEED=<seed>)
set -eu
cycles="${1:-1000}"
cd "$(dirname "$0")/.."
ARTDB_SIGKILL_CYCLES="$cycles" cargo test --release -p artdb --test sigkill -- \
    --exact sigkill_loop --nocapture
