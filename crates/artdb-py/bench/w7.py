"""W7 (shared/BENCHMARKS.md): what a Python user sees. artdb-py beside python-lmdb, rocksdict,
plyvel, sqlite3 and duckdb, one child process per system, in one run.

Data: N random 16-byte keys (a seeded generator, the same in every process) with 100-byte values,
given to every system in the same random order. Operations, each timed in the child:
- bulk_load: all N pairs, made durable, by the system's fastest documented path (artdb:
  `t.load(pairs)`, sorted in Rust; lmdb: sorted, `putmulti(append=True)` in one txn; rocksdict:
  one `WriteBatch` written with sync; plyvel: one `write_batch(sync=True)`; sqlite3: one
  transaction of `executemany` into a WITHOUT ROWID table, WAL mode, synchronous=FULL; duckdb:
  `INSERT ... SELECT` from an Arrow table into a table with a PRIMARY KEY). The sort of the
  systems that need sorted input is inside the timing.
- get: G random present keys one at a time (artdb: in one read snapshot, and separately each
  lookup its own statement; lmdb: in one read txn).
- iterate: every pair in key order with its value.
- range10: R random start keys, the next 10 pairs from each.
- put_durable: P single puts, each durable before the next (artdb: durability="sync"). Right
  after them in the same child, the floor: P 128-byte overwrites of a preallocated file in the
  same directory, each followed by fdatasync (fdatasync_floor_ops_s), and the puts' rate as a
  fraction of it (put_durable_per_floor). The children run one after another and the disk's sync
  rate moves with other tenants' I/O: compare systems' puts by that fraction.
The parent prints one table (a column per system) and the ratio of artdb to python-lmdb, then
each system's version (asked of the installed package in its child) and configuration; the JSON
has both under "systems".

Usage: python w7.py --n 1000000 [--systems artdb,lmdb,...] [--json PATH] [--dir DIR]
(the peers: pip install -r requirements-w7.txt beside this script)
"""

import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

SYSTEMS = ["artdb", "lmdb", "rocksdict", "plyvel", "sqlite3", "duckdb"]
# How each system is configured here (the module docstring gives the operations).
CONFIGURATION = {
    "artdb": "durability='sync' (one fdatasync per commit); load through Table.load",
    "lmdb": "map_size 8 GiB, sync=True, metasync=True; one write txn per put",
    "rocksdict": "raw_mode, WriteOptions.sync=True on every write",
    "plyvel": "create_if_missing, sync=True on every write",
    "sqlite3": "journal_mode=WAL, synchronous=FULL, WITHOUT ROWID table, autocommit puts",
    "duckdb": "a table with a PRIMARY KEY; load by INSERT ... SELECT from Arrow, then CHECKPOINT; "
              "autocommit puts",
}
# The PyPI distribution of each system's module (sqlite3 is in the standard library).
DISTRIBUTION = {"artdb": "artdb", "lmdb": "lmdb", "rocksdict": "rocksdict", "plyvel": "plyvel",
                "duckdb": "duckdb"}


def version(system):
    """The installed version of a system, asked in its child process after the import."""
    import importlib.metadata
    import platform

    if system == "sqlite3":
        import sqlite3

        return f"SQLite {sqlite3.sqlite_version} (Python {platform.python_version()})"
    text = importlib.metadata.version(DISTRIBUTION[system])
    if system == "lmdb":
        import lmdb

        text += " (LMDB " + ".".join(str(part) for part in lmdb.version()) + ")"
    return text
KEY_BYTES = 16
VALUE_BYTES = 100


def make_data(n, seed=7):
    rng = random.Random(seed)
    keys = list({rng.getrandbits(128).to_bytes(KEY_BYTES, "big") for _ in range(n)})
    while len(keys) < n:
        keys.append(rng.getrandbits(128).to_bytes(KEY_BYTES, "big"))
        keys = list(set(keys))
    rng.shuffle(keys)
    values = [rng.getrandbits(VALUE_BYTES * 8).to_bytes(VALUE_BYTES, "big") for _ in range(n)]
    return keys, values


def timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


class Child:
    """Runs the operations for one system and records figures."""

    def __init__(self, system, n, directory, gets, ranges, puts):
        self.system = system
        self.n = n
        self.dir = directory
        self.gets, self.ranges, self.puts = gets, ranges, puts
        self.out = []

    def figure(self, op, value, unit):
        print(f"  {self.system:<10} {op:<22} {value:>14.4f} {unit}", flush=True)
        self.out.append({"system": self.system, "op": op, "value": value, "unit": unit})

    def run(self):
        keys, values = make_data(self.n)
        pairs = list(zip(keys, values))
        rng = random.Random(11)
        get_keys = [keys[rng.randrange(self.n)] for _ in range(self.gets)]
        range_starts = [rng.getrandbits(128).to_bytes(KEY_BYTES, "big") for _ in range(self.ranges)]
        expect = dict(pairs)
        getattr(self, "run_" + self.system)(pairs, get_keys, range_starts, expect)

    def report_common(self, load_s, get_s, iterate_s, count, range_s, put_s):
        # Called right after the puts: the disk's sync rate moves between the children's runs
        # (other tenants' I/O), so each system's puts are read against the floor measured at
        # their time.
        floor_s = fdatasync_floor(self.dir, self.puts_used)
        self.figure("bulk_load_s", load_s, "s")
        self.figure("bulk_load_kpairs_s", self.n / load_s / 1e3, "kpairs/s")
        self.figure("get_kops_s", len(self.get_keys_used) / get_s / 1e3, "kops/s")
        if count != self.n:
            raise SystemExit(f"{self.system}: iterated {count} pairs, expected {self.n}")
        self.figure("iterate_s", iterate_s, "s")
        self.figure("iterate_kpairs_s", count / iterate_s / 1e3, "kpairs/s")
        self.figure("range10_kops_s", self.ranges_used / range_s / 1e3, "kops/s")
        self.figure("put_durable_ops_s", self.puts_used / put_s, "ops/s")
        self.figure("fdatasync_floor_ops_s", self.puts_used / floor_s, "ops/s")
        self.figure("put_durable_per_floor", floor_s / put_s, "x")

    def check_get(self, key, value, expect):
        if value != expect[key]:
            raise SystemExit(f"{self.system}: wrong value for {key.hex()}")

    # -- artdb ------------------------------------------------------------------------------
    def run_artdb(self, pairs, get_keys, range_starts, expect):
        import artdb

        path = os.path.join(self.dir, "w7.artdb")
        db = artdb.open(path, durability="sync")
        db.create_table("kv")
        t = db.table("kv")
        load_s, _ = timed(lambda: t.load(pairs))
        self.figure("file_bytes_after_load", os.path.getsize(path), "bytes")

        def gets_snapshot():
            with db.read() as snap:
                st = snap.table("kv")
                for k in get_keys:
                    self.check_get(k, st[k], expect)

        get_s, _ = timed(gets_snapshot)

        def gets_statement():
            for k in get_keys:
                self.check_get(k, t[k], expect)

        statement_s, _ = timed(gets_statement)

        def iterate():
            count = 0
            for _k, _v in t.items():
                count += 1
            return count

        iterate_s, count = timed(iterate)

        def ranges():
            with db.read() as snap:
                st = snap.table("kv")
                for start in range_starts:
                    for _ in itertools.islice(st.range(start), 10):
                        pass

        range_s, _ = timed(ranges)
        put_keys = [b"put-%012d" % i for i in range(self.puts)]

        def puts():
            for k in put_keys:
                t[k] = b"v" * VALUE_BYTES

        put_s, _ = timed(puts)
        self.get_keys_used, self.ranges_used, self.puts_used = get_keys, len(range_starts), len(put_keys)
        self.report_common(load_s, get_s, iterate_s, count, range_s, put_s)
        self.figure("get_statement_kops_s", len(get_keys) / statement_s / 1e3, "kops/s")
        # Not durable each: the same puts committed with durability "nosync".
        nosync_keys = [b"nosync-%012d" % i for i in range(self.puts * 20)]

        def puts_nosync():
            for k in nosync_keys:
                with db.write(durability="nosync") as tx:
                    tx.table("kv")[k] = b"v" * VALUE_BYTES

        nosync_s, _ = timed(puts_nosync)
        self.figure("put_nosync_ops_s", len(nosync_keys) / nosync_s, "ops/s")
        db.close()
        self.figure("file_bytes", os.path.getsize(path), "bytes")

    # -- lmdb --------------------------------------------------------------------------------
    def run_lmdb(self, pairs, get_keys, range_starts, expect):
        import lmdb

        path = os.path.join(self.dir, "w7.lmdb")
        env = lmdb.open(path, map_size=8 << 30, subdir=True, sync=True, metasync=True)

        def load():
            ordered = sorted(pairs)
            with env.begin(write=True) as txn:
                txn.cursor().putmulti(ordered, append=True)

        load_s, _ = timed(load)

        def gets():
            with env.begin() as txn:
                for k in get_keys:
                    self.check_get(k, txn.get(k), expect)

        get_s, _ = timed(gets)

        def iterate():
            count = 0
            with env.begin() as txn:
                for _k, _v in txn.cursor():
                    count += 1
            return count

        iterate_s, count = timed(iterate)

        def ranges():
            with env.begin() as txn:
                cursor = txn.cursor()
                for start in range_starts:
                    if cursor.set_range(start):
                        for _ in itertools.islice(cursor.iternext(), 10):
                            pass

        range_s, _ = timed(ranges)
        put_keys = [b"put-%012d" % i for i in range(self.puts)]

        def puts():
            for k in put_keys:
                with env.begin(write=True) as txn:
                    txn.put(k, b"v" * VALUE_BYTES)

        put_s, _ = timed(puts)
        self.get_keys_used, self.ranges_used, self.puts_used = get_keys, len(range_starts), len(put_keys)
        self.report_common(load_s, get_s, iterate_s, count, range_s, put_s)
        env.close()
        self.figure("file_bytes", os.path.getsize(os.path.join(path, "data.mdb")), "bytes")

    # -- rocksdict ---------------------------------------------------------------------------
    def run_rocksdict(self, pairs, get_keys, range_starts, expect):
        from rocksdict import Options, Rdict, WriteBatch, WriteOptions

        path = os.path.join(self.dir, "w7.rocks")
        options = Options(raw_mode=True)
        db = Rdict(path, options)
        sync = WriteOptions()
        sync.sync = True

        def load():
            batch = WriteBatch(raw_mode=True)
            for k, v in pairs:
                batch.put(k, v)
            db.write(batch, sync)

        load_s, _ = timed(load)

        def gets():
            for k in get_keys:
                self.check_get(k, db[k], expect)

        get_s, _ = timed(gets)

        def iterate():
            count = 0
            for _k, _v in db.items():
                count += 1
            return count

        iterate_s, count = timed(iterate)

        def ranges():
            for start in range_starts:
                for _ in itertools.islice(db.items(from_key=start), 10):
                    pass

        range_s, _ = timed(ranges)
        put_keys = [b"put-%012d" % i for i in range(self.puts)]

        def puts():
            for k in put_keys:
                db.put(k, b"v" * VALUE_BYTES, sync)

        put_s, _ = timed(puts)
        self.get_keys_used, self.ranges_used, self.puts_used = get_keys, len(range_starts), len(put_keys)
        self.report_common(load_s, get_s, iterate_s, count, range_s, put_s)
        db.close()
        self.figure("file_bytes", dir_bytes(path), "bytes")

    # -- plyvel ------------------------------------------------------------------------------
    def run_plyvel(self, pairs, get_keys, range_starts, expect):
        import plyvel

        path = os.path.join(self.dir, "w7.leveldb")
        db = plyvel.DB(path, create_if_missing=True)

        def load():
            with db.write_batch(sync=True) as batch:
                for k, v in pairs:
                    batch.put(k, v)

        load_s, _ = timed(load)

        def gets():
            for k in get_keys:
                self.check_get(k, db.get(k), expect)

        get_s, _ = timed(gets)

        def iterate():
            count = 0
            for _k, _v in db:
                count += 1
            return count

        iterate_s, count = timed(iterate)

        def ranges():
            for start in range_starts:
                with db.iterator(start=start) as it:
                    for _ in itertools.islice(it, 10):
                        pass

        range_s, _ = timed(ranges)
        put_keys = [b"put-%012d" % i for i in range(self.puts)]

        def puts():
            for k in put_keys:
                db.put(k, b"v" * VALUE_BYTES, sync=True)

        put_s, _ = timed(puts)
        self.get_keys_used, self.ranges_used, self.puts_used = get_keys, len(range_starts), len(put_keys)
        self.report_common(load_s, get_s, iterate_s, count, range_s, put_s)
        db.close()
        self.figure("file_bytes", dir_bytes(path), "bytes")

    # -- sqlite3 -----------------------------------------------------------------------------
    def run_sqlite3(self, pairs, get_keys, range_starts, expect):
        import sqlite3

        path = os.path.join(self.dir, "w7.sqlite")
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
        con.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")

        def load():
            con.execute("BEGIN")
            con.executemany("INSERT INTO kv VALUES (?, ?)", sorted(pairs))
            con.execute("COMMIT")

        load_s, _ = timed(load)

        def gets():
            cur = con.cursor()
            for k in get_keys:
                self.check_get(k, cur.execute("SELECT v FROM kv WHERE k = ?", (k,)).fetchone()[0], expect)

        get_s, _ = timed(gets)

        def iterate():
            count = 0
            for _k, _v in con.execute("SELECT k, v FROM kv ORDER BY k"):
                count += 1
            return count

        iterate_s, count = timed(iterate)

        def ranges():
            cur = con.cursor()
            for start in range_starts:
                cur.execute("SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT 10", (start,)).fetchall()

        range_s, _ = timed(ranges)
        put_keys = [b"put-%012d" % i for i in range(self.puts)]

        def puts():
            for k in put_keys:
                con.execute("INSERT INTO kv VALUES (?, ?)", (k, b"v" * VALUE_BYTES))

        put_s, _ = timed(puts)
        self.get_keys_used, self.ranges_used, self.puts_used = get_keys, len(range_starts), len(put_keys)
        self.report_common(load_s, get_s, iterate_s, count, range_s, put_s)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        self.figure("file_bytes", os.path.getsize(path), "bytes")

    # -- duckdb ------------------------------------------------------------------------------
    def run_duckdb(self, pairs, get_keys, range_starts, expect):
        import duckdb
        import pyarrow as pa

        path = os.path.join(self.dir, "w7.duckdb")
        con = duckdb.connect(path)
        con.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB)")

        def load():
            arrow = pa.table({
                "k": pa.array([k for k, _ in pairs], pa.binary()),
                "v": pa.array([v for _, v in pairs], pa.binary()),
            })
            con.register("incoming", arrow)
            con.execute("INSERT INTO kv SELECT k, v FROM incoming")
            con.unregister("incoming")
            con.execute("CHECKPOINT")

        load_s, _ = timed(load)
        # DuckDB's per-query cost (~1 ms here) would make G lookups take minutes: fewer.
        get_keys = get_keys[: max(1, len(get_keys) // 40)]

        def gets():
            for k in get_keys:
                self.check_get(k, con.execute("SELECT v FROM kv WHERE k = ?", [k]).fetchone()[0], expect)

        get_s, _ = timed(gets)

        def iterate():
            count = 0
            cur = con.execute("SELECT k, v FROM kv ORDER BY k")
            while True:
                rows = cur.fetchmany(100000)
                if not rows:
                    return count
                count += len(rows)

        iterate_s, count = timed(iterate)
        range_starts = range_starts[: max(1, len(range_starts) // 20)]

        def ranges():
            for start in range_starts:
                con.execute("SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT 10", [start]).fetchall()

        range_s, _ = timed(ranges)
        put_keys = [b"put-%012d" % i for i in range(self.puts)]

        def puts():
            for k in put_keys:
                con.execute("INSERT INTO kv VALUES (?, ?)", [k, b"v" * VALUE_BYTES])

        put_s, _ = timed(puts)
        self.get_keys_used, self.ranges_used, self.puts_used = get_keys, len(range_starts), len(put_keys)
        self.report_common(load_s, get_s, iterate_s, count, range_s, put_s)
        con.close()
        size = os.path.getsize(path)
        if os.path.exists(path + ".wal"):
            size += os.path.getsize(path + ".wal")
        self.figure("file_bytes", size, "bytes")


def fdatasync_floor(directory, count):
    """Seconds for `count` overwrites of one 128-byte record in a preallocated file, each followed
    by fdatasync: about what one durable put per sync can reach on this disk at this time."""
    path = os.path.join(directory, "fdatasync-floor")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.pwrite(fd, bytes(128 * count), 0)
        os.fsync(fd)
        record = b"r" * 128
        start = time.perf_counter()
        for i in range(count):
            os.pwrite(fd, record, 128 * i)
            os.fdatasync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _dirs, names in os.walk(path) for name in names)


def parent(args):
    systems = args.systems.split(",")
    results = []
    versions = {}
    base = args.dir or tempfile.mkdtemp(prefix="w7-")
    for system in systems:
        directory = os.path.join(base, system)
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        out = os.path.join(directory, "result.json")
        print(f"== {system}", flush=True)
        command = [sys.executable, __file__, "--child", system, "--n", str(args.n),
                   "--dir", directory, "--out", out, "--gets", str(args.gets),
                   "--ranges", str(args.ranges), "--puts", str(args.puts)]
        finished = subprocess.run(command)
        if finished.returncode != 0:
            print(f"  {system}: FAILED (exit {finished.returncode}); not in the table", flush=True)
            continue
        with open(out) as f:
            child_result = json.load(f)
        results.extend(child_result["figures"])
        versions[system] = child_result["version"]
        shutil.rmtree(directory, ignore_errors=True)
    table(results, systems, args.n)
    described = {s: {"version": versions[s], "configuration": CONFIGURATION[s]}
                 for s in systems if s in versions}
    print("versions and configuration:")
    for system, about in described.items():
        print(f"  {system} {about['version']}: {about['configuration']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": "w7", "n": args.n, "results": results,
                       "systems": described}, f, indent=1)


def table(results, systems, n):
    ops = []
    for r in results:
        if r["op"] not in ops:
            ops.append(r["op"])
    value = {(r["system"], r["op"]): r["value"] for r in results}
    print(f"\nW7, N = {n:,}: figures per system (higher is better for rates, lower for s and bytes)")
    print(f"{'op':<24}" + "".join(f"{s:>14}" for s in systems) + f"{'artdb/lmdb':>12}")
    for op in ops:
        row = f"{op:<24}"
        for s in systems:
            v = value.get((s, op))
            row += f"{'-':>14}" if v is None else f"{v:>14.1f}" if v >= 100 else f"{v:>14.3f}"
        a, l = value.get(("artdb", op)), value.get(("lmdb", op))
        row += f"{a / l:>12.2f}" if a is not None and l else f"{'':>12}"
        print(row)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--gets", type=int, default=200_000)
    parser.add_argument("--ranges", type=int, default=20_000)
    parser.add_argument("--puts", type=int, default=200)
    parser.add_argument("--dir")
    parser.add_argument("--json")
    parser.add_argument("--child")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.child:
        child = Child(args.child, args.n, args.dir, min(args.gets, args.n), args.ranges, args.puts)
        child.run()
        with open(args.out, "w") as f:
            json.dump({"figures": child.out, "version": version(args.child)}, f)
    else:
        parent(args)


if __name__ == "__main__":
    main()
