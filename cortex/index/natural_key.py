"""`idx/key/<type1><hash16>` -> `<id16><key UTF-8>`: a memory's natural key.

`write(data, key="...")` names a memory by (type, key): a later write of the same
type and key finds it here and becomes a new version of it (an upsert). The key is
canonical in the journal (the `write` entry carries it), so `rebuild()` recreates
these entries and `verify()` checks them like every other index.

The entry names the memory written last with that key: a tombstoned memory keeps
it (`resolve("key:Type/name")` still finds it, tombstoned) until a write with the
same key makes a new memory, which takes the key over. The hash keeps the stored key
short whatever the key's length; the value holds the key itself, so two keys whose
hashes collide are told apart (the later write refuses rather than update the wrong
memory).
"""

from __future__ import annotations

import hashlib

from ..errors import ValidationError
from ..model import MemoryType

PREFIX = b"idx/key/"
# `resolve("key:Identity/self")`: how a natural key is written where a URI goes.
REF_PREFIX = "key:"
MAX_KEY_BYTES = 256
_ID_BYTES = 16


def key(mtype: int, name: str) -> bytes:
    return PREFIX + bytes([mtype]) + hashlib.sha256(name.encode("utf-8")).digest()[:16]


def value(raw_id: bytes, name: str) -> bytes:
    return raw_id + name.encode("utf-8")


def decode(raw: bytes) -> tuple[bytes, str]:
    """(id, key) of a stored entry."""
    return raw[:_ID_BYTES], raw[_ID_BYTES:].decode("utf-8")


def check(name: object, field: str = "key") -> str:
    """A natural key: a non-empty string of at most 256 UTF-8 bytes, no line breaks."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(field, "must be a non-empty string", name)
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(field, "must be valid UTF-8 text (no lone surrogates)", name) from None
    if size > MAX_KEY_BYTES:
        raise ValidationError(field, f"must be at most {MAX_KEY_BYTES} UTF-8 bytes; got {size}", name)
    if any(c in name for c in "\r\n\x00"):
        raise ValidationError(field, "must be one line (no line breaks or NUL)", name)
    return name


def parse_ref(text: str, field: str = "uri") -> tuple[MemoryType, str]:
    """`key:<Type>/<key>` as (type, key); `ValidationError` naming the rule otherwise."""
    type_name, sep, name = text[len(REF_PREFIX):].partition("/")
    if not sep:
        raise ValidationError(field, "a natural key reference is key:<Type>/<key>, such as key:Identity/self", text)
    try:
        mtype = MemoryType.from_type_name(type_name)
    except Exception:
        names = ", ".join(m.type_name for m in MemoryType)
        raise ValidationError(field, f"unknown memory type {type_name!r} (one of {names})", text) from None
    return mtype, check(name, field)
