"""Seed 001's `sequence`, "a monotonic counter within a session", enforced on ingest.

    order = SessionOrder(store)
    order.check(line, session_id, sequence, event_id)    # raises MalformedEvent

Within one input, each event's sequence must be greater than that of the event
before it in the same session; across ingests, greater than the highest sequence
the store already holds for that session (read once per session, from the
memories' provenance: `find(session=..., order_by="sequence")`). An event that will
be skipped is not checked: an event_id met earlier in the same input, or an event
the store already holds (so ingesting the same events again stays a no-op). The
error names both places, e.g.

    line 3: sequence: must be greater than 5, the sequence of line 1 in session 'sess_abc' (got 2)
    line 1: sequence: must be greater than 7, the highest sequence of session 'sess_abc' in the store
            (event evt_7, cortex://Event/01J...#1) (got 3)

A sequence above `cortex.provenance.MAX_SEQUENCE` is not stored, so such events
are ordered within an input only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import MalformedEvent
from ..provenance import MAX_SEQUENCE
from . import InteropStore

__all__ = ["SessionOrder"]


@dataclass(frozen=True, slots=True)
class _Top:
    """The store's highest sequence of one session, and the memory that holds it."""

    sequence: int | None
    event_id: str | None
    uri: str | None


class SessionOrder:
    """The sequences one ingest has met, per session (see the module docstring)."""

    def __init__(self, store: InteropStore) -> None:
        self._store = store
        self._last: dict[str, tuple[int, int]] = {}  # session -> (sequence, line)
        self._tops: dict[str, _Top] = {}
        self._ids: set[str] = set()

    def check(self, line: int, session: str, sequence: int, event_id: str) -> None:
        if event_id in self._ids:
            return  # a repeat of an event of this input: skipped by the ingest
        self._ids.add(event_id)
        top = self._top(session)
        if top.sequence is not None and sequence <= top.sequence and self._stored(event_id):
            return  # already in the store: skipped by the ingest
        before = self._last.get(session)
        if before is not None and sequence <= before[0]:
            raise MalformedEvent(line, "sequence", f"must be greater than {before[0]}, the sequence of line {before[1]} "
                                 f"in session {session!r} (got {sequence})", sequence)
        if top.sequence is not None and sequence <= top.sequence:
            raise MalformedEvent(line, "sequence", f"must be greater than {top.sequence}, the highest sequence of session "
                                 f"{session!r} in the store (event {top.event_id}, {top.uri}) (got {sequence})", sequence)
        self._last[session] = (sequence, line)

    def _top(self, session: str) -> _Top:
        top = self._tops.get(session)
        if top is None:
            top = self._tops[session] = self._read_top(session)
        return top

    def _read_top(self, session: str) -> _Top:
        total = int(self._store.stats()["memories"]) + int(self._store.stats()["tombstoned"])
        if not total:
            return _Top(None, None, None)
        trace = self._store.find(session=session, order_by="sequence", include_tombstoned=True, limit=total)
        with_sequence = [m for m in trace if m.session == session and m.sequence is not None]
        if not with_sequence:
            return _Top(None, None, None)
        last = with_sequence[-1]
        event_id = last.origin.event_id if last.origin is not None else None
        return _Top(min(int(last.sequence or 0), MAX_SEQUENCE), event_id, last.uri)

    def _stored(self, event_id: str) -> bool:
        from .hmx_events import event_tag  # hmx_events imports this module

        found = self._store.find(tags=[event_tag(event_id)], limit=1, include_tombstoned=True)
        return bool(found)
