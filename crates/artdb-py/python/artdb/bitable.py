"""bitable: immutable, memory-mapped sorted tables.

``build(path, sorted_pairs, durable=True, overwrite=False)`` writes a file from ``(key, value)`` pairs in strictly
increasing key order; ``open(path)`` maps it and returns a read-only mapping with ``get``,
``range``, ``prefix``, ``len`` and iteration in key order.
"""

from __future__ import annotations

import collections.abc as _abc
import os
from typing import Union

from ._artdb import Bitable, build_bitable, open_bitable

__all__ = ["build", "open", "Bitable"]


def build(
    path: Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"],
    sorted_pairs: _abc.Iterable[tuple[Union[bytes, bytearray, memoryview], Union[bytes, bytearray, memoryview]]],
    *,
    durable: bool = True,
    overwrite: bool = False,
) -> dict[str, int]:
    """Builds the bitable file ``path`` from ``(key, value)`` pairs in strictly increasing key
    order (``UnsortedError``/``DuplicateKeyError`` otherwise; no file appears then). ``durable``
    syncs before the file appears under its name. An existing file at ``path`` is refused with
    ``FileExistsError`` unless ``overwrite=True`` (then replaced whole when the build
    succeeds). Returns ``{"pairs": n, "file_bytes": n}``."""
    return build_bitable(path, sorted_pairs, durable=durable, overwrite=overwrite)


def open(path: Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]) -> Bitable:  # noqa: A001  (mirrors artdb.open)
    """Opens the bitable file at ``path`` (read-only, memory-mapped). ``NotADatabaseError``
    if it is no bitable (an artdb database says so)."""
    return open_bitable(path)


_abc.Mapping.register(Bitable)
