"""HMX-1.0 Context Packs (HMX-C, seed 000) built from a `cortex.Bundle`.

    pack = hmx_pack.build(bundle, query_context="deploy payments to staging")
    pack = hmx_pack.build(bundle, "deploy", edges=hmx_pack.edges_among(c, bundle))  # with graph_relations

The pack is a plain JSON-ready dict holding every required field of seed 000 §2.1
(`hmx_version`, `pack_id`, `query_context`, `entries`, `token_budget`,
`assembly_metadata`, `created_at`, `metadata`) and the optional `dropped_entries`
and `decision_constraints`. It is a pure function of the bundle, the query and the
edges passed: the same store state, options (with a fixed `now`) and query give the
same bytes.

Memory entries (§3): one per surviving memory. The section comes from the memory
type (DESIGN §9): Identity -> core, Constraint -> constraints, Goal -> goals,
Fact/Belief/Preference/Capability -> facts, Pattern -> procedures, Event ->
episodes; a memory that a live `contradicts` edge links to another candidate
(`Bundle.conflicts`) goes to conflicts instead (source type conflict), so a reader
sees the disagreeing memories side by side. `content` is the bundle's rendering,
`token_estimate` the bundle's token count in its form, `relevance_score` the
bundle's salience score, `source_id` the memory URI, `source_type` the section's
seed source type (core: entity, constraints: policy, episodes: episode, the
others: memory), and `provenance` is `{origin: the memory's source, confidence: its
confidence, evidence_count}` where evidence_count is a Belief's evidence_for count,
a Pattern's derived_from count, and 1 for the rest.

Relation entries (section graph_relations, source type relation, §3.2): the bundle
holds no edges, so the caller passes them (`edges=`; `edges_among(store, bundle)`
reads the live edges between a bundle's survivors from the store it came from).
Each live edge whose two ends are memory entries of the pack is one entry:
`content` is `"<src URI> <type> <dst URI>"` (the URIs of the entries, the type's
lower-case name), `source_id` is `"edge:<src id>/<type>/<dst id>"`,
`relevance_score` is the edge's weight times the lower of its ends' scores (a
relation matters as much as the less relevant thing it relates), `token_estimate`
the content's count in cl100k_base (`cortex.forms.Tokenizer`, the tokenizer every
store uses; the bundle records no other), and `provenance` is `{origin: "graph",
confidence: the weight, evidence_count: 1}`. Memories come first: relations get
only the budget and entry room the memory entries leave, best first, and an edge
to a memory the pack dropped is not a relation of the pack.

Entries are ordered by section priority (§3.3: core > constraints > goals >
procedures > facts > episodes > graph_relations > workflow > conflicts > evidence),
then relevance descending, tokens ascending, source_id ascending; `rank` is the
1-based position.

Limits (§4, §11, §12): the entries' tokens never exceed `total_budget` (the call's
effective budget), there are at most 500 entries, the canonical JSON is at most
256 KB, at most 100 dropped entries and 20 decision constraints are listed.
`context()` keeps at least one memory even when it alone exceeds the budget; a pack
must not, so such a memory is dropped from the pack (the hard limit of §4 rule 1
wins over the minimum guarantee of rule 4). Entries dropped for the entry or size
limit go lowest first (relevance, then larger, then source_id descending),
relations before any memory. Content is never cut, so `truncated` is always false.

Dropped entries (§8), in this order, ranked after the entries, the first 100 kept:

1. memories dropped for the budget or a limit, best first: the pack's own drops
   (all scored at least as high as anything `context()` trimmed), then the
   bundle's trimmed memories (`dropped_ids`); reason `budget_exceeded`;
2. superseded memories (`Bundle.superseded_ids`: a live memory supersedes them, so
   `context()` left them out before scoring), best first (relevance descending,
   tokens ascending, source_id ascending), with the score and token count they would
   have had as candidates; reason `superseded` (seed 001's list of drop reasons);
3. relations that did not fit, best first; reason `budget_exceeded`.

Past 100 the end of the list is cut: relations first (they only relate entries of
the pack), then superseded memories, which are the oldest drops (left out before
any scoring; seed 000 §12 says "truncate oldest drops"), then the lowest-scored
budget drops. `token_budget.dropped_count` counts every drop of the three kinds,
listed or not.

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
unknown type has the memory id as `source_id` and no `section`. A superseded
memory's URI is always known (`Bundle.superseded_uris`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..model import Edge, check_instances
from ..errors import ValidationError
from ..forms import DEFAULT_ENCODING, Tokenizer
from ..memory import Memory
from ..model import Belief, Constraint, Pattern
from . import InteropStore
from .canonical import JSONDict, canonical_json, content_hash, cut_utf8

if TYPE_CHECKING:
    from ..context import Bundle

__all__ = ["build", "edges_among", "HMX_VERSION", "SECTION_OF_TYPE", "SECTION_ORDER"]

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
    "graph_relations": "relation",
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
_RELATIONS = "graph_relations"


@dataclass(frozen=True, slots=True)
class _Candidate:
    """One surviving memory as a pack entry (before ranking)."""

    memory: Memory
    section: str
    content: str
    score: float
    tokens: int

    @property
    def source_id(self) -> str:
        return self.memory.uri

    def provenance(self) -> JSONDict:
        m = self.memory
        return {"origin": m.source, "confidence": m.confidence, "evidence_count": _evidence_count(m)}


@dataclass(frozen=True, slots=True)
class _Relation:
    """One edge between two memory entries as a graph_relations entry."""

    edge: Edge
    content: str
    score: float
    tokens: int

    @property
    def section(self) -> str:
        return _RELATIONS

    @property
    def source_id(self) -> str:
        e = self.edge
        return f"edge:{e.src}/{e.type.name.lower()}/{e.dst}"

    def provenance(self) -> JSONDict:
        return {"origin": "graph", "confidence": self.edge.weight, "evidence_count": 1}


_Item = _Candidate | _Relation


def _best_first(item: _Item) -> tuple[float, int, str]:
    """Relevance descending, tokens ascending, source_id ascending: the seed's order
    inside a section, used across sections to choose what to drop."""
    return (-item.score, item.tokens, item.source_id)


def _pack_order(item: _Item) -> tuple[int, float, int, str]:
    """Seed 000 §3.3: section priority first, then `_best_first`."""
    return (SECTION_ORDER.index(item.section), *_best_first(item))


def edges_among(store: InteropStore, bundle: Bundle) -> list[Edge]:
    """The live edges between the survivors of `bundle`, read from `store` (the
    store the bundle came from, read right after the call), for `build(...,
    edges=...)`: each survivor's outgoing edges whose other end also survived,
    ordered by (src id, type, dst id)."""
    ids = {m.id for m in bundle.memories()}
    return [edge for memory_id in sorted(ids) for edge in store.edges(memory_id, "out") if edge.dst in ids]


def build(bundle: Bundle, query_context: str | Mapping[str, Any] | None = None, *,
          dropped_uris: Sequence[str] = (), edges: Iterable[Edge] = ()) -> JSONDict:
    """The HMX-1.0 Context Pack of `bundle` (see the module docstring).

    `query_context`: the query or situation the pack is for (seed 000 §2.1): a
    string; a mapping (stored as its canonical JSON text); or None, which derives
    it from the bundle's request ("acquire service=gpu_inference", or "pinned"
    for a verb-less call). At most 16 KiB of UTF-8, else `ValidationError`.
    `dropped_uris`: URIs of trimmed memories beyond the bundle's `reachable_uris`,
    so that their dropped entries can name their section.
    `edges`: `cortex.Edge` values (`edges_among` reads them from a store); the live
    ones between two memory entries become graph_relations entries, the others are
    ignored. Anything else than an `Edge` in it is a `ValidationError`.
    """
    query = _query_context(query_context, bundle.request)
    given = _checked_edges(edges)
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
        key=_best_first,
    )
    # Memories first: drop from the bottom while over the token budget or the entry limit...
    used = sum(c.tokens for c in kept)
    memory_drops: list[_Candidate] = []  # worst first
    while kept and (used > budget or len(kept) > MAX_ENTRIES):
        memory_drops.append(kept.pop())
        used -= memory_drops[-1].tokens
    # ... then the relations between the memories kept, in the room they leave...
    relations = sorted(_relations(kept, given), key=_best_first)
    used += sum(r.tokens for r in relations)
    relation_drops: list[_Relation] = []  # worst first
    while relations and (used > budget or len(kept) + len(relations) > MAX_ENTRIES):
        relation_drops.append(relations.pop())
        used -= relation_drops[-1].tokens
    # ... then, while the serialized pack is over the size limit, relations and then memories.
    while True:
        pack = _assemble(bundle, query, budget, [*kept, *relations], memory_drops, relation_drops, dropped_uris)
        pack["pack_id"] = _PLACEHOLDER_ID  # counted in the size: it is as long as the real one
        excess = len(canonical_json(pack)) - MAX_PACK_BYTES
        count = len(kept) + len(relations)
        if excess <= 0 or not count:
            break
        # Drop about half of what the excess suggests, so that entries larger than
        # the average (and the dropped entries that replace them) do not cause too
        # many drops; the loop converges geometrically.
        entry_bytes = max(1, len(canonical_json(pack["entries"])) // count)
        for _ in range(min(count, max(1, excess // entry_bytes // 2))):
            if relations:
                relation_drops.append(relations.pop())
            else:
                memory_drops.append(kept.pop())
    del pack["pack_id"]
    pack["pack_id"] = "pack-" + content_hash(pack)[:32]
    return pack


def _checked_edges(edges: object) -> list[Edge]:
    return check_instances("edges", edges, Edge, "must be a collection of cortex.Edge", refused=(Mapping,))


def _relations(kept: Sequence[_Candidate], edges: Sequence[Edge]) -> list[_Relation]:
    """The live edges of `edges` between two of `kept`, one per (src, type, dst)
    (an edge given twice counts once: the first in (weight, created_at) order)."""
    entry_of = {c.memory.id: c for c in kept}
    tokenizer: Tokenizer | None = None
    seen: set[tuple[str, int, str]] = set()
    out: list[_Relation] = []
    for edge in sorted(edges, key=lambda e: (e.src, int(e.type), e.dst, e.weight, e.created_at)):
        src, dst = entry_of.get(edge.src), entry_of.get(edge.dst)
        triple = (edge.src, int(edge.type), edge.dst)
        if edge.tombstoned or src is None or dst is None or triple in seen:
            continue
        seen.add(triple)
        tokenizer = tokenizer or Tokenizer(DEFAULT_ENCODING)  # loads tiktoken only when there is a relation
        content = f"{src.memory.uri} {edge.type.name.lower()} {dst.memory.uri}"
        out.append(_Relation(edge, content, edge.weight * min(src.score, dst.score), tokenizer.count(content)))
    return out


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


def _assemble(bundle: Bundle, query: str, budget: int, kept: list[_Item], memory_drops: list[_Candidate],
              relation_drops: list[_Relation], dropped_uris: Sequence[str]) -> JSONDict:
    """The pack (without `pack_id`) holding `kept`; the drops are worst first."""
    ordered = sorted(kept, key=_pack_order)
    entries = [_entry(item, rank) for rank, item in enumerate(ordered, start=1)]
    used = sum(item.tokens for item in ordered)
    request = bundle.request
    weights = bundle.weights
    dropped = [*_dropped_memories(bundle, memory_drops[::-1], dropped_uris), *_superseded(bundle)]
    dropped += [_dropped(r, "budget_exceeded") for r in relation_drops[::-1][:MAX_DROPPED_ENTRIES]]
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
            "dropped_count": bundle.trimmed + len(memory_drops) + len(bundle.superseded_ids) + len(relation_drops),
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
        "dropped_entries": dropped[:MAX_DROPPED_ENTRIES],
    }
    for rank, item in enumerate(pack["dropped_entries"], start=len(entries) + 1):
        item["rank"] = rank
    constraints = _decision_constraints(ordered)
    if constraints:
        pack["decision_constraints"] = constraints
    return pack


def _entry(item: _Item, rank: int) -> JSONDict:
    return {
        "section": item.section,
        "content": item.content,
        "source_id": item.source_id,
        "source_type": _SOURCE_TYPE_OF_SECTION[item.section],
        "relevance_score": item.score,
        "token_estimate": item.tokens,
        "rank": rank,
        "provenance": item.provenance(),
    }


def _evidence_count(m: Memory) -> int:
    data = m.data
    if isinstance(data, Belief):
        return len(data.evidence_for)
    if isinstance(data, Pattern):
        return len(data.derived_from)
    return 1


def _section_budgets(ordered: Sequence[_Item], budget: int) -> JSONDict:
    """Each used section's share of `budget` in proportion to its use (largest
    remainder; ties by section priority), so the shares add up to `budget`."""
    use: dict[str, int] = {}
    for item in ordered:
        use[item.section] = use.get(item.section, 0) + item.tokens
    total = sum(use.values())
    if total == 0:
        return {section: {"budget": 0, "used": 0} for section in use}
    shares = {section: divmod(budget * used, total) for section, used in use.items()}
    left = budget - sum(whole for whole, _ in shares.values())
    by_remainder = sorted(use, key=lambda s: (-shares[s][1], SECTION_ORDER.index(s)))
    extra = set(by_remainder[:left])
    return {section: {"budget": shares[section][0] + (section in extra), "used": used} for section, used in use.items()}


def _dropped(item: _Item, reason: str) -> JSONDict:
    """A dropped entry (without its rank)."""
    return {
        "source_id": item.source_id,
        "source_type": _SOURCE_TYPE_OF_SECTION[item.section],
        "section": item.section,
        "relevance_score": item.score,
        "token_estimate": item.tokens,
        "drop_reason": reason,
    }


def _dropped_memories(bundle: Bundle, pack_drops: Sequence[_Candidate], dropped_uris: Sequence[str]) -> list[JSONDict]:
    """The first `MAX_DROPPED_ENTRIES` budget drops, best first: the pack's own drops
    (all scored at least as high as anything `context()` trimmed), then the bundle's."""
    dropped = [_dropped(c, "budget_exceeded") for c in pack_drops[:MAX_DROPPED_ENTRIES]]
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
                section = _section_of_uri(uri)
                item.update(source_id=uri, source_type=_SOURCE_TYPE_OF_SECTION[section], section=section)
            dropped.append(item)
    return dropped


def _superseded(bundle: Bundle) -> list[JSONDict]:
    """The superseded memories `context()` left out, best first (relevance
    descending, tokens ascending, source_id ascending), reason `superseded`."""
    if not bundle.superseded_ids:
        return []
    ranked = sorted(
        (-float(bundle.superseded_scores[memory_id]), int(bundle.superseded_tokens[memory_id]), uri)
        for memory_id, uri in zip(bundle.superseded_ids, bundle.superseded_uris)
    )
    items = []
    for negated_score, tokens, uri in ranked[:MAX_DROPPED_ENTRIES]:
        section = _section_of_uri(uri)
        items.append({
            "source_id": uri,
            "source_type": _SOURCE_TYPE_OF_SECTION[section],
            "section": section,
            "relevance_score": -negated_score,
            "token_estimate": tokens,
            "drop_reason": "superseded",
        })
    return items


def _section_of_uri(uri: str) -> str:
    """The section of the memory type a URI (cortex://<Type>/<ULID>#<version>) names."""
    return SECTION_OF_TYPE[uri[len("cortex://"):].split("/", 1)[0]]


def _uris_by_id(uris: Sequence[str]) -> dict[str, str]:
    """id -> URI for URIs of the form cortex://<Type>/<ULID>#<version>."""
    return {uri.rsplit("/", 1)[1].split("#", 1)[0]: uri for uri in uris}


def _decision_constraints(ordered: Sequence[_Item]) -> list[JSONDict]:
    """Seed 000 §7 from the included Constraint entries, in pack order (at most 20);
    a hard constraint may not be overridden."""
    out: list[JSONDict] = []
    for item in ordered:
        if not isinstance(item, _Candidate):
            continue
        data = item.memory.data
        if isinstance(data, Constraint):
            out.append({
                "artifact_id": item.memory.uri,
                "condition": cut_utf8(data.trigger or "always", _CONSTRAINT_TEXT_BYTES),
                "constraint": cut_utf8(f"{data.polarity} {data.statement}", _CONSTRAINT_TEXT_BYTES),
                "confidence": item.memory.confidence,
                "override_allowed": data.strength != "hard",
            })
            if len(out) == MAX_DECISION_CONSTRAINTS:
                break
    return out
