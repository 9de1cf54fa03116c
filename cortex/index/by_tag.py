"""`idx/tag/<xxh3_64(tag)8><created8><id16>`: every memory by tag, oldest first.

Kept for tombstoned memories too. Two tags with the same 64-bit hash share a bucket;
readers check the memory's tags when that matters.
"""

from __future__ import annotations

from collections.abc import Callable

from ..records import created_bytes, id_of

import xxhash

PREFIX = b"idx/tag/"


def tag_hash(tag: str) -> bytes:
    return xxhash.xxh3_64_digest(tag.encode("utf-8"))


def key(tag: str, created: int, raw_id: bytes) -> bytes:
    return PREFIX + tag_hash(tag) + created.to_bytes(8, "big") + raw_id


def prefix(tag: str) -> bytes:
    return PREFIX + tag_hash(tag)


def key_of(prefix: bytes) -> Callable[[bytes], bytes]:
    """The key of an entry under `prefix` (one tag's), from its value."""
    return lambda value: prefix + created_bytes(value) + id_of(value)
