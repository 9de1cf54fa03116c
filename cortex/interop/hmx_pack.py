"""HMX-1.0 Context Packs (HMX-C, seed 000) built from a `cortex.Bundle`.

    pack = hmx_pack.build(bundle, query_context="deploy payments to staging")
    pack = hmx_pack.synthesize(store, bundle, "deploy", max_tokens=800, sections=["procedures", "facts"])

`build` makes the pack of a bundle's survivors (and of the trimmed memories a caller
passes as `pool`); `synthesize` is the store-side call: it resolves the bundle's
best trimmed memories so that every section the call found something for can be
shown, reads the edges between them and the context priors of the last imported
fingerprint, names the store's actor as agent and tenant, and builds the pack.

The pack holds every field of seed 000 §2 (the optional ones when known). How
entries are made, ranked, budgeted (the five rules of §4, with the default section
weights), truncated and dropped is written out in docs/interop-seeds.md; in short:

* one entry per memory, in the section of its type (`SECTION_OF_TYPE`) or, for an
  artifact `learn()` compiled, of its artifact type (`SECTION_OF_ARTIFACT`, source
  type `artifact`), except a memory in a live `contradicts` pair (`conflicts`) and
  a memory another candidate `corroborates` or is `derived_from` (`evidence`); one
  graph_relations entry per live edge between two memory entries, in the room the
  memory sections leave;
* before budgeting, candidates are dropped as `stale` (a completed or abandoned
  Goal, an archived artifact), `superseded` / `deprecated` (an artifact of that
  status), `low_confidence` (below `min_confidence`), `low_relevance` (below
  `min_relevance`, or carrying a tag the priors suppress) or `duplicate` (the same
  text, spaces and case aside, as an entry before it in pack order);
* section budgets come from the weights (`DEFAULT_SECTION_WEIGHTS`, an imported
  fingerprint's `section_weights` as multipliers, or the caller's), with a floor
  per non-empty section and overflow redistribution (`hmx_budget`); a section
  keeps its best entries while they fit, its first entry is cut with the
  `[truncated]` marker when it alone does not, and the room left over is lent to
  the best entries that did not fit (`budget_exceeded` for those still out);
* superseded memories are listed as `superseded` drops.

It is a pure function of its arguments: the same store state, options (with a fixed
`now`) and query give the same bytes; `pack_id` is `"pack-"` and 32 hex digits of
the SHA-256 of the canonical JSON of the pack without `pack_id`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..memory import Memory
from ..model import Edge, EdgeType, Goal, check_instances
from . import InteropStore
from .canonical import JSONDict, canonical_json, content_hash
from .hmx_pack_doc import assemble
from .hmx_sections import (
    DEFAULT_SECTION_WEIGHTS, DROP_REASONS, HMX_VERSION, RELATIONS, SECTION_OF_ARTIFACT, SECTION_OF_TYPE, SECTION_ORDER,
    Candidate, Plan, artifact_of, best_first, pack_order, relations_among, section_of,
)

if TYPE_CHECKING:
    from ..view import BundleView as Bundle

__all__ = [
    "build", "synthesize", "edges_among", "HMX_VERSION", "SECTION_OF_TYPE", "SECTION_OF_ARTIFACT", "SECTION_ORDER",
    "DEFAULT_SECTION_WEIGHTS", "DROP_REASONS", "POOL_LIMIT",
]

_SUPPORTING = (EdgeType.CORROBORATES, EdgeType.DERIVED_FROM)
_ARTIFACT_DROPS = {"superseded": "superseded", "deprecated": "deprecated", "archived": "stale"}
"""An artifact's lifecycle status -> the drop reason it gets (active and draft ones are candidates)."""
POOL_LIMIT = 500
"""How many trimmed memories `synthesize` resolves (best first) as further candidates."""
MAX_PACK_BYTES = 256 * 1024
MAX_QUERY_CONTEXT_BYTES = 16 * 1024
_PLACEHOLDER_ID = "pack-" + "0" * 32


def _status(m: Memory) -> str | None:
    """The lifecycle status of a compiled artifact (its `hmx.status:` tag)."""
    return next((tag[len("hmx.status:"):] for tag in m.tags if tag.startswith("hmx.status:")), None)


def edges_among(store: InteropStore, bundle: Bundle, pool: Sequence[Memory] = ()) -> list[Edge]:
    """The live edges between the survivors of `bundle` (and the memories of `pool`),
    read from `store` right after the call, ordered by (src id, type, dst id)."""
    ids = {m.id for m in bundle.memories()} | {m.id for m in pool}
    return [edge for memory_id in sorted(ids) for edge in store.edges(memory_id, "out") if edge.dst in ids]


def synthesize(store: InteropStore, bundle: Bundle, query_context: str | Mapping[str, Any] | None = None, *,
               max_tokens: int | None = None, sections: Sequence[str] | None = None,
               section_weights: Mapping[str, float] | None = None, session_id: str | None = None,
               tags: Sequence[str] | None = None, min_relevance: float = 0.0, min_confidence: float = 0.0) -> JSONDict:
    """The pack of `bundle` assembled against `store`, the store it came from (see
    the module docstring): the first `POOL_LIMIT` trimmed memories are candidates
    too; `max_tokens` defaults to the priors' `default_token_budget`, else the
    call's budget. The other arguments are those of `build`."""
    from .fingerprint import stored_priors  # the fingerprint module imports this one

    pool = [store.resolve_latest(memory_id) for memory_id in bundle.dropped_ids[:POOL_LIMIT]]
    priors = stored_priors(store, bundle.now)
    if max_tokens is None and priors is not None and isinstance(priors.get("default_token_budget"), int):
        max_tokens = int(priors["default_token_budget"]) or None
    actor = str(store.stats()["actor"])
    return build(bundle, query_context, pool=pool, edges=edges_among(store, bundle, pool), max_tokens=max_tokens,
                 sections=sections, section_weights=section_weights, priors=priors, tenant_id=actor, agent_id=actor,
                 session_id=session_id, tags=tags, min_relevance=min_relevance, min_confidence=min_confidence)


def build(bundle: Bundle, query_context: str | Mapping[str, Any] | None = None, *,
          dropped_uris: Sequence[str] = (), edges: Iterable[Edge] = (), pool: Sequence[Memory] = (),
          max_tokens: int | None = None, sections: Sequence[str] | None = None,
          section_weights: Mapping[str, float] | None = None, priors: Mapping[str, Any] | None = None,
          tenant_id: str | None = None, agent_id: str | None = None, session_id: str | None = None,
          tags: Sequence[str] | None = None, min_relevance: float = 0.0, min_confidence: float = 0.0) -> JSONDict:
    """The HMX-1.0 Context Pack of `bundle` (see the module docstring).

    `query_context`: a string; a mapping (stored as its canonical JSON text); or
    None, derived from the request ("acquire service=gpu_inference", or "pinned").
    At most 16 KiB of UTF-8. `dropped_uris`: URIs of trimmed memories, so that their
    dropped entries name their section. `edges`: `cortex.Edge` values; the live ones
    between two memory entries become graph_relations entries, and a `corroborates`
    or `derived_from` edge files its target under evidence. `pool`: trimmed memories
    of the bundle (resolved by the caller) that may become entries. `max_tokens`:
    the pack's total budget (default: the call's). `sections`: only these sections
    (seed 000 §3.1 names). `section_weights`: section -> weight >= 0, replacing
    `DEFAULT_SECTION_WEIGHTS` for the sections it names. `priors`: a fingerprint's
    `context_priors` (advisory: `section_weights` multiply the weights,
    `suppressed_tags` drop as low_relevance); echoed as `fingerprint_priors`.
    `tenant_id`, `agent_id`, `session_id`, `tags`: the optional fields (a session
    defaults to the one of the newest HMX event entry; tags to the entries' own).
    `min_relevance`, `min_confidence`: thresholds in [0, 1] below which a candidate
    is dropped. Bad arguments raise `ValidationError` naming them.
    """
    query = _query_context(query_context, bundle.request)
    given = check_instances("edges", edges, Edge, "must be a collection of cortex.Edge", refused=(Mapping,))
    pooled = check_instances("pool", pool, Memory, "must be a collection of cortex.Memory", refused=(Mapping,))
    budget = int(bundle.request["budget_tokens"]) if max_tokens is None else _count("max_tokens", max_tokens)
    wanted = _sections(sections)
    priors = _priors(priors)
    weights = _weights(section_weights, priors)
    thresholds = (_unit("min_relevance", min_relevance), _unit("min_confidence", min_confidence))
    optional = {key: _opt_text(key, value) for key, value in
                (("tenant_id", tenant_id), ("agent_id", agent_id), ("session_id", session_id))}
    asked_tags = None if tags is None else [_tag(f"tags[{i}]", t) for i, t in enumerate(_texts("tags", tags))]

    candidates = _candidates(bundle, pooled, given, wanted)
    kept, pre_drops = _screen(candidates, thresholds, priors)
    plan = Plan(budget, weights)
    plan.fill(kept)
    relations = sorted(relations_among(plan.kept, given), key=best_first) if RELATIONS in wanted else []
    plan.addrelations_among(relations)
    while True:  # the serialized pack within the size limit: lowest entries go, relations first
        pack = assemble(bundle, query, plan, pre_drops, dropped_uris, pooled, priors, optional, asked_tags)
        pack["pack_id"] = _PLACEHOLDER_ID  # counted in the size: it is as long as the real one
        excess = len(canonical_json(pack)) - MAX_PACK_BYTES
        count = len(plan.entries)
        if excess <= 0 or not count:
            break
        entry_bytes = max(1, len(canonical_json(pack["entries"])) // count)
        plan.shed(min(count, max(1, excess // entry_bytes // 2)))  # about half what the excess suggests: converges
    del pack["pack_id"]
    pack["pack_id"] = "pack-" + content_hash(pack)[:32]
    return pack


# ---------------------------------------------------------------------------
# Arguments


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


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError(name, "must be a non-negative integer", value)
    return value


def _unit(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValidationError(name, "must be a number within [0, 1]", value)
    return float(value)


def _opt_text(name: str, value: object) -> str | None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ValidationError(name, "must be a non-empty string or None", value)
    return value


def _tag(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(name, "must be a non-empty string", value)
    return value


def _texts(name: str, value: object) -> list[str]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ValidationError(name, "must be a list of strings", value)
    return list(value)


def _sections(value: Sequence[str] | None) -> frozenset[str]:
    if value is None:
        return frozenset(SECTION_ORDER)
    names = _texts("sections", value)
    for i, name in enumerate(names):
        if name not in SECTION_ORDER:
            raise ValidationError(f"sections[{i}]", f"must be one of {', '.join(SECTION_ORDER)}", name)
    return frozenset(names)


def _section_weight_map(name: str, value: object) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise ValidationError(name, "must be a mapping of section -> weight", value)
    out: dict[str, float] = {}
    for section, weight in value.items():
        if section not in SECTION_ORDER:
            raise ValidationError(f"{name}.{section}", f"must name a section: {', '.join(SECTION_ORDER)}", section)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight < 0:
            raise ValidationError(f"{name}.{section}", "must be a finite number >= 0", weight)
        out[section] = float(weight)
    return out


def _priors(value: Mapping[str, Any] | None) -> JSONDict | None:
    """A copy of a fingerprint's `context_priors`, its used fields checked."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError("priors", "must be a fingerprint's context_priors (a mapping) or None", value)
    try:
        priors: JSONDict = copy.deepcopy(dict(value))
        canonical_json(priors)
    except (TypeError, ValueError):
        raise ValidationError("priors", "must hold JSON values only") from None
    _section_weight_map("priors.section_weights", priors.get("section_weights", {}))
    for i, tag in enumerate(_texts("priors.suppressed_tags", priors.get("suppressed_tags", []))):
        if not isinstance(tag, str):
            raise ValidationError(f"priors.suppressed_tags[{i}]", "must be a string", tag)
    return priors


def _weights(explicit: Mapping[str, float] | None, priors: Mapping[str, Any] | None) -> dict[str, float]:
    """The defaults, times the priors' multipliers, replaced by the caller's weights."""
    weights = dict(DEFAULT_SECTION_WEIGHTS)
    if priors is not None:
        for section, factor in _section_weight_map("priors.section_weights", priors.get("section_weights", {})).items():
            weights[section] *= factor
    if explicit is not None:
        weights.update(_section_weight_map("section_weights", explicit))
    return weights


# ---------------------------------------------------------------------------
# Candidates and the drops made before budgeting


def _candidates(bundle: Bundle, pool: Sequence[Memory], edges: Sequence[Edge], wanted: frozenset[str]) -> list[Candidate]:
    disputed = {memory_id for pair in bundle.conflicts for memory_id in pair}
    survivors = bundle.memories()
    ids = {m.id for m in survivors}
    extra: list[Memory] = []
    for m in pool:  # a trimmed candidate (scored by the call), once
        if m.id not in ids and m.id in bundle.scores:
            ids.add(m.id)
            extra.append(m)
    supported = {e.dst for e in edges if not e.tombstoned and e.type in _SUPPORTING and e.src in ids and e.src != e.dst}
    out: list[Candidate] = []
    for m in [*survivors, *extra]:
        section = "conflicts" if m.id in disputed else "evidence" if m.id in supported else section_of(m)
        if section in wanted:
            content = bundle.rendered[m.id] if m.id in bundle.rendered else m.form(bundle.form)
            out.append(Candidate(m, section, content, float(bundle.scores[m.id]), int(bundle.tokens[m.id])))
    return out


def _screen(candidates: Sequence[Candidate], thresholds: tuple[float, float],
            priors: Mapping[str, Any] | None) -> tuple[list[Candidate], list[tuple[Candidate, str]]]:
    """The candidates left once stale, low-confidence, low-relevance and duplicate
    ones are set aside (in pack order), and those set aside with their reason."""
    min_relevance, min_confidence = thresholds
    suppressed = set(priors.get("suppressed_tags", [])) if priors else set()
    kept: list[Candidate] = []
    drops: list[tuple[Candidate, str]] = []
    texts: set[str] = set()
    for c in sorted(candidates, key=pack_order):
        data = c.memory.data
        text = " ".join(c.content.split()).casefold()
        status = _ARTIFACT_DROPS.get(_status(c.memory) or "") if artifact_of(c.memory) is not None else None
        if isinstance(data, Goal) and data.status in ("completed", "abandoned"):
            drops.append((c, "stale"))
        elif status is not None:
            drops.append((c, status))
        elif c.memory.confidence < min_confidence:
            drops.append((c, "low_confidence"))
        elif c.score < min_relevance or suppressed.intersection(c.memory.tags):
            drops.append((c, "low_relevance"))
        elif text in texts:
            drops.append((c, "duplicate"))
        else:
            texts.add(text)
            kept.append(c)
    return kept, drops
