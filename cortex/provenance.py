"""Provenance of a memory: when it happened and where in a trace it came from.

    c.write(Event(kind="dispatch", outcome="success", counterparty="deploy"),
            occurred_at=datetime(2026, 3, 15, 0, 12, tzinfo=timezone.utc),
            session="sess_abc123", sequence=4,
            origin=Origin(event_id="evt_01HZ...", tenant="ten_acme", agent="agent-ops-1"),
            attributes={"endpoint": "billing-api", "status": 503})

Every part is optional. `occurred_at` is when the thing happened (a memory without
one happened when it was written: `Memory.occurred_at` is then `created_at`);
`session` and `sequence` place it in a trace (`find(session=...)` selects by it);
`origin` names the event or message it came from, the tenant and the agent;
`attributes` holds the fields of the source that no data field took (HMX ingest
keeps an event's unknown content fields and its metadata there), as a JSON object.

Stored as one optional record at the end of the version record and of the head's
copy of the current version (`cortex.records`): a memory without provenance is
stored exactly as before, so stores written before provenance existed read the same.
A new version (`update()`) keeps the provenance of the one it replaces.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import ValidationError
from .model import check_datetime, check_int, check_text, from_micros, json_value, to_micros

MAX_SESSION_BYTES = 256
MAX_ORIGIN_BYTES = 256
MAX_ATTRIBUTES_BYTES = 16 * 1024
MAX_SEQUENCE = 2**63 - 1

ORIGIN_FIELDS = ("event_id", "message_id", "tenant", "agent")


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a memory came from: the event or message id, the tenant and the agent
    (each optional, at most 256 bytes of UTF-8)."""

    event_id: str | None = None
    message_id: str | None = None
    tenant: str | None = None
    agent: str | None = None

    def __post_init__(self) -> None:
        for name in ORIGIN_FIELDS:
            value = getattr(self, name)
            if value is not None:
                check_text(f"origin.{name}", value, required=True, max_bytes=MAX_ORIGIN_BYTES)

    def to_dict(self) -> dict[str, str | None]:
        return {name: getattr(self, name) for name in ORIGIN_FIELDS}


# The stored record: [occurred µs | None, session | None, sequence | None,
# [event_id, message_id, tenant, agent] | None, attributes (canonical JSON text) | None].
ProvenanceRecord = list[Any]


@dataclass(frozen=True, slots=True)
class Provenance:
    """The provenance of one version (see the module docstring); validated."""

    occurred_at: datetime | None = None
    session: str | None = None
    sequence: int | None = None
    origin: Origin | None = None
    attributes: str | None = None  # canonical JSON of an object, or None

    @staticmethod
    def check(*, occurred_at: object = None, session: object = None, sequence: object = None, origin: object = None,
              attributes: object = None) -> Provenance | None:
        """The validated provenance of a write's keyword arguments; None when all are None."""
        when = check_datetime("occurred_at", occurred_at)
        if session is not None:
            check_text("session", session, required=True, max_bytes=MAX_SESSION_BYTES)
        if sequence is not None:
            check_int("sequence", sequence, lo=0, hi=MAX_SEQUENCE)
        if origin is not None and not isinstance(origin, Origin):
            raise ValidationError("origin", f"must be a cortex.Origin, not {type(origin).__name__}", origin)
        attrs = None if attributes is None else canonical_attributes(attributes)
        if when is None and session is None and sequence is None and origin is None and attrs is None:
            return None
        return Provenance(when, session, sequence, origin, attrs)  # type: ignore[arg-type]

    def record(self) -> ProvenanceRecord:
        origin = self.origin
        return [
            None if self.occurred_at is None else to_micros(self.occurred_at), self.session, self.sequence,
            None if origin is None else [origin.event_id, origin.message_id, origin.tenant, origin.agent],
            self.attributes,
        ]

    @staticmethod
    def from_record(rec: Any) -> Provenance | None:
        """The provenance a stored record holds; None for no record (ValueError if malformed)."""
        if rec is None:
            return None
        if not record_ok(rec):
            raise ValueError("bad provenance record")
        occurred, session, sequence, origin, attributes = rec
        return Provenance(
            None if occurred is None else from_micros(occurred), session, sequence,
            None if origin is None else Origin(*origin), attributes,
        )

    def attributes_dict(self) -> dict[str, Any] | None:
        return None if self.attributes is None else dict(json.loads(self.attributes))

    def to_dict(self) -> dict[str, Any]:
        """The five parts as JSON values (occurred_at as ISO 8601 text, attributes an object)."""
        return {
            "occurred_at": json_value(self.occurred_at), "session": self.session, "sequence": self.sequence,
            "origin": None if self.origin is None else self.origin.to_dict(), "attributes": self.attributes_dict(),
        }


def record_ok(rec: Any) -> bool:
    """Whether a decoded value is a provenance record the write path stores."""
    if not isinstance(rec, (list, tuple)) or len(rec) != 5:
        return False
    occurred, session, sequence, origin, attributes = rec
    if occurred is not None and not (type(occurred) is int and occurred >= 0):
        return False
    if session is not None and type(session) is not str:
        return False
    if sequence is not None and not (type(sequence) is int and 0 <= sequence <= MAX_SEQUENCE):
        return False
    if origin is not None and not (isinstance(origin, (list, tuple)) and len(origin) == 4
                                   and all(v is None or type(v) is str for v in origin)):
        return False
    return attributes is None or type(attributes) is str


def canonical_attributes(value: object) -> str:
    """A JSON object of attributes as canonical JSON text (sorted keys, no spaces),
    at most `MAX_ATTRIBUTES_BYTES`; `ValidationError` naming `attributes` otherwise."""
    if not isinstance(value, Mapping):
        raise ValidationError("attributes", f"must be a JSON object (a dict), not {type(value).__name__}", value)
    _check_json("attributes", value, 0)
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    size = len(text.encode("utf-8"))
    if size > MAX_ATTRIBUTES_BYTES:
        raise ValidationError("attributes", f"must be at most {MAX_ATTRIBUTES_BYTES} bytes as JSON (got {size})", value)
    return text


_MAX_DEPTH = 16


def _check_json(path: str, value: object, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ValidationError(path, f"nests deeper than {_MAX_DEPTH} levels", value)
    if value is None or isinstance(value, (str, bool)):
        if isinstance(value, str):
            check_text(path, value)
        return
    if isinstance(value, int):
        if abs(value) > 2**53:
            raise ValidationError(path, "must be at most 2**53 in magnitude", value)
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(path, "must be a finite number", value)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(path, f"keys must be strings, not {type(key).__name__}", key)
            _check_json(f"{path}.{key}", item, depth + 1)
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_json(f"{path}[{i}]", item, depth + 1)
        return
    raise ValidationError(path, f"must hold JSON values only, not {type(value).__name__}", value)
