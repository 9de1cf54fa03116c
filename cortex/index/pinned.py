"""`idx/pinned/<id16>`: the pinned tier (every Identity, hard Constraint, active Goal).

Membership is `cortex.model.is_pinned` of the current version; a tombstoned memory
has no entry.
"""

from __future__ import annotations

from ..records import id_of

PREFIX = b"idx/pinned/"


def key(raw_id: bytes) -> bytes:
    return PREFIX + raw_id


def key_of(value: bytes) -> bytes:
    """The key of an entry, from its value (which starts with the id)."""
    return PREFIX + id_of(value)
