"""W2, DuckDB's side (run by `artdb-bench w2 --duckdb PYTHON`, see scripts/w2.sh).

CREATE TABLE integers (x INTEGER PRIMARY KEY); insert N sequential integers in one INSERT;
close (store); evict the file from the page cache; open; 5,000 point lookups spaced N/5,000
apart (cold), then again (hot); file size; peak RSS. Also the median of a bare `select 1`, the
cost of a query round trip through SQL.
"""
import argparse
import json
import os
import statistics
import time

import duckdb


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def lookups(con, keys):
    micros = []
    start = time.perf_counter()
    for k in keys:
        t = time.perf_counter()
        rows = con.execute("SELECT x FROM integers WHERE x = ?", [k]).fetchall()
        micros.append((time.perf_counter() - t) * 1e6)
        if rows != [(k,)]:
            raise SystemExit(f"lookup of {k} returned {rows}")
    total = time.perf_counter() - start
    micros.sort()
    return total, micros[len(micros) // 2], micros[round((len(micros) - 1) * 0.99)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    path = os.path.join(args.dir, "w2.duckdb")
    for leftover in (path, path + ".wal"):
        if os.path.exists(leftover):
            os.remove(leftover)
    out = []

    def figure(op, value, unit):
        print(f"  duckdb {op:<33} {value:>14.3f} {unit}", flush=True)
        out.append({"system": "duckdb", "op": op, "value": value, "unit": unit})

    con = duckdb.connect(path)
    con.execute("CREATE TABLE integers (x INTEGER PRIMARY KEY)")
    start = time.perf_counter()
    con.execute(f"INSERT INTO integers SELECT range::INTEGER FROM range({args.n})")
    figure("insert_txn", time.perf_counter() - start, "s")
    start = time.perf_counter()
    con.close()
    figure("store", time.perf_counter() - start, "s")
    evict(path)
    start = time.perf_counter()
    con = duckdb.connect(path)
    figure("open", time.perf_counter() - start, "s")
    stride = max(1, args.n // 5000)
    keys = [min(i * stride, args.n - 1) for i in range(5000)]
    total, median, p99 = lookups(con, keys)
    figure("cold_total", total, "s")
    figure("cold_median_us", median, "us")
    figure("cold_p99_us", p99, "us")
    total, median, p99 = lookups(con, keys)
    figure("hot_total", total, "s")
    figure("hot_median_us", median, "us")
    figure("hot_p99_us", p99, "us")
    select1 = []
    for _ in range(1000):
        t = time.perf_counter()
        con.execute("SELECT 1").fetchall()
        select1.append((time.perf_counter() - t) * 1e6)
    figure("select1_median_us", statistics.median(select1), "us")
    con.close()
    size = os.path.getsize(path) + (os.path.getsize(path + ".wal") if os.path.exists(path + ".wal") else 0)
    figure("file_bytes", size, "bytes")
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the parent (artdb-bench).
    with open("/proc/self/status") as status:
        hwm = next(line for line in status if line.startswith("VmHWM:"))
    figure("peak_rss_bytes", int(hwm.split()[1]) * 1024, "bytes")
    os.remove(path)
    with open(args.json, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
