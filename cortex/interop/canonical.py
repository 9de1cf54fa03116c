"""Canonical JSON and SHA-256 helpers shared by every interop format.

docs/interop.md fixes one canonical form for everything that is hashed or compared byte
for byte (fingerprints, packs, the ledger):

    json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

`allow_nan=False` is added: NaN and the infinities have no JSON spelling, so a
document holding one is refused instead of being written as invalid JSON (for any
other value the bytes are exactly those of the rule above).

The interop documents are plain JSON dicts, so they are typed `JSONDict`
(`dict[str, Any]`): their shape is fixed by the JSON Schemas in `tests/schemas/`,
not by Python types.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

JSONDict = dict[str, Any]


def canonical_json(value: object) -> bytes:
    """The canonical JSON bytes of `value` (docs/interop.md)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """The lower-case hex SHA-256 of `data`."""
    return hashlib.sha256(data).hexdigest()


def content_hash(value: object) -> str:
    """The hex SHA-256 of the canonical JSON of `value`."""
    return sha256_hex(canonical_json(value))


def without(document: JSONDict, key: str) -> JSONDict:
    """A shallow copy of `document` without `key` (what a self-describing hash covers)."""
    return {k: v for k, v in document.items() if k != key}


def cut_utf8(text: str, max_bytes: int) -> str:
    """`text` if its UTF-8 fits in `max_bytes`, else its longest prefix that fits
    together with a closing "…" (never splitting a character)."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    ellipsis = "…".encode("utf-8")
    return data[: max(0, max_bytes - len(ellipsis))].decode("utf-8", errors="ignore") + "…"
