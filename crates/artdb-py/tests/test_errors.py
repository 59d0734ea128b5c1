"""Error classes and messages: each failure a Python user meets has its own class under
artdb.Error, and a message in Python terms that fits on a line or two."""

import errno

import pytest

import artdb
from artdb import bitable
from artdb.keys import unpack

# Terms of the Rust API and of the command-line tool, which a Python user never meets.
FOREIGN_TERMS = [
    "Db::",
    "Options::",
    "artdb stats",
    "artdb verify",
    "artdb bitable",
    "write batch",
    "made by create",
    "bulk_load",
    "KeyReader",
    "artdb-key",
    "os error",
    "{ at:",
]


def assert_python_terms(error):
    message = str(error)
    for term in FOREIGN_TERMS:
        assert term not in message, f"{term!r} in {message!r}"


def test_a_file_of_another_kind_is_not_a_database_error(tmp_path):
    """Symptom: artdb.open of a text file (or of a bitable) raised CorruptionError, whose remedy
    is "restore it from a backup", though nothing was damaged: the path was wrong. Cause: the
    binding mapped the engine's NotADatabase to CorruptionError, having no class for it."""
    text = tmp_path / "notes.txt"
    text.write_bytes(b"this is not a database\n" * 1000)
    with pytest.raises(artdb.NotADatabaseError) as info:
        artdb.open(text)
    assert isinstance(info.value, artdb.Error)
    assert not isinstance(info.value, artdb.CorruptionError)
    assert str(text) in str(info.value) and "check the path" in str(info.value)
    assert "backup" not in str(info.value)
    table = tmp_path / "t.bt"
    bitable.build(table, [(b"k", b"v")])
    with pytest.raises(artdb.NotADatabaseError, match=r"artdb\.bitable\.open"):
        artdb.open(table)
    for error in [artdb.NotADatabaseError, artdb.ReadOnlyError]:
        assert error.__doc__ and "backup" not in error.__doc__
        assert issubclass(error, artdb.Error)
        assert error.__name__ in artdb.__all__ and error.__name__ in artdb.errors.__all__


def test_a_write_on_a_read_only_database_is_read_only_error(path):
    """Symptom: a write on a database opened with read_only=True raised a bare artdb.Error, so
    it could be caught only with everything else, and its message named "the read-only (or
    salvage) option", which artdb.open does not have. Cause: the engine's ReadOnly variant fell
    through to the base class."""
    with artdb.open(path) as db:
        db.table("t", create=True)[b"k"] = b"v"
    with artdb.open(path, read_only=True) as db:
        writes = [
            lambda: db.table("t").__setitem__(b"k2", b"v"),
            lambda: db.create_table("u"),
            lambda: db.drop_table("t"),
            lambda: db.checkpoint(),
        ]
        for write in writes:
            with pytest.raises(artdb.ReadOnlyError, match="read_only=True") as info:
                write()
            assert type(info.value) is artdb.ReadOnlyError
            assert "salvage" not in str(info.value)
        with pytest.raises(artdb.ReadOnlyError):
            with db.write() as tx:
                tx.table("t")[b"k3"] = b"v"
        assert db.table("t")[b"k"] == b"v"


def test_messages_use_python_terms(db, table, tmp_path):
    """Symptom: messages told Python users to use "Db::transact", "`artdb stats FILE`", "a write
    batch", "create", and showed key-decode errors as Rust Debug (`UnknownTag { at: 0, tag:
    255 }`). Cause: every message was the engine's Display, which speaks to Rust and the CLI."""
    table[b"k"] = b"v"
    first, second = db.write(), db.write()
    first.table("t")[b"k"] = b"1"
    second.table("t")[b"k"] = b"2"
    first.commit()
    with pytest.raises(artdb.ConflictError) as conflict:
        second.commit()
    assert "Database.transact" in str(conflict.value) and "b'k'" in str(conflict.value)
    with pytest.raises(artdb.TableNotFoundError) as missing:
        db.table("missing")
    assert "create_table" in str(missing.value) and "'missing'" in str(missing.value)
    with pytest.raises(artdb.TableNotEmptyError) as not_empty:
        table.load([(b"x", b"")])
    assert "Table.update" in str(not_empty.value)
    with pytest.raises(artdb.IoError) as not_found:
        artdb.open(tmp_path / "missing.artdb", create=False)
    assert "create=True" in str(not_found.value)
    with pytest.raises(artdb.KeyDecodeError) as undecodable:
        unpack(b"\xfe")
    assert "artdb.keys.pack" in str(undecodable.value)
    with pytest.raises(artdb.KeyDecodeError) as cut:
        unpack(b"\x05ab")
    for error in [conflict, missing, not_empty, not_found, undecodable, cut]:
        assert_python_terms(error.value)


def test_long_names_are_cut_in_messages(db):
    """Symptom: a 1,000-character table name was echoed whole in TableNotFoundError and
    InvalidTableNameError. Cause: messages formatted the name with Rust's Debug, uncut."""
    name = "n" * 1000
    with pytest.raises(artdb.TableNotFoundError) as missing:
        db.table(name)
    with pytest.raises(artdb.InvalidTableNameError) as invalid:
        db.create_table(name)
    for error in [missing, invalid]:
        message = str(error.value)
        assert len(message) < 400, message
        assert "'" + "n" * 60 + "'..." in message and "1000 characters" in message
    assert "1 to 255 bytes" in str(invalid.value) and "1000 bytes" in str(invalid.value)
    with pytest.raises(artdb.InvalidTableNameError, match="''"):
        db.create_table("")
    key = b"\x01" * 3000
    table = db.table("t", create=True)
    table[key] = b"v"
    first, second = db.write(), db.write()
    first.table("t")[key] = b"1"
    second.table("t")[key] = b"2"
    first.commit()
    with pytest.raises(artdb.ConflictError) as conflict:
        second.commit()
    assert len(str(conflict.value)) < 600 and "a key of 3000 bytes" in str(conflict.value)


def test_errno_is_shown_once(tmp_path):
    """Symptom: an IoError read "[Errno 2] I/O error while trying to open: No such file or
    directory (os error 2)". Cause: Python's OSError shows its errno, and the message was the
    Rust io::Error's Display, which appends it again."""
    with pytest.raises(artdb.IoError) as info:
        bitable.open(tmp_path / "missing.bt")
    assert info.value.errno == errno.ENOENT
    assert str(info.value).startswith("[Errno 2] ")
    assert "os error" not in str(info.value)
    with pytest.raises(artdb.IoError) as directory:
        artdb.open(tmp_path, create=False)
    assert str(directory.value).count(str(directory.value.errno)) == 1
    assert "os error" not in str(directory.value)
