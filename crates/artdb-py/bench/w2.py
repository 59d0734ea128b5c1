"""W2 from Python (shared/BENCHMARKS.md): artdb-py beside DuckDB, one process each, one run.

artdb-py side: one table of N sequential 32-bit keys (big-endian, 4 bytes) mapping to their row id
(7 bytes, inline in the tree's child word, as in the native W2). build: `t.load(...)` (bulk load,
sorted input streamed to the file) and, in a second file, one transaction of N inserts
(`with db.write() as tx: tx.table(...).update(...)`); store: checkpoint and close; open after the
file is evicted from the page cache (posix_fadvise DONTNEED); cold: 5,000 lookups of keys 0,
N/5000, 2N/5000, ... right after that open; hot: the same again; file size; peak RSS (VmHWM).
DuckDB's side is artdb-bench's own `w2_duckdb.py` (CREATE TABLE integers (x INTEGER PRIMARY
KEY), one INSERT ... SELECT range(N)), run as a child process, so both columns come from the
same run on the same machine.

Usage: python w2.py --n 1000000 [--json PATH] [--dir DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DUCKDB_SIDE = os.path.join(HERE, "..", "..", "artdb-bench", "scripts", "w2_duckdb.py")


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def lookups(table, keys):
    micros = []
    start = time.perf_counter()
    for k in keys:
        t = time.perf_counter()
        value = table[k.to_bytes(4, "big")]
        micros.append((time.perf_counter() - t) * 1e6)
        if value != k.to_bytes(7, "little"):
            raise SystemExit(f"lookup of {k} returned {value!r}")
    total = time.perf_counter() - start
    micros.sort()
    return total, micros[len(micros) // 2], micros[round((len(micros) - 1) * 0.99)]


def artdb_side(n, directory, out_path):
    import artdb

    out = []

    def figure(op, value, unit):
        print(f"  artdb-py {op:<33} {value:>14.4f} {unit}", flush=True)
        out.append({"system": "artdb-py", "op": op, "value": value, "unit": unit})

    def pairs():
        return ((i.to_bytes(4, "big"), i.to_bytes(7, "little")) for i in range(n))

    path = os.path.join(directory, "w2.artdb")
    txn_path = os.path.join(directory, "w2-txn.artdb")
    for leftover in (path, txn_path):
        if os.path.exists(leftover):
            os.remove(leftover)
    db = artdb.open(path, durability="nosync")
    t = db.table("integers", create=True)
    start = time.perf_counter()
    t.load(pairs())
    figure("bulk_load", time.perf_counter() - start, "s")
    start = time.perf_counter()
    db.checkpoint()
    db.close()
    figure("store", time.perf_counter() - start, "s")

    txn_db = artdb.open(txn_path, durability="nosync")
    txn_db.create_table("integers")
    start = time.perf_counter()
    with txn_db.write() as tx:
        tx.table("integers").update(pairs())
    figure("insert_txn", time.perf_counter() - start, "s")
    start = time.perf_counter()
    txn_db.close()
    figure("insert_txn_store", time.perf_counter() - start, "s")
    os.remove(txn_path)

    evict(path)
    start = time.perf_counter()
    db = artdb.open(path, durability="nosync", create=False)
    figure("open", time.perf_counter() - start, "s")
    stride = max(1, n // 5000)
    keys = [min(i * stride, n - 1) for i in range(5000)]
    with db.read() as snap:
        table = snap.table("integers")
        total, median, p99 = lookups(table, keys)
        figure("cold_total", total, "s")
        figure("cold_median_us", median, "us")
        figure("cold_p99_us", p99, "us")
        total, median, p99 = lookups(table, keys)
        figure("hot_total", total, "s")
        figure("hot_median_us", median, "us")
        figure("hot_p99_us", p99, "us")
    db.close()
    figure("file_bytes", os.path.getsize(path), "bytes")
    with open("/proc/self/status") as status:
        hwm = next(line for line in status if line.startswith("VmHWM:"))
    figure("peak_rss_bytes", int(hwm.split()[1]) * 1024, "bytes")
    os.remove(path)
    with open(out_path, "w") as f:
        json.dump(out, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dir")
    parser.add_argument("--json")
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        artdb_side(args.n, args.dir, args.out)
        return
    directory = args.dir or tempfile.mkdtemp(prefix="w2py-")
    os.makedirs(directory, exist_ok=True)
    results = []
    for name, command in [
        ("artdb-py", [sys.executable, __file__, "--child", "--n", str(args.n), "--dir", directory,
                      "--out", os.path.join(directory, "artdb.json")]),
        ("duckdb", [sys.executable, DUCKDB_SIDE, "--n", str(args.n), "--dir", directory,
                    "--json", os.path.join(directory, "duckdb.json")]),
    ]:
        print(f"== {name}", flush=True)
        subprocess.run(command, check=True)
        with open(os.path.join(directory, "artdb.json" if name == "artdb-py" else "duckdb.json")) as f:
            results.extend(json.load(f))
    value = {(r["system"], r["op"]): r["value"] for r in results}
    ops = []
    for r in results:
        if r["op"] not in ops:
            ops.append(r["op"])
    print(f"\nW2 from Python, N = {args.n:,}")
    print(f"{'op':<22}{'artdb-py':>16}{'duckdb':>16}{'artdb/duckdb':>14}")
    for op in ops:
        a, d = value.get(("artdb-py", op)), value.get(("duckdb", op))
        fmt = lambda v: f"{'-':>16}" if v is None else f"{v:>16.4f}"
        ratio = f"{a / d:>14.4f}" if a is not None and d else f"{'':>14}"
        print(f"{op:<22}{fmt(a)}{fmt(d)}{ratio}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": "w2-python", "n": args.n, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
