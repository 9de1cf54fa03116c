"""Artifacts as memories, and their HMX-A JSON form.

A compiled artifact is stored as a `Pattern` memory (no new memory type, so stores
and readers that predate learning read it as any Pattern):

* `data`: `Pattern(statement, derived_from, strength, coverage)`: the statement is
  the artifact in a sentence (what `context()` renders), `derived_from` the URIs of
  its evidence events (at most `evidence_links`), `strength` its confidence and
  `coverage` its support (sessions);
* `frames`: the frames of the steps, tools and objects it is about, so `context()`
  on a task that touches them brings it back;
* `tags`: `hmx.artifact`, `hmx.artifact:<type>`, `hmx.status:<status>` and
  `hmx.artifact_id:<artifact id>` (find them by type: `find(tags=["hmx.artifact:task_schema"], ...)`);
* `attributes` (its provenance, `cortex.provenance`): `{"hmx_artifact": {"artifact_id",
  "artifact_type", "title", "content", "content_hash"}}`, the payload the HMX-A form
  is built from; `content_hash` is the SHA-256 hex of the canonical JSON of
  `{"artifact_type", "title", **content}`;
* `source` "learned", importance by status (active 6, draft 2, others 0).

The lifecycle status lives in the tag (a status change is `update_head`, no new
version); new numbers make a new version. `derived_from` edges link it to each
evidence event, and a `supersedes` edge from the artifact that replaced it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ..memory import Memory
from ..model import Pattern
from .compile import Artifact, STATUSES, canonical

ARTIFACT_TAG = "hmx.artifact"
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "artifact.schema.json")
IMPORTANCE = {"active": 6, "draft": 2, "superseded": 0, "deprecated": 0, "archived": 0}
PAYLOAD_KEY = "hmx_artifact"

__all__ = ["ARTIFACT_TAG", "SCHEMA_PATH", "tags_for", "payload", "statement", "data_for", "hmx_form", "schema",
           "status_of", "artifact_id_of", "type_tag"]


def type_tag(artifact_type: str) -> str:
    return f"hmx.artifact:{artifact_type}"


def tags_for(a: Artifact, status: str) -> tuple[str, ...]:
    return (ARTIFACT_TAG, type_tag(a.artifact_type), f"hmx.status:{status}", f"hmx.artifact_id:{a.artifact_id}")


def payload(a: Artifact) -> dict[str, Any]:
    return {PAYLOAD_KEY: {"artifact_id": a.artifact_id, "artifact_type": a.artifact_type, "title": a.title,
                          "content": a.content, "content_hash": a.content_hash}}


def _pct(x: float) -> str:
    return f"{round(x * 100)}%"


def statement(a: Artifact) -> str:
    """The artifact in one sentence (its memory's statement)."""
    c = a.content
    if a.artifact_type == "task_schema":
        text = (f"Procedure seen in {c['observed_count']} sessions ({_pct(c['success_rate'])} succeeded): "
                + " \u2192 ".join(c["steps"]))
        if c["preconditions"]:
            text += f". Starts under: {', '.join(c['preconditions'])}"
        return text + "."
    if a.artifact_type == "failure_playbook":
        text = f"When {c['failure_pattern'][:-6]} fails ({c['occurrence_count']} failures in {c['session_count']} sessions"
        text += f", {c['recovered_count']} recovered)"
        if c["trigger_conditions"]:
            text += f": it usually follows {', '.join(c['trigger_conditions'])}"
        if c["recovery_steps"]:
            text += f"; recovery that worked: " + " \u2192 ".join(c["recovery_steps"])
        return text + "."
    if a.artifact_type == "decision_policy":
        others = [f"{o['option']} {_pct(o['success_rate'])}" for o in c["options"] if o["option"] != c["recommendation"]]
        text = (f"Under {c['condition']}, decide: {c['recommendation']} ({_pct(c['confidence'])} of "
                f"{c['outcome_count']} sessions succeeded")
        return text + (f"; others: {', '.join(others)})." if others else ").")
    if a.artifact_type == "causal_pattern":
        return (f"{c['cause']} is followed by {c['effect']} in {_pct(c['confidence'])} of its {c['cause_sessions']} "
                f"sessions (lift {c['lift']:.2f}).")
    steps = " | ".join(" \u2192 ".join(p["steps"]) for p in c["phases"])
    return f"Strategy: {steps} ({c['success_count']} of {c['session_count']} sessions succeeded)."


def data_for(a: Artifact, evidence_uris: tuple[str, ...]) -> Pattern:
    return Pattern(statement=statement(a), derived_from=evidence_uris, strength=min(1.0, max(0.0, a.confidence)),
                   coverage=a.support)


def status_of(m: Memory) -> str:
    for tag in m.tags:
        if tag.startswith("hmx.status:") and tag[11:] in STATUSES:
            return tag[11:]
    return "archived"


def artifact_id_of(m: Memory) -> str | None:
    attrs = m.attributes
    body = attrs.get(PAYLOAD_KEY) if isinstance(attrs, Mapping) else None
    return body.get("artifact_id") if isinstance(body, Mapping) else None


def hmx_form(m: Memory) -> dict[str, Any]:
    """The HMX-A JSON form of an artifact memory (validates against `schema()`)."""
    attrs = m.attributes or {}
    body = attrs[PAYLOAD_KEY]
    data = m.data
    assert isinstance(data, Pattern)
    return {
        "hmx_version": "HMX-1.0",
        "artifact_id": body["artifact_id"],
        "artifact_type": body["artifact_type"],
        "status": status_of(m),
        "version": m.version,
        "title": body["title"],
        "summary": data.statement,
        "content": body["content"],
        "content_hash": body["content_hash"],
        "confidence": data.strength,
        "observed_count": data.coverage,
        "evidence": list(data.derived_from),
        "tags": sorted(t for t in m.tags if not t.startswith("hmx.")),
        "scope": [f"{f.verb.name.lower()} {f.kind.name.lower()}:{f.ref}" for f in m.frames],
        "memory_uri": m.uri,
        "created_at": _iso(m.created_at),
        "updated_at": _iso(m.updated_at),
        "compiler": {"name": "cortex.learn", "deterministic": True, "llm_calls": 0},
    }


def _iso(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the HMX-A form, shipped in the package."""
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        loaded: dict[str, Any] = json.load(handle)
    return loaded


def form_bytes(form: Mapping[str, Any]) -> bytes:
    """Canonical JSON bytes of a form (what the determinism tests compare)."""
    return canonical(dict(form))

