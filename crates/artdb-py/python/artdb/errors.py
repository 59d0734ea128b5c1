"""The exceptions of artdb: one hierarchy under :class:`artdb.Error`.

Every message is a sentence that says what to do. The classes mirror the engine's error kinds;
``IoError`` is also an :class:`OSError` (with ``errno`` set when the operating system gave one),
``NotSupportedError`` also a :class:`NotImplementedError`, ``KeyDecodeError`` also a
:class:`ValueError`.
"""

from __future__ import annotations

__all__ = [
    "Error",
    "IoError",
    "CorruptionError",
    "NotADatabaseError",
    "LockedError",
    "AlreadyExistsError",
    "KeyTooLargeError",
    "ValueTooLargeError",
    "TableNotFoundError",
    "TableExistsError",
    "InvalidTableNameError",
    "TableNotEmptyError",
    "UnsortedError",
    "DuplicateKeyError",
    "ConflictError",
    "PoisonedError",
    "ReadOnlyError",
    "FileTooLargeError",
    "ClosedError",
    "TransactionClosedError",
    "NotSupportedError",
    "KeyDecodeError",
]


class Error(Exception):
    """Base class of every artdb error."""


class IoError(Error, OSError):
    """An I/O call on a file failed (also an ``OSError``; ``errno`` is set when known)."""


class CorruptionError(Error):
    """A file is damaged (a checksum or an invariant failed); restore it from a backup."""


class NotADatabaseError(Error):
    """The file is not of the kind it was opened as: ``artdb.open`` of a file that is no artdb
    database (text, another format, an artdb bitable, or an empty file opened with
    ``create=False`` or ``read_only=True``), or ``artdb.bitable.open`` of a file that is no
    bitable (an artdb database, ...). Not damage, so not a :class:`CorruptionError`: the message
    says what the file is; check the path."""


class LockedError(Error):
    """The database file is open in another process or handle; close that one first."""


class AlreadyExistsError(Error):
    """The file to create already exists."""


class KeyTooLargeError(Error):
    """A key is longer than the limit (4096 bytes in the engine)."""


class ValueTooLargeError(Error):
    """A value is longer than the limit."""


class TableNotFoundError(Error):
    """No table of that name exists; create it first."""


class TableExistsError(Error):
    """A table of that name already exists."""


class InvalidTableNameError(Error):
    """A table name is empty or too long."""


class TableNotEmptyError(Error):
    """A bulk load needs an empty table; use ``update`` on a table that has keys."""


class UnsortedError(Error):
    """Input that must be sorted (a bitable build) is not in strictly increasing key order."""


class DuplicateKeyError(Error):
    """Input that must not repeat a key (a bitable build) repeats one."""


class ConflictError(Error):
    """A write transaction conflicted with one that committed after it started; nothing of it
    was applied. Run it again (``db.transact`` does)."""


class PoisonedError(Error):
    """An earlier I/O error left the file in an unknown state; reopen the database."""


class ReadOnlyError(Error):
    """A write, a table change or a checkpoint on a database opened with ``read_only=True``;
    open it again without ``read_only`` to write."""


class FileTooLargeError(Error):
    """The database file would grow past what artdb can address."""


class ClosedError(Error):
    """The database (or bitable) was closed; open it again."""


class TransactionClosedError(Error):
    """The transaction or snapshot has ended (committed, aborted, or left its ``with`` block)."""


class NotSupportedError(Error, NotImplementedError):
    """An option the engine in this build does not have yet (the message says which)."""


class KeyDecodeError(Error, ValueError):
    """Bytes given to ``artdb.keys.unpack`` are not a key made by ``artdb.keys.pack``."""
