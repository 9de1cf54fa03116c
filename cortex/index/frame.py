"""`idx/frame/<verb1><kind1><xxh3_128(ref)16><id16>`: memories of every type by frame.

One entry per frame of a live (not tombstoned) memory. `context()` scans the prefix
of each (verb, kind, ref) it is asked about.
"""

from __future__ import annotations

from collections.abc import Callable

import xxhash

from ..records import ID_SIZE, id_of

PREFIX = b"idx/frame/"
# A frame key is its prefix (namespace, verb, kind, 16-byte ref hash) and an id.
PREFIX_SIZE = len(PREFIX) + 2 + 16
KEY_SIZE = PREFIX_SIZE + ID_SIZE


def ref_hash(ref: str) -> bytes:
    return xxhash.xxh3_128_digest(ref.encode("utf-8"))


def prefix(verb: int, kind: int, ref: str) -> bytes:
    return PREFIX + bytes([verb, kind]) + ref_hash(ref)


def key(verb: int, kind: int, ref: str, raw_id: bytes) -> bytes:
    return prefix(verb, kind, ref) + raw_id


def key_of(prefix: bytes) -> Callable[[bytes], bytes]:
    """The key of an entry under `prefix`, from its value (which starts with the id)."""
    return lambda value: prefix + id_of(value)
