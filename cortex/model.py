"""The memory model: the nine memory types, verbs, object kinds, frames, and limits.

Every data class is a frozen dataclass that validates itself on construction, so a
value that exists is a value that can be stored. Lists are normalised to tuples and
datetimes to aware UTC datetimes; `to_record()` / `from_record()` turn a value into
the plain list that the store encodes with msgpack, and back.

Limits (each a `ValidationError` naming the field when broken):

* a text field holds at most `MAX_TEXT_BYTES` bytes of UTF-8 (lone surrogates are
  rejected); a list field at most `MAX_LIST_ITEMS` items;
* a frame ref is a non-empty string of at most 256 UTF-8 bytes; a memory has at most
  16 frames and 16 tags, each tag at most 64 characters;
* numbers are finite: strengths in [0, 1], amounts and durations non-negative.
"""

from __future__ import annotations

import enum
import functools
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

from .errors import EmptyObjRef, InvalidObjKind, InvalidVerb, ValidationError, shown

MAX_TEXT_BYTES = 16 * 1024
MAX_LIST_ITEMS = 256
MAX_REF_BYTES = 256
MAX_FRAMES = 16
MAX_TAGS = 16
MAX_TAG_CHARS = 64
MAX_IMPORTANCE = 10

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


# ---------------------------------------------------------------------------
# Closed sets: one byte each, stable on disk.


class MemoryType(enum.IntEnum):
    IDENTITY = 1
    FACT = 2
    PREFERENCE = 3
    BELIEF = 4
    EVENT = 5
    GOAL = 6
    CONSTRAINT = 7
    CAPABILITY = 8
    PATTERN = 9

    @property
    def type_name(self) -> str:
        """The name used in URIs: `Identity`, `Fact`, ..."""
        return _TYPE_NAMES[self]

    @classmethod
    def from_type_name(cls, name: str) -> MemoryType:
        member = cls.__members__.get(name.upper())
        if member is None or member.type_name != name:
            raise ValidationError("type", f"unknown memory type {shown(name)}", name)
        return member


def _parse_member(cls: Any, value: object, field_name: str, error: type[ValidationError], label: str) -> Any:
    """A member of a closed set from itself or its lower-case name; `error` otherwise."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str) and value.islower() and value.upper() in cls.__members__:
        return cls[value.upper()]
    names = ", ".join(member.name.lower() for member in cls)
    raise error(field_name, f"unknown {label} {shown(value)}; must be one of {names}", value)


_TYPE_NAMES = {member: member.name.capitalize() for member in MemoryType}


class Verb(enum.IntEnum):
    FIND = 1
    ACQUIRE = 2
    BUILD = 3
    MODIFY = 4
    DELIVER = 5
    ANALYZE = 6
    NEGOTIATE = 7
    SCHEDULE = 8
    MONITOR = 9
    DELEGATE = 10

    @classmethod
    def parse(cls, value: object, field_name: str = "verb") -> Verb:
        """A `Verb` from a member or its lower-case name (`"acquire"`)."""
        return _parse_member(cls, value, field_name, InvalidVerb, "verb")


class ObjKind(enum.IntEnum):
    SERVICE = 1
    MODEL = 2
    AGENT = 3
    KNOWLEDGE = 4
    INTENT = 5
    ASSET = 6
    PLAN = 7
    CAPABILITY = 8
    TOKEN = 9
    ADDRESS = 10
    SKILL = 11
    TOOL = 12

    @classmethod
    def parse(cls, value: object, field_name: str = "kind") -> ObjKind:
        """An `ObjKind` from a member or its lower-case name (`"service"`)."""
        return _parse_member(cls, value, field_name, InvalidObjKind, "object kind")


class Tier(enum.Enum):
    PINNED = "pinned"
    OUTCOMES = "outcomes"
    FRAME_RELEVANT = "frame_relevant"


# ---------------------------------------------------------------------------
# Validation helpers, shared by every data class and by the store's write path.


def check_text(field_name: str, value: object, *, required: bool = False, max_bytes: int = MAX_TEXT_BYTES) -> str | None:
    """A str within `max_bytes` of UTF-8; None allowed unless `required` (then non-empty)."""
    if value is None:
        if required:
            raise ValidationError(field_name, "is required", value)
        return None
    if not isinstance(value, str):
        raise ValidationError(field_name, f"must be a string, not {type(value).__name__}", value)
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(field_name, "must be valid Unicode (no lone surrogates)", value) from None
    if required and not value.strip():
        raise ValidationError(field_name, "must be a non-empty string", value)
    if size > max_bytes:
        raise ValidationError(field_name, f"must be at most {max_bytes} bytes of UTF-8 (got {size})", value)
    return value


def check_texts(field_name: str, value: object, *, max_items: int = MAX_LIST_ITEMS) -> tuple[str, ...]:
    """A list of strings as a tuple; None means empty."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValidationError(field_name, "must be a list of strings", value)
    items = tuple(value)
    if len(items) > max_items:
        raise ValidationError(field_name, f"must hold at most {max_items} items (got {len(items)})", value)
    for i, item in enumerate(items):
        check_text(f"{field_name}[{i}]", item, required=True)
    return items


def check_choice(field_name: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValidationError(field_name, f"must be one of {', '.join(choices)}; got {shown(value)}", value)
    return value


def check_number(field_name: str, value: object, *, lo: float | None = None, hi: float | None = None) -> float:
    """A finite int or float (not bool) within [lo, hi], returned as float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError(field_name, f"must be a number, not {type(value).__name__}", value)
    if isinstance(value, int) and abs(value) > 2**53:
        raise ValidationError(field_name, "must be at most 2**53 in magnitude", value)
    number = float(value)
    if not math.isfinite(number):
        raise ValidationError(field_name, "must be a finite number", value)
    if lo is not None and number < lo or hi is not None and number > hi:
        raise ValidationError(field_name, f"must be within [{lo}, {hi}]", value)
    return number


def check_int(field_name: str, value: object, *, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field_name, f"must be an integer, not {type(value).__name__}", value)
    if not lo <= value <= hi:
        raise ValidationError(field_name, f"must be an integer within {lo}..{hi}", value)
    return value


def check_datetime(field_name: str, value: object) -> datetime | None:
    """An aware datetime, converted to UTC; None allowed."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValidationError(field_name, f"must be a datetime, not {type(value).__name__}", value)
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(field_name, "must be timezone-aware", value)
    try:
        utc = value.astimezone(timezone.utc)
    except OverflowError:
        raise ValidationError(field_name, "is out of the representable range", value) from None
    if utc < EPOCH:
        raise ValidationError(field_name, "must not be before 1970-01-01", value)
    return utc


def to_micros(value: datetime) -> int:
    """Microseconds since the Unix epoch of an aware datetime (exact)."""
    return (value - EPOCH) // _MICROSECOND


def from_micros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


# ---------------------------------------------------------------------------
# Frames


@dataclass(frozen=True, slots=True)
class Frame:
    """A (verb, object kind, object ref) triple a memory is indexed under."""

    verb: Verb
    kind: ObjKind
    ref: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "verb", Verb.parse(self.verb, "frame.verb"))
        object.__setattr__(self, "kind", ObjKind.parse(self.kind, "frame.kind"))
        check_ref("frame.ref", self.ref)


_FRAMES: dict[tuple[int, int, str], Frame] = {}


def stored_frame(verb: int, kind: int, ref: str) -> Frame:
    """A Frame read back from the store: built without re-validation, and shared
    (frames repeat across memories; the cache is bounded)."""
    key = (verb, kind, ref)
    frame = _FRAMES.get(key)
    if frame is None:
        if len(_FRAMES) >= 65536:
            _FRAMES.clear()
        frame = object.__new__(Frame)
        object.__setattr__(frame, "verb", Verb(verb))
        object.__setattr__(frame, "kind", ObjKind(kind))
        object.__setattr__(frame, "ref", ref)
        _FRAMES[key] = frame
    return frame


def check_ref(field_name: str, ref: object) -> str:
    """An object ref: a non-empty string of at most `MAX_REF_BYTES` UTF-8 bytes."""
    if isinstance(ref, str) and not ref:
        raise EmptyObjRef(field_name, "must be a non-empty string", ref)
    text = check_text(field_name, ref, required=False, max_bytes=MAX_REF_BYTES)
    if text is None:
        raise EmptyObjRef(field_name, "must be a non-empty string", ref)
    return text


def check_frames(value: object) -> tuple[Frame, ...]:
    """Frames as a tuple of `Frame`, duplicates removed, first occurrence kept."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, Frame)) or not isinstance(value, Iterable):
        raise ValidationError("frames", "must be a list of Frame", value)
    out: list[Frame] = []
    for i, item in enumerate(value):
        if isinstance(item, Frame):
            frame = item
        elif isinstance(item, (tuple, list)) and len(item) == 3:
            frame = Frame(*item)
        else:
            raise ValidationError(f"frames[{i}]", "must be a Frame(verb, kind, ref)", item)
        if frame not in out:
            out.append(frame)
    if len(out) > MAX_FRAMES:
        raise ValidationError("frames", f"must hold at most {MAX_FRAMES} frames (got {len(out)})", value)
    return tuple(out)


def check_tags(value: object) -> tuple[str, ...]:
    """Tags as a tuple of non-empty strings of at most 64 characters, duplicates removed."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValidationError("tags", "must be a list of strings", value)
    out: list[str] = []
    for i, tag in enumerate(value):
        check_text(f"tags[{i}]", tag, required=True)
        if len(tag) > MAX_TAG_CHARS:
            raise ValidationError(f"tags[{i}]", f"must be at most {MAX_TAG_CHARS} characters", tag)
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValidationError("tags", f"must hold at most {MAX_TAGS} tags (got {len(out)})", value)
    return tuple(out)


# ---------------------------------------------------------------------------
# The nine data classes


POLARITIES = ("prefer", "avoid", "neutral", "do", "dont")
STANCES = ("believe", "doubt", "suspect")
EVENT_KINDS = ("intent_completed", "intent_failed", "payment", "dispatch", "observation", "interaction")
OUTCOMES = ("success", "failure", "partial")
GOAL_STATUSES = ("active", "paused", "completed", "abandoned")
STRENGTHS = ("soft", "firm", "hard")
CONSTRAINT_SOURCES = ("user_declared", "learned", "inferred")


class MemoryData:
    """Base of the nine data classes. `TYPE` is the memory type it is stored as.

    Required fields default to None so that leaving one out raises a
    `ValidationError` naming it, like any other broken rule, not a `TypeError`.
    """

    TYPE: ClassVar[MemoryType]

    def __post_init__(self) -> None:
        self._check()  # type: ignore[attr-defined]  # each data class states its rules

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def to_record(self) -> list[Any]:
        """Field values in declaration order, as msgpack-ready plain values."""
        return [v if type(v) in _PLAIN_TYPES else _encode_value(v) for v in field_values(self)]

    def to_dict(self) -> dict[str, Any]:
        """Field values as JSON-ready plain values (datetimes as ISO 8601 UTC text)."""
        return {f.name: json_value(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_record(cls, record: list[Any], validate: bool = True) -> MemoryData:
        """The value of a record. With `validate=False` (the read path: records were
        validated when written) the rules are not run again, which is 5x faster;
        `verify()` decodes with them."""
        names = field_names(cls)
        if not isinstance(record, list) or len(record) != len(names):
            raise ValueError(f"{cls.__name__} record must be a list of {len(names)} values")
        if validate:
            return cls(**{name: _decode_value(cls, name, raw) for name, raw in zip(names, record)})
        value = object.__new__(cls)
        for name, raw in zip(names, record):
            object.__setattr__(value, name, _decode_value(cls, name, raw))
        return value


@functools.cache
def field_names(cls: type) -> tuple[str, ...]:
    """The data fields of a data class, in declaration (= record) order."""
    return tuple(f.name for f in fields(cls))


def field_values(data: MemoryData) -> tuple[Any, ...]:
    """The data fields of `data`, in declaration (= record) order."""
    return _field_getter(type(data))(data)


@functools.cache
def _field_getter(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    """One C call that reads every data field of an instance of `cls`, in record order."""
    names = field_names(cls)
    getter = operator.attrgetter(*names)
    return getter if len(names) > 1 else lambda value: (getter(value),)


# Values a record holds as they are (everything else goes through `_encode_value`).
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})

# Fields holding datetimes, by class: encoded as microseconds since the epoch.
_DATETIME_FIELDS = {"as_of", "horizon_end", "last_observed"}


def json_value(value: object) -> object:
    """A plain JSON value: datetimes as `YYYY-MM-DDTHH:MM:SS.ffffffZ`, tuples as lists."""
    if isinstance(value, datetime):
        return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, enum.Enum):
        return value.name.lower()
    if isinstance(value, (tuple, list)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    return value


def _encode_value(value: object) -> object:
    if isinstance(value, datetime):
        return to_micros(value)
    if isinstance(value, tuple):
        return [_encode_value(v) for v in value]
    return value


def _decode_value(cls: type, name: str, raw: object) -> object:
    if name in _DATETIME_FIELDS and raw is not None:
        return from_micros(raw)  # type: ignore[arg-type]
    if isinstance(raw, list):
        return tuple(raw)
    return raw


@dataclass(frozen=True, slots=True)
class Identity(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.IDENTITY
    name: str = None  # type: ignore[assignment]  # required: see MemoryData
    did: str | None = None
    wallets: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    public_keys: tuple[str, ...] = ()

    def _check(self) -> None:
        check_text("name", self.name, required=True)
        check_text("did", self.did)
        for name in ("wallets", "roles", "public_keys"):
            self._set(name, check_texts(name, getattr(self, name)))


@dataclass(frozen=True, slots=True)
class Fact(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.FACT
    statement: str = None  # type: ignore[assignment]  # required: see MemoryData
    subject: str = None  # type: ignore[assignment]  # required: see MemoryData
    predicate: str = None  # type: ignore[assignment]  # required: see MemoryData
    object: str | None = None
    source: str | None = None
    as_of: datetime | None = None

    def _check(self) -> None:
        for name in ("statement", "subject", "predicate"):
            check_text(name, getattr(self, name), required=True)
        check_text("object", self.object)
        check_text("source", self.source)
        self._set("as_of", check_datetime("as_of", self.as_of))


@dataclass(frozen=True, slots=True)
class Preference(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.PREFERENCE
    topic: str = None  # type: ignore[assignment]  # required: see MemoryData
    polarity: str = None  # type: ignore[assignment]  # required: see MemoryData
    strength: float = 0.5
    value: str | None = None
    rationale: str | None = None

    def _check(self) -> None:
        check_text("topic", self.topic, required=True)
        check_choice("polarity", self.polarity, POLARITIES)
        self._set("strength", check_number("strength", self.strength, lo=0.0, hi=1.0))
        check_text("value", self.value)
        check_text("rationale", self.rationale)


@dataclass(frozen=True, slots=True)
class Belief(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.BELIEF
    statement: str = None  # type: ignore[assignment]  # required: see MemoryData
    stance: str = None  # type: ignore[assignment]  # required: see MemoryData
    subject: str | None = None
    evidence_for: tuple[str, ...] = ()
    evidence_against: tuple[str, ...] = ()

    def _check(self) -> None:
        check_text("statement", self.statement, required=True)
        check_choice("stance", self.stance, STANCES)
        check_text("subject", self.subject)
        self._set("evidence_for", check_texts("evidence_for", self.evidence_for))
        self._set("evidence_against", check_texts("evidence_against", self.evidence_against))


@dataclass(frozen=True, slots=True)
class Event(MemoryData):
    """The outcome of an action. `cost` is `(asset, amount)`; `duration` is in seconds."""

    TYPE: ClassVar[MemoryType] = MemoryType.EVENT
    kind: str = None  # type: ignore[assignment]  # required: see MemoryData
    outcome: str = None  # type: ignore[assignment]  # required: see MemoryData
    intent_ref: str | None = None
    counterparty: str | None = None
    cost: tuple[str, float] | None = None
    duration: float | None = None
    artifacts: tuple[str, ...] = ()
    summary: str | None = None

    def _check(self) -> None:
        check_choice("kind", self.kind, EVENT_KINDS)
        check_choice("outcome", self.outcome, OUTCOMES)
        check_text("intent_ref", self.intent_ref)
        check_text("counterparty", self.counterparty)
        if self.cost is not None:
            cost = self.cost
            if isinstance(cost, Mapping):
                cost = (cost.get("asset"), cost.get("amount"))
            if isinstance(cost, (str, bytes)) or not isinstance(cost, Iterable) or len(tuple(cost)) != 2:
                raise ValidationError("cost", "must be (asset, amount)", self.cost)
            asset, amount = tuple(cost)
            check_text("cost.asset", asset, required=True)
            self._set("cost", (asset, check_number("cost.amount", amount, lo=0.0)))
        if self.duration is not None:
            self._set("duration", check_number("duration", self.duration, lo=0.0))
        self._set("artifacts", check_texts("artifacts", self.artifacts))
        check_text("summary", self.summary)


@dataclass(frozen=True, slots=True)
class Goal(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.GOAL
    statement: str = None  # type: ignore[assignment]  # required: see MemoryData
    status: str = None  # type: ignore[assignment]  # required: see MemoryData
    horizon_end: datetime | None = None
    success_criteria: tuple[str, ...] = ()
    subgoals: tuple[str, ...] = ()

    def _check(self) -> None:
        check_text("statement", self.statement, required=True)
        check_choice("status", self.status, GOAL_STATUSES)
        self._set("horizon_end", check_datetime("horizon_end", self.horizon_end))
        self._set("success_criteria", check_texts("success_criteria", self.success_criteria))
        self._set("subgoals", check_texts("subgoals", self.subgoals))


@dataclass(frozen=True, slots=True)
class Constraint(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.CONSTRAINT
    statement: str = None  # type: ignore[assignment]  # required: see MemoryData
    strength: str = None  # type: ignore[assignment]  # required: see MemoryData
    polarity: str = None  # type: ignore[assignment]  # required: see MemoryData
    source: str = None  # type: ignore[assignment]  # required: see MemoryData
    trigger: str | None = None

    def _check(self) -> None:
        check_text("statement", self.statement, required=True)
        check_choice("strength", self.strength, STRENGTHS)
        check_choice("polarity", self.polarity, POLARITIES)
        check_choice("source", self.source, CONSTRAINT_SOURCES)
        check_text("trigger", self.trigger)


@dataclass(frozen=True, slots=True)
class Capability(MemoryData):
    """What a subject can do. `parameters` maps names to strings."""

    TYPE: ClassVar[MemoryType] = MemoryType.CAPABILITY
    subject: str = None  # type: ignore[assignment]  # required: see MemoryData
    capability: str = None  # type: ignore[assignment]  # required: see MemoryData
    parameters: dict[str, str] = field(default_factory=dict)
    verified: bool = False
    last_observed: datetime | None = None

    def _check(self) -> None:
        check_text("subject", self.subject, required=True)
        check_text("capability", self.capability, required=True)
        params = self.parameters
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ValidationError("parameters", "must be a mapping of strings to strings", params)
        if len(params) > MAX_LIST_ITEMS:
            raise ValidationError("parameters", f"must hold at most {MAX_LIST_ITEMS} items", params)
        for key, value in params.items():
            check_text("parameters key", key, required=True)
            check_text(f"parameters[{shown(key)}]", value, required=False)
            if value is None:
                raise ValidationError(f"parameters[{shown(key)}]", "must be a string", value)
        self._set("parameters", dict(sorted(params.items())))
        if not isinstance(self.verified, bool):
            raise ValidationError("verified", "must be a bool", self.verified)
        self._set("last_observed", check_datetime("last_observed", self.last_observed))


@dataclass(frozen=True, slots=True)
class Pattern(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.PATTERN
    statement: str = None  # type: ignore[assignment]  # required: see MemoryData
    derived_from: tuple[str, ...] = ()
    strength: float = 0.5
    coverage: int = 0

    def _check(self) -> None:
        check_text("statement", self.statement, required=True)
        self._set("derived_from", check_texts("derived_from", self.derived_from))
        self._set("strength", check_number("strength", self.strength, lo=0.0, hi=1.0))
        check_int("coverage", self.coverage, lo=0, hi=2**53)


DATA_CLASSES: dict[MemoryType, type[MemoryData]] = {
    cls.TYPE: cls
    for cls in (Identity, Fact, Preference, Belief, Event, Goal, Constraint, Capability, Pattern)
}


def check_data(value: object, field_name: str = "data") -> MemoryData:
    if not isinstance(value, MemoryData) or type(value) not in DATA_CLASSES.values():
        raise ValidationError(field_name, f"must be one of the nine memory data classes, not {type(value).__name__}", value)
    return value


def is_pinned(data: MemoryData) -> bool:
    """Pinned tier membership: every Identity, a hard Constraint, an active Goal."""
    if isinstance(data, Identity):
        return True
    if isinstance(data, Constraint):
        return data.strength == "hard"
    if isinstance(data, Goal):
        return data.status == "active"
    return False
