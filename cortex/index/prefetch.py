"""What a `context()` call will read, named before it reads (`Storage.prefetch`).

A backend whose every read is a round trip (PostgreSQL) fetches all of it with one
statement: the journal head, the import marker (`Engine.view_state`) and the weights, the pinned tier's entries, the first
entries of each outcomes prefix (newest first), every entry of each frame prefix,
and the heads those entries name when they are few enough to join (`JOIN_AT_MOST`),
which are the heads the call renders when its budget keeps every candidate. A call
on a hot object (more candidates than that) reads the survivors' heads afterwards,
in the same view. The reads the call makes are the same either way: the prefetch
changes only how many round trips they take.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..records import HEAD_PREFIX, ID_SIZE, META_IMPORT, META_JOURNAL, META_WEIGHTS
from ..storage import Reads
from . import actor_obj, frame, pinned

# Heads joined to the scanned entries when the scans return at most this many: at
# 100k memories a call's median is 75 candidates, nearly all of which it renders.
JOIN_AT_MOST = 256
# Entries of an outcomes prefix fetched first (its reader usually stops within them);
# the same as PostgreSQL's first backward page.
NEWEST_FIRST = 16


def context_reads(verb: int | None, objects: Iterable[tuple[int, str]], *, pinned_tier: bool, outcomes: bool,
                  frames: bool) -> Reads:
    """The reads of a `context()` call for (verb, [(object kind, ref)]) and the tiers it
    includes (`outcomes` and `frames` only count with a verb and objects)."""
    objects = sorted(set(objects))
    tiered = verb is not None and bool(objects)
    scans: list[bytes] = [pinned.PREFIX] if pinned_tier else []
    newest: list[tuple[bytes, int]] = []
    if tiered and verb is not None:
        if outcomes:
            newest = [(actor_obj.prefix(verb, ref), NEWEST_FIRST) for ref in sorted({ref for _, ref in objects})]
        if frames:
            scans += [frame.prefix(verb, kind, ref) for kind, ref in objects]
    return Reads(gets=(META_JOURNAL, META_IMPORT, META_WEIGHTS), scans=tuple(scans), newest=tuple(newest),
                 joined=(HEAD_PREFIX, ID_SIZE, JOIN_AT_MOST))
