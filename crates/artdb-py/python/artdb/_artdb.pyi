"""Type stubs of the extension module ``artdb._artdb`` (re-exported by ``artdb``)."""

from __future__ import annotations

import array
import os
import sys
from collections.abc import ItemsView, KeysView, MutableMapping, ValuesView
from typing import Any, Callable, Generic, Iterable, Iterator as _Iterator, Literal, Mapping, TypeVar, Union, final, overload

if sys.version_info >= (3, 12):
    from collections.abc import Buffer as _BufferProtocol
else:
    from typing_extensions import Buffer as _BufferProtocol

Buffer = Union[bytes, bytearray, memoryview, "array.array[Any]", _BufferProtocol]
"""Keys and values: any bytes-like object (``str`` is refused with a ``TypeError``)."""

StrOrBytesPath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
"""A file path, as ``open()`` takes one."""

Durability = Literal["sync", "nosync"]
Isolation = Literal["snapshot", "serializable"]
_T = TypeVar("_T")
_D = TypeVar("_D")

__version__: str

def open(
    path: StrOrBytesPath,
    *,
    create: bool = True,
    durability: Durability = "sync",
    read_only: bool = False,
) -> Database:
    """Opens the database file at ``path`` (creating it when absent or empty and ``create``).

    ``read_only=True``: a shared lock beside other read-only handles (any read-write handle
    is excluded), writes raise ``ReadOnlyError``, and the file is never
    created or written (a database one may not write can be read).

    ``durability="sync"``: a commit returns once its write-ahead log record is on stable
    storage (concurrent commits share one fsync); ``"nosync"``: once the record is written (it
    survives the process being killed, not a power loss, until the next sync or checkpoint).
    Raises ``LockedError`` if another handle has it open, ``IoError`` (an ``OSError``) if it
    is missing and not ``create``, ``NotADatabaseError`` if it is not an artdb database,
    ``CorruptionError`` if it is one that is damaged."""

@final
class Database:
    """An open database; also a context manager that closes it on exit."""

    @property
    def path(self) -> str:
        """The database file."""
    @property
    def closed(self) -> bool:
        """Whether ``close`` ran."""
    @property
    def durability(self) -> Durability:
        """The default durability of commits."""
    def table(self, name: str, *, create: bool = False) -> Table:
        """The table ``name``: a mutable mapping, each statement its own transaction.
        ``TableNotFoundError`` if absent (unless ``create``)."""
    def table_names(self) -> list[str]:
        """Names of the tables, in order."""
    def create_table(self, name: str) -> None:
        """Creates an empty table (``TableExistsError``, ``InvalidTableNameError``)."""
    def drop_table(self, name: str) -> None:
        """Drops a table and its keys (``TableNotFoundError``)."""
    def read(self) -> Snapshot:
        """A read snapshot: ``with db.read() as snap:`` sees one consistent state."""
    def write(self, *, durability: Durability | None = None, isolation: Isolation = "snapshot") -> WriteTransaction:
        """A write transaction: ``with db.write() as tx:`` commits on normal exit, aborts on an
        exception. ``ConflictError`` at commit means nothing was applied."""
    def transact(
        self,
        function: Callable[[WriteTransaction], _T],
        *,
        retries: int = 16,
        durability: Durability | None = None,
        isolation: Isolation = "snapshot",
    ) -> _T:
        """Runs ``function(tx)`` in a transaction and commits; on ``ConflictError`` runs it again
        (up to ``retries`` more times, with randomized backoff). Returns its result."""
    def checkpoint(self) -> dict[str, int]:
        """Makes every commit durable; returns what it wrote (generation, bytes_written, ...)."""
    def stats(self) -> dict[str, Any]:
        """Tables (keys, dirty), file size, pages, generation, durability, and ``log`` (bytes,
        records, last_lsn, covered_lsn, file_bytes, commits, syncs)."""
    def verify(self) -> dict[str, int]:
        """Checks every checksum and invariant; ``CorruptionError`` naming the damage, else
        ``{"tables_checked": n, "keys_checked": n}``."""
    def close(self) -> None:
        """Checkpoints and closes (idempotent). Everything of it raises ``ClosedError`` after."""
    def __enter__(self) -> Database: ...
    def __exit__(self, _kind: object, _value: object, _traceback: object) -> bool: ...

@final
class Table(MutableMapping[bytes, bytes]):
    """A ``MutableMapping[bytes, bytes]`` in key order (registered as one).

    From ``db.table``: each statement its own transaction; from ``snap.table``: read-only,
    one snapshot; from ``tx.table``: the transaction's view, writes buffered until commit.

    Every iterator (``iter(t)``, ``reversed(t)``, the views', ``range``, ``prefix``) shows the
    table as it was when the iterator was made, whatever is written while it runs: writing to
    the table while iterating it is allowed (no ``RuntimeError`` as with ``dict``), and the loop
    sees neither its own inserts, nor its deletions, nor its new values, in a transaction as
    outside one."""

    @property
    def name(self) -> str:
        """The table's name."""
    def __getitem__(self, key: Buffer) -> bytes: ...
    def __setitem__(self, key: Buffer, value: Buffer) -> None: ...
    def __delitem__(self, key: Buffer) -> None: ...
    def __contains__(self, key: object) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def __reversed__(self) -> Iterator[bytes]: ...
    def __eq__(self, other: object) -> bool: ...
    @overload
    def get(self, key: Buffer) -> bytes | None: ...
    @overload
    def get(self, key: Buffer, default: _D) -> bytes | _D: ...
    @overload
    def pop(self, key: Buffer) -> bytes:
        """Removes ``key`` and returns its value (``default`` or ``KeyError`` when absent)."""
    @overload
    def pop(self, key: Buffer, default: bytes) -> bytes: ...
    @overload
    def pop(self, key: Buffer, default: _D) -> bytes | _D: ...
    def popitem(self) -> tuple[bytes, bytes]:
        """Removes and returns the first pair (``KeyError`` when empty)."""
    def setdefault(self, key: Buffer, default: Buffer) -> bytes:
        """``t[key]`` if present, else stores and returns ``default`` (as ``bytes``); a
        default is required (a table holds no ``None``)."""
    def clear(self) -> None:
        """Removes every key (one transaction)."""
    def update(  # type: ignore[override]
        self, pairs: Mapping[Buffer, Buffer] | Iterable[tuple[Buffer, Buffer]] | None = None
    ) -> int:
        """Writes the pairs in one transaction (sorted in Rust with the GIL released; the last
        value of a repeated key wins); into an empty table a bulk load. Returns the count."""
    def load(self, pairs: Mapping[Buffer, Buffer] | Iterable[tuple[Buffer, Buffer]]) -> int:
        """Bulk load into an empty table (``TableNotEmptyError`` otherwise), sorted in Rust,
        written straight to the file and checkpointed, GIL released. Returns the count."""
    def keys(self) -> KeysView[bytes]:
        """Keys in order (a ``TableView``: iterable again, ``len``, ``in``)."""
    def values(self) -> ValuesView[bytes]:
        """Values in key order (a ``TableView``)."""
    def items(self) -> ItemsView[bytes, bytes]:
        """Pairs in key order (a ``TableView``)."""
    def range(
        self,
        start: Buffer | None = None,
        end: Buffer | None = None,
        *,
        inclusive_end: bool = False,
        reverse: bool = False,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Pairs with ``start <= key < end`` (``<= end`` with ``inclusive_end``), lazily, as the
        table was when this was called (writes made while it runs are not shown)."""
    def prefix(self, prefix: Buffer, *, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Pairs whose keys start with ``prefix``, lazily, as the table was when this was called
        (writes made while it runs are not shown)."""

@final
class TableView(Generic[_T]):
    """``keys()``/``values()``/``items()`` of a table."""
    def __iter__(self) -> Iterator[_T]: ...
    def __reversed__(self) -> Iterator[_T]: ...
    def __len__(self) -> int: ...
    def __contains__(self, item: object) -> bool: ...

@final
class Iterator(_Iterator[_T]):
    """A lazy iterator over the table as it was when the iterator was made (later writes, the
    transaction's own included, are not shown), read in batches with the GIL released. Raises
    ``ClosedError`` / ``TransactionClosedError`` once its database or transaction ended."""
    def __iter__(self) -> Iterator[_T]: ...
    def __next__(self) -> _T: ...

@final
class Snapshot:
    """A read snapshot (``with db.read() as snap:``)."""
    @property
    def active(self) -> bool:
        """Whether it can still be used."""
    def table(self, name: str) -> Table:
        """The table as of this snapshot (read-only)."""
    def table_names(self) -> list[str]:
        """Names of the tables in this snapshot."""
    def close(self) -> None:
        """Ends the snapshot (idempotent)."""
    def __enter__(self) -> Snapshot: ...
    def __exit__(self, _kind: object, _value: object, _traceback: object) -> bool: ...

@final
class WriteTransaction:
    """A write transaction (``with db.write() as tx:``)."""
    @property
    def active(self) -> bool:
        """Whether it can still be used."""
    @property
    def durability(self) -> Durability:
        """The durability of its commit."""
    @property
    def isolation(self) -> Isolation:
        """Its isolation level."""
    def table(self, name: str) -> Table:
        """The table as this transaction sees it (its own writes included; each iterator shows
        it as it was when the iterator was made)."""
    def create_table(self, name: str) -> None:
        """Creates an empty table, visible in this transaction at once and to others when it
        commits (``TableExistsError`` if it sees one; of two concurrent creates of one name,
        one commits and the other raises ``ConflictError``)."""
    def drop_table(self, name: str) -> None:
        """Drops a table and its keys, at once in this transaction and for others when it
        commits (``TableNotFoundError`` if it sees none). Its iterators made before still show
        the table as it was."""
    def table_names(self) -> list[str]:
        """Names of the tables as this transaction sees them, in order."""
    def commit(self) -> None:
        """Validates and applies (``ConflictError``: nothing applied, run it again)."""
    def abort(self) -> None:
        """Discards the changes (idempotent)."""
    def __enter__(self) -> WriteTransaction: ...
    def __exit__(self, kind: object, _value: object, _traceback: object) -> bool: ...

def pack(*values: None | bool | int | float | str | Buffer) -> bytes:
    """Packs values into a key whose byte order is the tuples' order (see ``artdb.keys``)."""

def unpack(key: Buffer) -> tuple[Any, ...]:
    """The values packed in ``key`` (``KeyDecodeError`` if it is not a packed key)."""

@final
class Bitable:
    """An open bitable: a read-only sorted mapping of bytes to bytes (see ``artdb.bitable``)."""
    @property
    def path(self) -> str: ...
    def __getitem__(self, key: Buffer) -> bytes: ...
    def __contains__(self, key: object) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def __reversed__(self) -> Iterator[bytes]: ...
    @overload
    def get(self, key: Buffer) -> bytes | None: ...
    @overload
    def get(self, key: Buffer, default: _D) -> bytes | _D: ...
    def keys(self) -> Iterator[bytes]: ...
    def values(self) -> Iterator[bytes]: ...
    def items(self) -> Iterator[tuple[bytes, bytes]]: ...
    def range(
        self,
        start: Buffer | None = None,
        end: Buffer | None = None,
        *,
        inclusive_end: bool = False,
        reverse: bool = False,
    ) -> Iterator[tuple[bytes, bytes]]: ...
    def prefix(self, prefix: Buffer, *, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...
    def verify(self) -> None:
        """Checks every page (``CorruptionError`` on damage)."""
    def close(self) -> None:
        """Unmaps the file (idempotent); later use raises ``ClosedError``."""
    def __enter__(self) -> Bitable: ...
    def __exit__(self, _kind: object, _value: object, _traceback: object) -> bool: ...

def build_bitable(
    path: StrOrBytesPath, pairs: Iterable[tuple[Buffer, Buffer]], *, durable: bool = True, overwrite: bool = False
) -> dict[str, int]: ...
def open_bitable(path: StrOrBytesPath) -> Bitable: ...
