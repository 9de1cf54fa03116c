"""`idx/session/<xxh3_128(session)16><sequence8><id16>`: memories by the trace session they came from.

One entry per memory whose provenance names a session (`cortex.provenance`), kept
for tombstoned memories too (like the type and tag indexes: `find()` decides). Keys
under one session sort by sequence (a memory without one sorts as 0), then id, so a
scan reads a session's trace in order. Two sessions with the same 128-bit hash would
share a prefix; readers check the memory's session.
"""

from __future__ import annotations

import xxhash

PREFIX = b"idx/session/"


def prefix(session: str) -> bytes:
    return PREFIX + xxhash.xxh3_128_digest(session.encode("utf-8"))


def key(session: str, sequence: int | None, raw_id: bytes) -> bytes:
    return prefix(session) + (sequence or 0).to_bytes(8, "big") + raw_id
