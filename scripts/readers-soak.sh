#!/bin/sh
# Runs the reader-process test of crates/artdb/tests/readers.rs at soak scale (default 100,
# i.e. 10 minutes instead of 6 s): a writer process commits, checkpoints, compacts and shrinks
# in a loop while reader processes hold snapshots for random lengths of time and check every
# value; readers and the writer are SIGKILLed at random and restarted. Every snapshot must be
# one whole durable commit; after the run no reader slot may be left live.
# Usage: scripts/readers-soak.sh [SCALE]
set -eu
scale="${1:-100}"
cd "$(dirname "$0")/.."
ARTDB_TEST_SCALE="$scale" cargo test --release -p artdb --test readers -- \
    --exact readers_in_other_processes_see_only_whole_commits_through_kills --nocapture
