#!/bin/bash
# Issue 13's figures of record, one workload after another (75 minutes on 2 cores): W1 random
# and dense 8-byte keys, 7-byte values' memory, 1 and 2 threads, composite keys and 128-byte
# values; W1 at 50M keys (8- and 16-byte keys); W2 at 50M and 1M (DuckDB in each size's first
# run); W3 at 130M; W4; and, given BULK, seek and memory of bulk-built and bulk-persisted trees
# beside an inserted one. Run it with nothing else on the machine.
#
# Usage: scripts/issue13-figures.sh BENCH OUT DIR PYTHON [BULK]
#   BENCH   the release artdb-bench binary (cargo build --release -p artdb-bench)
#   OUT     the log to append to
#   DIR     a scratch directory on the disk under test (W2's and W3's files; W3 needs ~12 GB)
#   PYTHON  a Python with the duckdb package (W2's peer)
#   BULK    the release bulk_vs_insert example of artdb-art
#           (cargo build --release -p artdb-art --example bulk_vs_insert)
set -u
B=$1; OUT=$2; DIR=$3; PY=$4; BULK=${5:-}
mkdir -p "$DIR/w2" "$DIR/w3"
run() {
  echo "=== $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg): $*" >>"$OUT"
  "$@" >>"$OUT" 2>&1
  local rc=$?
  echo "=== end $(date -u +%H:%M:%S) exit $rc" >>"$OUT"
}
w1() { run "$B" w1 --n 10000000 "$@"; }
w1 --key-len 8 --value-len 8 --keys random --structures artdb,btreemap,blart,congee --runs 3
w1 --key-len 8 --value-len 7 --keys dense --structures artdb,btreemap,blart,congee --runs 3
w1 --key-len 8 --value-len 7 --keys random --structures artdb --runs 1
w1 --structures artdb --threads 1 --runs 3
w1 --structures artdb --threads 2 --runs 3
for k in 16 32 64; do
  w1 --key-len "$k" --value-len 8 --keys random --structures artdb,btreemap --runs 3
done
w1 --key-len 8 --value-len 128 --keys random --structures artdb,btreemap --runs 3
if [ -n "$BULK" ]; then
  run "$BULK" 10000000 8
fi
for k in 8 16; do
  run "$B" w1 --n 50000000 --key-len "$k" --value-len 8 --keys random --structures artdb,btreemap,blart --runs 1
done
for n in 50000000 1000000; do
  for i in 1 2 3; do
    if [ "$i" = 1 ]; then peer=(--duckdb "$PY"); else peer=(); fi
    TMPDIR="$DIR/w2" run "$B" w2 --n "$n" "${peer[@]}"
  done
done
for i in 1 2 3; do
  run "$B" w3 --n 130000000 --reps 3 --only bitable,array --merge none --dir "$DIR/w3"
done
for i in 1 2 3; do run "$B" w4; done
for i in 1 2 3; do run "$B" w4 --pattern random; done
echo "=== done $(date -u +%H:%M:%S)" >>"$OUT"
