"""HMX-1.0 Context Packs (HMX-C, seed 000) built from a `cortex.Bundle`.

    pack = hmx_pack.build(bundle, query_context="deploy payments to staging")

The pack is a plain JSON-ready dict holding every required field of seed 000 §2.1
(`hmx_version`, `pack_id`, `query_context`, `entries`, `token_budget`,
`assembly_metadata`, `created_at`, `metadata`) and the optional `dropped_entries`
and `decision_constraints`. It is a pure function of the bundle and the query: the
same store state, options (with a fixed `now`) and query give the same bytes.

Entries (§3): one per surviving memory. The section comes from the memory type
(DESIGN §9): Identity -> core, Constraint -> constraints, Goal -> goals,
Fact/Belief/Preference/Capability -> facts, Pattern -> procedures, Event ->
episodes; a memory that a live `contradicts` edge links to another candidate
(`Bundle.conflicts`) goes to conflicts instead (source type conflict), so a reader
sees the disagreeing memories side by side. `content` is the bundle's rendering, `token_estimate` the bundle's token
count in its form, `relevance_score` the bundle's salience score, `source_id` the
memory URI, `source_type` the section's seed source type (core: entity,
constraints: policy, episodes: episode, the others: memory), and `provenance` is
`{origin: the memory's source, confidence: its confidence, evidence_count}` where
evidence_count is a Belief's evidence_for count, a Pattern's derived_from count,
and 1 for the rest. Entries are ordered by section priority (§3.3: core >
constraints > goals > procedures > facts > episodes > ...), then relevance
descending, tokens ascending, source_id ascending; `rank` is the 1-based position.

Limits (§4, §11, §12): the entries' tokens never exceed `total_budget` (the call's
effective budget), there are at most 500 entries, the canonical JSON is at most
256 KB, at most 100 dropped entries and 20 decision constraints are listed.
`context()` keeps at least one memory even when it alone exceeds the budget; a pack
must not, so such a memory is dropped from the pack (the hard limit of §4 rule 1
wins over the minimum guarantee of rule 4). Entries dropped for the entry or size
limit go first, lowest (relevance, then larger, then source_id descending) first.
Every drop has reason `budget_exceeded`; `dropped_entries` lists the best 100
(the seed's "truncate oldest drops": the earliest drops are the lowest-scored),
ranked after the entries. Content is never cut, so `truncated` is always false.

Section budgets: `context()` trims against one global budget, so each section's
budget is its share of `total_budget` in proportion to its use (largest-remainder
rounding): the budgets add up to `total_budget` and each covers its section's use.

`assembly_metadata.assembly_duration_ms` is 0: a wall-clock duration would make two
builds from the same state differ (the bundle's own `latency_ms` says how long the
call took). `ranking_weights` are the salience weights the call scored with.
`pack_id` is `"pack-"` and the first 32 hex digits of the SHA-256 of the canonical
JSON of the pack without `pack_id`.

A trimmed memory's type is known only when its URI is known (the bundle's
`reachable_uris`, or the `dropped_uris` a caller passes); a dropped entry of
unknown type has the memory id as `source_id` and no `section`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..memory import Memory
from ..model import Belief, Constraint, Pattern
from .canonical import JSONDict, canonical_json, content_hash, cut_utf8

if TYPE_CHECKING:
    from ..context import Bundle

__all__ = ["build", "HMX_VERSION", "SECTION_OF_TYPE", "SECTION_ORDER"]

HMX_VERSION = "HMX-1.0"

SECTION_OF_TYPE: Mapping[str, str] = {
    "Identity": "core",
    "Constraint": "constraints",
    "Goal": "goals",
    "Fact": "facts",
    "Belief": "facts",
    "Preference": "facts",
    "Capability": "facts",
    "Pattern": "procedures",
    "Event": "episodes",
}
"""Memory type name -> HMX-C section (DESIGN §9)."""

SECTION_ORDER = (
    "core", "constraints", "goals", "procedures", "facts", "episodes",
    "graph_relations", "workflow", "conflicts", "evidence",
)
"""Section priority of seed 000 §3.3."""

_SOURCE_TYPE_OF_SECTION: Mapping[str, str] = {
    "core": "entity",
    "constraints": "policy",
    "goals": "memory",
    "facts": "memory",
    "procedures": "memory",
    "episodes": "episode",
    "conflicts": "conflict",
}

MAX_ENTRIES = 500
MAX_PACK_BYTES = 256 * 1024
MAX_DROPPED_ENTRIES = 100
MAX_DECISION_CONSTRAINTS = 20
MAX_QUERY_CONTEXT_BYTES = 16 * 1024
# A decision constraint repeats its entry's text; each of its texts is cut to this.
_CONSTRAINT_TEXT_BYTES = 1024
_PLACEHOLDER_ID = "pack-" + "0" * 32



@dataclass(frozen=True, slots=True)
class _Candidate:
    """One surviving memory as a pack entry (before ranking)."""

    memory: Memory
    section: str
    content: str
    score: float
    tokens: int

    def best_first(self) -> tuple[float, int, str]:
        """Relevance descending, tokens ascending, source_id ascending: the seed's
        order inside a section, used across sections to choose what to drop."""
        return (-self.score, self.tokens, self.memory.uri)

    def pack_order(self) -> tuple[int, float, int, str]:
        """Seed 000 §3.3: section priority first, then `best_first`."""
        return (SECTION_ORDER.index(self.section), *self.best_first())


def build(bundle: Bundle, query_context: str | Mapping[str, Any] | None = None, *,
          dropped_uris: Sequence[str] = ()) -> JSONDict:
    """The HMX-1.0 Context Pack of `bundle` (see the module docstring).

    `query_context`: the query or situation the pack is for (seed 000 §2.1): a
    string; a mapping (stored as its canonical JSON text); or None, which derives
    it from the bundle's request ("acquire service=gpu_inference", or "pinned"
    for a verb-less call). At most 16 KiB of UTF-8, else `ValidationError`.
    `dropped_uris`: URIs of trimmed memories beyond the bundle's `reachable_uris`,
    so that their dropped entries can name their section.
    """
    query = _query_context(query_context, bundle.request)
    budget = int(bundle.request["budget_tokens"])
    # A memory linked to another candidate by a live contradicts edge goes to the
    # conflicts section instead of its type's (Bundle.conflicts).
    disputed = {memory_id for pair in bundle.conflicts for memory_id in pair}
    kept = sorted(
        (
            _Candidate(m, "conflicts" if m.id in disputed else SECTION_OF_TYPE[m.type.type_name], bundle.rendered[m.id],
                       float(bundle.scores[m.id]), int(bundle.tokens[m.id]))
            for m in bundle.memories()
        ),
        key=_Candidate.best_first,
    )
    # Drop from the bottom while over the token budget or the entry limit...
    used = sum(c.tokens for c in kept)
    pack_drops: list[_Candidate] = []  # worst first
    while kept and (used > budget or len(kept) > MAX_ENTRIES):
        pack_drops.append(kept.pop())
        used -= pack_drops[-1].tokens
    # ... then while the serialized pack is over the size limit.
    while True:
        pack = _assemble(bundle, query, budget, kept, pack_drops, dropped_uris)
        pack["pack_id"] = _PLACEHOLDER_ID  # counted in the size: it is as long as the real one
        excess = len(canonical_json(pack)) - MAX_PACK_BYTES
        if excess <= 0 or not kept:
            break
        # Drop about half of what the excess suggests, so that entries larger than
        # the average (and the dropped entries that replace them) do not cause too
        # many drops; the loop converges geometrically.
        entry_bytes = max(1, len(canonical_json(pack["entries"])) // len(kept))
        for _ in range(min(len(kept), max(1, excess // entry_bytes // 2))):
            pack_drops.append(kept.pop())
    del pack["pack_id"]
    pack["pack_id"] = "pack-" + content_hash(pack)[:32]
    return pack


def _query_context(value: str | Mapping[str, Any] | None, request: Mapping[str, Any]) -> str:
    if value is None:
        if request["verb"] is None:
            return "pinned"
        objects = ", ".join(f"{kind}={ref}" for kind, ref in request["objects"])
        return f"{request['verb']} {objects}".strip()
    if isinstance(value, Mapping):
        try:
            text = canonical_json(dict(value)).decode("utf-8")
        except (TypeError, ValueError):
            raise ValidationError("query_context", "a mapping must be JSON-serializable", value) from None
    elif isinstance(value, str):
        text = value
    else:
        raise ValidationError("query_context", f"must be a string, a mapping or None, not {type(value).__name__}", value)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError("query_context", "must be valid Unicode (no lone surrogates)", value) from None
    if size > MAX_QUERY_CONTEXT_BYTES:
        raise ValidationError("query_context", f"must be at most {MAX_QUERY_CONTEXT_BYTES} bytes of UTF-8 (got {size})", value)
    return text


def _assemble(bundle: Bundle, query: str, budget: int, kept: list[_Candidate],
              pack_drops: list[_Candidate], dropped_uris: Sequence[str]) -> JSONDict:
    """The pack (without `pack_id`) holding `kept`; `pack_drops` are worst first."""
    ordered = sorted(kept, key=_Candidate.pack_order)
    entries = [_entry(c, rank) for rank, c in enumerate(ordered, start=1)]
    used = sum(c.tokens for c in ordered)
    request = bundle.request
    weights = bundle.weights
    pack: JSONDict = {
        "hmx_version": HMX_VERSION,
        "query_context": query,
        "entries": entries,
        "token_budget": {
            "total_budget": budget,
            "used": used,
            "remaining": budget - used,
            "truncated": False,
            "section_budgets": _section_budgets(ordered, budget),
            "dropped_count": bundle.trimmed + len(pack_drops),
        },
        "assembly_metadata": {
            "assembly_strategy": "ranked",
            "ranking_weights": {
                "recency": weights.recency,
                "access": weights.access,
                "citation": weights.citation,
                "importance": weights.importance,
            },
            "retrieval_sources": list(request["include_tiers"]),
            "candidate_count": bundle.candidates,
            "included_count": len(entries),
            "assembly_duration_ms": 0,
            "query_classification": {
                "intent": request["verb"],
                "keywords": [],
                "entities": [ref for _, ref in request["objects"]],
                "time_ref": None,
            },
        },
        "created_at": request["now"],
        "metadata": {"generator": "cortex", "root": bundle.root, "form": bundle.form, "request": copy.deepcopy(dict(request))},
        "dropped_entries": _dropped_entries(bundle, pack_drops[::-1], dropped_uris, first_rank=len(entries) + 1),
    }
    constraints = _decision_constraints(ordered)
    if constraints:
        pack["decision_constraints"] = constraints
    return pack


def _entry(c: _Candidate, rank: int) -> JSONDict:
    m = c.memory
    return {
        "section": c.section,
        "content": c.content,
        "source_id": m.uri,
        "source_type": _SOURCE_TYPE_OF_SECTION[c.section],
        "relevance_score": c.score,
        "token_estimate": c.tokens,
        "rank": rank,
        "provenance": {"origin": m.source, "confidence": m.confidence, "evidence_count": _evidence_count(m)},
    }


def _evidence_count(m: Memory) -> int:
    data = m.data
    if isinstance(data, Belief):
        return len(data.evidence_for)
    if isinstance(data, Pattern):
        return len(data.derived_from)
    return 1


def _section_budgets(ordered: Sequence[_Candidate], budget: int) -> JSONDict:
    """Each used section's share of `budget` in proportion to its use (largest
    remainder; ties by section priority), so the shares add up to `budget`."""
    use: dict[str, int] = {}
    for c in ordered:
        use[c.section] = use.get(c.section, 0) + c.tokens
    total = sum(use.values())
    if total == 0:
        return {section: {"budget": 0, "used": 0} for section in use}
    shares = {section: divmod(budget * used, total) for section, used in use.items()}
    left = budget - sum(whole for whole, _ in shares.values())
    by_remainder = sorted(use, key=lambda s: (-shares[s][1], SECTION_ORDER.index(s)))
    extra = set(by_remainder[:left])
    return {section: {"budget": shares[section][0] + (section in extra), "used": used} for section, used in use.items()}


def _dropped_entries(bundle: Bundle, pack_drops: Sequence[_Candidate], dropped_uris: Sequence[str],
                     first_rank: int) -> list[JSONDict]:
    """The best `MAX_DROPPED_ENTRIES` drops, best first: the pack's own drops (all
    scored at least as high as anything `context()` trimmed), then the bundle's."""
    dropped: list[JSONDict] = []
    for c in pack_drops[:MAX_DROPPED_ENTRIES]:
        dropped.append({
            "source_id": c.memory.uri,
            "source_type": _SOURCE_TYPE_OF_SECTION[c.section],
            "section": c.section,
            "relevance_score": c.score,
            "token_estimate": c.tokens,
            "drop_reason": "budget_exceeded",
        })
    room = MAX_DROPPED_ENTRIES - len(dropped)
    if room > 0:
        known = _uris_by_id([*bundle.reachable_uris, *dropped_uris])
        for memory_id in bundle.dropped_ids[:room]:
            item: JSONDict = {
                "source_id": memory_id,
                "source_type": "memory",
                "relevance_score": float(bundle.scores[memory_id]),
                "token_estimate": int(bundle.tokens[memory_id]),
                "drop_reason": "budget_exceeded",
            }
            uri = known.get(memory_id)
            if uri is not None:  # the URI names the type, hence the section
                section = SECTION_OF_TYPE[uri[len("cortex://"):].split("/", 1)[0]]
                item.update(source_id=uri, source_type=_SOURCE_TYPE_OF_SECTION[section], section=section)
            dropped.append(item)
    for rank, item in enumerate(dropped, start=first_rank):
        item["rank"] = rank
    return dropped


def _uris_by_id(uris: Sequence[str]) -> dict[str, str]:
    """id -> URI for URIs of the form cortex://<Type>/<ULID>#<version>."""
    return {uri.rsplit("/", 1)[1].split("#", 1)[0]: uri for uri in uris}


def _decision_constraints(ordered: Sequence[_Candidate]) -> list[JSONDict]:
    """Seed 000 §7 from the included Constraint entries, in pack order (at most 20);
    a hard constraint may not be overridden."""
    out: list[JSONDict] = []
    for c in ordered:
        data = c.memory.data
        if isinstance(data, Constraint):
            out.append({
                "artifact_id": c.memory.uri,
                "condition": cut_utf8(data.trigger or "always", _CONSTRAINT_TEXT_BYTES),
                "constraint": cut_utf8(f"{data.polarity} {data.statement}", _CONSTRAINT_TEXT_BYTES),
                "confidence": c.memory.confidence,
                "override_allowed": data.strength != "hard",
            })
            if len(out) == MAX_DECISION_CONSTRAINTS:
                break
    return out
