"""`learn()`: the store's event traces compiled into HMX-A artifacts (docs/learning.md).

    report = c.learn()                     # incremental: reads the events past the watermark
    report.created, report.updated, report.superseded, report.deprecated
    c.artifacts("task_schema")             # the artifact memories; c.artifact_forms() as HMX-A JSON

Three stages, each deterministic:

1. `traces.file_items`: the trace memories past the watermark are filed in their
   sessions' records (streamed, at most `traces.FLUSH_ITEMS` in memory);
2. `compile.compile_artifacts`: the five rules over every session record (streamed,
   one pass per pattern length, counts in memory, never the events);
3. `_apply`: each compiled artifact is written as a `Pattern` memory, or its memory
   updated (numbers: a new version; status: its tag), with `derived_from` edges to
   its evidence events. An artifact memory the compiler no longer produces is
   superseded (a compiled task schema covers its steps: `supersedes` edge) or
   archived. Nothing is deleted.

Learning the new events gives the same compiled artifacts as learning every event
from scratch (`full=True`): the session records are the same either way, and the
compiler reads only them. Artifacts that an incremental learn superseded or archived
stay, as history. Zero model calls. A crash in the middle leaves the watermark where
it was: the next learn files the same events again (filing is idempotent) and
writes what is missing.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import edges as _edges
from .. import query as _query
from .. import writes as _writes
from ..engine import Engine
from ..errors import ValidationError
from ..ids import decode_id, parse_uri
from ..memory import Memory
from ..model import EdgeType, MemoryType
from ..provenance import Provenance
from ..records import HEAD_PREFIX, head_key, unpack_head
from . import traces
from .artifacts import ARTIFACT_TAG, IMPORTANCE, PAYLOAD_KEY, artifact_id_of, data_for, hmx_form, payload, status_of, tags_for, type_tag
from .compile import STATUSES, TYPES, Artifact, canonical, compile_artifacts
from .mine import is_subsequence
from .params import DEFAULT, LearnParams

__all__ = ["learn", "LearnReport", "LearnParams", "DEFAULT", "artifacts", "check", "TYPES", "STATUSES", "hmx_form",
           "compiled", "params_of"]

_MAX_ARTIFACTS = 2**31 - 1
_LOCKS: weakref.WeakKeyDictionary[Engine, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class LearnReport:
    """What one `learn()` did. Each list holds artifact ids, sorted."""

    events_read: int  # trace memories filed by this call
    events_total: int  # trace memories filed so far
    sessions: int  # sessions with steps
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # new numbers (a new version)
    superseded: list[str] = field(default_factory=list)
    deprecated: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  # back from superseded or archived
    by_status: dict[str, int] = field(default_factory=dict)  # every artifact memory, after the call
    by_type: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "events_read": self.events_read, "events_total": self.events_total, "sessions": self.sessions,
            "created": self.created, "updated": self.updated, "superseded": self.superseded,
            "deprecated": self.deprecated, "archived": self.archived, "restored": self.restored,
            "by_status": self.by_status, "by_type": self.by_type,
        }


def _lock(e: Engine) -> threading.Lock:
    with _LOCKS_LOCK:
        lock = _LOCKS.get(e)
        if lock is None:
            lock = _LOCKS[e] = threading.Lock()
        return lock


def compiled(e: Engine, params: LearnParams = DEFAULT) -> list[Artifact]:
    """The artifacts the stored session records compile to (writes nothing)."""
    return compile_artifacts(lambda: traces.sessions(e), params)


def params_of(e: Engine) -> LearnParams | None:
    """The thresholds of the store's last learn (None before the first)."""
    state = traces.State.load(e)
    return None if state is None else LearnParams(**state.params)


def learn(e: Engine, *, full: bool = False, params: LearnParams = DEFAULT) -> LearnReport:
    """Compile the store's traces into artifacts (see the module docstring)."""
    e.check_writable()
    if not isinstance(full, bool):
        raise ValidationError("full", "must be a bool", full)
    if not isinstance(params, LearnParams):
        raise ValidationError("params", "must be a cortex.learn.LearnParams", params)
    with _lock(e):
        if full:
            traces.clear(e)
        state = traces.State.load(e)
        watermark, filed = traces.file_items(e, b"" if state is None else state.watermark)
        total = filed + (0 if state is None else state.events)
        found = compiled(e, params)
        report = _apply(e, found)
        e.write({traces.STATE_KEY: traces.State(watermark, total, params.to_dict()).encode()})
    sessions = sum(1 for _, items in traces.sessions(e) if any(it[2] == traces.STEP for it in items))
    return LearnReport(filed, total, sessions, **report)


def artifacts(e: Engine, artifact_type: str | None = None, status: str | None = None) -> list[Memory]:
    """The artifact memories (of one type, in one status), by artifact id."""
    if artifact_type is not None and artifact_type not in TYPES:
        raise ValidationError("type", f"must be one of {', '.join(TYPES)}", artifact_type)
    tags = [ARTIFACT_TAG if artifact_type is None else type_tag(artifact_type)]
    if status is not None:
        if status not in STATUSES:
            raise ValidationError("status", f"must be one of {', '.join(STATUSES)}", status)
        tags.append(f"hmx.status:{status}")
    found = _query.find(e, type=MemoryType.PATTERN, tags=tags, where=None, order_by="created", limit=_MAX_ARTIFACTS,
                        budget_tokens=None, form=None, include_tombstoned=False, scope=None, late_binding=False,
                        include_superseded=True)
    out = [m for m in found if artifact_id_of(m) is not None]
    out.sort(key=lambda m: (artifact_id_of(m) or "", m.id))
    return out


def _apply(e: Engine, found: list[Artifact]) -> dict[str, Any]:
    existing: dict[str, Memory] = {}
    for held in artifacts(e):
        aid = artifact_id_of(held)
        if aid is not None:
            existing.setdefault(aid, held)
    out: dict[str, list[str]] = {k: [] for k in ("created", "updated", "superseded", "deprecated", "archived", "restored")}
    compiled_ids = {a.artifact_id for a in found}
    new: list[tuple[Artifact, _writes.Write]] = []
    links: list[tuple[bytes, EdgeType, bytes]] = []
    for a in found:
        data = data_for(a, _evidence_uris(e, a.evidence))
        tags = tags_for(a, a.status)
        m = existing.get(a.artifact_id)
        if m is None:
            new.append((a, _writes.Write(data, frames=a.frames, tags=tags, importance=IMPORTANCE[a.status],
                                         source="learned", attributes=payload(a))))
            out["created"].append(a.artifact_id)
            if a.status == "deprecated":
                out["deprecated"].append(a.artifact_id)
            continue
        old_status = status_of(m)
        if (m.attributes or {}).get(PAYLOAD_KEY) != payload(a)[PAYLOAD_KEY] or m.data != data:
            _writes.update(e, m.uri, data, provenance=Provenance.check(attributes=payload(a)))
            out["updated"].append(a.artifact_id)
        if old_status != a.status or m.frames != a.frames or m.tags != tags or m.importance != IMPORTANCE[a.status]:
            _writes.update_head(e, m.uri, tags=tags, frames=a.frames, importance=IMPORTANCE[a.status])
            if a.status == "deprecated" and old_status != "deprecated":
                out["deprecated"].append(a.artifact_id)
            if old_status in ("superseded", "archived"):
                out["restored"].append(a.artifact_id)
                for edge in _edges.edges(e, m.uri, "in", [EdgeType.SUPERSEDES]):
                    _edges.unlink(e, edge.src, EdgeType.SUPERSEDES, m.id, "the evidence supports it again")
        links.extend((decode_id(m.id), EdgeType.DERIVED_FROM, raw) for raw in a.evidence)
    if new:
        uris = _writes.write_many(e, [w for _, w in new])
        for (a, _), uri in zip(new, uris):
            stored = _stored(e, parse_uri(uri).id)
            assert stored is not None  # just written
            existing[a.artifact_id] = stored
            links.extend((parse_uri(uri).id, EdgeType.DERIVED_FROM, raw) for raw in a.evidence)
    for aid, m in sorted(existing.items()):
        if aid in compiled_ids or status_of(m) in ("superseded", "archived"):
            continue
        cover = _coverer(m, found)
        if cover is not None:
            _edges.link(e, existing[cover.artifact_id].uri, EdgeType.SUPERSEDES, m.uri)
            status = "superseded"
        else:
            status = "archived"
        out[status].append(aid)
        tags = tuple(t for t in m.tags if not t.startswith("hmx.status:")) + (f"hmx.status:{status}",)
        _writes.update_head(e, m.uri, tags=tags, importance=IMPORTANCE[status])
    if links:
        _edges.link_many(e, links)
    by_status: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for m in artifacts(e):
        by_status[status_of(m)] = by_status.get(status_of(m), 0) + 1
        kind = (m.attributes or {})[PAYLOAD_KEY]["artifact_type"]
        by_type[kind] = by_type.get(kind, 0) + 1
    return {**{k: sorted(v) for k, v in out.items()},
            "by_status": dict(sorted(by_status.items())), "by_type": dict(sorted(by_type.items()))}


def _stored(e: Engine, raw_id: bytes) -> Memory | None:
    key = head_key(raw_id)
    raw = e.storage.get(key)
    return None if raw is None else Memory.stored(raw_id, unpack_head(key, raw))


def _evidence_uris(e: Engine, raw_ids: tuple[bytes, ...]) -> tuple[str, ...]:
    """The URIs (version 1: an event's own) of the evidence events still stored."""
    out = []
    for raw_id in raw_ids:
        m = _stored(e, raw_id)
        if m is not None:
            out.append(f"cortex://{m.type.type_name}/{m.id}#1")
    return tuple(out)


def _coverer(m: Memory, found: list[Artifact]) -> Artifact | None:
    """The compiled artifact that replaces an artifact memory the compiler no longer
    produces: for a task schema, the compiled task schema with the most support
    whose steps contain its steps (ties: artifact id); None for the other types."""
    body = (m.attributes or {})[PAYLOAD_KEY]
    if body["artifact_type"] != "task_schema":
        return None
    steps = body["content"]["steps"]
    candidates = [a for a in found if a.artifact_type == "task_schema" and len(a.content["steps"]) > len(steps)
                  and is_subsequence(steps, a.content["steps"])]
    return min(candidates, key=lambda a: (-a.support, a.artifact_id)) if candidates else None


def check(e: Engine) -> list[str]:
    """`verify()`'s part: each artifact memory's content hash recomputed, and its
    numbers and status recounted from the event memories themselves (those the last
    learn read, up to the watermark) with the thresholds it used. Empty when they
    agree or nothing was learned."""
    state = traces.State.load(e)
    if state is None:
        return []
    records = traces.sessions_of(_memories_upto(e, state.watermark))
    ordered = sorted(records.items(), key=lambda kv: traces.session_key(kv[0]))
    recount = {a.artifact_id: a for a in compile_artifacts(lambda: iter(ordered), LearnParams(**state.params))}
    problems = []
    stored = artifacts(e)
    for m in stored:
        aid = artifact_id_of(m) or ""
        body = (m.attributes or {})[PAYLOAD_KEY]
        status = status_of(m)
        digest = hashlib.sha256(canonical({"artifact_type": body["artifact_type"], "title": body["title"],
                                           **body["content"]})).hexdigest()
        if digest != body["content_hash"]:
            problems.append(f"artifact {aid} ({m.uri}): content_hash does not match its content")
            continue
        a = recount.get(aid)
        if a is None:
            if status not in ("superseded", "archived"):
                problems.append(f"artifact {aid} ({m.uri}): {status}, but a recount of the events compiles no such artifact"
                                " (run learn(full=True) after editing events)")
        elif a.content_hash != body["content_hash"]:
            problems.append(f"artifact {aid} ({m.uri}): its numbers differ from a recount of its evidence"
                            " (run learn(full=True) after editing events)")
        elif a.status != status:
            problems.append(f"artifact {aid} ({m.uri}): status {status}, the rules give {a.status}")
    held = {artifact_id_of(m) for m in stored}
    for aid in sorted(set(recount) - held):
        problems.append(f"artifact {aid}: compiled from the events learned, but no memory holds it (run learn())")
    return problems


def _memories_upto(e: Engine, watermark: bytes) -> Iterator[Memory]:
    if not watermark:
        return
    for key, raw in e.storage.scan_items(HEAD_PREFIX):
        raw_id = key[len(HEAD_PREFIX):]
        if raw_id > watermark:
            return
        yield Memory.stored(raw_id, unpack_head(key, raw))
