"""Memory ids (ULIDs) and URIs.

A ULID is 16 bytes: a 48-bit big-endian millisecond timestamp, then 80 random bits.
Its text form is 26 characters of Crockford base32, and both forms sort the same
way, so byte order of ids in keys is their time order. Ids from one generator are
strictly increasing: within one millisecond (or if the clock steps back) the next id
is the previous one plus one.

A URI names one version of one memory: `cortex://<TypeName>/<ULID>#<version>`, with
versions counted from 1. Parsing is strict (upper-case ULID, no `#latest`, no
version 0): anything else raises `BadURI`.

A call that names an existing memory takes any of three spellings, read by one
function (`parse_ref`): the 26-character id, the URI of any version, or the URI
without `#version` (the latest version).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .errors import BadURI, ValidationError
from .model import MemoryType

ID_BYTES = 16
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
_MAX_VERSION = 2**32 - 1
_URI_RE = re.compile(r"cortex://([A-Za-z]+)/([0-7][0-9A-HJKMNP-TV-Z]{25})#([1-9][0-9]{0,9})")
_REF_RE = re.compile(r"cortex://([A-Za-z]+)/([0-7][0-9A-HJKMNP-TV-Z]{25})(?:#([1-9][0-9]{0,9}))?")
_REF_RULE = "must be a memory's 26-character id or its URI cortex://<Type>/<ULID>, with #<version> >= 1 or without (the latest)"


_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # 10 bits -> two characters
_PAIR_SHIFTS = range(120, -1, -10)


def encode_id(raw: bytes) -> str:
    """26-character Crockford base32 text of a 16-byte id: the 128 bits read as 130
    (two leading zero bits), ten bits (two characters) at a time."""
    n = int.from_bytes(raw, "big")
    return "".join([_PAIRS[(n >> shift) & 1023] for shift in _PAIR_SHIFTS])


# `encode_ids`, digit by digit: digit i of the 130-bit number covers its bits
# [125 - 5i, 130 - 5i). Those bits lie in the high 64-bit half, in the low one, or
# (digit 13, bits 60-64) across both.
_DIGIT_LOW = np.array([125 - 5 * i for i in range(26)], dtype=np.int64)
_FROM_HI = _DIGIT_LOW >= 64
_HI_SHIFT = np.where(_FROM_HI, _DIGIT_LOW - 64, 0).astype(np.uint64)
_LO_SHIFT = np.where(_FROM_HI, 0, _DIGIT_LOW).astype(np.uint64)
_ACROSS = ~_FROM_HI & (_DIGIT_LOW + 5 > 64)
_HI_UP = np.where(_ACROSS, 64 - _DIGIT_LOW, 0).astype(np.uint64)
_ALPHABET_CODES = np.frombuffer(_ALPHABET.encode("ascii"), dtype=np.uint8)


_ENCODE_BATCH = 4096  # ids per pass: bounds the arrays (26 digits of 8 bytes per id)


def encode_ids(raws: list[bytes]) -> list[str]:
    """`encode_id` of many ids in one pass of array operations: a third of the cost
    for the few dozen ids a `context()` call names (its survivors, its reachable URIs)."""
    if len(raws) > _ENCODE_BATCH:
        return [text for start in range(0, len(raws), _ENCODE_BATCH) for text in encode_ids(raws[start : start + _ENCODE_BATCH])]
    if not raws:
        return []
    halves = np.frombuffer(b"".join(raws), dtype=">u8").reshape(-1, 2).astype(np.uint64)
    hi, lo = halves[:, :1], halves[:, 1:]
    digits = np.where(_FROM_HI, hi >> _HI_SHIFT, (lo >> _LO_SHIFT) | np.where(_ACROSS, hi << _HI_UP, np.uint64(0)))
    text = _ALPHABET_CODES[digits & np.uint64(31)].tobytes().decode("ascii")
    return [text[i : i + 26] for i in range(0, len(text), 26)]


def decode_id(text: str, field_name: str = "id") -> bytes:
    """The 16 bytes of a ULID text; `BadURI` if it is not one."""
    if not isinstance(text, str) or len(text) != 26:
        raise BadURI(field_name, "must be a 26-character ULID", text)
    n = 0
    for ch in text.upper():
        digit = _DECODE.get(ch)
        if digit is None:
            raise BadURI(field_name, f"{ch!r} is not a Crockford base32 digit", text)
        n = (n << 5) | digit
    if n >> 128:
        raise BadURI(field_name, "ULID overflows 128 bits", text)
    return n.to_bytes(ID_BYTES, "big")


class IdGenerator:
    """Monotonic ULIDs. `entropy(n)` gives n random bytes (default `os.urandom`).

    `last` is the largest id already in the store: every new id is greater, so a
    store reopened with a clock that stepped back (or an injected clock and entropy)
    can never hand out an id twice.
    """

    def __init__(self, entropy: Callable[[int], bytes] | None = None, last: bytes | None = None) -> None:
        self._entropy = entropy or os.urandom
        self._last = int.from_bytes(last, "big") if last else 0
        self._lock = threading.Lock()

    def observe(self, raw_id: bytes) -> None:
        """Make every later id greater than `raw_id` (after records were written
        around this generator, e.g. by an import)."""
        with self._lock:
            self._last = max(self._last, int.from_bytes(raw_id, "big"))

    def next(self, millis: int) -> bytes:
        return self.next_many(millis, 1)[0]

    def next_many(self, millis: int, count: int) -> list[bytes]:
        """`count` ascending ids at `millis`, from one call of the entropy source."""
        with self._lock:
            random_bits = self._entropy(10 * count)
            if not isinstance(random_bits, bytes) or len(random_bits) != 10 * count:
                raise ValidationError("entropy", "must return the n random bytes it is asked for (like os.urandom)", random_bits)
            ids = []
            last = self._last
            for start in range(0, 10 * count, 10):
                candidate = (millis << 80) | int.from_bytes(random_bits[start : start + 10], "big")
                last = candidate if candidate > last else last + 1
                ids.append(last.to_bytes(ID_BYTES, "big"))
            self._last = last
            return ids


@dataclass(frozen=True, slots=True)
class URI:
    type: MemoryType
    id: bytes
    version: int

    def __str__(self) -> str:
        return format_uri(self.type, self.id, self.version)


def format_uri(mtype: MemoryType, raw_id: bytes, version: int) -> str:
    return _uri_text(mtype, encode_id(raw_id), version)


def format_uris(types: list[int], raw_ids: list[bytes], versions: list[int]) -> list[str]:
    """`format_uri` of many memories, their ids encoded in one batch (`encode_ids`).
    `types` are `MemoryType` members or their codes (a column's values)."""
    heads = _URI_HEADS
    return [f"{heads[t]}{text}#{v}" for t, text, v in zip(types, encode_ids(raw_ids), versions, strict=True)]


# What a URI says before its id, by type code: `cortex://<TypeName>/`.
_URI_HEADS = {int(member): f"cortex://{member.type_name}/" for member in MemoryType}


def _uri_text(mtype: MemoryType, id_text: str, version: int) -> str:
    return f"{_URI_HEADS[mtype]}{id_text}#{version}"


def parse_uri(text: object, field_name: str = "uri") -> URI:
    """Strict parse of `cortex://<TypeName>/<ULID>#<version>`."""
    if not isinstance(text, str):
        raise BadURI(field_name, f"must be a string, not {type(text).__name__}", text)
    match = _URI_RE.fullmatch(text)
    if match is None:
        raise BadURI(field_name, "must look like cortex://<Type>/<ULID>#<version> with version >= 1", text)
    type_name, ulid, version = match.groups()
    try:
        mtype = MemoryType.from_type_name(type_name)
    except Exception:
        raise BadURI(field_name, f"unknown memory type {type_name!r}", text) from None
    if int(version) > _MAX_VERSION:
        raise BadURI(field_name, "version out of range", text)
    return URI(mtype, decode_id(ulid, field_name), int(version))


@dataclass(frozen=True, slots=True)
class Ref:
    """A memory as a call named it: its id, with the type and version a URI gave
    (`type` None: a bare id; `version` None: the latest version)."""

    id: bytes
    type: MemoryType | None
    version: int | None

    def __str__(self) -> str:
        if self.type is None:
            return encode_id(self.id)
        text = f"{_URI_HEADS[self.type]}{encode_id(self.id)}"
        return text if self.version is None else f"{text}#{self.version}"


def parse_ref(value: object, field_name: str = "uri") -> Ref:
    """What every call that names an existing memory accepts, read one way: the
    26-character id (`Ref(id, None, None)`), the URI of any version, or the URI
    without `#version` (the latest). Anything else raises `BadURI` naming the field."""
    if not isinstance(value, str):
        raise BadURI(field_name, f"must be a string, not {type(value).__name__}", value)
    if len(value) == 26 and not value.startswith("cortex://"):
        return Ref(decode_id(value, field_name), None, None)
    match = _REF_RE.fullmatch(value)
    if match is None:
        raise BadURI(field_name, _REF_RULE, value)
    type_name, ulid, version = match.groups()
    try:
        mtype = MemoryType.from_type_name(type_name)
    except Exception:
        raise BadURI(field_name, f"unknown memory type {type_name!r}", value) from None
    if version is not None and int(version) > _MAX_VERSION:
        raise BadURI(field_name, "version out of range", value)
    return Ref(decode_id(ulid, field_name), mtype, None if version is None else int(version))
