"""`Memory`: what `resolve()`, `memories()`, `find()` and `context()` hand back.

A `Memory` read from the store is a view over its stored record: each field is
decoded the first time it is read, then kept. `context()` renders a survivor from
its stored form text alone, so a call that returns 60 memories pays for 60 msgpack
decodes and little else (the eager version, which built every datetime, frame and
data class up front, cost three times as much and was most of a warm call's time).
A `Memory` is immutable and compares equal to another with the same field values,
however each was built; `Memory(**fields)` builds one eagerly.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from .errors import CorruptRecord
from .ids import encode_id
from .forms import render_full
from .model import Frame, MemoryData, MemoryType, from_micros, json_value
from .provenance import Origin, Provenance
from .records import (
    HEAD_FIELDS,
    H_CONFIDENCE,
    H_VERSION,
    H_DATA,
    H_EXPIRES,
    H_FORMS,
    H_SOURCE,
    H_TOKENS,
    H_TOMBSTONE,
    H_TYPE,
    H_UPDATED,
    V_CONFIDENCE,
    V_CREATED,
    V_DATA,
    V_FORMS,
    V_SOURCE,
    V_TOKENS,
    decode_data,
    head_key,
    head_provenance,
    version_provenance,
    head_shape_ok,
    version_key,
    version_shape_ok,
)

FIELDS = (
    "id", "uri", "type", "data", "version", "frames", "tags", "importance", "confidence",
    "source", "created_at", "updated_at", "tombstoned", "forms", "tokens", "expires_at",
    "occurred_at", "session", "sequence", "origin", "attributes",
)
# The provenance fields (`cortex.provenance`), in `FIELDS` order.
PROVENANCE_FIELDS = ("occurred_at", "session", "sequence", "origin", "attributes")


class Memory:
    """One version of a memory, as stored.

    `created_at` is when version 1 was written and `updated_at` when this version
    was. `frames`, `tags`, `importance` and `tombstoned` are the memory's current
    ones (they belong to the memory, not to a version). `forms` holds the stored
    "short" and "medium" text; `tokens` the token counts of all three forms.
    """

    __slots__ = ("_fields", "_raw_id", "_head", "_version", "_number")

    # A view's record: the decoded head and, for an older version, its version
    # record. An eager `Memory(**fields)` holds every field in `_fields` already, so
    # nothing is ever derived from its (absent) record.
    _fields: dict[str, Any]
    _raw_id: bytes
    _head: tuple[Any, ...]
    _version: list[Any] | None
    _number: int

    id: str
    uri: str
    type: MemoryType
    data: MemoryData
    version: int
    frames: tuple[Frame, ...]
    tags: tuple[str, ...]
    importance: int
    confidence: float
    source: str
    created_at: datetime
    updated_at: datetime
    tombstoned: bool
    forms: dict[str, str]
    tokens: dict[str, int]
    expires_at: datetime | None
    occurred_at: datetime
    session: str | None
    sequence: int | None
    origin: Origin | None
    attributes: dict[str, Any] | None

    def __init__(self, *, id: str, uri: str, type: MemoryType, data: MemoryData, version: int,
                 frames: tuple[Frame, ...], tags: tuple[str, ...], importance: int, confidence: float,
                 source: str, created_at: datetime, updated_at: datetime, tombstoned: bool,
                 forms: dict[str, str], tokens: dict[str, int], expires_at: datetime | None = None,
                 occurred_at: datetime | None = None, session: str | None = None, sequence: int | None = None,
                 origin: Origin | None = None, attributes: dict[str, Any] | None = None) -> None:
        values = dict(locals())
        del values["self"]
        if occurred_at is None:
            values["occurred_at"] = created_at
        _SET_FIELDS(self, values)
        for setter in (_SET_RAW_ID, _SET_HEAD, _SET_VERSION, _SET_NUMBER):
            setter(self, None)

    @classmethod
    def stored(cls, raw_id: bytes, head: tuple[Any, ...], number: int | None = None, version: list[Any] | None = None,
               id_text: str | None = None) -> Memory:
        """A view over a decoded head record (the current version), or over an older
        version record with the head's memory-wide fields. `id_text` is the id's
        text when the caller has it already (`encode_ids` of a batch)."""
        if not head_shape_ok(head):
            raise CorruptRecord(head_key(raw_id), "bad head record")
        if version is not None and not version_shape_ok(version, head[H_TYPE]):
            raise CorruptRecord(version_key(raw_id, number or 0), "bad version record")
        memory = object.__new__(cls)
        _SET_FIELDS(memory, {} if id_text is None else {"id": id_text})
        _SET_RAW_ID(memory, raw_id)
        _SET_HEAD(memory, head)
        _SET_VERSION(memory, version)
        _SET_NUMBER(memory, number or head[H_VERSION])
        return memory

    def _get(self, name: str) -> Any:
        fields = self._fields
        if name not in fields:
            try:
                fields[name] = _DERIVE[name](self)
            except CorruptRecord:
                raise
            except Exception as exc:
                from_version = self._version is not None and name in _PER_VERSION
                key = version_key(self._raw_id, self._number) if from_version else head_key(self._raw_id)
                raise CorruptRecord(key, f"bad record ({name}: {type(exc).__name__})") from None
        return fields[name]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Memory is immutable: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Memory):
            return NotImplemented
        return all(self._get(n) == other._get(n) for n in FIELDS)

    def __hash__(self) -> int:
        return hash((self.id, self.version))

    def __repr__(self) -> str:
        """Short: the URI and the short form (`to_dict()` holds every field)."""
        tombstoned = " tombstoned" if self._get("tombstoned") else ""
        return f"<Memory {self._get('uri')}{tombstoned} {self.form('short')!r}>"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (and copy) as the eager form, with every field decoded."""
        return (_from_fields, ({n: self._get(n) for n in FIELDS},))

    def form(self, name: str) -> str:
        """The stored "short" or "medium" text (without building the `forms` dict), or
        the "full" form, rendered from the data on first use and then kept."""
        if name == "full":
            full = self._fields.get(_FULL)
            if full is None:
                try:
                    full = self._fields[_FULL] = render_full(self.data)
                except CorruptRecord:
                    raise
                except Exception as exc:
                    raise CorruptRecord(head_key(self._raw_id) if self._raw_id else b"", f"bad record (data: {type(exc).__name__})") from None
            return full
        record = self._version if self._version is not None else self._head
        if record is not None:
            text: str = record[V_FORMS if self._version is not None else H_FORMS][0 if name == "short" else 1]
            return text
        forms: dict[str, str] = self._get("forms")
        return forms[name]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (type by name, datetimes as ISO 8601)."""
        return {
            "id": self.id,
            "uri": self.uri,
            "type": self.type.type_name,
            "data": self.data.to_dict(),
            "version": self.version,
            "frames": [[f.verb.name.lower(), f.kind.name.lower(), f.ref] for f in self.frames],
            "tags": list(self.tags),
            "importance": self.importance,
            "confidence": self.confidence,
            "source": self.source,
            "created_at": json_value(self.created_at),
            "updated_at": json_value(self.updated_at),
            "tombstoned": self.tombstoned,
            "forms": dict(self.forms),
            "tokens": dict(self.tokens),
            "expires_at": json_value(self.expires_at),
            **self.provenance_dict(),
        }

    def provenance_dict(self) -> dict[str, Any]:
        """The provenance fields as JSON values, or {} for a memory written without
        any (so the dicts of such memories are what they were before provenance)."""
        if self.session is None and self.sequence is None and self.origin is None and self.attributes is None \
                and self.occurred_at == self.created_at:
            return {}
        return {
            "occurred_at": json_value(self.occurred_at), "session": self.session, "sequence": self.sequence,
            "origin": None if self.origin is None else self.origin.to_dict(), "attributes": self.attributes,
        }


def _from_fields(fields: dict[str, Any]) -> Memory:
    return Memory(**fields)


# The slots' own setters: a view is built for every memory a read returns, and these
# cost a tenth of `object.__setattr__` by name.
def _slot_setter(name: str) -> Callable[[Memory, Any], None]:
    setter: Callable[[Memory, Any], None] = vars(Memory)[name].__set__
    return setter


_SET_FIELDS = _slot_setter("_fields")
_SET_RAW_ID = _slot_setter("_raw_id")
_SET_HEAD = _slot_setter("_head")
_SET_VERSION = _slot_setter("_version")
_SET_NUMBER = _slot_setter("_number")

# Where `form("full")` keeps its rendering, beside the derived fields.
_FULL = "_full"


def _current(m: Memory, head_index: int, version_index: int) -> Any:
    """A per-version field: from the older version record when there is one."""
    return m._head[head_index] if m._version is None else m._version[version_index]


# Fields an older version's record holds itself; the rest come from the head.
_PER_VERSION = frozenset({"data", "confidence", "source", "updated_at", "forms", "tokens", *PROVENANCE_FIELDS})


def _prov(m: Memory) -> Provenance | None:
    return head_provenance(m._head) if m._version is None else version_provenance(m._version)


def _occurred(m: Memory) -> datetime:
    prov = _prov(m)
    if prov is None or prov.occurred_at is None:
        return m.created_at
    return prov.occurred_at

def _head_field(name: str) -> Callable[[Memory], Any]:
    """A memory-wide field, decoded from the head by the one decoder in `cortex.records`."""
    decode = HEAD_FIELDS[name][1]
    return lambda m: decode(m._head)


def _tokens(m: Memory) -> dict[str, int]:
    return dict(zip(("short", "medium", "full"), _current(m, H_TOKENS, V_TOKENS), strict=True))


_DERIVE: dict[str, Callable[[Memory], Any]] = {
    "id": lambda m: encode_id(m._raw_id),
    "uri": lambda m: f"cortex://{m.type.type_name}/{m.id}#{m._number}",
    "type": _head_field("type"),
    "data": lambda m: decode_data(m._head[H_TYPE], _current(m, H_DATA, V_DATA)),
    "version": lambda m: m._number,
    "frames": _head_field("frames"),
    "tags": _head_field("tags"),
    "importance": _head_field("importance"),
    "confidence": lambda m: _current(m, H_CONFIDENCE, V_CONFIDENCE),
    "source": lambda m: _current(m, H_SOURCE, V_SOURCE),
    "created_at": lambda m: from_micros(HEAD_FIELDS["created"][1](m._head)),
    "updated_at": lambda m: from_micros(_current(m, H_UPDATED, V_CREATED)),
    "tombstoned": lambda m: m._head[H_TOMBSTONE] is not None,
    "forms": lambda m: dict(zip(("short", "medium"), _current(m, H_FORMS, V_FORMS), strict=True)),
    "tokens": _tokens,
    "expires_at": lambda m: from_micros(m._head[H_EXPIRES]) if m._head[H_EXPIRES] else None,
    "occurred_at": _occurred,
    "session": lambda m: None if (p := _prov(m)) is None else p.session,
    "sequence": lambda m: None if (p := _prov(m)) is None else p.sequence,
    "origin": lambda m: None if (p := _prov(m)) is None else p.origin,
    "attributes": lambda m: None if (p := _prov(m)) is None else p.attributes_dict(),
}
assert set(_DERIVE) == set(FIELDS)

def _field_property(name: str) -> property:
    def get(self: Memory) -> Any:
        fields = self._fields  # a field decoded once is read without a second call
        return fields[name] if name in fields else self._get(name)

    return property(get)


for _name in FIELDS:
    setattr(Memory, _name, _field_property(_name))
