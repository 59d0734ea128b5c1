#!/usr/bin/env bash
# YCSB workloads A-F on artdb beside the Go stores (bbolt, badger, pebble), through go-ycsb's
# client built with the drivers in bindings/go/ycsb, and one table of ops/s and p99 latency
# per workload per store, with the ratio to the best Go store.
#
# Usage: crates/artdb-bench/scripts/ycsb.sh quick|full [OUT_DIR]
#   quick: 2,000 records, 2,000 operations, 1 thread (the CI smoke run; it fails when any
#          operation failed)
#   full:  1,000,000 records, 1,000,000 operations, 1 and 2 threads (hours where a durable
#          commit costs milliseconds: every write of a run is one; YCSB_OPS scales it down)
#   Environment overrides: YCSB_RECORDS, YCSB_OPS, YCSB_THREADS ("1 2"), YCSB_STORES
#   ("artdb bbolt badger pebble"), YCSB_ROUNDS (quick 1, full 3), YCSB_DIR (where the databases
#   live, default OUT_DIR/data; every store's at once: about 1.6 GB each at 1M records).
#
# Workloads are upstream YCSB's workloads/workloada..f, passed as properties (go-ycsb's
# bundled copies differ: uniform distributions, maxscanlength=1): records of 10 fields of 100
# bytes, reads of all fields, updates of one field, hashed insert order; A 50/50 read/update,
# B 95/5 read/update, C read only, D 95/5 read/insert with the latest distribution, E 95/5
# scan/insert with scans of 1 to 100 records (uniform), F 50/50 read/read-modify-write; A, B,
# C, E and F draw keys from the zipfian distribution. As upstream recommends, A, B, C, F and D
# run in that order on one load, and E on a fresh load.
#
# Durability, each store's own durable setting: artdb syncs its log at every commit (its
# default); bbolt fsyncs at every commit (its default); badger runs with SyncWrites on (its
# default is off); pebble commits with pebble.Sync. The load inserts 1,000 records per
# transaction (go-ycsb's batch.size) in every store; the run commits every write on its own.
#
# go-ycsb v1.0.3 draws zipfian keys from [0, recordcount] inclusive and, unlike upstream, does
# not skip keys past the last insert, so one key that was never loaded is read now and then:
# the load inserts recordcount + 1 records and the runs use recordcount, so that key exists.
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT="$PWD"
SCALE="${1:-quick}"
OUT="${2:-target/ycsb-$SCALE}"
case "$SCALE" in
  quick) RECORDS="${YCSB_RECORDS:-2000}" OPS="${YCSB_OPS:-2000}" THREADS="${YCSB_THREADS:-1}" ROUNDS="${YCSB_ROUNDS:-1}" ;;
  full) RECORDS="${YCSB_RECORDS:-1000000}" OPS="${YCSB_OPS:-1000000}" THREADS="${YCSB_THREADS:-1 2}" ROUNDS="${YCSB_ROUNDS:-3}" ;;
  *) echo "usage: $0 quick|full [OUT_DIR]" >&2; exit 2 ;;
esac
STORES="${YCSB_STORES:-artdb bbolt badger pebble}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
DATA="${YCSB_DIR:-$OUT/data}"
BIN="$ROOT/target/ycsb/artdb-ycsb"

cargo build --release -p artdb-capi
(cd bindings/go/ycsb && go build -o "$BIN" .)

common=(-p workload=core -p fieldcount=10 -p fieldlength=100 -p readallfields=true
  -p writeallfields=false -p insertorder=hashed -p maxscanlength=100
  -p scanlengthdistribution=uniform -p recordcount="$RECORDS" -p operationcount="$OPS")
workload_props() {
  case "$1" in
    a) echo "readproportion=0.5 updateproportion=0.5 scanproportion=0 insertproportion=0 readmodifywriteproportion=0 requestdistribution=zipfian" ;;
    b) echo "readproportion=0.95 updateproportion=0.05 scanproportion=0 insertproportion=0 readmodifywriteproportion=0 requestdistribution=zipfian" ;;
    c) echo "readproportion=1 updateproportion=0 scanproportion=0 insertproportion=0 readmodifywriteproportion=0 requestdistribution=zipfian" ;;
    d) echo "readproportion=0.95 updateproportion=0 scanproportion=0 insertproportion=0.05 readmodifywriteproportion=0 requestdistribution=latest" ;;
    e) echo "readproportion=0 updateproportion=0 scanproportion=0.95 insertproportion=0.05 readmodifywriteproportion=0 requestdistribution=zipfian" ;;
    f) echo "readproportion=0.5 updateproportion=0 scanproportion=0 insertproportion=0 readmodifywriteproportion=0.5 requestdistribution=zipfian" ;;
  esac
}

load() { # store threads
  "$BIN" load "$1" "${common[@]}" -p recordcount="$((RECORDS + 1))" -p batch.size=1000 \
    -p threadcount="$2" -p dropdata=true -p "$1.dir=$DATA/$1" >"$OUT/$1-t$2-load.log" 2>&1
}
run() { # store threads workload round
  local props=()
  for p in $(workload_props "$3"); do props+=(-p "$p"); done
  "$BIN" run "$1" "${common[@]}" "${props[@]}" -p threadcount="$2" -p "$1.dir=$DATA/$1" \
    >"$OUT/$1-t$2-$3-r$4.log" 2>&1
}

# The stores take turns: every store is loaded, then each workload runs ROUNDS times, each round
# every store in turn, so a slow stretch of a shared machine (a disk's sync latency moves by 10x
# under other writers) falls on all of them alike; the table reports each store's median round.
for threads in $THREADS; do
  echo "== $threads thread(s): load $((RECORDS + 1)) into $STORES; run A B C F D, $ROUNDS round(s) each, the stores in turn"
  for store in $STORES; do load "$store" "$threads"; done
  for w in a b c f d; do
    for round in $(seq "$ROUNDS"); do
      for store in $STORES; do run "$store" "$threads" "$w" "$round"; done
    done
  done
  echo "== $threads thread(s): load again, run E"
  for store in $STORES; do load "$store" "$threads"; done
  for round in $(seq "$ROUNDS"); do
    for store in $STORES; do run "$store" "$threads" e "$round"; done
  done
  for store in $STORES; do rm -rf "${DATA:?}/$store"; done
done

# One row per workload, store and thread count from go-ycsb's final report (the lines after
# "Run finished"; the ones before are interim): ops/s is operationcount over the run's time
# (TOTAL counts the read and the update of a read-modify-write apart), p99 the highest of the
# operation types' (the slowest kind of operation), failed the *_ERROR counts.
python3 - "$OUT" "$THREADS" "$STORES" "$RECORDS" "$OPS" "$ROUNDS" <<'EOF'
import re, statistics, sys
out, threads, stores, records, ops, rounds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4], sys.argv[5], int(sys.argv[6])
UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "\u00b5s": 1e-6, "us": 1e-6, "ns": 1e-9}
def parse(path):
    seconds, p99, slowest, errors = None, 0, "-", 0
    for line in open(path, encoding="utf-8"):
        m = re.match(r"Run finished, takes (.+)$", line)
        if m:
            seconds = sum(float(v) * UNITS[u] for v, u in
                          re.findall("([\\d.]+)(h|ms|\u00b5s|us|ns|m|s)", m.group(1)))
            continue
        m = re.match(r"(\w+)\s+- Takes\(s\): [\d.]+, Count: (\d+),.*99th\(us\): (\d+),", line)
        if seconds is None or not m or m.group(1) == "TOTAL":
            continue
        if m.group(1).endswith("_ERROR"):
            errors += int(m.group(2))
        elif int(m.group(3)) > p99:
            p99, slowest = int(m.group(3)), m.group(1)
    if not seconds:
        sys.exit(f"no final report in {path}: the run failed, see the log")
    return int(ops) / seconds, p99, slowest, errors
def median_round(store, t, w):
    """The round whose ops/s is the median of the store's rounds (its p99 with it); failed
    operations summed over every round."""
    runs = sorted((parse(f"{out}/{store}-t{t}-{w}-r{r}.log") for r in range(1, rounds + 1)),
                  key=lambda run: run[0])
    opsps, p99, slowest, _ = runs[(len(runs) - 1) // 2] if len(runs) % 2 else runs[len(runs) // 2]
    return opsps, p99, slowest, sum(run[3] for run in runs), [run[0] for run in runs]
lines = [f"YCSB: {records} records, {ops} operations per workload and round, {rounds} round(s), "
         "the stores in turn; ops/s and p99 of each store's median round; ratio = ops/s over "
         "the best Go store's",
         "", "| workload | threads | store | ops/s | p99 (us) | slowest op | failed ops | ratio to best Go store |",
         "| --- | ---: | --- | ---: | ---: | --- | ---: | ---: |"]
failed = 0
for w in "abcdef":
    for t in threads:
        rows = {s: median_round(s, t, w) for s in stores}
        go = [rows[s][0] for s in stores if s != "artdb"]
        best = max(go) if go else None
        for s in stores:
            opsps, p99, slowest, errors, _ = rows[s]
            failed += errors
            ratio = f"{opsps / best:.2f}x" if best else "-"
            lines.append(f"| {w.upper()} | {t} | {s} | {opsps:,.0f} | {p99:,} | {slowest} | {errors} | {ratio} |")
if rounds > 1:
    lines += ["", "every round's ops/s, in order: " + "; ".join(
        f"{w.upper()} t{t} {s} " + "/".join(f"{x:,.0f}" for x in median_round(s, t, w)[4])
        for w in "abcdef" for t in threads for s in stores)]
text = "\n".join(lines)
print(text)
open(f"{out}/table.md", "w").write(text + "\n")
if failed:
    sys.exit(f"{failed} operations failed: see the *_ERROR lines in {out}/*.log")
EOF
