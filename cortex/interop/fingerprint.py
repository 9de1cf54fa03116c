"""HMX-1.0 fingerprints (HMX-F, seed 003): export a store's distilled state, import one.

    envelope = fingerprint.export(store, "compact")     # {"format": "hmx-fingerprint", ...}
    written = fingerprint.import_(other_store, envelope)

A fingerprint is a summary, not a copy (`export_jsonl` is the copy): it carries the
store's *artifacts* (its reusable knowledge) as seed 003's summaries, and
statistics of everything else. Same store state, same tier: same bytes.

Artifacts (live memories only; one summary per memory, identical summaries
collapse). Each summary field is chosen so that importing the summary and
exporting the memory it became gives the same summary back:

| memory | set | summary |
|---|---|---|
| Constraint | policy_set | condition = trigger or "", recommendation = "[strength] polarity statement", scope = frames, confidence = the memory's |
| Preference | policy_set | condition = topic, recommendation = "polarity: " + value and rationale (" — " between) or the topic, confidence = strength |
| Pattern | task_schema_set | title = statement, preconditions = frames, tools_used = the refs of its tool frames, success_rate = strength, observed_count = coverage, complexity from coverage (< 5 low, < 20 medium, else high), confidence = the memory's |

Frames are written `verb:kind:ref`; `tags` are the memory's tags, sorted;
`outcome_count` is 0 (citations are this store's usage counters and do not travel);
Artifacts `learn()` compiled (docs/learning.md; active ones) fill the sets from
their HMX-A content: task schemas with their steps in `task_schema_set`, failure
playbooks in `playbook_set`, decision policies in `policy_set`, under their own
`art-` ids; `compiler_state` adds the thresholds of the store's last learn as
`learn.<name>` rows. Otherwise `playbook_set` is empty. `artifact_id` is
`<type>-` and 24 hex digits of the SHA-256 of the summary's other fields.
`cluster_summaries` group the tier's artifacts by each tag two or more of them
share. Each summary also holds `cortex_memory`: the memory itself in the memory
JSON (type, data, frames, tags, confidence, expiry), which an import by cortex
writes back exactly (a Preference's rationale, a Constraint's source, a Pattern's
derived_from included); a summary from another producer is read from the seed's
fields. The memory's source (on import: "hmx-fingerprint") and importance do not
travel. `compiler_state`, `tags` and `expires_at`: `fingerprint_fields`.

Tiers (seed 003 §8 and §15; sizes are canonical JSON bytes of the fingerprint):
`full` at most 100 artifacts per set and 100,000 bytes; `compact` the top 20 per
set by confidence x count and 50,000 bytes; `minimal` no artifacts, the clusters of
the compact selection, and 10,000 bytes. When a tier is over its size, the
lowest-ranked artifact of the largest set goes (then the smallest cluster), until
it fits. Statistics lists are cut to their 20 largest entries (5 in `minimal`),
and names in them to 64 bytes.

Statistics (live memories unless said otherwise):

* `behavioral_patterns`: `tool_usage` from Events with a `tool` frame (calls per
  tool ref, success share); `decision_patterns` from Beliefs (a correction is a
  Belief with a later version or tombstoned; domains are subjects);
  `error_patterns` from failed Events, keyed by counterparty (else kind): a failure
  is recovered by a later successful Event with the same key, and the recovery
  time is the gap between their `created_at`; `session_patterns` from the
  `hmx.session:` tags `ingest_hmx` writes (length = spread of `created_at`, in
  seconds).
* `graph_digest`: the edges between memories (`cortex.edges`, docs/edges.md) as the
  knowledge graph. Relations are the live edges (not unlinked) whose two ends are
  live memories; entities are the live memories at an end of a relation. Entity
  types are memory types, relation types edge types (lower-case names);
  `avg_entity_confidence` is the entities' mean confidence, `avg_relation_weight`
  the relations' mean weight; `top_connected_entities` the entities with the most
  relations (in and out), ties by id, named by memory id (an opaque name: no
  content travels), at most 10 (5 in `minimal`); `max_depth` the deepest level of a
  breadth-first walk along edge direction from the entities no relation points at
  (entities reachable only through a cycle: from the smallest id among those left,
  one walk after another), i.e. the longest shortest path from a root, in edges.
  The edges are read with one `edges(id, "both")` call per live memory.
* `semantic_summary`: promoted = confidence >= 0.8, tentative = below, deprecated
  = tombstoned, contradicted = Beliefs with stance doubt or suspect or with
  evidence_against; extraction methods are memory sources; the observation count
  of a memory is its number of versions.
* `context_priors`: HMX-C sections by how many memories fall in them, the top
  10 artifacts, the 10 most used tags (used twice or more), budget 3000.

No wall clock: `created_at` (and the envelope's `exported_at`) is the newest
`updated_at` of any memory (1970-01-01 for an empty store); `metadata.root` is the
store's root. `fingerprint_id` is `fp-` and 32 hex digits of the SHA-256 of the
fingerprint without its id and hash; `fingerprint_hash` and the envelope's
`integrity_hash` follow docs/interop.md.

Import verifies the envelope and both hashes first and refuses any mismatch
(`FingerprintIntegrityError`) before writing anything (the hashes cover the
fingerprint; the envelope's other fields are checked for shape: the format, the
versions, `exported_at` and `exported_by` strings); then writes, in one atomic
batch, a memory per policy, task schema or playbook summary whose artifact the
store does not already hold live (policies become Constraints or Preferences by
their id prefix, anything else a Constraint; task schemas and playbooks become
Patterns), a Fact keeping the `context_priors` (expiring with the fingerprint's
`expires_at`; HMX-C assembly applies them: `stored_priors`), a Fact recording the
`compiler_state` (`stored_compiler_state`), and one Event that records the import,
tagged `hmxfp:<fingerprint_id>`, whose attributes keep the fields seed 003 does not
define and the warnings (`import_report` returns them). Versions (seed 001): an
`hmx_version` of another major is refused; a newer minor, or a newer
`fingerprint_version`, is imported best-effort with its unknown fields kept and
reported. It never updates or tombstones anything. An envelope whose
`fingerprint_id` was already imported writes nothing at all (the root is
unchanged). The statistics describe the source store and are not imported.

Length: over the ~600 lines a module keeps to, on purpose: the export and the import of
one format share its constants, artifact summaries and checks; the optional fields'
shapes are already apart (`fingerprint_fields.py`). The import half (`import_report` and
below) is the part to move out next if it grows.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ..model import Edge
from ..errors import FingerprintIntegrityError, ValidationError
from ..memory import Memory
from ..model import Belief, Constraint, Event, Frame, ObjKind, Pattern, Preference
from ..writes import Write
from ..learn.artifacts import PAYLOAD_KEY as LEARNED_PAYLOAD
from ..learn import params as learn_params
from . import InteropStore, fingerprint_trust
from .canonical import JSONDict, canonical_json, content_hash, cut_utf8, without
from .fingerprint_fields import (
    COMPILER_STATE_TAG, MAX_TAGS, PRIORS_TAG, FingerprintImport, check_optional, compiler_state, kept_writes, parse_time,
    record_attributes, stored, unknown_fields,
)
from .memory_json import iso, memory_from_json
from .hmx_pack import SECTION_OF_TYPE, SECTION_ORDER

__all__ = ["export", "import_", "import_report", "TIERS", "TIER_LIMITS", "FingerprintIntegrityError", "FingerprintImport",
           "import_tag", "stored_priors", "stored_compiler_state", "PRIORS_TAG", "COMPILER_STATE_TAG"]

HMX_VERSION = "HMX-1.0"
FORMAT = "hmx-fingerprint"
ENVELOPE_VERSION = 1
FINGERPRINT_VERSION = 1
TIERS = ("full", "compact", "minimal")
TIER_LIMITS: Mapping[str, int] = {"full": 100_000, "compact": 50_000, "minimal": 10_000}
ARTIFACTS_PER_SET: Mapping[str, int] = {"full": 100, "compact": 20, "minimal": 0}
ARTIFACT_SETS = ("policy_set", "task_schema_set", "playbook_set")
_STAT_ENTRIES: Mapping[str, int] = {"full": 20, "compact": 20, "minimal": 5}
_LABEL_BYTES = 64
_PRIORITY_LIMIT = 10
_REPRESENTATIVES = 5
_PROMOTED_CONFIDENCE = 0.8
_DEFAULT_TOKEN_BUDGET = 3000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MILLISECOND = timedelta(milliseconds=1)
_CONSTRAINT_TEXT = re.compile(r"\[(soft|firm|hard)\] (prefer|avoid|neutral|do|dont) (.+)", re.DOTALL)
_PREFERENCE_TEXT = re.compile(r"(prefer|avoid|neutral|do|dont): (.+)", re.DOTALL)
_SESSION_PREFIXES = ("hmx.session:", "hmx.session~")
_MACHINE_TAG = re.compile(r"hmx(fp)?[.:~]")


def stored_priors(store: InteropStore, now: datetime | None = None) -> JSONDict | None:
    """The `context_priors` of the fingerprint imported last (None if none was, or if
    they expired with their fingerprint before `now`)."""
    return _stored(store, PRIORS_TAG, now)


def stored_compiler_state(store: InteropStore) -> JSONDict | None:
    """The `compiler_state` of the fingerprint imported last that carried one."""
    return _stored(store, COMPILER_STATE_TAG, None)


def _stored(store: InteropStore, tag: str, now: datetime | None) -> JSONDict | None:
    facts = int(store.stats()["by_type"].get("Fact", 0))
    return stored(store.find(type="Fact", tags=[tag], limit=facts), now) if facts else None


def import_tag(fingerprint_id: str) -> str:
    """The tag of the Event that records an import (`hmxfp:<fingerprint_id>`), made
    from the id its content gives (`fingerprint_trust.content_id`), which is the
    `fingerprint_id` of an unaltered export by cortex."""
    tag = "hmxfp:" + fingerprint_id
    return tag if len(tag) <= 64 else "hmxfp~" + content_hash(fingerprint_id)[:58]


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _frame_text(f: Frame) -> str:
    return f"{f.verb.name.lower()}:{f.kind.name.lower()}:{f.ref}"


def _label(text: str) -> str:
    return cut_utf8(text, _LABEL_BYTES)


def _ratio(part: float, whole: float) -> float:
    return round(part / whole, 4) if whole else 0.0


def _top(counts: Counter[str], limit: int) -> dict[str, int]:
    """The `limit` largest counts (ties by name), as a dict in that order."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])


# ---------------------------------------------------------------------------
# Artifact summaries


@dataclass(frozen=True, slots=True)
class _Artifact:
    """One artifact summary, the set it belongs to, and its rank key."""

    set_name: str
    summary: JSONDict

    @property
    def artifact_id(self) -> str:
        return str(self.summary["artifact_id"])

    @property
    def confidence(self) -> float:
        return float(self.summary["confidence"])

    @property
    def count(self) -> int:
        """How often it was seen: a policy's outcome_count, a schema's observed_count, a
        playbook's occurrence_count."""
        key = {"policy_set": "outcome_count", "playbook_set": "occurrence_count"}.get(self.set_name, "observed_count")
        return int(self.summary[key])

    def rank(self) -> tuple[float, float, str]:
        """Seed 003 §8: confidence x count descending, then confidence, then id."""
        return (-(self.confidence * self.count), -self.confidence, self.artifact_id)


def _artifact(data: object, frames: Sequence[Frame], tags: Iterable[str], confidence: float,
              expires_at: datetime | None = None, attributes: Mapping[str, Any] | None = None) -> _Artifact | None:
    """The summary of a memory (or of a `cortex.Write`), None for non-artifact types.
    `cortex_memory` holds the memory exactly (`_portable`), so that an import by
    cortex loses nothing; other readers have the seed's fields. A Pattern that
    `learn()` compiled (its `attributes` hold the artifact) is summarised from its
    artifact (`_learned`)."""
    if isinstance(data, Pattern) and attributes is not None and isinstance(attributes.get(LEARNED_PAYLOAD), Mapping):
        return _learned(attributes[LEARNED_PAYLOAD], frames, tags)
    frame_texts = sorted({_frame_text(f) for f in frames})
    tag_list = sorted(set(tags))
    if isinstance(data, Constraint):
        kind, set_name = "constraint", "policy_set"
        body: JSONDict = {
            "condition": data.trigger or "",
            "recommendation": f"[{data.strength}] {data.polarity} {data.statement}",
            "scope": frame_texts,
            "confidence": confidence,
            "outcome_count": 0,
            "tags": tag_list,
        }
    elif isinstance(data, Preference):
        kind, set_name = "preference", "policy_set"
        detail = " — ".join(t for t in (data.value, data.rationale) if t) or data.topic
        body = {
            "condition": data.topic,
            "recommendation": f"{data.polarity}: {detail}",
            "scope": frame_texts,
            "confidence": data.strength,
            "outcome_count": 0,
            "tags": tag_list,
        }
    elif isinstance(data, Pattern):
        kind, set_name = "pattern", "task_schema_set"
        body = {
            "title": data.statement,
            "steps": [],
            "tools_used": sorted({f.ref for f in frames if f.kind is ObjKind.TOOL}),
            "preconditions": frame_texts,
            "postconditions": [],
            "complexity": "low" if data.coverage < 5 else "medium" if data.coverage < 20 else "high",
            "success_rate": data.strength,
            "observed_count": data.coverage,
            "confidence": confidence,
            "tags": tag_list,
        }
    else:
        return None
    body["cortex_memory"] = _portable(data, frames, tag_list, confidence, expires_at)
    return _Artifact(set_name, {"artifact_id": f"{kind}-{content_hash([kind, body])[:24]}", **body})


def _portable(data: Constraint | Preference | Pattern, frames: Sequence[Frame], tags: list[str], confidence: float,
              expires_at: datetime | None) -> JSONDict:
    """The content of an artifact memory in the memory JSON (`memory_json`): its type,
    data, frames, tags, confidence and expiry (not its source, which becomes
    "hmx-fingerprint", nor its importance, a salience input of this store)."""
    out: JSONDict = {
        "type": type(data).__name__,
        "data": data.to_dict(),
        "frames": [{"verb": f.verb.name.lower(), "kind": f.kind.name.lower(), "ref": f.ref}
                   for f in sorted(set(frames), key=_frame_text)],
        "tags": tags,
        "confidence": confidence,
    }
    if expires_at is not None:
        out["expires_at"] = iso(expires_at)
    return out


def _learned(body: Mapping[str, Any], frames: Sequence[Frame], tags: Iterable[str]) -> _Artifact | None:
    """The summary of an artifact `learn()` compiled (docs/learning.md): active ones
    only; task schemas, failure playbooks and decision policies have a set, causal
    patterns and strategy templates none."""
    if "hmx.status:active" not in tags:
        return None
    c = body["content"]
    kind = body["artifact_type"]
    base: JSONDict = {"artifact_id": body["artifact_id"], "tags": [f"hmx.artifact:{kind}"]}
    if kind == "task_schema":
        return _Artifact("task_schema_set", {
            **base, "title": body["title"], "steps": c["steps"], "tools_used": c["tools_used"],
            "preconditions": c["preconditions"], "postconditions": c["postconditions"], "complexity": c["complexity"],
            "success_rate": c["success_rate"], "observed_count": c["observed_count"], "confidence": c["confidence"]})
    if kind == "failure_playbook":
        return _Artifact("playbook_set", {
            **base, "title": body["title"], "failure_pattern": c["failure_pattern"],
            "trigger_conditions": c["trigger_conditions"], "recovery_steps": c["recovery_steps"],
            "prevention_strategies": c["prevention_strategies"], "severity": c["severity"],
            "occurrence_count": c["occurrence_count"], "confidence": c["confidence"]})
    if kind == "decision_policy":
        return _Artifact("policy_set", {
            **base, "condition": c["condition"], "recommendation": c["recommendation"],
            "scope": sorted({_frame_text(f) for f in frames}), "confidence": c["confidence"],
            "outcome_count": c["outcome_count"]})
    return None


def _with_learn_params(state: JSONDict, params: Mapping[str, Any] | None) -> JSONDict:
    """`compiler_state` with the thresholds of the store's last learn added as
    `learn.<name>` rows (frozen: set by the caller, never adapted), when it learned."""
    if params is None:
        return state
    baseline = learn_params.DEFAULT.to_dict()
    rows = [{"parameter": f"learn.{name}", "current_value": float(params[name]), "baseline_value": float(baseline[name]),
             "delta": round(float(params[name]) - float(baseline[name]), 12), "adaptation_count": 0, "frozen": True}
            for name in sorted(params)]
    return {**state, "total_parameters": state["total_parameters"] + len(rows),
            "adapted_parameters": [*state["adapted_parameters"], *rows]}


def _select(artifacts: Iterable[_Artifact], per_set: int) -> dict[str, list[_Artifact]]:
    """The `per_set` best artifacts of each set, best first."""
    chosen: dict[str, list[_Artifact]] = {name: [] for name in ARTIFACT_SETS}
    for a in sorted(artifacts, key=_Artifact.rank):
        if len(chosen[a.set_name]) < per_set:
            chosen[a.set_name].append(a)
    return chosen


def _clusters(artifacts: Iterable[_Artifact]) -> list[JSONDict]:
    """One cluster per tag that two or more artifacts share; largest first, then by tag."""
    by_tag: dict[str, list[_Artifact]] = {}
    for a in artifacts:
        for tag in a.summary["tags"]:
            by_tag.setdefault(tag, []).append(a)
    clusters = []
    for tag, members in by_tag.items():
        if len(members) < 2:
            continue
        kinds = Counter(m.artifact_id.split("-", 1)[0] for m in members)
        clusters.append({
            "cluster_id": "tag:" + tag,
            "label": tag,
            "dominant_type": sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[0][0],
            "member_count": len(members),
            "representative_ids": [m.artifact_id for m in sorted(members, key=_Artifact.rank)[:_REPRESENTATIVES]],
            "shared_tags": [tag],
            "avg_confidence": round(sum(m.confidence for m in members) / len(members), 4),
            "total_observations": sum(m.count for m in members),
        })
    return sorted(clusters, key=lambda c: (-c["member_count"], c["label"]))


# ---------------------------------------------------------------------------
# The knowledge graph: memories joined by edges


@dataclass
class _Graph:
    """The live memories that have live edges, and their outgoing live edges,
    gathered memory by memory (see `graph_digest` in the module docstring)."""

    nodes: dict[str, tuple[str, float]] = field(default_factory=dict)
    """id -> (type name, confidence) of each live memory with any live edge."""
    out: list[tuple[str, str, str, float]] = field(default_factory=list)
    """(src id, edge type name, dst id, weight) of each live edge out of a live memory."""

    def add(self, m: Memory, edges: Sequence[Edge]) -> None:
        """A live memory and its live edges, both directions."""
        if edges:
            self.nodes[m.id] = (m.type.type_name.lower(), m.confidence)
            self.out += [(e.src, e.type.name.lower(), e.dst, e.weight) for e in edges if e.src == m.id]

    def digest(self, entries: int) -> JSONDict:
        relations = sorted(r for r in self.out if r[2] in self.nodes)  # the other end is live too
        degree: Counter[str] = Counter()
        for src, _, dst, _ in relations:
            degree[src] += 1
            degree[dst] += 1
        entities = sorted(degree)
        top = sorted(degree.items(), key=lambda kv: (-kv[1], kv[0]))[: min(entries, 10)]
        return {
            "entity_count": len(entities),
            "relation_count": len(relations),
            "entity_type_distribution": _top(Counter(self.nodes[n][0] for n in entities), entries),
            "relation_type_distribution": _top(Counter(type_name for _, type_name, _, _ in relations), entries),
            "avg_entity_confidence": _ratio(sum(self.nodes[n][1] for n in entities), len(entities)),
            "avg_relation_weight": _ratio(sum(weight for *_, weight in relations), len(relations)),
            "top_connected_entities": [{"name": n, "type": self.nodes[n][0], "connection_count": count} for n, count in top],
            "max_depth": _max_depth(entities, relations),
        }


def _max_depth(entities: Sequence[str], relations: Sequence[tuple[str, str, str, float]]) -> int:
    """The deepest level of breadth-first walks along edge direction: one from every
    entity nothing points at, then one from each smallest id not reached yet."""
    children: dict[str, list[str]] = {}
    for src, _, dst, _ in relations:
        children.setdefault(src, []).append(dst)
    pointed_at = {dst for _, _, dst, _ in relations}
    depth: dict[str, int] = {}

    def walk(starts: list[str]) -> None:
        depth.update((n, 0) for n in starts)
        level, frontier = 0, starts
        while frontier:
            level += 1
            reached = []
            for n in frontier:
                for child in children.get(n, ()):
                    if child not in depth:
                        depth[child] = level
                        reached.append(child)
            frontier = reached

    walk([n for n in entities if n not in pointed_at])
    for n in entities:
        if n not in depth:
            walk([n])
    return max(depth.values(), default=0)


# ---------------------------------------------------------------------------
# Statistics: one pass over every memory, in id order


@dataclass
class _Stats:
    """Counters gathered in one pass over the store (see the module docstring)."""

    newest: datetime = _EPOCH
    live: int = 0
    tombstoned: int = 0
    events: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    by_section: Counter[str] = field(default_factory=Counter)
    sources: Counter[str] = field(default_factory=Counter)
    tags: Counter[str] = field(default_factory=Counter)
    promoted: int = 0
    promoted_confidence: float = 0.0
    contradicted: int = 0
    versions: int = 0
    tool_calls: int = 0
    tool_successes: int = 0
    tools: Counter[str] = field(default_factory=Counter)
    beliefs: int = 0
    belief_confidence: float = 0.0
    beliefs_all: int = 0
    corrected: int = 0
    domains: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    error_types: Counter[str] = field(default_factory=Counter)
    recovered: int = 0
    recovery_ms: int = 0
    pending_failures: dict[str, list[datetime]] = field(default_factory=dict)
    sessions: dict[str, tuple[datetime, datetime, int]] = field(default_factory=dict)
    graph: _Graph = field(default_factory=_Graph)
    artifacts: dict[str, _Artifact] = field(default_factory=dict)

    def add(self, m: Memory) -> None:
        self.newest = max(self.newest, m.updated_at)
        data = m.data
        if isinstance(data, Event):
            self.events += 1
        if isinstance(data, Belief):
            self.beliefs_all += 1
            self.corrected += m.version > 1 or m.tombstoned
        if m.tombstoned:
            self.tombstoned += 1
            return
        self.live += 1
        type_name = m.type.type_name
        self.by_type[type_name.lower()] += 1
        self.by_section[SECTION_OF_TYPE[type_name]] += 1
        self.sources[_label(m.source)] += 1
        self.tags.update(m.tags)
        self.versions += m.version
        if m.confidence >= _PROMOTED_CONFIDENCE:
            self.promoted += 1
            self.promoted_confidence += m.confidence
        self._add_session(m)
        if isinstance(data, Event):
            self._add_event(m, data)
        elif isinstance(data, Belief):
            self.beliefs += 1
            self.belief_confidence += m.confidence
            if data.subject:
                self.domains[_label(data.subject)] += 1
            if data.stance in ("doubt", "suspect") or data.evidence_against:
                self.contradicted += 1
        artifact = _artifact(data, m.frames, m.tags, m.confidence, m.expires_at, m.attributes)
        if artifact is not None:
            self.artifacts.setdefault(artifact.artifact_id, artifact)

    def _add_session(self, m: Memory) -> None:
        for tag in m.tags:
            if tag.startswith(_SESSION_PREFIXES):
                first, last, count = self.sessions.get(tag, (m.created_at, m.created_at, 0))
                self.sessions[tag] = (min(first, m.created_at), max(last, m.created_at), count + 1)

    def _add_event(self, m: Memory, data: Event) -> None:
        tools = {f.ref for f in m.frames if f.kind is ObjKind.TOOL}
        if tools:
            self.tool_calls += 1
            self.tool_successes += data.outcome == "success"
            self.tools.update(_label(t) for t in tools)
        key = _label(data.counterparty or data.kind)
        if data.outcome == "failure":
            self.errors += 1
            self.error_types[key] += 1
            self.pending_failures.setdefault(key, []).append(m.created_at)
        elif data.outcome == "success":
            for failed_at in self.pending_failures.pop(key, []):
                self.recovered += 1
                self.recovery_ms += (m.created_at - failed_at) // _MILLISECOND

    def behavioral_patterns(self, entries: int) -> JSONDict:
        lengths = [(last - first).total_seconds() for first, last, _ in self.sessions.values()]
        in_sessions = sum(count for _, _, count in self.sessions.values())
        return {
            "tool_usage": {
                "total_calls": self.tool_calls,
                "tool_frequency": _top(self.tools, entries),
                "avg_success_rate": _ratio(self.tool_successes, self.tool_calls),
                "preferred_tools": list(_top(self.tools, min(entries, 5))),
            },
            "decision_patterns": {
                "total_decisions": self.beliefs,
                "avg_confidence": _ratio(self.belief_confidence, self.beliefs),
                "correction_rate": _ratio(self.corrected, self.beliefs_all),
                "top_decision_domains": list(_top(self.domains, min(entries, 5))),
            },
            "error_patterns": {
                "total_errors": self.errors,
                "recovery_rate": _ratio(self.recovered, self.errors),
                "common_error_types": _top(self.error_types, entries),
                "avg_recovery_time_ms": self.recovery_ms // self.recovered if self.recovered else 0,
            },
            "session_patterns": {
                "avg_session_length": int(sum(lengths) / len(lengths)) if lengths else 0,
                "avg_events_per_session": _ratio(in_sessions, len(self.sessions)),
                "total_sessions": len(self.sessions),
            },
        }

    def semantic_summary(self, entries: int) -> JSONDict:
        return {
            "promoted_count": self.promoted,
            "tentative_count": self.live - self.promoted,
            "deprecated_count": self.tombstoned,
            "contradicted_count": self.contradicted,
            "type_distribution": _top(self.by_type, entries),
            "extraction_method_distribution": _top(self.sources, entries),
            "avg_promoted_confidence": _ratio(self.promoted_confidence, self.promoted),
            "avg_observation_count": _ratio(self.versions, self.live),
        }

    def context_priors(self, priority: Sequence[_Artifact], entries: int) -> JSONDict:
        sections = sorted(self.by_section.items(), key=lambda kv: (-kv[1], SECTION_ORDER.index(kv[0])))
        most = sections[0][1] if sections else 0
        used_tags = Counter({tag: n for tag, n in self.tags.items() if n >= 2})
        return {
            "preferred_sections": [name for name, _ in sections],
            "section_weights": {name: _ratio(n, most) for name, n in sections},
            "default_token_budget": _DEFAULT_TOKEN_BUDGET,
            "priority_artifact_ids": [a.artifact_id for a in priority[: min(entries, _PRIORITY_LIMIT)]],
            "priority_tags": [_label(t) for t in _top(used_tags, min(entries, _PRIORITY_LIMIT))],
            "suppressed_tags": [],
        }




# ---------------------------------------------------------------------------
# Export


def export(store: InteropStore, tier: str = "full", *, tags: Sequence[str] | None = None,
           expires_at: datetime | str | None = None, sign_with: object = None) -> JSONDict:
    """The store's fingerprint in `tier`, wrapped in its export envelope. `tags`: the
    fingerprint's categorization tags (default: the exported artifacts' tags, without
    the tags HMX imports write); `expires_at`: when it goes stale (default: never);
    `sign_with`: an Ed25519 private key that signs the envelope, so that a store
    trusting its public key imports it as trusted (`fingerprint_trust`)."""
    if tier not in TIERS:
        raise ValidationError("tier", f"must be one of {', '.join(TIERS)}", tier)
    envelope = _export(store, tier, tags, expires_at)
    return envelope if sign_with is None else fingerprint_trust.sign(envelope, sign_with)


def _export(store: InteropStore, tier: str, tags: Sequence[str] | None, expires_at: datetime | str | None) -> JSONDict:
    extra: JSONDict = {"compiler_state": _with_learn_params(compiler_state(store.weights()), store.learn_params())}
    if tags is not None:
        if isinstance(tags, (str, bytes)) or not all(isinstance(t, str) and t for t in tags) or len(tags) > MAX_TAGS:
            raise ValidationError("tags", f"must be a list of at most {MAX_TAGS} non-empty strings", tags)
        extra["tags"] = list(tags)
    if expires_at is not None:
        extra["expires_at"] = iso(parse_time("expires_at", expires_at))
    actor = str(store.stats()["actor"])
    root = store.root()
    stats = _Stats()
    for m in store.memories(include_tombstoned=True):
        stats.add(m)
        if not m.tombstoned:
            stats.graph.add(m, store.edges(m.id, "both"))
    entries = _STAT_ENTRIES[tier]
    ranked = sorted(stats.artifacts.values(), key=_Artifact.rank)
    chosen = _select(ranked, ARTIFACTS_PER_SET[tier])
    cluster_source = _select(ranked, ARTIFACTS_PER_SET["compact"]) if tier == "minimal" else chosen
    dropped_clusters = 0
    while True:
        artifacts = [a for name in ARTIFACT_SETS for a in chosen[name]]
        clusters = _clusters(a for name in ARTIFACT_SETS for a in cluster_source[name])
        clusters = clusters[: max(0, len(clusters) - dropped_clusters)]
        if tags is None:
            extra["tags"] = sorted({t for a in artifacts for t in a.summary["tags"] if not _MACHINE_TAG.match(t)})[:MAX_TAGS]
        fingerprint = _fingerprint(stats, tier, actor, root, chosen, clusters, sorted(artifacts, key=_Artifact.rank), entries,
                                   extra)
        if len(canonical_json(fingerprint)) <= TIER_LIMITS[tier]:
            break
        largest = max(ARTIFACT_SETS, key=lambda name: (len(chosen[name]), name))
        if chosen[largest]:
            chosen[largest].pop()  # the lowest-ranked of the largest set
        elif clusters:
            dropped_clusters += 1
        else:
            raise AssertionError(f"a {tier} fingerprint without artifacts or clusters is over its size limit")
    return {
        "format": FORMAT,
        "envelope_version": ENVELOPE_VERSION,
        "hmx_version": HMX_VERSION,
        "fingerprint": fingerprint,
        "exported_at": fingerprint["created_at"],
        "integrity_hash": content_hash(fingerprint),
        "exported_by": actor,
    }


def _fingerprint(stats: _Stats, tier: str, actor: str, root: str, chosen: Mapping[str, list[_Artifact]],
                 clusters: list[JSONDict], priority: Sequence[_Artifact], entries: int, extra: JSONDict) -> JSONDict:
    summaries: JSONDict = {
        name: [a.summary for a in sorted(chosen[name], key=lambda a: a.artifact_id)] for name in ARTIFACT_SETS
    }
    summaries["cluster_summaries"] = clusters
    fingerprint: JSONDict = {
        "hmx_version": HMX_VERSION,
        "fingerprint_version": FINGERPRINT_VERSION,
        "tenant_id": actor,
        "agent_id": actor,
        "created_at": _iso(stats.newest),
        "artifact_summaries": summaries,
        "behavioral_patterns": stats.behavioral_patterns(entries),
        "graph_digest": stats.graph.digest(entries),
        "semantic_summary": stats.semantic_summary(entries),
        "context_priors": stats.context_priors(priority, entries),
        "metadata": {"generator": "cortex", "root": root, "memories": stats.live},
        "compression_tier": tier,
        "source_event_count": stats.events,
        "source_artifact_count": len(stats.artifacts),
    }
    fingerprint.update(extra)
    fingerprint["fingerprint_id"] = "fp-" + content_hash(fingerprint)[:32]
    fingerprint["fingerprint_hash"] = content_hash(fingerprint)
    return fingerprint


# ---------------------------------------------------------------------------
# Import


def import_(store: InteropStore, envelope: Mapping[str, Any] | str | bytes) -> int:
    """Import an exported fingerprint (a dict, or its JSON text); return how many
    artifact memories were written (see the module docstring and `import_report`)."""
    return import_report(store, envelope).written


def import_report(store: InteropStore, envelope: Mapping[str, Any] | str | bytes) -> FingerprintImport:
    """`import_`, saying what it did: the artifacts written, the fields seed 003 does
    not define (kept in the import record's attributes), warnings (a newer
    `fingerprint_version`, priors too large to keep), and whether the context priors
    were stored and the compiler state recorded."""
    env = _parse(envelope)
    fingerprint = _checked(env)
    fingerprint_id = str(fingerprint["fingerprint_id"])
    signer = fingerprint_trust.signer(env, store.trusted_keys())
    # Known by its content, not by the id it claims (`fingerprint_trust`).
    marker = import_tag(fingerprint_trust.content_id(fingerprint))
    if store.find(tags=[marker], limit=1, include_tombstoned=True):
        return FingerprintImport(fingerprint_id, 0, already_imported=True)
    unknown = unknown_fields(env)
    warnings: list[str] = []
    version = int(fingerprint["fingerprint_version"])
    if version > FINGERPRINT_VERSION:
        warnings.append(f"fingerprint_version {version} is newer than {FINGERPRINT_VERSION}: imported best-effort"
                        + (f", {len(unknown)} unknown fields kept" if unknown else ""))
    writes = _artifact_writes(fingerprint["artifact_summaries"])
    kept, kept_warnings = kept_writes(fingerprint, fingerprint_id)
    warnings += kept_warnings
    existing = _live_artifact_ids(store)
    new: list[Write] = []
    for write in writes:
        artifact = _artifact(write.data, write.frames, write.tags, write.confidence, write.expires_at)
        if artifact is not None and artifact.artifact_id not in existing:
            existing.add(artifact.artifact_id)
            new.append(write)
    if signer is None:
        new = fingerprint_trust.untrusted(new, warnings)
    new = fingerprint_trust.with_provenance(new, marker)
    source = str(fingerprint.get("agent_id") or fingerprint["tenant_id"])
    record = Event(
        kind="observation", outcome="success", counterparty=cut_utf8(source, 256),
        summary=f"imported HMX fingerprint {fingerprint_id}: {len(new)} artifacts",
    )
    attributes = record_attributes(unknown, warnings)
    if signer is not None:  # the trusted name whose key signed it
        attributes = {**(attributes or {}), "signed_by": signer}
    store.write_many([*new, *kept, Write(record, tags=(marker,), source="hmx-fingerprint", attributes=attributes)])
    tags = {w.tags[0] for w in kept}
    return FingerprintImport(fingerprint_id, len(new), tuple(unknown), tuple(warnings), PRIORS_TAG in tags,
                             COMPILER_STATE_TAG in tags)


def _parse(envelope: object) -> Mapping[str, Any]:
    if isinstance(envelope, (str, bytes)):
        try:
            text = envelope.decode("utf-8") if isinstance(envelope, bytes) else envelope
            envelope = json.loads(text, parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValidationError("envelope", f"must be a JSON object ({exc})") from None
    if not isinstance(envelope, Mapping):
        raise ValidationError("envelope", f"must be an object, not {type(envelope).__name__}", envelope)
    return envelope


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _checked(env: Mapping[str, Any]) -> Mapping[str, Any]:
    """The envelope's fingerprint, once the envelope, the version and both hashes check."""
    if env.get("format") != FORMAT:
        raise ValidationError("format", f'must be "{FORMAT}"', env.get("format"))
    if env.get("envelope_version") != ENVELOPE_VERSION:
        raise ValidationError("envelope_version", f"must be {ENVELOPE_VERSION}", env.get("envelope_version"))
    _check_version("hmx_version", env.get("hmx_version"))
    for key in ("exported_at", "exported_by"):
        if not isinstance(env.get(key), str):
            raise ValidationError(key, "must be a string", env.get(key))
    fingerprint = env.get("fingerprint")
    if not isinstance(fingerprint, Mapping):
        raise ValidationError("fingerprint", "must be an object", fingerprint)
    try:
        actual = content_hash(fingerprint)
        actual_fingerprint = content_hash(without(dict(fingerprint), "fingerprint_hash"))
    except (TypeError, ValueError):
        raise ValidationError("fingerprint", "must hold JSON values only") from None
    if env.get("integrity_hash") != actual:
        raise FingerprintIntegrityError("integrity_hash", f"does not match the fingerprint (its SHA-256 is {actual})", env.get("integrity_hash"))
    if fingerprint.get("fingerprint_hash") != actual_fingerprint:
        raise FingerprintIntegrityError("fingerprint.fingerprint_hash", "does not match the fingerprint's content",
                                        fingerprint.get("fingerprint_hash"))
    _check_version("fingerprint.hmx_version", fingerprint.get("hmx_version"))
    for key in ("fingerprint_id", "tenant_id", "created_at"):
        value = fingerprint.get(key)
        if not isinstance(value, str) or not value:
            raise ValidationError(f"fingerprint.{key}", "must be a non-empty string", value)
    version = fingerprint.get("fingerprint_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValidationError("fingerprint.fingerprint_version", "must be an integer >= 1", version)
    check_optional(fingerprint)
    for key in ("artifact_summaries", "behavioral_patterns", "graph_digest", "semantic_summary", "context_priors", "metadata"):
        if not isinstance(fingerprint.get(key), Mapping):
            raise ValidationError(f"fingerprint.{key}", "must be an object", fingerprint.get(key))
    return fingerprint


def _check_version(name: str, value: object) -> None:
    match = re.fullmatch(r"HMX-(\d+)\.(\d+)", value) if isinstance(value, str) else None
    if match is None:
        raise ValidationError(name, 'must look like "HMX-<major>.<minor>"', value)
    if int(match.group(1)) != 1:
        raise ValidationError(name, f"major version {match.group(1)} is not supported: this reader takes HMX-1.x", value)


def _live_artifact_ids(store: InteropStore) -> set[str]:
    """The artifact ids of the store's live Constraints, Preferences and Patterns."""
    counts = store.stats()["by_type"]
    ids: set[str] = set()
    for type_name in ("Constraint", "Preference", "Pattern"):
        if counts.get(type_name):
            for m in store.find(type=type_name, limit=int(counts[type_name])):
                artifact = _artifact(m.data, m.frames, m.tags, m.confidence, m.expires_at, m.attributes)
                if artifact is not None:
                    ids.add(artifact.artifact_id)
    return ids


class _Summary:
    """Typed reads of one artifact summary; errors name its path in the fingerprint."""

    def __init__(self, path: str, obj: object) -> None:
        if not isinstance(obj, Mapping):
            raise ValidationError(path, "must be an object", obj)
        self.path = path
        self.obj = obj

    def text(self, key: str, *, required: bool = True) -> str:
        value = self.obj.get(key, None if required else "")
        if not isinstance(value, str) or (required and not value.strip()):
            raise ValidationError(f"{self.path}.{key}", "must be a non-empty string" if required else "must be a string", value)
        return value

    def texts(self, key: str) -> list[str]:
        value = self.obj.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValidationError(f"{self.path}.{key}", "must be a list of strings", value)
        return value

    def number(self, key: str, default: float, lo: float = 0.0, hi: float = math.inf) -> float:
        value = self.obj.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            raise ValidationError(f"{self.path}.{key}", f"must be a number within [{lo}, {hi}]", value)
        return float(value)

    def count(self, key: str) -> int:
        value = self.obj.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValidationError(f"{self.path}.{key}", "must be an integer >= 0", value)
        return value

    def frames(self, key: str) -> tuple[Frame, ...]:
        """The `verb:kind:ref` entries of a list; entries of another shape are skipped."""
        frames: list[Frame] = []
        for text in self.texts(key):
            verb, _, rest = text.partition(":")
            kind, _, ref = rest.partition(":")
            try:
                frames.append(Frame(verb, kind, ref))
            except ValidationError:
                continue
        return tuple(frames[:16])

    def write(self, data: Constraint | Preference | Pattern, *, frames: tuple[Frame, ...],
              confidence: float) -> Write:
        """The memory a summary becomes (at most 16 of its distinct tags)."""
        try:
            return Write(data, frames=frames, tags=tuple(dict.fromkeys(self.texts("tags")))[:16],
                                confidence=confidence, source="hmx-fingerprint")
        except ValidationError as exc:
            raise type(exc)(f"{self.path}.{exc.field}", exc.rule, exc.value) from None


def _artifact_writes(summaries: Mapping[str, Any]) -> list[Write]:
    """One `cortex.Write` per policy, task schema and playbook summary, in order."""
    writes: list[Write] = []
    for set_name in ARTIFACT_SETS:
        items = summaries.get(set_name, [])
        path = f"fingerprint.artifact_summaries.{set_name}"
        if not isinstance(items, list):
            raise ValidationError(path, "must be a list", items)
        if len(items) > ARTIFACTS_PER_SET["full"]:
            raise ValidationError(path, f"must hold at most {ARTIFACTS_PER_SET['full']} summaries", len(items))
        for i, item in enumerate(items):
            s = _Summary(f"{path}[{i}]", item)
            try:
                exact = s.obj.get("cortex_memory")
                writes.append(_IMPORTERS[set_name](s) if exact is None else _exact(set_name, exact))
            except ValidationError as exc:
                if exc.field.startswith(s.path):
                    raise
                raise type(exc)(f"{s.path}.{exc.field}", exc.rule, exc.value) from None
    return writes


_EXACT_TYPES: Mapping[str, tuple[str, ...]] = {"policy_set": ("Constraint", "Preference"), "task_schema_set": ("Pattern",),
                                               "playbook_set": ("Pattern",)}


def _exact(set_name: str, obj: object) -> Write:
    """The memory a summary's `cortex_memory` holds (an export by cortex), exactly."""
    try:
        write = memory_from_json(obj)
    except ValidationError as exc:
        raise type(exc)(f"cortex_memory.{exc.field}", exc.rule, exc.value) from None
    if type(write.data).__name__ not in _EXACT_TYPES[set_name]:
        raise ValidationError("cortex_memory.type", f"must be one of {', '.join(_EXACT_TYPES[set_name])} in {set_name}",
                              type(write.data).__name__)
    return Write(write.data, frames=write.frames, tags=write.tags, confidence=write.confidence,
                 expires_at=write.expires_at, source="hmx-fingerprint")


def _policy(s: _Summary) -> Write:
    artifact_id = s.text("artifact_id")
    condition = s.text("condition", required=False)
    recommendation = s.text("recommendation")
    confidence = s.number("confidence", 1.0, hi=1.0)
    frames = s.frames("scope")
    if artifact_id.startswith("preference-"):
        match = _PREFERENCE_TEXT.fullmatch(recommendation)
        polarity, detail = (match.group(1), match.group(2)) if match else ("prefer", recommendation)
        preference = Preference(topic=condition or detail, polarity=polarity, strength=confidence, value=detail)
        return s.write(preference, frames=frames, confidence=1.0)
    match = _CONSTRAINT_TEXT.fullmatch(recommendation)
    strength, polarity, statement = match.groups() if match else ("soft", "do", recommendation)
    constraint = Constraint(statement=statement, strength=strength, polarity=polarity, source="learned", trigger=condition or None)
    return s.write(constraint, frames=frames, confidence=confidence)


def _task_schema(s: _Summary) -> Write:
    title = s.text("title")
    data = Pattern(statement=title, strength=s.number("success_rate", 0.5, hi=1.0),
                          coverage=min(s.count("observed_count"), 2**53))
    return s.write(data, frames=s.frames("preconditions"), confidence=s.number("confidence", 1.0, hi=1.0))


def _playbook(s: _Summary) -> Write:
    title = s.text("title")
    failure = s.text("failure_pattern", required=False)
    data = Pattern(statement=f"{title}: {failure}" if failure else title, strength=s.number("confidence", 0.5, hi=1.0),
                          coverage=min(s.count("occurrence_count"), 2**53))
    return s.write(data, frames=(), confidence=s.number("confidence", 1.0, hi=1.0))


_IMPORTERS = {"policy_set": _policy, "task_schema_set": _task_schema, "playbook_set": _playbook}
