"""`idx/actor_obj/<verb1><xxh3_128(ref)16><occurred8><id16>`: Events by (verb, object ref).

Event memories only, one entry per distinct (verb, ref) among a live Event's frames
(the object kind plays no part). Keys under one (verb, ref) sort by when the Event
happened: its `occurred_at` (`cortex.provenance`), which is its creation time unless
the write gave another, so stores written before provenance existed hold the same
keys. The outcomes tier reads them backwards, newest first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..records import ID_SIZE
from .frame import ref_hash

if TYPE_CHECKING:
    from ..storage import Storage

PREFIX = b"idx/actor_obj/"


def prefix(verb: int, ref: str) -> bytes:
    return PREFIX + bytes([verb]) + ref_hash(ref)


def key(verb: int, ref: str, occurred: int, raw_id: bytes) -> bytes:
    return prefix(verb, ref) + occurred.to_bytes(8, "big") + raw_id


def created_of(key_bytes: bytes) -> int:
    """The time stored in an entry's key (when the Event happened)."""
    return int.from_bytes(key_bytes[_CREATED], "big")


# Where `created` sits in a key: the 8 bytes before the id that ends it.
_CREATED = slice(-ID_SIZE - 8, -ID_SIZE)


def newest_first(storage: Storage, prefix_bytes: bytes) -> Iterator[tuple[int, bytes]]:
    """The entries under a (verb, ref) prefix as (created, value), newest first."""
    for key_bytes, value in storage.scan_items_backward(prefix_bytes):
        yield created_of(key_bytes), value
