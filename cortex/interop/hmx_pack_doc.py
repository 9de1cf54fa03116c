"""The HMX-C pack document: entries, budgets, drops and optional fields as JSON.

`assemble` turns a filled `hmx_sections.Plan` into the pack (without `pack_id`):
seed 000 §2's required fields, the optional ones when known, the dropped entries
in their documented order (budget drops, trimmed memories that were no candidate,
the drops made before budgeting, superseded memories, relations), and the
assembly metadata with cortex's salience weights under the seed's names
(`ranking_weights`). docs/interop-seeds.md has the whole account.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..forms import constraint_text
from ..memory import Memory
from ..model import Constraint, Event, ObjKind, Pattern
from .canonical import JSONDict, cut_utf8
from .hmx_sections import (
    HMX_VERSION, SECTION_OF_TYPE, SECTION_ORDER, SOURCE_TYPE_OF_SECTION, Candidate, Item, Plan, Relation, artifact_of, best_first,
    pack_order,
)

if TYPE_CHECKING:
    from ..view import BundleView as Bundle

__all__ = ["assemble", "ranking_weights", "MAX_DROPPED_ENTRIES"]

_RETRIEVAL_SOURCE_OF_SECTION: Mapping[str, str] = {"episodes": "episodic", "graph_relations": "graph", "workflow": "compiler"}
_RETRIEVAL_ORDER = ("episodic", "semantic", "graph", "compiler")
_MACHINE_TAG = re.compile(r"hmx(fp)?[.:~]")
_WORD = re.compile(r"[^\W_]{3,}")
MAX_DROPPED_ENTRIES = 100
MAX_DECISION_CONSTRAINTS = 20
MAX_NEXT_STEPS = 10
MAX_TAGS = 64
MAX_KEYWORDS = 16
_CONSTRAINT_TEXT_BYTES = 1024


def assemble(bundle: Bundle, query: str, plan: Plan, pre_drops: Sequence[tuple[Candidate, str]],
              dropped_uris: Sequence[str], pool: Sequence[Memory], priors: JSONDict | None,
              optional: Mapping[str, str | None], asked_tags: list[str] | None) -> JSONDict:
    """The pack (without `pack_id`) of `plan`'s entries."""
    ordered = sorted(plan.entries, key=pack_order)
    entries = [_entry(item, rank) for rank, item in enumerate(ordered, start=1)]
    used = sum(item.tokens for item in ordered)
    request = bundle.request
    sections = {section for section in plan.budgets} | {item.section for item in ordered}
    budgets = {s: {"budget": plan.budgets.get(s, 0), "used": plan.used(s)} for s in sorted(sections, key=SECTION_ORDER.index)}
    considered = {c.memory.id for c in [*plan.kept, *(c for c, _ in pre_drops)]} | {
        item.memory.id for item in plan.dropped if isinstance(item, Candidate)}
    pooled = {m.id for m in pool}
    memory_drops = sorted((item for item in plan.dropped if isinstance(item, Candidate)), key=best_first)
    relation_drops = sorted((item for item in plan.dropped if isinstance(item, Relation)), key=best_first)
    trimmed = [memory_id for memory_id in bundle.dropped_ids if memory_id not in considered and memory_id not in pooled]
    superseded = _superseded(bundle)
    dropped = [_dropped(c, "budget_exceeded") for c in memory_drops[:MAX_DROPPED_ENTRIES]]
    dropped += _trimmed(bundle, trimmed[:MAX_DROPPED_ENTRIES], dropped_uris)
    dropped += [_dropped(c, reason) for c, reason in pre_drops[:MAX_DROPPED_ENTRIES]]
    dropped += superseded[:MAX_DROPPED_ENTRIES]
    dropped += [_dropped(r, "budget_exceeded") for r in relation_drops[:MAX_DROPPED_ENTRIES]]
    dropped = dropped[:MAX_DROPPED_ENTRIES]
    for rank, item in enumerate(dropped, start=len(entries) + 1):
        item["rank"] = rank
    weights = bundle.weights
    pack: JSONDict = {
        "hmx_version": HMX_VERSION,
        "query_context": query,
        "entries": entries,
        "token_budget": {
            "total_budget": plan.total,
            "used": used,
            "remaining": plan.total - used,
            "truncated": plan.truncated,
            "section_budgets": budgets,
            "dropped_count": len(memory_drops) + len(trimmed) + len(pre_drops) + len(superseded) + len(relation_drops),
        },
        "assembly_metadata": {
            "assembly_strategy": "fingerprint_guided" if priors is not None else "ranked",
            "ranking_weights": ranking_weights(weights.recency, weights.access, weights.citation, weights.importance),
            "retrieval_sources": _retrieval_sources([*ordered, *plan.dropped, *(c for c, _ in pre_drops)]),
            "candidate_count": bundle.candidates,
            "included_count": len(entries),
            "assembly_duration_ms": 0,
            "query_classification": {
                "intent": request["verb"],
                "keywords": list(dict.fromkeys(w.casefold() for w in _WORD.findall(query)))[:MAX_KEYWORDS],
                "entities": [ref for _, ref in request["objects"]],
                "time_ref": None,
            },
        },
        "created_at": request["now"],
        "metadata": {
            "generator": "cortex", "root": bundle.root, "form": bundle.form, "request": copy.deepcopy(dict(request)),
            "salience_weights": {"recency": weights.recency, "access": weights.access, "citation": weights.citation,
                                 "importance": weights.importance},
            "section_weights": dict(plan.weights),
            "section_allocation": dict(plan.allocated),
        },
        "dropped_entries": dropped,
    }
    session = optional["session_id"] or _session(ordered)
    for key, value in (("tenant_id", optional["tenant_id"]), ("agent_id", optional["agent_id"]), ("session_id", session)):
        if value is not None:
            pack[key] = value
    tags = asked_tags if asked_tags is not None else _entry_tags(ordered)
    if tags:
        pack["tags"] = tags[:MAX_TAGS]
    hints = _workflow_hints(ordered)
    if hints:
        pack["workflow_hints"] = hints
    constraints = _decision_constraints(ordered)
    if constraints:
        pack["decision_constraints"] = constraints
    if priors is not None:
        pack["fingerprint_priors"] = priors
    return pack


def ranking_weights(recency: float, access: float, citation: float, importance: float) -> JSONDict:
    """Cortex's salience weights under the seed's names, normalised to sum 1:
    recency = R; provenance = C (attested citations: evidence the memory was used
    and right); salience = A + D (use and declared importance); relevance = 0 (the
    frame match decides candidacy; it is not a part of the score)."""
    total = recency + access + citation + importance
    if total <= 0:
        return {"relevance": 0.0, "recency": 0.0, "provenance": 0.0, "salience": 0.0}
    return {"relevance": 0.0, "recency": recency / total, "provenance": citation / total,
            "salience": (access + importance) / total}


def _retrieval_sources(items: Sequence[Item]) -> list[str]:
    """The seed's retrieval sources the candidates came from, in the seed's order."""
    found = set()
    for item in items:
        if isinstance(item, Candidate) and artifact_of(item.memory) is not None:
            found.add("compiler")
        elif isinstance(item, Candidate) and isinstance(item.memory.data, Event):
            found.add("episodic")
        else:
            found.add(_RETRIEVAL_SOURCE_OF_SECTION.get(item.section, "semantic"))
    return [name for name in _RETRIEVAL_ORDER if name in found]


def _entry(item: Item, rank: int) -> JSONDict:
    return {
        "section": item.section,
        "content": item.content,
        "source_id": item.source_id,
        "source_type": item.source_type,
        "relevance_score": item.score,
        "token_estimate": item.tokens,
        "rank": rank,
        "provenance": item.provenance(),
    }


def _dropped(item: Item, reason: str) -> JSONDict:
    """A dropped entry (without its rank)."""
    return {
        "source_id": item.source_id,
        "source_type": item.source_type,
        "section": item.section,
        "relevance_score": item.score,
        "token_estimate": item.tokens,
        "drop_reason": reason,
    }


def _trimmed(bundle: Bundle, ids: Sequence[str], dropped_uris: Sequence[str]) -> list[JSONDict]:
    """Trimmed memories that were no candidate of the pack, by id (by URI when known)."""
    known = _uris_by_id([*bundle.reachable_uris, *dropped_uris])
    out: list[JSONDict] = []
    for memory_id in ids:
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
            item.update(source_id=uri, source_type=SOURCE_TYPE_OF_SECTION[section], section=section)
        out.append(item)
    return out


def _superseded(bundle: Bundle) -> list[JSONDict]:
    """The superseded memories `context()` left out, best first, reason `superseded`."""
    ranked = sorted(
        (-float(bundle.superseded_scores[memory_id]), int(bundle.superseded_tokens[memory_id]), uri)
        for memory_id, uri in zip(bundle.superseded_ids, bundle.superseded_uris)
    )
    items = []
    for negated_score, tokens, uri in ranked:
        section = _section_of_uri(uri)
        items.append({
            "source_id": uri,
            "source_type": SOURCE_TYPE_OF_SECTION[section],
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


def _session(ordered: Sequence[Item]) -> str | None:
    """The HMX session of the newest event entry (`hmx.session:<id>` tag), if any."""
    events = sorted((item.memory for item in ordered if isinstance(item, Candidate) and isinstance(item.memory.data, Event)),
                    key=lambda m: (m.created_at, m.id), reverse=True)
    for m in events:
        for tag in m.tags:
            if tag.startswith("hmx.session:"):
                return tag[len("hmx.session:"):]
    return None


def _entry_tags(ordered: Sequence[Item]) -> list[str]:
    """The entries' memories' tags, sorted, without the tags the HMX imports write."""
    tags = {tag for item in ordered if isinstance(item, Candidate) for tag in item.memory.tags}
    return sorted(tag for tag in tags if not _MACHINE_TAG.match(tag))


def _workflow_hints(ordered: Sequence[Item]) -> JSONDict | None:
    """Seed 000 §6: the steps of the best task schema entry (an artifact `learn()`
    compiled), else one step per procedure entry (Pattern), best first; at most 10."""
    for item in sorted((i for i in ordered if isinstance(i, Candidate)), key=best_first):
        artifact = artifact_of(item.memory)
        if artifact is not None and artifact["artifact_type"] == "task_schema":
            content = artifact.get("content", {})
            tools = [str(t) for t in content.get("tools_used", [])]
            steps = [{"description": str(step), "artifact_id": str(artifact["artifact_id"]),
                      "confidence": float(content.get("confidence", item.memory.confidence)),
                      "tools": [t for t in tools if t in str(step)]} for step in content.get("steps", [])]
            return {"suggested_next_steps": steps[:MAX_NEXT_STEPS], "active_task_schema": str(artifact["artifact_id"]),
                    "current_step": 0, "total_steps": len(steps), "blockers": []}
    patterns = [
        {
            "description": item.memory.data.statement,
            "artifact_id": item.memory.uri,
            "confidence": item.memory.data.strength,
            "tools": sorted({f.ref for f in item.memory.frames if f.kind is ObjKind.TOOL}),
        }
        for item in ordered
        if isinstance(item, Candidate) and isinstance(item.memory.data, Pattern) and item.section == "procedures"
    ][:MAX_NEXT_STEPS]
    if not patterns:
        return None
    return {"suggested_next_steps": patterns, "active_task_schema": patterns[0]["artifact_id"], "current_step": 0,
            "total_steps": len(patterns), "blockers": []}


def _decision_constraints(ordered: Sequence[Item]) -> list[JSONDict]:
    """Seed 000 §7 from the included Constraint entries, in pack order (at most 20);
    a hard constraint may not be overridden."""
    out: list[JSONDict] = []
    for item in ordered:
        if not isinstance(item, Candidate):
            continue
        data = item.memory.data
        artifact = artifact_of(item.memory)
        if artifact is not None and artifact["artifact_type"] == "decision_policy":
            content = artifact.get("content", {})
            out.append({
                "artifact_id": str(artifact["artifact_id"]),
                "condition": cut_utf8(str(content.get("condition", "always")), _CONSTRAINT_TEXT_BYTES),
                "constraint": cut_utf8(str(content.get("recommendation", data)), _CONSTRAINT_TEXT_BYTES),
                "confidence": float(content.get("confidence", item.memory.confidence)),
                "override_allowed": True,  # learned from outcomes: advice, not a declared rule
            })
        elif isinstance(data, Constraint):
            out.append({
                "artifact_id": item.memory.uri,
                "condition": cut_utf8(data.trigger or "always", _CONSTRAINT_TEXT_BYTES),
                "constraint": cut_utf8(constraint_text(data.polarity, data.statement), _CONSTRAINT_TEXT_BYTES),
                "confidence": item.memory.confidence,
                "override_allowed": data.strength != "hard",
            })
        if len(out) == MAX_DECISION_CONSTRAINTS:
            break
    return out
