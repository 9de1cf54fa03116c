"""Scopes: signed, expiring, budget-capped, revocable slices of a store (DESIGN §7).

A parent agent hands a sub-agent a slice of its store:

    scope = Scope(include=Selector(types=["Fact", "Preference"]),
                  exclude=Selector(tags=["billing"]),
                  expires_at=now + timedelta(hours=1), budget_tokens=1500,
                  granted_by="agent-ops-1", granted_to="sub-7")
    token = c.grant(scope, private_key).to_bytes()      # c.trust()ed the public key before

and the sub-agent, in its own process, passes `scope=SignedScope.from_bytes(token)` to
`context()`, `resolve()` and `find()`. This module holds what that needs below the
engine: the values (`Selector`, `Scope`, `SignedScope`), their canonical bytes and
wire forms, Ed25519 signing and checking, the per-call verification against the
store's trusted keys and revocations, the evaluation of a scope over index values,
the exact membership test on a memory, the violation rate limiter, and the fold of
the journal's trust / untrust / revoke entries that `verify()` and `rebuild()` use.

Formats (all deterministic):

* canonical bytes of a `Scope`: msgpack of `[include, exclude, expires_at,
  budget_tokens, granted_by, granted_to, issued_at]`, a selector being `[types,
  tags, ids, frames]` with each list sorted and without duplicates (types as their
  one-byte codes, ids as 26-character ULID text, frames as `[verb, kind, ref]`),
  times as microseconds since the epoch (`issued_at` may be nil). `scope_id` is the
  hex SHA-256 of these bytes; the Ed25519 signature is over them.
* `SignedScope.to_bytes()`: msgpack `[1, canonical scope bytes, signer, signature]`.
  `from_bytes()` accepts exactly the bytes `to_bytes()` makes (a value that decodes
  but is not in canonical form is refused), so one scope has one token.
* `SignedScope.to_json()`: `{"format": "cortex-scope", "version": 1, "scope": {...},
  "scope_id", "signer", "signature"}` with the scope as readable fields.

Anything malformed raises `ScopeInvalid` (a `ValidationError`), never another type.

Evaluating a scope inside `context()` costs little (DESIGN §11): index values carry
each candidate's id and type, so type and id criteria are a vectorised mask; tag and
frame criteria become id sets by scanning only the tag buckets and frame prefixes
the scope names (once per scope and handle: `ScopeState`), moved forward from the
journal entries written since (a write or an update_head carries the memory's exact
tags and frames). A call on an unchanged store pays a mask over its candidates; the
trust and revocation reads are skipped while the journal has not moved.

Hash collisions can only hide memories, never show extra ones: bucket keys hold
64-bit tag hashes and 128-bit ref hashes, so a memory that only an include tag or
frame admits is confirmed on its head (its exact tags and frames) the first time it
is a candidate, and the verdict is kept until the journal changes that memory; an
exclude bucket is used as scanned (a collision there only excludes more).

What a scope does not do: it gates calls that pass it. A process that can open the
store's files can read them without a scope; give a sub-agent only a handle whose
calls carry the scope (and the files' permissions), not the directory.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgpack
import numpy as np

from .errors import BudgetExceeded, CortexError, ScopeExpired, ScopeInvalid, ScopeRevoked, ValidationError, shown
from .ids import decode_id, encode_id, parse_uri
from .index import by_tag, frame
from .index.entry import id_keys
from .model import (
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
from .records import (
    H_FRAMES,
    H_TAGS,
    IV_TYPE,
    JOURNAL_PREFIX,
    REVOKED_PREFIX,
    TRUST_PREFIX,
    Entry,
    decode_revoked,
    decode_trust,
    encode_revoked,
    encode_trust,
    head_keys,
    journal_key,
    pack,
    revoked_key,
    split_journal_value,
    trust_key,
    unpack_head,
)
from .storage import Storage

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["Selector", "Scope", "SignedScope"]


MAX_SELECTOR_ITEMS = 1024  # per list of a selector
MAX_NAME_BYTES = 128  # a trusted key's name
MAX_ACTOR_BYTES = 256
MAX_TOKEN_BYTES = 4 << 20  # a token from_bytes / from_json will look at
TOKEN_VERSION = 1
JSON_FORMAT = "cortex-scope"
KEY_BYTES = 32
SIGNATURE_BYTES = 64
SCOPE_ID_BYTES = 32

# Violations: journaled (rw) or logged (r) at most RATE a second, in bursts of BURST.
VIOLATION_RATE = 10.0
VIOLATION_BURST = 20

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
    """Which memories a scope names: a memory matches when any criterion does (its
    type is in `types`, one of its tags in `tags`, its id in `ids`, one of its frames
    in `frames`). An empty selector matches nothing.

    `types` takes `MemoryType` members, type names ("Fact", any case) or data
    classes; `ids` takes 26-character ids or URIs of any version (kept as ids);
    `frames` takes `cortex.Frame`. Each list is de-duplicated and sorted, and holds at
    most 1,024 items.
    """

    types: tuple[MemoryType, ...]
    tags: tuple[str, ...]
    ids: tuple[str, ...]
    frames: tuple[Frame, ...]
    # Derived once for evaluation (not part of the value).
    _type_codes: frozenset[int] = field(repr=False, compare=False)
    _tag_set: frozenset[str] = field(repr=False, compare=False)
    _raw_ids: frozenset[bytes] = field(repr=False, compare=False)
    _frame_keys: frozenset[tuple[int, int, str]] = field(repr=False, compare=False)

    def __init__(self, types: Iterable[MemoryType | str | type[MemoryData]] = (), tags: Iterable[str] = (),
                 ids: Iterable[str] = (), frames: Iterable[Frame] = ()) -> None:
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
        return (
            type_code in self._type_codes
            or raw_id in self._raw_ids
            or any(t in self._tag_set for t in tags)
            or any(f in self._frame_keys for f in frames)
        )

    def to_record(self) -> list[Any]:
        return [
            [int(t) for t in self.types], list(self.tags), list(self.ids),
            [[int(f.verb), int(f.kind), f.ref] for f in self.frames],
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "types": [t.type_name for t in self.types],
            "tags": list(self.tags),
            "ids": list(self.ids),
            "frames": [{"verb": f.verb.name.lower(), "kind": f.kind.name.lower(), "ref": f.ref} for f in self.frames],
        }

    @staticmethod
    def from_record(rec: object, field_name: str) -> Selector:
        if type(rec) is not list or len(rec) != 4 or not all(type(part) is list for part in rec):
            raise ScopeInvalid(field_name, "must be [types, tags, ids, frames]", rec)
        types, tags, ids, frames = rec
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
        return _selector(field_name, types=[MemoryType(c) for c in types], tags=tags, ids=ids, frames=parsed_frames)

    @staticmethod
    def from_dict(obj: object, field_name: str) -> Selector:
        if not isinstance(obj, dict) or set(obj) != {"types", "tags", "ids", "frames"}:
            raise ScopeInvalid(field_name, "must be an object with types, tags, ids and frames", obj)
        frames = []
        for i, f in enumerate(_items(f"{field_name}.frames", obj["frames"])):
            if not isinstance(f, dict) or set(f) != {"verb", "kind", "ref"}:
                raise ScopeInvalid(f"{field_name}.frames[{i}]", "must be {verb, kind, ref}", f)
            frames.append(_frame(f"{field_name}.frames[{i}]", f["verb"], f["kind"], f["ref"]))
        for i, t in enumerate(_items(f"{field_name}.types", obj["types"])):
            if not isinstance(t, str):
                raise ScopeInvalid(f"{field_name}.types[{i}]", "must be a type name", t)
        return _selector(field_name, types=obj["types"], tags=obj["tags"], ids=obj["ids"], frames=frames)


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
    """A slice of a store handed to a sub-agent (DESIGN §7).

    A memory is in scope when `include` matches it and `exclude` does not. Until
    `expires_at` (required, aware); `budget_tokens` caps a `context()` or `find()`
    budget (0: no cap); `granted_by` is the actor of the store it is for;
    `granted_to` names the sub-agent; `issued_at` (optional, not after
    `expires_at`) says when it was made. Validated on construction (`ScopeInvalid`
    naming the field).
    """

    include: Selector
    exclude: Selector
    expires_at: datetime
    budget_tokens: int
    granted_by: str
    granted_to: str
    issued_at: datetime | None

    def __init__(self, include: Selector, exclude: Selector = EMPTY, *, expires_at: datetime, budget_tokens: int = 0,
                 granted_by: str, granted_to: str, issued_at: datetime | None = None) -> None:
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
        """The bytes that are signed and hashed (see the module docstring)."""
        return pack([
            self.include.to_record(), self.exclude.to_record(), to_micros(self.expires_at), self.budget_tokens,
            self.granted_by, self.granted_to, None if self.issued_at is None else to_micros(self.issued_at),
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
            "issued_at": json_value(self.issued_at),
        }

    @staticmethod
    def from_canonical(raw: bytes) -> Scope:
        """The scope whose canonical bytes are `raw`; `ScopeInvalid` for anything else."""
        rec = _unpack(raw, "scope")
        if type(rec) is not list or len(rec) != 7:
            raise ScopeInvalid("scope", "must be a list of 7 fields", None)
        include, exclude, expires, budget, granted_by, granted_to, issued = rec
        scope = Scope(
            Selector.from_record(include, "include"), Selector.from_record(exclude, "exclude"),
            expires_at=_time("expires_at", expires), budget_tokens=budget, granted_by=granted_by, granted_to=granted_to,
            issued_at=None if issued is None else _time("issued_at", issued),
        )
        if scope.canonical_bytes() != raw:
            raise ScopeInvalid("scope", "is not in canonical form (lists sorted, no duplicates, minimal encoding)")
        return scope

    @staticmethod
    def from_dict(obj: object) -> Scope:
        keys = {"include", "exclude", "expires_at", "budget_tokens", "granted_by", "granted_to", "issued_at"}
        if not isinstance(obj, dict) or set(obj) != keys:
            raise ScopeInvalid("scope", f"must be an object with {', '.join(sorted(keys))}", obj)
        return Scope(
            Selector.from_dict(obj["include"], "include"), Selector.from_dict(obj["exclude"], "exclude"),
            expires_at=_iso("expires_at", obj["expires_at"]), budget_tokens=obj["budget_tokens"],
            granted_by=obj["granted_by"], granted_to=obj["granted_to"],
            issued_at=None if obj["issued_at"] is None else _iso("issued_at", obj["issued_at"]),
        )


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


# ---------------------------------------------------------------------------
# Keys and signatures


# cryptography is imported where a key or signature is handled, not with the module:
# it costs ~10 ms of every cold process, and most processes never see a scope.


def public_key_bytes(value: object, field_name: str = "public_key") -> bytes:
    """The raw 32 bytes of an Ed25519 public key given as an `Ed25519PublicKey` or raw."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if isinstance(value, Ed25519PublicKey):
        return value.public_bytes_raw()
    if isinstance(value, (bytes, bytearray)) and len(value) == KEY_BYTES:
        try:
            Ed25519PublicKey.from_public_bytes(bytes(value))
        except ValueError:
            raise ValidationError(field_name, "is not an Ed25519 public key", value) from None
        return bytes(value)
    raise ValidationError(field_name, "must be an Ed25519PublicKey or its raw 32 bytes", value)


def private_key(value: object, field_name: str = "private_key") -> Ed25519PrivateKey:
    """An Ed25519 private key given as an `Ed25519PrivateKey` or its raw 32 bytes."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if isinstance(value, Ed25519PrivateKey):
        return value
    if isinstance(value, (bytes, bytearray)) and len(value) == KEY_BYTES:
        return Ed25519PrivateKey.from_private_bytes(bytes(value))
    raise ValidationError(field_name, "must be an Ed25519PrivateKey or its raw 32 bytes", None)


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


# Signatures already checked, by (public key, scope id, signature): a sub-agent passes
# the same scope call after call, and Ed25519 verification costs ~60 µs.
_VERIFIED: dict[tuple[bytes, bytes, bytes], None] = {}
_VERIFIED_LOCK = threading.Lock()


def signature_valid(public_key: bytes, digest: bytes, message: bytes, signature: bytes) -> bool:
    key = (public_key, digest, signature)
    if key in _VERIFIED:
        return True
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    with _VERIFIED_LOCK:
        if len(_VERIFIED) >= 4096:
            _VERIFIED.clear()
        _VERIFIED[key] = None
    return True


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


def sign(scope: Scope, key: Ed25519PrivateKey, signer: str) -> SignedScope:
    return SignedScope(scope, signer, key.sign(scope.canonical_bytes()))


# ---------------------------------------------------------------------------
# Trust and revocation records (derived from the journal: see records.py)


def trusted_keys(storage: Storage) -> dict[str, bytes]:
    """Every trusted name and its raw public key, in name order."""
    return {trust_key_name(key): decode_trust(key, raw)[0] for key, raw in storage.scan_items(TRUST_PREFIX)}


def trust_key_name(key: bytes) -> str:
    return key[len(TRUST_PREFIX):].decode("utf-8", errors="replace")


def trusted_key(storage: Storage, name: str) -> bytes | None:
    key = trust_key(name)
    raw = storage.get(key)
    return None if raw is None else decode_trust(key, raw)[0]


def is_revoked(storage: Storage, scope_id: bytes) -> bool:
    key = revoked_key(scope_id)
    raw = storage.get(key)
    if raw is not None:
        decode_revoked(key, raw)
    return raw is not None


@dataclass
class Grants:
    """What the journal's trust, untrust and revoke entries imply: the trusted keys
    (name -> (public key, when)) and the revoked scopes (id -> when). verify()
    compares the stored records with `records()`; rebuild() writes them."""

    trusted: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    revoked: dict[bytes, int] = field(default_factory=dict)

    def note(self, entry: Entry) -> None:
        p = entry.payload
        if entry.kind == "trust":
            self.trusted[p["name"]] = (p["key"], entry.at)
        elif entry.kind == "untrust":
            self.trusted.pop(p["name"], None)
        elif entry.kind == "revoke":
            self.revoked.setdefault(p["scope"], entry.at)

    def records(self) -> dict[bytes, bytes]:
        out = {trust_key(name): encode_trust(key, at) for name, (key, at) in self.trusted.items()}
        out.update({revoked_key(scope_id): encode_revoked(at) for scope_id, at in self.revoked.items()})
        return out


GRANT_PREFIXES = (TRUST_PREFIX, REVOKED_PREFIX)


# ---------------------------------------------------------------------------
# Verification, once per call


class Refusal(Exception):
    """Raised inside a read to leave it: the caller counts a violation of `scope_id`
    (`what`, `detail`) outside the read lock, then raises `error`."""

    def __init__(self, error: CortexError, scope_id: bytes, what: str, detail: str) -> None:
        super().__init__(str(error))
        self.error = error
        self.scope_id = scope_id
        self.what = what
        self.detail = detail


def check_signed(value: object) -> SignedScope:
    """The `scope=` argument of a call: a `SignedScope` (`ScopeInvalid` otherwise)."""
    if not isinstance(value, SignedScope):
        raise ScopeInvalid("scope", f"must be a cortex.SignedScope (SignedScope.from_bytes(token)), not {type(value).__name__}", None)
    return value


def verify(storage: Storage, signed: SignedScope, actor: str, now: int, clock_now: int, state: ScopeState | None = None,
           journal: tuple[int, bytes] | None = None) -> bytes:
    """Check a scope in the current view (call inside `Engine.read`); return its id
    (32 bytes). Signed under the key its signer is trusted with now (`ScopeInvalid`),
    not revoked (`ScopeRevoked`), unexpired at the call's `now` and at the store
    clock's `clock_now` (`ScopeExpired`), for this store (`ScopeInvalid`).

    With `state` and the view's `journal` state (seq, root): trust and revocation
    change only by journal entries, so a scope that passed them at this journal state
    is not read for again (two point reads saved per call)."""
    digest = bytes.fromhex(signed.scope_id)
    token = (signed.scope_id, signed.signer, signed.signature)  # the whole token: a forged signature is another key
    if state is None or journal is None or state.passed(token) != journal:
        _check_grant(storage, signed, digest)
        if state is not None and journal is not None:
            state.note_passed(token, journal)
    if max(now, clock_now) >= to_micros(signed.scope.expires_at):
        raise ScopeExpired("scope", f"expired at {json_value(signed.scope.expires_at)}")
    if signed.scope.granted_by != actor:
        raise ScopeInvalid("scope", f"issued for the store of {signed.scope.granted_by!r}, not this one")
    return digest


def _check_grant(storage: Storage, signed: SignedScope, digest: bytes) -> None:
    """Signed under the key its signer is trusted with now, and not revoked."""
    public = trusted_key(storage, signed.signer)
    if public is None:
        raise ScopeInvalid("scope", f"signed by {signed.signer!r}, which this store does not trust")
    if not signature_valid(public, digest, signed.canonical_bytes(), signed.signature):
        raise ScopeInvalid("scope", f"the signature does not verify under the key trusted as {signed.signer!r}")
    if is_revoked(storage, digest):
        raise ScopeRevoked("scope", f"scope {signed.scope_id} was revoked")


def capped_budget(signed: SignedScope, digest: bytes, requested: int, unset: int) -> int:
    """The budget a scoped call runs with: `requested` (`unset` means "no budget
    asked for": the cap) within the scope's cap; over a non-zero cap is a violation."""
    cap = signed.scope.budget_tokens
    if not cap:
        return requested
    if requested == unset:
        return cap
    if requested > cap:
        error = BudgetExceeded("budget_tokens", f"must be at most the scope's cap of {cap} (0 means the cap)", requested)
        raise Refusal(error, digest, "budget", f"requested {requested} tokens, cap {cap}")
    return requested


# ---------------------------------------------------------------------------
# Evaluation over index values


class IdSet:
    """A set of 16-byte ids with a vectorised membership test for decoded index rows.

    Ids are kept as their two big-endian halves, sorted by the low half (64 random
    bits of a ULID): a lookup is one numeric `searchsorted` on the low halves and a
    compare of both halves. Should two ids of the set share a low half (possible with
    injected entropy), the test falls back to comparing the 16 bytes as strings."""

    __slots__ = ("size", "_lo", "_hi", "_strings")

    def __init__(self, ids: Iterable[bytes]) -> None:
        joined = b"".join(sorted(ids))
        pairs = np.frombuffer(joined, dtype=">u8").reshape(-1, 2).astype(np.uint64) if joined else np.empty((0, 2), np.uint64)
        order = np.argsort(pairs[:, 1], kind="stable")
        self.size = len(pairs)
        self._lo, self._hi = pairs[order, 1], pairs[order, 0]
        unique = self.size < 2 or bool((self._lo[1:] != self._lo[:-1]).all())
        self._strings = None if unique else np.frombuffer(joined, dtype="S16")

    def contains(self, id_hi: np.ndarray, id_lo: np.ndarray) -> np.ndarray:
        if not self.size or not len(id_lo):
            return np.zeros(len(id_lo), dtype=bool)
        if self._strings is not None:
            keys = id_keys(id_hi, id_lo)
            pos = np.minimum(np.searchsorted(self._strings, keys), self.size - 1)
            by_string: np.ndarray = self._strings[pos] == keys
            return by_string
        pos = np.minimum(np.searchsorted(self._lo, id_lo), self.size - 1)
        found: np.ndarray = (self._lo[pos] == id_lo) & (self._hi[pos] == id_hi)
        return found


class Evaluator:
    """A scope compiled against the store at one journal state.

    Type criteria are lookup tables over the type code; the scope's own ids and the
    exclude side's bucket ids are sorted `IdSet`s. The include side's tag and frame
    criteria give *possible* members (`maybe`: the ids in the scope's tag buckets and
    frame prefixes, whose keys hold hashes): a possible member that nothing else
    admits is confirmed on its head (its exact tags and frames) the first time it is
    a candidate, and the verdict is kept (`verdicts`, and as `IdSet` generations for
    the vectorised path) until a journal entry changes that memory's tags or frames.
    So a scope costs a scan of its buckets once per handle, one head read per
    possible member that ever shows up as a candidate, and a mask per call.
    """

    GENERATIONS = 8  # verdict IdSets kept before they are merged into one

    def __init__(self, scope: Scope, maybe: set[bytes], exclude_ids: set[bytes], verdicts: dict[bytes, bool]) -> None:
        self.scope = scope
        self.maybe = frozenset(maybe)
        self.exclude_ids = frozenset(exclude_ids | scope.exclude._raw_ids)
        self.verdicts = verdicts  # shared with the _Sets that made this evaluator; changed under `lock`
        self.lock = threading.Lock()
        self._maybe = IdSet(self.maybe)
        self._exact = IdSet(scope.include._raw_ids)
        self._exclude = IdSet(self.exclude_ids)
        self._ok: list[IdSet] = []
        self._no: list[IdSet] = []
        self._pending: dict[bytes, bool] = {}
        self._merge()
        # type code -> whether that type alone puts a memory in scope / out of it: a
        # lookup table costs ~100x less than np.isin on a call's few hundred rows.
        self._by_type = np.zeros(256, dtype=bool)
        self._by_type[list(scope.include._type_codes)] = True
        self._excluded_type = np.zeros(256, dtype=bool)
        self._excluded_type[list(scope.exclude._type_codes)] = True

    def _merge(self) -> None:
        self._ok = [IdSet(i for i, v in self.verdicts.items() if v)]
        self._no = [IdSet(i for i, v in self.verdicts.items() if not v)]
        self._pending.clear()

    def _flush(self) -> None:
        """Verdicts found one at a time (`admits_value`) into a generation (lock held)."""
        if self._pending:
            if len(self._ok) >= self.GENERATIONS:
                self._merge()
                return
            self._ok.append(IdSet(i for i, v in self._pending.items() if v))
            self._no.append(IdSet(i for i, v in self._pending.items() if not v))
            self._pending.clear()

    def _confirm(self, storage: Storage, ids: list[bytes]) -> dict[bytes, bool]:
        """Exact verdicts (do the tags or frames of the head match `include`?) for
        possible members; recorded (lock held)."""
        keys = head_keys(ids)
        found: dict[bytes, bool] = {}
        selector = self.scope.include
        for raw_id, key, raw in zip(ids, keys, storage.multi_get(keys)):
            verdict = False
            if raw is not None:
                rec = unpack_head(key, raw)
                if type(rec) is tuple and len(rec) > max(H_TAGS, H_FRAMES) and type(rec[H_TAGS]) is tuple and type(rec[H_FRAMES]) is tuple:
                    verdict = (any(t in selector._tag_set for t in rec[H_TAGS])
                               or any(type(f) is tuple and len(f) == 3 and (f[0], f[1], f[2]) in selector._frame_keys for f in rec[H_FRAMES]))
            found[raw_id] = verdict
        self.verdicts.update(found)
        return found

    def mask(self, storage: Storage, id_hi: np.ndarray, id_lo: np.ndarray, types: np.ndarray) -> np.ndarray:
        """In-scope mask of decoded index rows (call inside `Engine.read`)."""
        codes = types.astype(np.uint8, copy=False)
        inside: np.ndarray = self._by_type[codes]
        if self._exact.size:
            inside |= self._exact.contains(id_hi, id_lo)
        if self._maybe.size:
            need = self._maybe.contains(id_hi, id_lo) & ~inside
            if need.any():
                inside |= self._confirmed(storage, need, id_hi, id_lo)
        if self.scope.exclude._type_codes:
            inside &= ~self._excluded_type[codes]
        if self._exclude.size:
            inside &= ~self._exclude.contains(id_hi, id_lo)
        return inside

    def _confirmed(self, storage: Storage, need: np.ndarray, id_hi: np.ndarray, id_lo: np.ndarray) -> np.ndarray:
        """Of the rows in `need`, those whose head confirms them (reading the heads of
        those without a verdict yet)."""
        with self.lock:
            self._flush()
            ok = np.zeros(len(need), dtype=bool)
            known = np.zeros(len(need), dtype=bool)
            for generation in self._ok:
                ok |= generation.contains(id_hi, id_lo)
            for generation in self._no:
                known |= generation.contains(id_hi, id_lo)
            unknown = need & ~ok & ~known
            if unknown.any():
                rows = np.flatnonzero(unknown)
                keys = id_keys(id_hi[rows], id_lo[rows]).tobytes()
                ids = [keys[i : i + 16] for i in range(0, len(keys), 16)]
                found = self._confirm(storage, ids)
                self._pending.update(found)
                self._flush()
                ok[rows] = [found[i] for i in ids]
            result: np.ndarray = need & ok
            return result

    def may_admit_type(self, type_code: int) -> bool:
        """Whether any memory of this type can be in scope (False: none can)."""
        if self._excluded_type[type_code]:
            return False
        return bool(self._by_type[type_code]) or bool(self._exact.size) or bool(self._maybe.size)

    def admits_value(self, storage: Storage, value: bytes) -> bool:
        """Whether one index value's memory is in scope (call inside `Engine.read`)."""
        raw_id, type_code = value[:16], value[IV_TYPE]
        if self._excluded_type[type_code] or raw_id in self.exclude_ids:
            return False
        if self._by_type[type_code] or raw_id in self.scope.include._raw_ids:
            return True
        if raw_id not in self.maybe:
            return False
        with self.lock:
            verdict = self.verdicts.get(raw_id)
            if verdict is None:
                verdict = self._confirm(storage, [raw_id])[raw_id]
                self._pending[raw_id] = verdict
            return verdict


@dataclass
class _Sets:
    """A scope's id sets as of one journal state (`seq`, `root`): per side, the ids
    in its tag buckets and frame prefixes, and the include side's exact verdicts."""

    seq: int
    root: bytes
    include_tags: set[bytes]
    include_frames: set[bytes]
    exclude_tags: set[bytes]
    exclude_frames: set[bytes]
    verdicts: dict[bytes, bool]
    evaluator: Evaluator | None = None

    def refresh(self, scope: Scope) -> Evaluator:
        self.evaluator = Evaluator(scope, self.include_tags | self.include_frames, self.exclude_tags | self.exclude_frames, self.verdicts)
        return self.evaluator


def _build(storage: Storage, scope: Scope, seq: int, root: bytes) -> _Sets:
    """Scan the tag buckets and frame prefixes the scope names (bounded by its size)."""

    def tag_ids(selector: Selector) -> set[bytes]:
        ids: set[bytes] = set()
        for tag in selector.tags:
            prefix = by_tag.prefix(tag)
            ids.update(v[:16] for v in storage.scan_values(prefix, by_tag.key_of(prefix)))
        return ids

    def frame_ids(selector: Selector) -> set[bytes]:
        ids: set[bytes] = set()
        for f in selector.frames:
            prefix = frame.prefix(f.verb, f.kind, f.ref)
            ids.update(v[:16] for v in storage.scan_values(prefix, frame.key_of(prefix)))
        return ids

    sets = _Sets(seq, root, tag_ids(scope.include), frame_ids(scope.include), tag_ids(scope.exclude), frame_ids(scope.exclude), {})
    sets.refresh(scope)
    return sets


# Past this many journal entries since a scope's sets were built, build them again
# instead of reading the entries.
MAX_PATCH_ENTRIES = 20_000


def _patch(storage: Storage, scope: Scope, sets: _Sets, seq: int, root: bytes) -> bool:
    """Move `sets` forward to journal state (seq, root) from the entries written
    since: a write or an update_head carries the memory's exact tags and frames (its
    verdict is dropped, to be confirmed again). False when it cannot (the caller
    builds again)."""
    if seq - sets.seq > MAX_PATCH_ENTRIES:
        return False
    changed = False
    last_root = sets.root
    count = 0
    verdicts = dict(sets.verdicts)  # the current evaluator may still be reading its own
    for key, value in storage.scan_items(JOURNAL_PREFIX, start=journal_key(sets.seq + 1)):
        count += 1
        if count > seq - sets.seq:
            break
        last_root, raw = split_journal_value(value)
        try:
            entry = Entry.decode(key, raw)
            payload = entry.payload
            if entry.kind not in ("write", "update_head"):
                continue
            raw_id = payload["id"]
            tags, frames = payload.get("tags"), payload.get("frames")
            sides = ((scope.include, sets.include_tags, sets.include_frames), (scope.exclude, sets.exclude_tags, sets.exclude_frames))
            for selector, tag_set, frame_set in sides:
                if tags is not None:
                    changed |= _set_member(tag_set, raw_id, any(t in selector._tag_set for t in tags))
                if frames is not None:
                    changed |= _set_member(frame_set, raw_id, any((f[0], f[1], f[2]) in selector._frame_keys for f in frames))
            if (tags is not None or frames is not None) and verdicts.pop(raw_id, None) is not None:
                changed = True
        except (CortexError, KeyError, TypeError, IndexError, ValueError):
            return False
    if count != seq - sets.seq or last_root != root:
        return False
    sets.seq, sets.root = seq, root
    if changed:
        sets.verdicts = verdicts
        sets.refresh(scope)
    return True


def _set_member(ids: set[bytes], raw_id: bytes, member: bool) -> bool:
    if member == (raw_id in ids):
        return False
    if member:
        ids.add(raw_id)
    else:
        ids.discard(raw_id)
    return True


class TokenBucket:
    """At most `rate` events a second, in bursts of `burst`; times in microseconds."""

    def __init__(self, rate: float = VIOLATION_RATE, burst: int = VIOLATION_BURST) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.last: int | None = None

    def take(self, now: int) -> bool:
        if self.last is not None and now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) / 1e6 * self.rate)
        if self.last is None or now > self.last:
            self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class ScopeState:
    """What one open handle keeps about scopes: evaluated id sets per scope (at most
    `size`, least recently used go first), violation counts per scope id, and the
    violation rate limiter."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.lock = threading.Lock()
        self._sets: OrderedDict[str, _Sets] = OrderedDict()
        self._passed: OrderedDict[tuple[str, str, bytes], tuple[int, bytes]] = OrderedDict()
        self.violations: dict[str, int] = {}
        self.held_back: dict[str, int] = {}
        self.bucket = TokenBucket()

    def passed(self, token: tuple[str, str, bytes]) -> tuple[int, bytes] | None:
        """The journal state (seq, root) at which a token (scope id, signer,
        signature) last passed the trust and revocation checks, or None."""
        with self.lock:
            return self._passed.get(token)

    def note_passed(self, token: tuple[str, str, bytes], journal: tuple[int, bytes]) -> None:
        with self.lock:
            self._passed[token] = journal
            self._passed.move_to_end(token)
            while len(self._passed) > self.size:
                self._passed.popitem(last=False)

    def evaluator(self, storage: Storage, signed: SignedScope, seq: int, root: bytes) -> Evaluator:
        """The scope's evaluator for the view at journal state (seq, root): cached,
        moved forward from the journal, or built. Call inside `Engine.read`."""
        with self.lock:
            sets = self._sets.get(signed.scope_id)
            if sets is not None and (sets.seq, sets.root) == (seq, root) and sets.evaluator is not None:
                self._sets.move_to_end(signed.scope_id)
                return sets.evaluator
            if sets is None or sets.seq > seq or not _patch(storage, signed.scope, sets, seq, root):
                sets = _build(storage, signed.scope, seq, root)
            self._sets[signed.scope_id] = sets
            self._sets.move_to_end(signed.scope_id)
            while len(self._sets) > self.size:
                self._sets.popitem(last=False)
            return sets.evaluator or sets.refresh(signed.scope)

    def count(self, scope_id: str, now: int) -> tuple[bool, int]:
        """Count one violation; return whether it may be written (the rate limit) and
        how many of this scope's were held back since its last written one."""
        with self.lock:
            self.violations[scope_id] = self.violations.get(scope_id, 0) + 1
            if not self.bucket.take(now):
                self.held_back[scope_id] = self.held_back.get(scope_id, 0) + 1
                return False, 0
            return True, self.held_back.pop(scope_id, 0)


def log_violation(scope_id: str, what: str, detail: str, held_back: int) -> None:
    import logging  # here, not with the module: ~4 ms of every cold process

    logging.getLogger("cortex.scope").warning("scope %s violated (%s): %s%s", scope_id, what, detail,
                f" (+{held_back} held back by the rate limit)" if held_back else "")


def memory_frames(frames: Iterable[Frame]) -> Iterator[tuple[int, int, str]]:
    return ((int(f.verb), int(f.kind), f.ref) for f in frames)
