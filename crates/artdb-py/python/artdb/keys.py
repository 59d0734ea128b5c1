"""Ordered keys from tuples: ``pack(*values) -> bytes`` and ``unpack(key) -> tuple``.

Byte order of packed keys is tuple order, so a table keyed by ``pack(...)`` iterates in the order
of the tuples: ``sorted(ts) == [unpack(k) for k in sorted(pack(*t) for t in ts)]`` for tuples
whose values at each position share a type. Types: ``None``, ``bool``, ``int`` (signed 64-bit),
``float`` (64-bit; -0.0 sorts before 0.0), ``str`` and ``bytes``. Across types the order is
None < bool < int < float < bytes < str. Prefix scans work on leading values:
``t.prefix(pack("user", 7))`` finds every key that starts with those two values.
"""

from __future__ import annotations

from ._artdb import pack, unpack

__all__ = ["pack", "unpack"]
