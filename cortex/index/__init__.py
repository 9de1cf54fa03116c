"""The derived indexes: one module per index (key encoding), and here what a memory's
entries are.

`entries()` is the one place that decides which index keys a memory has and what
they hold. The write path diffs its result before and after a change and writes the
difference in the same batch; `rebuild()` writes it for every memory; `verify()`
compares it with what is stored. So the three can never disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import MemoryType, is_pinned, to_micros
from ..salience.score import Score
from . import actor_obj, by_tag, by_type, edge, entry, frame, lexical, natural_key, pinned, session

if TYPE_CHECKING:
    from ..records import Head

PREFIX = b"idx/"
DERIVED_PREFIXES = (by_type.PREFIX, by_tag.PREFIX, pinned.PREFIX, frame.PREFIX, actor_obj.PREFIX, session.PREFIX, *edge.PREFIXES,
                    natural_key.PREFIX, lexical.PREFIX)


def entries(raw_id: bytes, head: Head, score: Score, edge_flags: int = 0) -> dict[bytes, bytes]:
    """Every index key of a memory, with its value. `edge_flags` are the bits its
    edges set (`edge.flags_of`; 0 for a memory without edges)."""
    live = head.tombstone is None
    is_pin = live and is_pinned(head.data)
    flags = (entry.FLAG_PINNED if is_pin else 0) | (0 if live else entry.FLAG_TOMBSTONED) | edge_flags
    value = entry.encode(
        raw_id,
        type=int(head.type),
        flags=flags,
        importance=score.importance,
        version=head.version,
        created=head.created,
        last_used=to_micros(score.last_used),
        expires=head.expires or 0,
        access=score.access_count,
        citations=score.citations,
        tokens=head.tokens,
    )
    out = {by_type.key(head.type, head.created, raw_id): value}
    for tag in head.tags:
        out[by_tag.key(tag, head.created, raw_id)] = value
    prov = head.prov
    if prov is not None and prov.session is not None:
        out[session.key(prov.session, prov.sequence, raw_id)] = value
    if not live:
        return out
    if is_pin:
        out[pinned.key(raw_id)] = value
    for f in head.frames:
        out[frame.key(f.verb, f.kind, f.ref, raw_id)] = value
        if head.type == MemoryType.EVENT:
            out[actor_obj.key(f.verb, f.ref, head.occurred, raw_id)] = value
    return out
