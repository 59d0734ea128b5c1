"""W7's single durable puts, interleaved: every system in one process, each loaded with W7's N
pairs (w7.py's data and load), then R rounds in which each system in turn makes B single durable
puts (as w7.py's put_durable: artdb `t[k] = v` with durability="sync", lmdb one write txn each,
rocksdict and plyvel sync=True, sqlite3 autocommit in WAL mode with synchronous=FULL), and the
fdatasync floor (w7.py's: a 128-byte overwrite of a preallocated file, then fdatasync) takes its
turn as one more system. Each system's rate is its puts over the sum of its rounds' times: all
of them ran in the same stretch of time, so a disk whose sync rate moves (other tenants' I/O)
moves them alike, which W7's children, one after another, cannot give.

Usage: python w7_puts.py --n 1000000 [--rounds 50] [--batch 20] [--systems artdb,lmdb,...]
       [--dir DIR] [--json PATH]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import w7  # noqa: E402

SYSTEMS = ["artdb", "lmdb", "rocksdict", "plyvel", "sqlite3", "floor"]
VALUE = b"v" * w7.VALUE_BYTES


def open_artdb(directory, pairs):
    import artdb

    db = artdb.open(os.path.join(directory, "w7.artdb"), durability="sync")
    db.create_table("kv")
    t = db.table("kv")
    t.load(pairs)

    def put(key):
        t[key] = VALUE

    return put, db.close


def open_lmdb(directory, pairs):
    import lmdb

    env = lmdb.open(os.path.join(directory, "w7.lmdb"), map_size=8 << 30, subdir=True,
                    sync=True, metasync=True)
    with env.begin(write=True) as txn:
        txn.cursor().putmulti(sorted(pairs), append=True)

    def put(key):
        with env.begin(write=True) as txn:
            txn.put(key, VALUE)

    return put, env.close


def open_rocksdict(directory, pairs):
    from rocksdict import Options, Rdict, WriteBatch, WriteOptions

    db = Rdict(os.path.join(directory, "w7.rocks"), Options(raw_mode=True))
    sync = WriteOptions()
    sync.sync = True
    batch = WriteBatch(raw_mode=True)
    for k, v in pairs:
        batch.put(k, v)
    db.write(batch, sync)

    def put(key):
        db.put(key, VALUE, sync)

    return put, db.close


def open_plyvel(directory, pairs):
    import plyvel

    db = plyvel.DB(os.path.join(directory, "w7.leveldb"), create_if_missing=True)
    with db.write_batch(sync=True) as batch:
        for k, v in pairs:
            batch.put(k, v)

    def put(key):
        db.put(key, VALUE, sync=True)

    return put, db.close


def open_sqlite3(directory, pairs):
    import sqlite3

    con = sqlite3.connect(os.path.join(directory, "w7.sqlite"), isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=FULL")
    con.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")
    con.execute("BEGIN")
    con.executemany("INSERT INTO kv VALUES (?, ?)", sorted(pairs))
    con.execute("COMMIT")

    def put(key):
        con.execute("INSERT INTO kv VALUES (?, ?)", (key, VALUE))

    return put, con.close


def open_floor(directory, total):
    fd = os.open(os.path.join(directory, "fdatasync-floor"), os.O_RDWR | os.O_CREAT | os.O_TRUNC,
                 0o644)
    os.pwrite(fd, bytes(128 * total), 0)
    os.fsync(fd)
    record = b"r" * 128
    offset = [0]

    def put(_key):
        os.pwrite(fd, record, offset[0])
        os.fdatasync(fd)
        offset[0] += 128

    return put, lambda: os.close(fd)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--dir")
    parser.add_argument("--json")
    args = parser.parse_args()
    systems = args.systems.split(",")
    base = args.dir or tempfile.mkdtemp(prefix="w7-puts-")
    keys, values = w7.make_data(args.n)
    pairs = list(zip(keys, values))
    total = args.rounds * args.batch
    opened = {}
    for system in systems:
        directory = os.path.join(base, system)
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        if system == "floor":
            opened[system] = open_floor(directory, total)
        else:
            opened[system] = globals()["open_" + system](directory, pairs)
    del pairs
    spent = {system: 0.0 for system in systems}
    for round_ in range(args.rounds):
        batch = [b"put-%012d" % (round_ * args.batch + i) for i in range(args.batch)]
        # A different system goes first in each round.
        order = systems[round_ % len(systems):] + systems[:round_ % len(systems)]
        for system in order:
            put = opened[system][0]
            start = time.perf_counter()
            for key in batch:
                put(key)
            spent[system] += time.perf_counter() - start
    for system in systems:
        opened[system][1]()
    shutil.rmtree(base, ignore_errors=True)
    rates = {system: total / spent[system] for system in systems}
    print(f"W7 durable puts interleaved, N = {args.n:,}, {args.rounds} rounds of {args.batch}")
    print(f"{'system':<12}{'ops/s':>12}{'vs lmdb':>10}{'vs floor':>10}")
    for system in systems:
        vs_lmdb = f"{rates[system] / rates['lmdb']:>10.2f}" if "lmdb" in rates else f"{'-':>10}"
        vs_floor = f"{rates[system] / rates['floor']:>10.2f}" if "floor" in rates else f"{'-':>10}"
        print(f"{system:<12}{rates[system]:>12.1f}{vs_lmdb}{vs_floor}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": "w7_puts", "n": args.n, "rounds": args.rounds,
                       "batch": args.batch, "ops_s": rates}, f, indent=1)


if __name__ == "__main__":
    main()
