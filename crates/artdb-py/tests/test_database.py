"""Database-level API: open/close/context manager, tables, checkpoint, stats, verify, errors."""

import errno
import os
import subprocess
import sys

import pytest

import artdb


def test_open_creates_and_reopens(path):
    with artdb.open(path) as db:
        assert db.path == str(path)
        assert db.durability == "sync"
        assert not db.closed
        db.create_table("a")
        db.table("a")[b"k"] = b"v"
    assert db.closed
    with artdb.open(path, create=False) as db:
        assert db.table_names() == ["a"]
        assert db.table("a")[b"k"] == b"v"


def test_open_missing_without_create_is_ioerror(tmp_path):
    with pytest.raises(artdb.IoError) as info:
        artdb.open(tmp_path / "missing.artdb", create=False)
    assert isinstance(info.value, OSError)
    assert isinstance(info.value, artdb.Error)
    assert info.value.errno == errno.ENOENT


def test_open_bad_options(path):
    with pytest.raises(ValueError, match="durability"):
        artdb.open(path, durability="sometimes")


def test_read_only_open_reads_beside_readers_and_refuses_writes(path):
    # There was no way to open a database one may not write (a chmod 444 file, another user's):
    # open always asked for write access.
    with artdb.open(path) as db:
        db.table("t", create=True)[b"k"] = b"v"
    before = path.read_bytes()
    with artdb.open(path, read_only=True) as first, artdb.open(path, read_only=True) as second:
        assert first.table("t")[b"k"] == b"v"
        assert dict(second.table("t")) == {b"k": b"v"}
        with pytest.raises(artdb.ReadOnlyError, match="read_only=True"):
            first.table("t")[b"k2"] = b"v"
        with pytest.raises(artdb.ReadOnlyError, match="read_only=True"):
            first.create_table("u")
    assert path.read_bytes() == before
    # A writer runs beside read-only handles (readers in other processes, docs/recovery.md),
    # and their next read sees its durable commits.
    with artdb.open(path, read_only=True) as reader:
        assert reader.table("t")[b"k"] == b"v"
        with artdb.open(path) as writer:
            writer.table("t")[b"k2"] = b"w"
            assert reader.table("t")[b"k2"] == b"w"
    with pytest.raises(artdb.IoError):
        artdb.open(path.parent / "missing.artdb", read_only=True)
    assert not (path.parent / "missing.artdb").exists()


def test_second_open_is_locked(db, path):
    with pytest.raises(artdb.LockedError, match="close that one first"):
        artdb.open(path)


def test_not_a_database_is_not_a_database_error(tmp_path):
    bad = tmp_path / "bad.artdb"
    bad.write_bytes(b"this is not a database" * 1000)
    with pytest.raises(artdb.NotADatabaseError):
        artdb.open(bad)


def test_tables(db):
    assert db.table_names() == []
    db.create_table("b")
    db.create_table("a")
    assert db.table_names() == ["a", "b"]
    with pytest.raises(artdb.TableExistsError):
        db.create_table("a")
    with pytest.raises(artdb.InvalidTableNameError):
        db.create_table("")
    with pytest.raises(artdb.TableNotFoundError, match="create it first"):
        db.table("missing")
    assert db.table("c", create=True).name == "c"
    db.drop_table("b")
    assert db.table_names() == ["a", "c"]
    with pytest.raises(artdb.TableNotFoundError):
        db.drop_table("b")


def test_table_dropped_under_a_handle(db):
    t = db.table("t", create=True)
    t[b"k"] = b"v"
    db.drop_table("t")
    with pytest.raises(artdb.TableNotFoundError):
        t[b"k"]
    with pytest.raises(artdb.TableNotFoundError):
        t[b"k"] = b"v"
    with pytest.raises(artdb.TableNotFoundError):
        len(t)
    with pytest.raises(artdb.TableNotFoundError):
        list(t)


def test_checkpoint_stats_verify(db):
    t = db.table("t", create=True)
    for i in range(1000):
        t[i.to_bytes(4, "big")] = b"x" * (i % 20)
    stats = db.stats()
    assert stats["tables"]["t"] == {"keys": 1000, "dirty": True}
    assert stats["durability"] == "nosync"
    written = db.checkpoint()
    assert written["tables_written"] == 1
    assert written["bytes_written"] > 0
    assert db.stats()["tables"]["t"]["dirty"] is False
    assert db.stats()["generation"] == written["generation"]
    assert db.stats()["file_bytes"] > 0
    assert db.verify() == {"tables_checked": 1, "keys_checked": 1000}


def test_verify_reports_damage(path):
    with artdb.open(path) as db:
        t = db.table("t", create=True)
        t.load((i.to_bytes(4, "big"), b"v" * 40) for i in range(20000))
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(b"\xAA" * 64)
    try:
        db = artdb.open(path)
    except artdb.CorruptionError:
        return
    with db:
        with pytest.raises(artdb.CorruptionError):
            db.verify()
            list(db.table("t").items())


def test_closed_database_raises_everywhere(path):
    db = artdb.open(path, durability="nosync")
    t = db.table("t", create=True)
    t[b"a"] = b"1"
    snap = db.read()
    tx = db.write()
    iterator = iter(t.items())
    db.close()
    db.close()  # idempotent
    for call in [
        lambda: t[b"a"],
        lambda: t.__setitem__(b"a", b"2"),
        lambda: len(t),
        lambda: list(t),
        lambda: next(iterator),
        lambda: snap.table("t"),
        lambda: tx.table("t"),
        lambda: tx.commit(),
        lambda: db.table("t"),
        lambda: db.table_names(),
        lambda: db.create_table("x"),
        lambda: db.drop_table("t"),
        lambda: db.checkpoint(),
        lambda: db.stats(),
        lambda: db.verify(),
        lambda: db.read(),
        lambda: db.write(),
        lambda: db.transact(lambda tx: None),
    ]:
        with pytest.raises(artdb.ClosedError, match="closed"):
            call()
    # Closing released the file: it opens again, with the data.
    with artdb.open(path) as again:
        assert again.table("t")[b"a"] == b"1"


def test_close_while_snapshots_live_releases_the_lock(path):
    db = artdb.open(path, durability="nosync")
    db.table("t", create=True).update({b"a": b"1", b"b": b"2"})
    it = db.table("t").range()
    assert next(it) == (b"a", b"1")
    with db.read() as snap:
        db.close()
        with pytest.raises(artdb.ClosedError):
            snap.table("t")
    with pytest.raises(artdb.ClosedError):
        next(it)
    artdb.open(path).close()


DURABILITY_CHILD = """
import os, sys, artdb
db = artdb.open(sys.argv[1], durability=sys.argv[2])
t = db.table("t", create=True)
t[b"k"] = b"v"
with db.write() as tx:
    tx.table("t")[b"in a transaction"] = b"v"
os._exit(0)  # no close, no checkpoint at exit: what a killed process leaves
"""


@pytest.mark.parametrize("durability", ["sync", "nosync"])
def test_commits_survive_a_process_exit_without_close(tmp_path, durability):
    # Both modes write the log record before the commit returns; "sync" also waits for it to be
    # on stable storage (a power loss, which a test cannot cause, is what tells them apart).
    path = tmp_path / "d.artdb"
    with artdb.open(path) as db:
        db.create_table("t")
    subprocess.run([sys.executable, "-c", DURABILITY_CHILD, str(path), durability], check=True)
    with artdb.open(path) as db:
        assert dict(db.table("t")) == {b"k": b"v", b"in a transaction": b"v"}


def test_repr(db):
    assert "open" in repr(db)
    assert repr(db.table("t", create=True)) == '<artdb.Table "t">'


def test_an_empty_file_opens_as_a_new_database(tmp_path):
    """Symptom: artdb.open of an empty file (as tempfile.NamedTemporaryFile makes) raised
    CorruptionError, where sqlite3 and lmdb set one up as a new database. Cause: open created
    only when no file existed, and opened anything else as a database."""
    empty = tmp_path / "empty.artdb"
    empty.write_bytes(b"")
    with pytest.raises(artdb.NotADatabaseError, match="empty"):
        artdb.open(empty, read_only=True)
    with pytest.raises(artdb.NotADatabaseError, match="empty"):
        artdb.open(empty, create=False)
    with artdb.open(empty) as db:
        db.table("t", create=True)[b"k"] = b"v"
    with artdb.open(empty, create=False) as db:
        assert db.table("t")[b"k"] == b"v"
