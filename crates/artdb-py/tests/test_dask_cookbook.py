"""examples/dask_bitable_shards.py at a small scale: shards built by Dask, reads routed to them."""

import importlib.util
import json
import os
import pathlib

import pytest

dask = pytest.importorskip("dask")

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "examples" / "dask_bitable_shards.py"


def load_example():
    spec = importlib.util.spec_from_file_location("dask_bitable_shards", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shards_are_built_in_key_ranges_and_reads_find_every_record(tmp_path):
    example = load_example()
    # The example checks every read itself (point reads, a full range, a range over the
    # shard boundaries) and raises on any difference.
    result = example.run(3000, 4, 3, str(tmp_path), "threads", 2)
    assert result["records"] == 3000 and result["shards"] == 4
    assert sum(result["pairs_per_shard"]) == 3000
    manifest = json.loads((tmp_path / example.MANIFEST).read_text())
    boundaries = [bytes.fromhex(b) for b in manifest["boundaries"]]
    assert boundaries == sorted(boundaries) and len(boundaries) == 3
    for entry, low, high in zip(manifest["shards"], [None] + boundaries, boundaries + [None]):
        assert os.path.exists(tmp_path / entry["file"])
        if entry["first"] is not None:
            first, last = bytes.fromhex(entry["first"]), bytes.fromhex(entry["last"])
            assert low is None or first >= low
            assert high is None or last < high
    table = example.ShardedBitable(str(tmp_path))
    try:
        key, value = example.record(1234)
        assert table.get(key) == value
        assert table.get(key + b"!") is None
    finally:
        table.close()


def test_a_wrong_value_in_a_shard_is_caught(tmp_path):
    example = load_example()
    example.run(500, 2, 2, str(tmp_path), "threads", 1)
    manifest = json.loads((tmp_path / example.MANIFEST).read_text())
    boundaries = [bytes.fromhex(b) for b in manifest["boundaries"]]
    shard = manifest["shards"][1]
    path = tmp_path / shard["file"]
    with example.artdb.bitable.open(path) as table:
        pairs = list(table.items())
    key, value = pairs[len(pairs) // 2]
    pairs[len(pairs) // 2] = (key, value + b"x")
    example.artdb.bitable.build(path, pairs, overwrite=True)
    with pytest.raises(AssertionError):
        example.check(str(tmp_path), 500, boundaries)
