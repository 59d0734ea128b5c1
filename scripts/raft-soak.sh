#!/bin/sh
# Runs the raft cluster's process test of crates/artdb-raft/tests/porcupine.rs for many kill
# cycles (default 100, about 5 minutes): three real server processes, four clients writing and
# reading linearizably, the leader SIGKILLed and restarted once a cycle; the whole history must
# be linearizable by porcupine (needs Go). Usage: scripts/raft-soak.sh [CYCLES]
set -eu
cycles="${1:-100}"
cd "$(dirname "$0")/.."
ARTDB_REQUIRE_GO=1 ARTDB_TEST_SCALE="$cycles" cargo test --release -p artdb-raft --test porcupine -- \
    --nocapture
