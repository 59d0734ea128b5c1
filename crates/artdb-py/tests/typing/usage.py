"""A typed use of artdb, checked by `mypy --strict` in ci.sh (not run by pytest): the stubs must
accept what the package accepts at run time and give precise types back.

Symptoms this guards: a Table could not be passed where a MutableMapping[bytes, bytes] is
taken, array keys were rejected though accepted at run time, and pop/setdefault returned Any
(which --strict's warn_return_any reports below)."""

from __future__ import annotations

import array
from collections.abc import MutableMapping
from typing import Optional

import artdb
from artdb import bitable


def count(mapping: MutableMapping[bytes, bytes]) -> int:
    return len(mapping)


def popped(table: artdb.Table) -> bytes:
    return table.pop(b"k")


def popped_or_none(table: artdb.Table) -> Optional[bytes]:
    return table.pop(b"k", None)


def set_default(table: artdb.Table) -> bytes:
    return table.setdefault(b"k", b"v")


def use(path: str) -> None:
    with artdb.open(path.encode(), durability="nosync") as db:
        table = db.table("t", create=True)
        count(table)
        table[array.array("B", b"key")] = b"value"
        table[memoryview(b"k2")] = bytearray(b"v")
        for key, value in table.items():
            key.decode(), value.decode()
        with db.write() as tx:
            tx.create_table("u")
            tx.table("u")[b"a"] = b"b"
            tx.drop_table("u")
            names: list[str] = tx.table_names()
            count(tx.table("t"))
        popped(table), popped_or_none(table), set_default(table)
    bitable.build(path + ".bt", [(b"k", b"v")], overwrite=True)
