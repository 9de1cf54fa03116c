"""Relevance of a given set of memories to a query text, for integrations that rank
what they already hold (the LangGraph store's `search(..., query=...)`).

`relevance(c, query, tag, memories)` returns every memory's BM25 score from
`find(near=query, tags=[tag])` (docs/recall.md), 0.0 for one that shares no word with
the query; a query with no word to search for (empty, only stop words) gives 0.0 to
every memory instead of an error, since a search with such a query is still a search.
"""

from __future__ import annotations

from collections.abc import Sequence

import cortex


def relevance(c: cortex.Cortex, query: str, tag: str, memories: Sequence[cortex.Memory]) -> dict[str, float]:
    """Each memory's relevance to `query` (id -> score); every memory must carry `tag`."""
    scores = dict.fromkeys((m.id for m in memories), 0.0)
    try:
        hits = c.find(near=query, tags=[tag], limit=2 * len(memories) + 16)
    except cortex.ValidationError as exc:
        if exc.field != "near" or not exc.rule.startswith("holds no word"):
            raise
        return scores
    found = getattr(hits, "relevance", {})
    for memory in hits:
        if memory.id in scores:
            scores[memory.id] = found[memory.id]
    return scores
