"""Cookbook: range-partitioned bitable shards built in parallel with Dask, and reads routed to them.

A data set too large for one build (or one machine's build time) is split by key range into
shards: shard i holds the keys from ``boundaries[i-1]`` (inclusive) to ``boundaries[i]``
(exclusive). Dask builds the shards in parallel, each an ordinary bitable file; a small JSON
manifest records the boundaries and the files. ``ShardedBitable`` opens the manifest and routes
each point read to the one shard that can hold its key, and each range read through the shards
it spans, in key order.

Steps:
1. sample the keys and take quantiles as the boundaries (so shards are about equal in size);
2. a Dask bag of the records, each tagged with its shard, grouped by shard (Dask's shuffle);
3. per shard, one task sorts its pairs and calls ``artdb.bitable.build`` (tasks run in
   parallel, in worker processes with ``--scheduler processes``);
4. the manifest, then reads through ``ShardedBitable``, checked against the records.

Run (needs ``pip install dask`` and the artdb package, e.g. ``pip install ./crates/artdb-py``)::

    python examples/dask_bitable_shards.py --records 200000 --shards 8 --dir /tmp/shards

The records here are synthetic (``user/<number>`` to a small JSON document), produced out of key
order in several input partitions, as a real data set's files would be. Replace
``input_partitions`` with your reader (``dask.bag.read_text``, ``dask.dataframe.read_parquet``
then ``.to_bag()``, ...): everything after it only needs ``(key: bytes, value: bytes)`` pairs.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import random
import sys
import time
from collections.abc import Iterator
from typing import Any

import dask
import dask.bag as db

import artdb.bitable

MANIFEST = "manifest.json"


def synthetic_partition(partition: int, partitions: int, records: int) -> list[tuple[bytes, bytes]]:
    """One input partition: every ``partitions``-th record from ``partition``, shuffled."""
    numbers = list(range(partition, records, partitions))
    random.Random(partition).shuffle(numbers)
    return [record(number) for number in numbers]


def record(number: int) -> tuple[bytes, bytes]:
    """The record of ``number``: its key and value (a function of the number, so reads can be
    checked)."""
    # The multiplication scatters the numbers over the key space, so key order is not input order.
    key = f"user/{(number * 2654435761) % (1 << 32):010d}/{number}".encode()
    value = json.dumps({"id": number, "name": f"user {number}", "score": number % 997}).encode()
    return key, value


def choose_boundaries(sample: list[bytes], shards: int) -> list[bytes]:
    """``shards - 1`` split keys: quantiles of a sample of the keys."""
    sample = sorted(set(sample))
    if shards <= 1 or not sample:
        return []
    boundaries = [sample[len(sample) * i // shards] for i in range(1, shards)]
    return sorted(set(boundaries))


def shard_of(boundaries: list[bytes], key: bytes) -> int:
    """The shard that holds ``key``: keys below ``boundaries[0]`` are in shard 0, keys from
    ``boundaries[i-1]`` below ``boundaries[i]`` in shard i."""
    return bisect.bisect_right(boundaries, key)


def build_shard(directory: str, shard: int, pairs: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """Builds shard ``shard``'s bitable from its (unsorted) pairs; returns its manifest entry."""
    pairs.sort()
    path = os.path.join(directory, f"shard-{shard:04d}.bitable")
    stats = artdb.bitable.build(path, pairs, overwrite=True)
    return {
        "shard": shard,
        "file": os.path.basename(path),
        "pairs": stats["pairs"],
        "file_bytes": stats["file_bytes"],
        "first": pairs[0][0].hex() if pairs else None,
        "last": pairs[-1][0].hex() if pairs else None,
    }


def build_shards(bag: db.Bag, boundaries: list[bytes], directory: str) -> list[dict[str, Any]]:
    """Groups ``bag``'s pairs by shard and builds every shard in parallel; the manifest entries."""
    shards = len(boundaries) + 1
    grouped = bag.groupby(lambda pair: shard_of(boundaries, pair[0]), npartitions=shards)
    entries = grouped.map(lambda group: build_shard(directory, group[0], list(group[1])))
    built = sorted(entries.compute(), key=lambda entry: entry["shard"])
    # A shard no record fell in gets an empty bitable, so the router needs no special case.
    present = {entry["shard"] for entry in built}
    for shard in range(shards):
        if shard not in present:
            built.append(build_shard(directory, shard, []))
    return sorted(built, key=lambda entry: entry["shard"])


class ShardedBitable:
    """Read-only access to a set of range-partitioned shards through their manifest."""

    def __init__(self, directory: str) -> None:
        with open(os.path.join(directory, MANIFEST)) as file:
            manifest = json.load(file)
        self.boundaries = [bytes.fromhex(b) for b in manifest["boundaries"]]
        self.shards = [
            artdb.bitable.open(os.path.join(directory, entry["file"])) for entry in manifest["shards"]
        ]
        if len(self.shards) != len(self.boundaries) + 1:
            raise ValueError(f"{directory}: {len(self.shards)} shards for {len(self.boundaries)} boundaries")

    def get(self, key: bytes) -> bytes | None:
        """The value of ``key``, read from the one shard that can hold it."""
        return self.shards[shard_of(self.boundaries, key)].get(key)

    def range(self, start: bytes, end: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """The pairs from ``start`` to ``end`` (exclusive; ``None``: the last key), in key order,
        through the shards the range spans."""
        first = shard_of(self.boundaries, start)
        last = len(self.shards) - 1 if end is None else shard_of(self.boundaries, end)
        for shard in range(first, last + 1):
            yield from self.shards[shard].range(start, end)

    def __len__(self) -> int:
        return sum(len(shard) for shard in self.shards)

    def close(self) -> None:
        for shard in self.shards:
            shard.close()


def run(records: int, shards: int, partitions: int, directory: str, scheduler: str, workers: int) -> dict[str, Any]:
    os.makedirs(directory, exist_ok=True)
    started = time.perf_counter()
    bag = db.from_sequence(range(partitions), npartitions=partitions).map_partitions(
        lambda numbers: [pair for p in numbers for pair in synthetic_partition(p, partitions, records)]
    )
    with dask.config.set(scheduler=scheduler, num_workers=workers):
        # 1 in 100 keys (at least a few hundred) is plenty for even shards.
        fraction = min(1.0, max(0.01, 500 / max(records, 1)))
        sample = bag.random_sample(fraction, random_state=1).map(lambda pair: pair[0]).compute()
        boundaries = choose_boundaries(sample, shards)
        entries = build_shards(bag, boundaries, directory)
    manifest = {"boundaries": [b.hex() for b in boundaries], "shards": entries}
    with open(os.path.join(directory, MANIFEST), "w") as file:
        json.dump(manifest, file, indent=1)
    built_s = time.perf_counter() - started
    check(directory, records, boundaries)
    sizes = [entry["pairs"] for entry in entries]
    return {"records": records, "shards": len(entries), "pairs_per_shard": sizes, "build_s": round(built_s, 3)}


def check(directory: str, records: int, boundaries: list[bytes]) -> None:
    """Reads the shards back through the router: every read must match the records."""
    table = ShardedBitable(directory)
    try:
        if len(table) != records:
            raise AssertionError(f"the shards hold {len(table)} pairs, not {records}")
        rng = random.Random(7)
        for number in rng.sample(range(records), min(records, 2000)):
            key, value = record(number)
            if table.get(key) != value:
                raise AssertionError(f"{key!r} read back wrong")
        if table.get(b"user/absent") is not None:
            raise AssertionError("an absent key was found")
        # A range across every shard boundary comes back complete and in order.
        expected = sorted(record(number) for number in range(records))
        got = list(table.range(b""))
        if got != expected:
            raise AssertionError("a full range read differs from the records")
        if boundaries:
            low = boundaries[0][:-1]
            high = boundaries[-1] + b"\x00"
            window = [pair for pair in expected if low <= pair[0] < high]
            if list(table.range(low, high)) != window:
                raise AssertionError("a range spanning the shards differs from the records")
    finally:
        table.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--partitions", type=int, default=16, help="input partitions")
    parser.add_argument("--dir", default="target/dask-shards")
    parser.add_argument("--scheduler", default="processes", choices=["processes", "threads", "synchronous"])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    result = run(args.records, args.shards, args.partitions, args.dir, args.scheduler, args.workers)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
