"""`synthesize(query, max_tokens, sections=None)`: an HMX-1.0 Context Pack from a query
text (seed 001's `hx.synthesize("deploy payments", max_tokens=4000, sections=[...])`).

    pack = c.synthesize("deploy payments to staging", max_tokens=1500)

The candidates are the pinned tier (`context()` without a verb: identities, hard
constraints, active goals) and the memories recalled by content for the query
(`find(near=query, budget_tokens=max_tokens)`, docs/recall.md), in one bundle handed to
the pack builder (`hmx_pack.synthesize`), which applies seed 000's section rules and
budget. A recalled memory's relevance in the pack is its BM25 score divided by the
best recalled one's (so in (0, 1], the best 1.0); a pinned memory keeps its salience.
`query_context` of the pack is the query. Same store state, query and options (a
fixed `now`) give the same bytes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import ValidationError
from ..memory import Memory
from ..model import EdgeType
from . import InteropStore, hmx_pack
from .canonical import JSONDict

if TYPE_CHECKING:
    from ..context import Bundle

MAX_CONTEXT_BUDGET = 4000  # what context() takes: the pinned tier's own budget


def check_max_tokens(max_tokens: object) -> int:
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValidationError("max_tokens", "must be an int >= 1", max_tokens)
    return max_tokens


def synthesize(store: InteropStore, pinned: Bundle, recalled: Sequence[Memory], relevance: Mapping[str, float], query: str,
               max_tokens: int, sections: Sequence[str] | None = None) -> JSONDict:
    """The HMX-1.0 pack of `pinned` (the bundle of `context()` without a verb) and the
    `recalled` memories with their BM25 `relevance` (see the module docstring)."""
    bundle = _with_recalled(store, pinned, list(recalled), relevance)
    return hmx_pack.synthesize(store, bundle, query, max_tokens=check_max_tokens(max_tokens), sections=sections)


def _with_recalled(store: InteropStore, bundle: Bundle, recalled: list[Memory], relevance: Mapping[str, float]) -> Bundle:
    """`bundle` (the pinned tier) with the recalled memories as its frame-relevant tier."""
    seen = {m.id for m in bundle.memories()}
    added = [m for m in recalled if m.id not in seen]
    best = max((relevance[m.id] for m in added), default=1.0) or 1.0
    scores = {**bundle.scores, **{m.id: relevance[m.id] / best for m in added}}
    tokens = {**bundle.tokens, **{m.id: m.tokens["medium"] for m in added}}
    rendered = {**bundle.rendered, **{m.id: m.form("medium") for m in added}}
    members = [*bundle.memories(), *added]
    ids = {m.id for m in members}
    conflicts = sorted({(min(m.id, e.dst), max(m.id, e.dst)) for m in members
                        for e in store.edges(m.id, "out", types=[EdgeType.CONTRADICTS]) if e.dst in ids and e.dst != m.id})
    return dataclasses.replace(
        bundle, frame_relevant=added, scores=scores, tokens=tokens, rendered=rendered, conflicts=conflicts,
        total_tokens=bundle.total_tokens + sum(tokens[m.id] for m in added), candidates=bundle.candidates + len(added),
    )
