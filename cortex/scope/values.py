"""The values a scope is made of: `Selector`, `Scope` and `SignedScope`, their
canonical bytes and their wire forms (see docs/scopes.md for the formats).

Anything malformed raises `ScopeInvalid` (a `ValidationError`), never another type.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgpack

from ..errors import ScopeInvalid, ValidationError, shown
from ..ids import decode_id, encode_id, parse_uri
from ..model import (
    DATA_CLASSES,
    Frame,
    MemoryData,
    MemoryType,
    ObjKind,
    Verb,
    check_datetime,
    check_int,
    check_text,
    from_micros,
    json_value,
    to_micros,
)
from ..records import pack


MAX_SELECTOR_ITEMS = 1024  # per list of a selector
MAX_NAME_BYTES = 128  # a trusted key's name
MAX_ACTOR_BYTES = 256
MAX_TOKEN_BYTES = 4 << 20  # a token from_bytes / from_json will look at
# Version 2: a scope names the store it is for (`store_id`) and a selector its
# `match`. Version 1 tokens (made before) are refused: grant them again.
TOKEN_VERSION = 2
MATCHES = ("any", "all")
STORE_ID_BYTES = 16
JSON_FORMAT = "cortex-scope"
KEY_BYTES = 32
SIGNATURE_BYTES = 64
SCOPE_ID_BYTES = 32


_MAX_MICROS = to_micros(datetime.max.replace(tzinfo=from_micros(0).tzinfo))


def _invalid(exc: ValidationError) -> ScopeInvalid:
    """A validation failure of a scope's part, as the `ScopeInvalid` that names it."""
    return exc if isinstance(exc, ScopeInvalid) else ScopeInvalid(exc.field, exc.rule, exc.value)


def _items(field_name: str, value: object) -> list[object]:
    """A list-like of at most `MAX_SELECTOR_ITEMS` items (read at most one past it)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ScopeInvalid(field_name, "must be a list", value)
    items: list[object] = []
    for item in value:
        if len(items) == MAX_SELECTOR_ITEMS:
            raise ScopeInvalid(field_name, f"must hold at most {MAX_SELECTOR_ITEMS} items", value)
        items.append(item)
    return items


def _memory_type(field_name: str, value: object) -> MemoryType:
    if isinstance(value, MemoryType):
        return value
    if isinstance(value, type) and issubclass(value, MemoryData) and value in DATA_CLASSES.values():
        return value.TYPE
    if isinstance(value, str) and value.upper() in MemoryType.__members__:
        return MemoryType[value.upper()]
    raise ScopeInvalid(field_name, f"must be a MemoryType or a type name like 'Fact'; got {shown(value)}", value)


def _tag(field_name: str, value: object) -> str:
    try:
        tag = check_text(field_name, value, required=True, max_bytes=256)
    except ValidationError as exc:
        raise _invalid(exc) from None
    assert tag is not None
    if len(tag) > 64:
        raise ScopeInvalid(field_name, "must be at most 64 characters", value)
    return tag


def _memory_id(field_name: str, value: object) -> bytes:
    """The 16-byte id of a 26-character ULID or of any version's URI."""
    try:
        if isinstance(value, str) and value.startswith("cortex://"):
            return parse_uri(value, field_name).id
        if not isinstance(value, str):
            raise ScopeInvalid(field_name, "must be a memory id or URI", value)
        return decode_id(value, field_name)
    except ValidationError as exc:
        raise _invalid(exc) from None


# ---------------------------------------------------------------------------
# Selector and Scope


@dataclass(frozen=True, slots=True, init=False)
class Selector:
    """Which memories a scope names. With `match="any"` (the default) a memory
    matches when any criterion does (its type is in `types`, one of its tags in
    `tags`, its id in `ids`, one of its frames in `frames`); with `match="all"` when
    every non-empty criterion does (types AND tags: one customer's Facts). An empty
    selector matches nothing.

    `types` takes `MemoryType` members, type names ("Fact", any case) or data
    classes; `ids` takes 26-character ids or URIs of any version (kept as ids);
    `frames` takes `cortex.Frame`. Each list is de-duplicated and sorted, and holds at
    most 1,024 items.
    """

    types: tuple[MemoryType, ...]
    tags: tuple[str, ...]
    ids: tuple[str, ...]
    frames: tuple[Frame, ...]
    match: str
    # Derived once for evaluation (not part of the value).
    _type_codes: frozenset[int] = field(repr=False, compare=False)
    _tag_set: frozenset[str] = field(repr=False, compare=False)
    _raw_ids: frozenset[bytes] = field(repr=False, compare=False)
    _frame_keys: frozenset[tuple[int, int, str]] = field(repr=False, compare=False)

    def __init__(self, types: Iterable[MemoryType | str | type[MemoryData]] = (), tags: Iterable[str] = (),
                 ids: Iterable[str] = (), frames: Iterable[Frame] = (), match: str = "any") -> None:
        if not isinstance(match, str) or match not in MATCHES:
            raise ScopeInvalid("match", 'must be "any" or "all"', match)
        codes = sorted({_memory_type(f"types[{i}]", t) for i, t in enumerate(_items("types", types))})
        tag_set = {_tag(f"tags[{i}]", t) for i, t in enumerate(_items("tags", tags))}
        raw_ids = {_memory_id(f"ids[{i}]", v) for i, v in enumerate(_items("ids", ids))}
        frame_set: set[Frame] = set()
        for i, item in enumerate(_items("frames", frames)):
            if not isinstance(item, Frame):
                raise ScopeInvalid(f"frames[{i}]", "must be a cortex.Frame(verb, kind, ref)", item)
            frame_set.add(item)
        ordered_frames = sorted(frame_set, key=lambda f: (int(f.verb), int(f.kind), f.ref))
        values: dict[str, object] = {
            "types": tuple(codes),
            "tags": tuple(sorted(tag_set)),
            "ids": tuple(encode_id(i) for i in sorted(raw_ids)),
            "frames": tuple(ordered_frames),
            "match": match,
            "_type_codes": frozenset(int(t) for t in codes),
            "_tag_set": frozenset(tag_set),
            "_raw_ids": frozenset(raw_ids),
            "_frame_keys": frozenset((int(f.verb), int(f.kind), f.ref) for f in ordered_frames),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def is_empty(self) -> bool:
        return not (self.types or self.tags or self.ids or self.frames)

    def matches(self, raw_id: bytes, type_code: int, tags: Iterable[str], frames: Iterable[tuple[int, int, str]]) -> bool:
        """Whether a memory with these exact fields matches (the exact test)."""
        if self.match == "any":
            return (
                type_code in self._type_codes
                or raw_id in self._raw_ids
                or any(t in self._tag_set for t in tags)
                or any(f in self._frame_keys for f in frames)
            )
        return (
            not self.is_empty()
            and (not self.types or type_code in self._type_codes)
            and (not self.ids or raw_id in self._raw_ids)
            and self.matches_labels(tags, frames)
        )

    def matches_labels(self, tags: Iterable[str], frames: Iterable[tuple[int, int, str]]) -> bool:
        """Whether a memory's exact tags and frames satisfy the tag and frame
        criteria: either of them ("any"), or each one given ("all")."""
        tag_hit = any(t in self._tag_set for t in tags)
        frame_hit = any(f in self._frame_keys for f in frames)
        if self.match == "any":
            return tag_hit or frame_hit
        return (tag_hit or not self.tags) and (frame_hit or not self.frames)

    def to_record(self) -> list[Any]:
        return [
            [int(t) for t in self.types], list(self.tags), list(self.ids),
            [[int(f.verb), int(f.kind), f.ref] for f in self.frames], self.match,
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "types": [t.type_name for t in self.types],
            "tags": list(self.tags),
            "ids": list(self.ids),
            "frames": [{"verb": f.verb.name.lower(), "kind": f.kind.name.lower(), "ref": f.ref} for f in self.frames],
            "match": self.match,
        }

    @staticmethod
    def from_record(rec: object, field_name: str) -> Selector:
        if type(rec) is not list or len(rec) != 5 or not all(type(part) is list for part in rec[:4]) or type(rec[4]) is not str:
            raise ScopeInvalid(field_name, "must be [types, tags, ids, frames, match]", rec)
        types, tags, ids, frames, match = rec
        for i, code in enumerate(types):
            if type(code) is not int or code not in MemoryType._value2member_map_:
                raise ScopeInvalid(f"{field_name}.types[{i}]", "must be a memory type code", code)
        parsed_frames = []
        for i, f in enumerate(frames):
            if type(f) is not list or len(f) != 3 or type(f[0]) is not int or type(f[1]) is not int:
                raise ScopeInvalid(f"{field_name}.frames[{i}]", "must be [verb, kind, ref]", f)
            if f[0] not in Verb._value2member_map_ or f[1] not in ObjKind._value2member_map_:
                raise ScopeInvalid(f"{field_name}.frames[{i}]", "unknown verb or object kind", f)
            parsed_frames.append(_frame(f"{field_name}.frames[{i}]", Verb(f[0]), ObjKind(f[1]), f[2]))
        return _selector(field_name, types=[MemoryType(c) for c in types], tags=tags, ids=ids, frames=parsed_frames, match=match)

    @staticmethod
    def from_dict(obj: object, field_name: str) -> Selector:
        if not isinstance(obj, dict) or set(obj) != {"types", "tags", "ids", "frames", "match"}:
            raise ScopeInvalid(field_name, "must be an object with types, tags, ids, frames and match", obj)
        frames = []
        for i, f in enumerate(_items(f"{field_name}.frames", obj["frames"])):
            if not isinstance(f, dict) or set(f) != {"verb", "kind", "ref"}:
                raise ScopeInvalid(f"{field_name}.frames[{i}]", "must be {verb, kind, ref}", f)
            frames.append(_frame(f"{field_name}.frames[{i}]", f["verb"], f["kind"], f["ref"]))
        for i, t in enumerate(_items(f"{field_name}.types", obj["types"])):
            if not isinstance(t, str):
                raise ScopeInvalid(f"{field_name}.types[{i}]", "must be a type name", t)
        return _selector(field_name, types=obj["types"], tags=obj["tags"], ids=obj["ids"], frames=frames, match=obj["match"])


def _frame(field_name: str, verb: object, kind: object, ref: object) -> Frame:
    try:
        return Frame(verb, kind, ref)  # type: ignore[arg-type]  # checked by Frame itself
    except ValidationError as exc:
        raise ScopeInvalid(field_name, exc.rule, exc.value) from None


def _selector(field_name: str, **parts: Any) -> Selector:
    """A selector from decoded parts; errors name the part under `field_name`."""
    try:
        return Selector(**parts)
    except ValidationError as exc:
        raise ScopeInvalid(f"{field_name}.{exc.field}", exc.rule, exc.value) from None


EMPTY = Selector()


@dataclass(frozen=True, slots=True, init=False)
class Scope:
    """A slice of a store handed to a sub-agent (docs/scopes.md).

    A memory is in scope when `include` matches it and `exclude` does not. Until
    `expires_at` (required, aware); `budget_tokens` caps a `context()` or `find()`
    budget (0: no cap); `granted_by` is the actor of the store it is for;
    `granted_to` names the sub-agent; `issued_at` (optional, not after
    `expires_at`) says when it was made; `store_id` (32 hex digits) names the one
    store it is for: `Cortex.grant()` fills it in (a scope naming no store, or
    another one, is refused by every read). Validated on construction
    (`ScopeInvalid` naming the field).
    """

    include: Selector
    exclude: Selector
    expires_at: datetime
    budget_tokens: int
    granted_by: str
    granted_to: str
    issued_at: datetime | None
    store_id: str | None

    def __init__(self, include: Selector, exclude: Selector = EMPTY, *, expires_at: datetime, budget_tokens: int = 0,
                 granted_by: str, granted_to: str, issued_at: datetime | None = None, store_id: str | None = None) -> None:
        for side, selector in (("include", include), ("exclude", exclude)):
            if not isinstance(selector, Selector):
                raise ScopeInvalid(side, "must be a cortex.Selector", selector)
        try:
            expires = check_datetime("expires_at", expires_at)
            if expires is None:
                raise ScopeInvalid("expires_at", "is required (an aware datetime)", expires_at)
            issued = check_datetime("issued_at", issued_at)
            if issued is not None and issued > expires:
                raise ScopeInvalid("issued_at", "must not be after expires_at", issued_at)
            values = {
                "include": include,
                "exclude": exclude,
                "expires_at": expires,
                "budget_tokens": check_int("budget_tokens", budget_tokens, lo=0, hi=2**31 - 1),
                "granted_by": check_text("granted_by", granted_by, required=True, max_bytes=MAX_ACTOR_BYTES),
                "granted_to": check_text("granted_to", granted_to, required=True, max_bytes=MAX_ACTOR_BYTES),
                "issued_at": issued,
                "store_id": _store_id(store_id),
            }
        except ValidationError as exc:
            raise _invalid(exc) from None
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def admits(self, raw_id: bytes, type_code: int, tags: Iterable[str], frames: Iterable[tuple[int, int, str]]) -> bool:
        """Whether a memory with these exact fields is in scope."""
        tags, frames = tuple(tags), tuple(frames)
        return self.include.matches(raw_id, type_code, tags, frames) and not self.exclude.matches(raw_id, type_code, tags, frames)

    def canonical_bytes(self) -> bytes:
        """The bytes that are signed and hashed (the format: docs/scopes.md)."""
        return pack([
            self.include.to_record(), self.exclude.to_record(), to_micros(self.expires_at), self.budget_tokens,
            self.granted_by, self.granted_to, None if self.issued_at is None else to_micros(self.issued_at),
            None if self.store_id is None else bytes.fromhex(self.store_id),
        ])

    @property
    def scope_id(self) -> str:
        """Hex SHA-256 of the canonical bytes."""
        return hashlib.sha256(self.canonical_bytes()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            "include": self.include.to_dict(), "exclude": self.exclude.to_dict(),
            "expires_at": json_value(self.expires_at), "budget_tokens": self.budget_tokens,
            "granted_by": self.granted_by, "granted_to": self.granted_to,
            "issued_at": json_value(self.issued_at), "store_id": self.store_id,
        }

    @staticmethod
    def from_canonical(raw: bytes) -> Scope:
        """The scope whose canonical bytes are `raw`; `ScopeInvalid` for anything else."""
        rec = _unpack(raw, "scope")
        if type(rec) is not list or len(rec) != 8:
            raise ScopeInvalid("scope", "must be a list of 8 fields", None)
        include, exclude, expires, budget, granted_by, granted_to, issued, store = rec
        if store is not None and (type(store) is not bytes or len(store) != STORE_ID_BYTES):
            raise ScopeInvalid("store_id", f"must be {STORE_ID_BYTES} bytes or nil", store)
        scope = Scope(
            Selector.from_record(include, "include"), Selector.from_record(exclude, "exclude"),
            expires_at=_time("expires_at", expires), budget_tokens=budget, granted_by=granted_by, granted_to=granted_to,
            issued_at=None if issued is None else _time("issued_at", issued),
            store_id=None if store is None else store.hex(),
        )
        if scope.canonical_bytes() != raw:
            raise ScopeInvalid("scope", "is not in canonical form (lists sorted, no duplicates, minimal encoding)")
        return scope

    @staticmethod
    def from_dict(obj: object) -> Scope:
        keys = {"include", "exclude", "expires_at", "budget_tokens", "granted_by", "granted_to", "issued_at", "store_id"}
        if not isinstance(obj, dict) or set(obj) != keys:
            raise ScopeInvalid("scope", f"must be an object with {', '.join(sorted(keys))}", obj)
        return Scope(
            Selector.from_dict(obj["include"], "include"), Selector.from_dict(obj["exclude"], "exclude"),
            expires_at=_iso("expires_at", obj["expires_at"]), budget_tokens=obj["budget_tokens"],
            granted_by=obj["granted_by"], granted_to=obj["granted_to"],
            issued_at=None if obj["issued_at"] is None else _iso("issued_at", obj["issued_at"]),
            store_id=obj["store_id"],
        )


def _store_id(value: object) -> str | None:
    """A store id as 32 lower-case hex digits (or None: no store named yet)."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) != 2 * STORE_ID_BYTES:
        raise ScopeInvalid("store_id", f"must be {2 * STORE_ID_BYTES} hex digits (the store's id) or None", value)
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise ScopeInvalid("store_id", f"must be {2 * STORE_ID_BYTES} hex digits (the store's id) or None", value) from None
    return raw.hex()


def _unpack(raw: object, field_name: str) -> Any:
    if not isinstance(raw, bytes):
        raise ScopeInvalid(field_name, f"must be bytes, not {type(raw).__name__}", raw)
    if len(raw) > MAX_TOKEN_BYTES:
        raise ScopeInvalid(field_name, f"must be at most {MAX_TOKEN_BYTES} bytes", None)
    try:
        return msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except Exception:  # msgpack raises several unrelated types on bad input
        raise ScopeInvalid(field_name, "is not a well-formed msgpack value", None) from None


def _time(field_name: str, value: object) -> datetime:
    if type(value) is not int or not 0 <= value <= _MAX_MICROS:
        raise ScopeInvalid(field_name, "must be microseconds since the epoch", value)
    return from_micros(value)


def _iso(field_name: str, value: object) -> datetime:
    if not isinstance(value, str):
        raise ScopeInvalid(field_name, "must be an ISO-8601 text", value)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ScopeInvalid(field_name, "must be an ISO-8601 text", value) from None
    if when.tzinfo is None:
        raise ScopeInvalid(field_name, "must name its time zone", value)
    return when


def check_name(value: object) -> str:
    name = check_text("name", value, required=True, max_bytes=MAX_NAME_BYTES)
    assert name is not None
    return name


def scope_id_bytes(value: object) -> bytes:
    """The 32 bytes of a scope id given as hex text, or of a `SignedScope` / `Scope`."""
    if isinstance(value, SignedScope):
        return bytes.fromhex(value.scope_id)
    if isinstance(value, Scope):
        return bytes.fromhex(value.scope_id)
    if isinstance(value, str) and len(value) == 2 * SCOPE_ID_BYTES:
        try:
            return bytes.fromhex(value)
        except ValueError:
            pass
    raise ValidationError("scope_id", "must be a scope id (64 hex digits) or a SignedScope", value)


_OLD_TOKEN = "is a version 1 token, made before scopes named their store: grant the scope again"


@dataclass(frozen=True, slots=True, init=False)
class SignedScope:
    """A `Scope` with its signer's trusted name and Ed25519 signature: what a parent
    hands a sub-agent (`to_bytes()` / `to_json()`) and the sub-agent passes as
    `scope=`. Made by `Cortex.grant()`; checked by every call that takes it."""

    scope: Scope
    signer: str
    signature: bytes
    scope_id: str
    _canonical: bytes = field(repr=False, compare=False)

    def __init__(self, scope: Scope, signer: str, signature: bytes) -> None:
        if not isinstance(scope, Scope):
            raise ScopeInvalid("scope", "must be a cortex.Scope", scope)
        try:
            check_name(signer)
        except ValidationError as exc:
            raise ScopeInvalid("signer", exc.rule, signer) from None
        if not isinstance(signature, bytes) or len(signature) != SIGNATURE_BYTES:
            raise ScopeInvalid("signature", f"must be {SIGNATURE_BYTES} bytes", signature)
        canonical = scope.canonical_bytes()
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "signer", signer)
        object.__setattr__(self, "signature", signature)
        object.__setattr__(self, "scope_id", hashlib.sha256(canonical).hexdigest())
        object.__setattr__(self, "_canonical", canonical)

    def canonical_bytes(self) -> bytes:
        return self._canonical

    def to_bytes(self) -> bytes:
        return pack([TOKEN_VERSION, self._canonical, self.signer, self.signature])

    @staticmethod
    def from_bytes(raw: bytes) -> SignedScope:
        """The token `to_bytes()` made; `ScopeInvalid` for any other bytes."""
        try:
            rec = _unpack(raw, "token")
            if type(rec) is list and len(rec) == 4 and type(rec[0]) is int and rec[0] == 1:
                raise ScopeInvalid("token", _OLD_TOKEN, None)
            if type(rec) is not list or len(rec) != 4 or rec[0] != TOKEN_VERSION or type(rec[0]) is not int:
                raise ScopeInvalid("token", f"must be [{TOKEN_VERSION}, scope, signer, signature]", None)
            _, canonical, signer, signature = rec
            signed = SignedScope(Scope.from_canonical(canonical), signer, signature)
            if signed.to_bytes() != raw:
                raise ScopeInvalid("token", "is not in canonical form")
            return signed
        except ScopeInvalid:
            raise
        except Exception as exc:  # the last line of defence: hostile input raises ScopeInvalid only
            raise ScopeInvalid("token", f"is malformed ({type(exc).__name__})") from None

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": JSON_FORMAT, "version": TOKEN_VERSION, "scope": self.scope.to_dict(), "scope_id": self.scope_id,
            "signer": self.signer, "signature": self.signature.hex(),
        }

    def to_json(self) -> str:
        """The token as JSON (sorted keys): the scope's fields readable, signature in hex."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @staticmethod
    def from_json(text: str | bytes) -> SignedScope:
        """The token `to_json()` made (whitespace and key order may differ);
        `ScopeInvalid` for anything else, a `scope_id` that does not match included."""
        try:
            if not isinstance(text, (str, bytes)) or len(text) > 4 * MAX_TOKEN_BYTES:
                raise ScopeInvalid("token", "must be JSON text of at most 16 MiB", None)
            obj = json.loads(text)
            keys = {"format", "version", "scope", "scope_id", "signer", "signature"}
            if isinstance(obj, dict) and type(obj.get("version")) is int and obj.get("version") == 1:
                raise ScopeInvalid("token", _OLD_TOKEN, None)
            if not isinstance(obj, dict) or set(obj) != keys:
                raise ScopeInvalid("token", f"must be an object with {', '.join(sorted(keys))}", None)
            if obj["format"] != JSON_FORMAT or obj["version"] != TOKEN_VERSION or type(obj["version"]) is not int:
                raise ScopeInvalid("token", f"must be format {JSON_FORMAT!r} version {TOKEN_VERSION}", None)
            signature = obj["signature"]
            if not isinstance(signature, str) or len(signature) != 2 * SIGNATURE_BYTES:
                raise ScopeInvalid("signature", f"must be {2 * SIGNATURE_BYTES} hex digits", signature)
            signed = SignedScope(Scope.from_dict(obj["scope"]), obj["signer"], bytes.fromhex(signature))
            if obj["scope_id"] != signed.scope_id:
                raise ScopeInvalid("scope_id", "does not match the scope", obj["scope_id"])
            return signed
        except ScopeInvalid:
            raise
        except Exception as exc:  # the last line of defence: hostile input raises ScopeInvalid only
            raise ScopeInvalid("token", f"is malformed ({type(exc).__name__})") from None


