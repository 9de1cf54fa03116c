"""`idx/type/<type1><created8><id16>`: every memory by type, oldest first.

Kept for tombstoned memories too (`find(include_tombstoned=True)`).
"""

from __future__ import annotations

from ..records import IV_TYPE, created_bytes, id_of

PREFIX = b"idx/type/"


def key(mtype: int, created: int, raw_id: bytes) -> bytes:
    return PREFIX + bytes([mtype]) + created.to_bytes(8, "big") + raw_id


def prefix(mtype: int) -> bytes:
    return PREFIX + bytes([mtype])


def key_of(value: bytes) -> bytes:
    """The key of an entry, from its value (which holds type, created and id)."""
    return PREFIX + bytes([value[IV_TYPE]]) + created_bytes(value) + id_of(value)
