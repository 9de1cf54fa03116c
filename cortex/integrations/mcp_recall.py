"""The MCP server's `recall` tool: memories by what they say (`find(near=...)`,
docs/recall.md), within a token budget.

    recall(query: str, budget_tokens: int = 1000, types: [type name] | null = null)

Text: one line per memory, best first, `- <uri> (relevance 1.234) — <medium text>`, or
"(none)". Structured: `{"results": [{"uri", "type", "text", "relevance"}],
"total_tokens": int}`. A query with no word to search for, or too long, is a tool error
naming `near` (the library's field). `cortex.integrations.mcp` registers it among the
read tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import Field, WithJsonSchema

import cortex
from cortex.interop.memory_json import TYPE_NAMES

DEFAULT_BUDGET = 1000

_TYPES_SCHEMA = {
    "anyOf": [{"type": "array", "items": {"type": "string", "enum": list(TYPE_NAMES)}, "minItems": 1}, {"type": "null"}],
    "default": None,
    "description": "Only memories of these types; null for every type.",
}
Types = Annotated[list[str] | None, WithJsonSchema(_TYPES_SCHEMA)]
Query = Annotated[str, Field(description="What to recall, in words: a question or a few keywords.")]
Budget = Annotated[int, Field(description="At most this many tokens of memory text (at least one memory is returned).")]


def recall_tool(c: cortex.Cortex, catch_up: Callable[[], None], run: Callable[[Callable[[], CallToolResult]], CallToolResult],
                result: Callable[[str, dict[str, Any]], CallToolResult]) -> Callable[..., CallToolResult]:
    """The `recall` tool over the open store `c`; `catch_up`, `run` and `result` are
    the server's own (a follower's catch-up, error results, result building)."""

    def recall(query: Query, budget_tokens: Budget = DEFAULT_BUDGET, types: Types = None) -> CallToolResult:
        """Memories by what they say, most relevant first (BM25 over every memory's text and tags), within a token budget.

        Use it when you do not know the frame a memory was filed under. One line per memory: `- <uri> (relevance) — <text>`.
        """
        def body() -> CallToolResult:
            catch_up()
            hits = c.find(near=query, budget_tokens=budget_tokens, type=list(types) if types else None)
            relevance = getattr(hits, "relevance", {})
            results = [{"uri": m.uri, "type": m.type.type_name, "text": m.form("medium"), "relevance": relevance[m.id]}
                       for m in hits]
            text = "".join(f"- {r['uri']} (relevance {r['relevance']:.3f}) — {r['text']}\n" for r in results) or "(none)\n"
            total = sum(m.tokens["medium"] for m in hits)
            return result(text, {"results": results, "total_tokens": total})
        return run(body)

    return recall
