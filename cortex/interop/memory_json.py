"""One memory as JSON, the form `cortex write` reads and MCP's `remember` takes (docs/cli.md).

    {"type": "Fact",
     "data": {"statement": "A100 spot is 1.40 USD/h", "subject": "acme", "predicate": "price"},
     "frames": [{"verb": "acquire", "kind": "service", "ref": "gpu"}],
     "tags": ["pricing"], "importance": 5}

`type` and `data` are required; `frames`, `tags`, `importance`, `confidence`,
`source`, `expires_at`, `key` (a natural key: writing the same type and key again
updates that memory) and `supersedes` (URIs of the memories this one replaces) are
optional, with the defaults of `Cortex.write()`, and so is the provenance
(`cortex.provenance`): `occurred_at` (ISO 8601), `session`, `sequence`, `origin`
(`{"event_id", "message_id", "tenant", "agent"}`, each optional) and `attributes`
(an object).
`memory_from_json()` turns such an object into a `Write` and
`memory_to_json()` turns a stored `Memory` back into one, so that
`memory_from_json(memory_to_json(m))` writes the same memory again.

Validation is strict: an unknown key anywhere, a value of the wrong JSON type, or a
rule of the data class broken raises `ValidationError` (or one of its
subclasses, such as `InvalidVerb`) whose `field` is the JSON path of the culprit:
`type`, `data.statement`, `frames[0].kind`, `tags[2]`, `expires_at`. Times are ISO
8601 text with a timezone (`2025-01-31T12:00:00Z`); lists stand for the data
classes' tuples; `Event.cost` is `{"asset": "USD", "amount": 1.2}` or
`["USD", 1.2]`.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ..errors import ValidationError
from ..memory import Memory
from ..model import DATA_CLASSES, Frame, MemoryType
from ..provenance import ORIGIN_FIELDS, Origin
from ..writes import Write

__all__ = ["memory_from_json", "memory_to_json", "TYPE_NAMES", "data_fields"]

TYPE_NAMES: tuple[str, ...] = tuple(member.type_name for member in MemoryType)
"""The memory type names a JSON memory's `type` may take, in type-code order."""

_TOP_LEVEL = ("type", "data", "frames", "tags", "importance", "confidence", "source", "expires_at", "key", "supersedes",
              "occurred_at", "session", "sequence", "origin", "attributes")
_FRAME_KEYS = ("verb", "kind", "ref")


def _data_class(type_name: str) -> type[Any]:
    cls: type[Any] = DATA_CLASSES[MemoryType.from_type_name(type_name)]
    return cls


@functools.cache
def data_fields(type_name: str) -> tuple[str, ...]:
    """The data field names of a memory type (`"Fact"` -> statement, subject, ...), in order."""
    return tuple(f.name for f in dataclasses.fields(_data_class(type_name)))


@functools.cache
def _datetime_fields(type_name: str) -> frozenset[str]:
    """The data fields that hold a datetime (given in JSON as ISO 8601 text)."""
    hints = typing.get_type_hints(_data_class(type_name))
    return frozenset(
        name for name in data_fields(type_name)
        if hints[name] is datetime or datetime in typing.get_args(hints[name])
    )


@functools.cache
def _list_fields(type_name: str) -> frozenset[str]:
    """The data fields that hold a list of strings (a tuple in the data class)."""
    hints = typing.get_type_hints(_data_class(type_name))
    return frozenset(
        name for name in data_fields(type_name)
        if any(typing.get_origin(t) is tuple and typing.get_args(t)[-1:] == (Ellipsis,) for t in (hints[name], *typing.get_args(hints[name])))
    )


def memory_from_json(obj: object) -> Write:
    """A `Write` from one memory as JSON (a parsed object, not text).

    Raises `ValidationError` naming the JSON path of the first problem; nothing
    is written by this function.
    """
    if not isinstance(obj, Mapping):
        raise ValidationError("memory", f"must be a JSON object, not {_json_type(obj)}", obj)
    for key in obj:
        if key not in _TOP_LEVEL:
            raise ValidationError(str(key), f"unknown field; a memory has {', '.join(_TOP_LEVEL)}", obj[key])
    if "type" not in obj:
        raise ValidationError("type", f"is required; one of {', '.join(TYPE_NAMES)}")
    type_name = obj["type"]
    if not isinstance(type_name, str) or type_name not in TYPE_NAMES:
        raise ValidationError("type", f"must be one of {', '.join(TYPE_NAMES)}", type_name)
    if "data" not in obj:
        raise ValidationError("data", "is required: an object with the fields of the type")
    data = _data(type_name, obj["data"])
    frames = _frames(obj.get("frames", []))
    tags = obj.get("tags", [])
    if not isinstance(tags, list):
        raise ValidationError("tags", f"must be a list of strings, not {_json_type(tags)}", tags)
    supersedes = obj.get("supersedes", [])
    if not isinstance(supersedes, list):
        raise ValidationError("supersedes", f"must be a list of URIs, not {_json_type(supersedes)}", supersedes)
    return Write(
        data,
        frames=frames,
        tags=tuple(tags),
        importance=obj.get("importance", 0),
        confidence=obj.get("confidence", 1.0),
        source=obj.get("source", "user_input"),
        expires_at=_time("expires_at", obj.get("expires_at")),
        supersedes=tuple(supersedes),
        key=obj.get("key"),
        occurred_at=_time("occurred_at", obj.get("occurred_at")),
        session=obj.get("session"),
        sequence=obj.get("sequence"),
        origin=_origin(obj.get("origin")),
        attributes=obj.get("attributes"),
    )


def _origin(raw: object) -> Origin | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ValidationError("origin", f"must be an object {{{', '.join(ORIGIN_FIELDS)}}}, not {_json_type(raw)}", raw)
    for key in raw:
        if key not in ORIGIN_FIELDS:
            raise ValidationError(f"origin.{key}", f"unknown field; an origin has {', '.join(ORIGIN_FIELDS)}", raw[key])
    return Origin(**{key: raw[key] for key in ORIGIN_FIELDS if key in raw})


def memory_to_json(memory: Memory) -> dict[str, Any]:
    """One stored memory (the version `memory` is) as JSON: the object
    `memory_from_json()` reads, with every optional field present except an absent
    `expires_at` and the provenance fields of a memory written without any."""
    out: dict[str, Any] = {
        "type": memory.type.type_name,
        "data": memory.data.to_dict(),
        "frames": [{"verb": f.verb.name.lower(), "kind": f.kind.name.lower(), "ref": f.ref} for f in memory.frames],
        "tags": list(memory.tags),
        "importance": memory.importance,
        "confidence": memory.confidence,
        "source": memory.source,
    }
    if memory.expires_at is not None:
        out["expires_at"] = iso(memory.expires_at)
    if memory.provenance_dict():
        out["occurred_at"] = iso(memory.occurred_at)
        for name in ("session", "sequence", "attributes"):
            if getattr(memory, name) is not None:
                out[name] = getattr(memory, name)
        if memory.origin is not None:
            out["origin"] = {k: v for k, v in memory.origin.to_dict().items() if v is not None}
    return out


def iso(value: datetime) -> str:
    """An aware datetime as ISO 8601 UTC text with microseconds (`...T12:00:00.000000Z`)."""
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _data(type_name: str, raw: object) -> Any:
    if not isinstance(raw, Mapping):
        raise ValidationError("data", f"must be a JSON object with the fields of {type_name}, not {_json_type(raw)}", raw)
    names = data_fields(type_name)
    times = _datetime_fields(type_name)
    lists = _list_fields(type_name)
    values: dict[str, object] = {}
    for name, value in raw.items():
        if name not in names:
            raise ValidationError(f"data.{name}", f"unknown field of {type_name}; its fields are {', '.join(names)}", value)
        if name in lists and value is not None and not isinstance(value, list):
            raise ValidationError(f"data.{name}", f"must be a list of strings, not {_json_type(value)}", value)
        values[name] = _time(f"data.{name}", value) if name in times else value
    try:
        return _data_class(type_name)(**values)
    except ValidationError as exc:
        raise type(exc)(f"data.{exc.field}", exc.rule, exc.value) from None


def _frames(raw: object) -> tuple[Frame, ...]:
    if not isinstance(raw, list):
        raise ValidationError("frames", f"must be a list of {{verb, kind, ref}} objects, not {_json_type(raw)}", raw)
    frames = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ValidationError(f"frames[{i}]", "must be an object {verb, kind, ref}", item)
        for key in item:
            if key not in _FRAME_KEYS:
                raise ValidationError(f"frames[{i}].{key}", "unknown field; a frame has verb, kind, ref", item[key])
        for key in _FRAME_KEYS:
            if key not in item:
                raise ValidationError(f"frames[{i}].{key}", "is required")
        try:
            frames.append(Frame(item["verb"], item["kind"], item["ref"]))
        except ValidationError as exc:
            # Frame names its fields "frame.verb", "frame.kind", "frame.ref".
            raise type(exc)(f"frames[{i}].{exc.field.rpartition('.')[2]}", exc.rule, exc.value) from None
    return tuple(frames)


def _time(field: str, value: object) -> datetime | None:
    """None, or an aware datetime parsed from ISO 8601 text with a timezone."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(field, f"must be ISO 8601 text such as 2025-01-31T12:00:00Z, not {_json_type(value)}", value)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(field, "must be ISO 8601 text such as 2025-01-31T12:00:00Z", value) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValidationError(field, "must name its timezone (a Z or an offset such as +02:00)", value)
    return parsed


def _json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
