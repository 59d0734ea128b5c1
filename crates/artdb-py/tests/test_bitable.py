"""artdb.bitable: build, open, get, range, prefix, len, iteration, errors."""

import collections.abc
import os

import pytest

import artdb
from artdb import bitable


def build_sample(path, n=5000):
    pairs = [(b"k%06d" % i, b"v%d" % i) for i in range(n)]
    summary = bitable.build(path, iter(pairs), durable=True)
    assert summary["pairs"] == n and summary["file_bytes"] == os.path.getsize(path)
    return pairs


def test_build_open_read(tmp_path):
    path = tmp_path / "t.bt"
    pairs = build_sample(path)
    with bitable.open(path) as table:
        assert isinstance(table, collections.abc.Mapping)
        assert len(table) == 5000
        assert table[b"k000042"] == b"v42"
        assert table.get(b"nope") is None and table.get(b"nope", b"d") == b"d"
        assert b"k000001" in table and b"k" not in table
        with pytest.raises(KeyError):
            table[b"missing"]
        assert list(table) == [k for k, _ in pairs]
        assert list(table.items()) == pairs
        assert list(table.values()) == [v for _, v in pairs]
        assert list(table.keys())[:2] == [b"k000000", b"k000001"]
        assert list(reversed(table))[:2] == [b"k004999", b"k004998"]
        assert list(table.range(b"k000010", b"k000013")) == pairs[10:13]
        assert list(table.range(b"k000010", b"k000013", inclusive_end=True)) == pairs[10:14]
        assert list(table.range(b"k000010", b"k000013", reverse=True)) == pairs[10:13][::-1]
        assert list(table.range(b"k0049985")) == pairs[4999:]
        assert list(table.range(end=b"k000002")) == pairs[:2]
        assert list(table.range(end=b"k000002", inclusive_end=True, reverse=True)) == pairs[:3][::-1]
        assert list(table.range(b"z")) == [] and list(table.range(b"k000005", b"k000001")) == []
        assert list(table.prefix(b"k00001")) == pairs[10:20]
        assert list(table.prefix(b"k00001", reverse=True)) == pairs[10:20][::-1]
        table.verify()
    with pytest.raises(artdb.ClosedError):
        table[b"k000001"]
    with pytest.raises(artdb.ClosedError):
        len(table)


def test_build_refuses_unsorted_and_duplicates(tmp_path):
    with pytest.raises(artdb.UnsortedError, match="pair #1"):
        bitable.build(tmp_path / "u.bt", [(b"b", b""), (b"a", b"")])
    assert not (tmp_path / "u.bt").exists()
    with pytest.raises(artdb.DuplicateKeyError):
        bitable.build(tmp_path / "d.bt", [(b"a", b""), (b"a", b"")])
    with pytest.raises(TypeError, match=r"\.encode\(\)"):
        bitable.build(tmp_path / "s.bt", [("a", b"")])
    with pytest.raises(TypeError, match="pairs"):
        bitable.build(tmp_path / "p.bt", [b"ab"])


def test_open_errors(tmp_path):
    with pytest.raises(artdb.IoError):
        bitable.open(tmp_path / "missing.bt")
    junk = tmp_path / "junk.bt"
    junk.write_bytes(b"\x00" * 8192)
    with pytest.raises(artdb.NotADatabaseError):
        bitable.open(junk)


def test_damage_is_found(tmp_path):
    path = tmp_path / "t.bt"
    build_sample(path, 20000)
    with open(path, "r+b") as f:
        f.seek(4096 * 3 + 100)
        f.write(b"\xAB" * 16)
    with bitable.open(path) as table:
        with pytest.raises(artdb.CorruptionError):
            table.verify()
        with pytest.raises(artdb.CorruptionError):
            list(table.items())


def test_empty(tmp_path):
    path = tmp_path / "e.bt"
    bitable.build(path, [], durable=False)
    with bitable.open(path) as table:
        assert len(table) == 0 and list(table) == [] and list(reversed(table)) == []


def test_build_refuses_an_existing_file_unless_overwrite(tmp_path):
    """Symptom: bitable.build over an existing file (a database, another table) replaced it
    silently, where the CLI refuses. Cause: the builder links its temporary file into place by
    a rename, which replaces, and nothing checked first."""
    path = tmp_path / "t.bt"
    path.write_bytes(b"precious")
    with pytest.raises(FileExistsError) as info:
        bitable.build(path, [(b"k", b"v")])
    assert info.value.filename == str(path) and "overwrite=True" in str(info.value)
    assert path.read_bytes() == b"precious"
    bitable.build(path, [(b"k", b"v")], overwrite=True)
    with bitable.open(path) as table:
        assert dict(table.items()) == {b"k": b"v"}


def test_open_of_a_database_says_what_it_is(tmp_path):
    """Symptom: bitable.open of an artdb database raised "the file is not a bitable (its magic
    number is wrong)", with neither the path nor what the file is. Cause: the bitable crate's
    message, which knows neither, was passed through as it was."""
    path = tmp_path / "db.artdb"
    artdb.open(path).close()
    with pytest.raises(artdb.NotADatabaseError) as info:
        bitable.open(path)
    assert str(path) in str(info.value) and "artdb.open" in str(info.value)
    with pytest.raises(artdb.IoError, match=str(tmp_path / "missing.bt")):
        bitable.open(tmp_path / "missing.bt")


def test_paths_may_be_bytes_or_path_like(tmp_path):
    """Symptom: artdb.open(b"x.artdb") raised a TypeError about PyString, though Python's open()
    takes bytes paths. Cause: PyO3's PathBuf conversion accepts str and str PathLikes only."""
    raw = os.fsencode(tmp_path / "bytes.artdb")
    with artdb.open(raw) as db:
        db.table("t", create=True)[b"k"] = b"v"
    with artdb.open(os.fsdecode(raw)) as db:
        assert db.table("t")[b"k"] == b"v"
    bitable.build(os.fsencode(tmp_path / "b.bt"), [(b"k", b"v")])
    with bitable.open(os.fsencode(tmp_path / "b.bt")) as table:
        assert table[b"k"] == b"v"
    with pytest.raises(TypeError, match="PathLike"):
        artdb.open(42)
