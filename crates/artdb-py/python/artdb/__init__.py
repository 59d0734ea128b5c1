"""artdb: an embedded transactional ordered key-value store indexed by an adaptive radix tree.

Quick start::

    import artdb
    with artdb.open("example.artdb") as db:
        t = db.table("users", create=True)
        t[b"alice"] = b"1"
        print(dict(t.items()))
        with db.write() as tx:
            tx.table("users")[b"bob"] = b"2"

Tables are mappings of ``bytes`` to ``bytes`` in key order; ``artdb.keys.pack`` makes ordered
keys from tuples; ``artdb.bitable`` builds and reads immutable sorted files. Errors are
subclasses of :class:`artdb.Error` (see :mod:`artdb.errors`).
"""

from __future__ import annotations

import collections.abc as _abc

from . import bitable, errors, keys
from ._artdb import (
    Database,
    Iterator,
    Snapshot,
    Table,
    TableView,
    WriteTransaction,
    __version__,
    open,
)
from .errors import *  # noqa: F401,F403  (the exception classes are part of the API)
from .errors import __all__ as _error_names

_abc.MutableMapping.register(Table)
_abc.KeysView.register(TableView)
_abc.Iterator.register(Iterator)

__all__ = [
    "open",
    "Database",
    "Table",
    "TableView",
    "Iterator",
    "Snapshot",
    "WriteTransaction",
    "keys",
    "bitable",
    "errors",
    "__version__",
    *_error_names,
]
