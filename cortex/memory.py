"""`Memory`: what `resolve()`, `memories()` and `context()` hand back."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .ids import encode_id
from .model import Frame, MemoryData, MemoryType, from_micros, json_value
from .store import Head, Version


@dataclass(frozen=True, slots=True)
class Memory:
    """One version of a memory, as stored.

    `created_at` is when version 1 was written and `updated_at` when this version
    was. `frames`, `tags`, `importance` and `tombstoned` are the memory's current
    ones (they belong to the memory, not to a version). `forms` holds the stored
    "short" and "medium" text; `tokens` the token counts of all three forms.
    """

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
    expires_at: datetime | None = None

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
        }


def from_head(raw_id: bytes, head: Head, number: int | None = None, version: Version | None = None) -> Memory:
    """A memory from its head alone (the current version, one read), or, given an
    older `version` record and its `number`, that version with the head's fields."""
    cur = version or head  # both carry data, confidence, source, forms and tokens
    number = number or head.version
    id_text = encode_id(raw_id)
    return Memory(
        id=id_text,
        uri=f"cortex://{head.type.type_name}/{id_text}#{number}",
        type=head.type,
        data=cur.data,
        version=number,
        frames=head.frames,
        tags=head.tags,
        importance=head.importance,
        confidence=cur.confidence,
        source=cur.source,
        created_at=from_micros(head.created),
        updated_at=from_micros(version.created if version else head.updated),
        tombstoned=head.tombstone is not None,
        forms={"short": cur.forms[0], "medium": cur.forms[1]},
        tokens={"short": cur.tokens[0], "medium": cur.tokens[1], "full": cur.tokens[2]},
        expires_at=from_micros(head.expires) if head.expires else None,
    )
