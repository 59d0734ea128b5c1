"""bitable: immutable, memory-mapped sorted tables.

``build(path, sorted_pairs, durable=True)`` writes a file from ``(key, value)`` pairs in strictly
increasing key order; ``open(path)`` maps it and returns a read-only mapping with ``get``,
``range``, ``prefix``, ``len`` and iteration in key order.
"""

from __future__ import annotations

import collections.abc as _abc
import os
from typing import Iterable, Union

from ._artdb import Bitable, build_bitable, open_bitable

__all__ = ["build", "open", "Bitable"]


def build(
    path: Union[str, "os.PathLike[str]"],
    sorted_pairs: Iterable[tuple[Union[bytes, bytearray, memoryview], Union[bytes, bytearray, memoryview]]],
    *,
    durable: bool = True,
) -> dict[str, int]:
    """Builds the bitable file ``path`` from ``(key, value)`` pairs in strictly increasing key
    order (``UnsortedError``/``DuplicateKeyError`` otherwise; no file appears then). ``durable``
    syncs before the file appears under its name. Returns ``{"pairs": n, "file_bytes": n}``."""
    return build_bitable(path, sorted_pairs, durable=durable)


def open(path: Union[str, "os.PathLike[str]"]) -> Bitable:  # noqa: A001  (mirrors artdb.open)
    """Opens the bitable file at ``path`` (read-only, memory-mapped)."""
    return open_bitable(path)


_abc.Mapping.register(Bitable)
