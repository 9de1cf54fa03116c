"""The memory model: the nine memory types, verbs, object kinds, frames, and limits.

Every data class is a frozen dataclass that validates itself on construction, so a
value that exists is a value that can be stored. The rules are declarative: each
field names its rule with `rule(...)` (a non-blank text, one of a closed set, a
number in a range, ...), and one generic validator, `MemoryData.__post_init__`,
runs them in declaration order. Lists are normalised to tuples, numbers to floats
and datetimes to aware UTC datetimes; `to_record()` / `from_record()` turn a value
into the plain list that the store encodes with msgpack, and back.

Limits (each a `ValidationError` naming the field when broken):

* a text field holds at most `MAX_TEXT_BYTES` bytes of UTF-8 (lone surrogates are
  rejected); a list field at most `MAX_LIST_ITEMS` items;
* a frame ref is a non-empty string of at most 256 UTF-8 bytes; a memory has at most
  16 distinct frames and 16 distinct tags, each tag at most 64 characters;
* numbers are finite: strengths in [0, 1], amounts and durations non-negative.

List checks read their input once and stop at the first item over the limit, so a
huge (or endless) iterable is rejected after reading at most limit + 1 items.

Length: over the ~600 lines a module keeps to, on purpose: the nine data classes, their
closed sets and their validation: the data model in one place.
"""

from __future__ import annotations

import enum
import itertools
import math
import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar, cast, dataclass_transform, overload

from .errors import EmptyObjRef, InvalidEdgeType, InvalidObjKind, InvalidVerb, ValidationError, shown

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
    """The nine memory types, one stable byte each (the position in this list, from 1)."""

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


_TYPE_NAMES = {member: member.name.capitalize() for member in MemoryType}

_Member = TypeVar("_Member", bound=enum.IntEnum)


def _parse_member(cls: type[_Member], value: object, field_name: str, error: type[ValidationError], label: str) -> _Member:
    """A member of a closed set from itself or its lower-case name; `error` otherwise."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str) and value.islower():
        member = cls._member_map_.get(value.upper())  # (`__members__` makes a new proxy per call)
        if member is not None:
            return cast(_Member, member)
    names = ", ".join(member.name.lower() for member in cls)
    raise error(field_name, f"unknown {label} {shown(value)}; must be one of {names}", value)


class Verb(enum.IntEnum):
    """The closed set of verbs a memory is filed under and `context()` asks for, one
    stable byte each. See docs/data-model.md for which verb an agent's action goes under."""

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
    """The closed set of object kinds a frame names (`Frame(verb, kind, ref)`), one
    stable byte each."""

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


class EdgeType(enum.IntEnum):
    """The typed relations between two memories (docs/edges.md). `supersedes` (the
    source replaces the destination, which `context()` and `find()` then leave out)
    and `contradicts` (`Bundle.conflicts`) change what the reads return; the others
    are recorded and listed by `Cortex.edges()`."""

    DERIVED_FROM = 1
    SUPERSEDES = 2
    REFERENCES = 3
    CONTRADICTS = 4
    CORROBORATES = 5
    CONSENTS_TO = 6
    DISPATCHED_TO = 7
    ATTESTED_BY = 8
    CITED_IN = 9
    TOMBSTONES = 10
    PART_OF = 11
    INSTANCE_OF = 12
    CAUSED_BY = 13
    OBSERVED_BY = 14

    @classmethod
    def parse(cls, value: object, field_name: str = "edge_type") -> EdgeType:
        """An `EdgeType` from a member or its lower-case name (`"supersedes"`)."""
        return _parse_member(cls, value, field_name, InvalidEdgeType, "edge type")


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge: `src` and `dst` are memory ids (26 characters), `created_at` when
    it was (last) linked, `tombstoned` whether it has been unlinked since."""

    src: str
    type: EdgeType
    dst: str
    weight: float
    created_at: datetime
    tombstoned: bool


class Tier(enum.Enum):
    """The tiers of a `Bundle`, in the order `context()` fills them."""

    PINNED = "pinned"
    OUTCOMES = "outcomes"
    FRAME_RELEVANT = "frame_relevant"


# The closed value sets of the data classes' choice fields (docs/data-model.md).
POLARITIES = ("prefer", "avoid", "neutral", "do", "dont")
STANCES = ("believe", "doubt", "suspect")
EVENT_KINDS = ("intent_completed", "intent_failed", "payment", "dispatch", "observation", "interaction")
OUTCOMES = ("success", "failure", "partial")
GOAL_STATUSES = ("active", "paused", "completed", "abandoned")
STRENGTHS = ("soft", "firm", "hard")
CONSTRAINT_SOURCES = ("user_declared", "learned", "inferred")


# ---------------------------------------------------------------------------
# Validation helpers, shared by every data class and by the store's write path.


def check_text(field_name: str, value: object, *, required: bool = False, max_bytes: int = MAX_TEXT_BYTES) -> str | None:
    """A str within `max_bytes` of UTF-8; None allowed unless `required` (then non-empty)."""
    if value is None and not required:
        return None
    return _text(field_name, value, non_blank=required, max_bytes=max_bytes)


def _text(field_name: str, value: object, *, non_blank: bool, max_bytes: int) -> str:
    """A str (never None) within `max_bytes` of UTF-8, not blank if `non_blank`."""
    if value is None:
        raise ValidationError(field_name, "is required", value)
    if not isinstance(value, str):
        raise ValidationError(field_name, f"must be a string, not {type(value).__name__}", value)
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(field_name, "must be valid Unicode (no lone surrogates)", value) from None
    if non_blank and not value.strip():
        raise ValidationError(field_name, "must be a non-empty string", value)
    if size > max_bytes:
        raise ValidationError(field_name, f"must be at most {max_bytes} bytes of UTF-8 (got {size})", value)
    return value


def _iterable(field_name: str, value: object, rule: str) -> Iterable[object]:
    """`value` if it is a list-like iterable (not a str or bytes); `rule` broken otherwise."""
    if type(value) is list or type(value) is tuple:
        return value  # the common case, without the slower ABC check below
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValidationError(field_name, rule, value)
    return value


def check_texts(field_name: str, value: object, *, max_items: int = MAX_LIST_ITEMS) -> tuple[str, ...]:
    """A list of non-empty strings as a tuple; None means empty. Reads at most
    `max_items + 1` items of `value`."""
    if value is None:
        return ()
    items = tuple(itertools.islice(_iterable(field_name, value, "must be a list of strings"), max_items + 1))
    if len(items) > max_items:
        raise ValidationError(field_name, f"must hold at most {max_items} items", value)
    for i, item in enumerate(items):
        _text(f"{field_name}[{i}]", item, non_blank=True, max_bytes=MAX_TEXT_BYTES)
    return cast(tuple[str, ...], items)  # every item was just checked to be a str


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
        if hi is None:
            raise ValidationError(field_name, f"must be at least {lo}", value)
        if lo is None:
            raise ValidationError(field_name, f"must be at most {hi}", value)
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
    return _utc(field_name, value)


def _utc(field_name: str, value: object) -> datetime:
    """An aware datetime (never None) from 1970 on, converted to UTC."""
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


@dataclass(frozen=True, slots=True, init=False)
class Frame:
    """A (verb, object kind, object ref) triple a memory is indexed under.

    `Frame("acquire", "service", "gpu")` and `Frame(Verb.ACQUIRE, ObjKind.SERVICE,
    "gpu")` are the same frame: names are parsed to members on construction.
    """

    verb: Verb
    kind: ObjKind
    ref: str

    def __init__(self, verb: Verb | str, kind: ObjKind | str, ref: str) -> None:
        object.__setattr__(self, "verb", Verb.parse(verb, "frame.verb"))
        object.__setattr__(self, "kind", ObjKind.parse(kind, "frame.kind"))
        object.__setattr__(self, "ref", check_ref("frame.ref", ref))


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
    if ref is None or isinstance(ref, str) and not ref:
        raise EmptyObjRef(field_name, "must be a non-empty string", ref)
    return _text(field_name, ref, non_blank=False, max_bytes=MAX_REF_BYTES)


def check_frames(value: object) -> tuple[Frame, ...]:
    """Frames as a tuple of `Frame`, duplicates removed, first occurrence kept.
    Stops reading `value` at its 17th distinct frame (too many)."""
    if value is None:
        return ()
    distinct: dict[Frame, None] = {}
    for i, item in enumerate(_iterable("frames", value, "must be a list of Frame")):
        if not isinstance(item, Frame):
            raise ValidationError(f"frames[{i}]", "must be a cortex.Frame(verb, kind, ref)", item)
        if item not in distinct:
            if len(distinct) == MAX_FRAMES:
                raise ValidationError("frames", f"must hold at most {MAX_FRAMES} distinct frames", value)
            distinct[item] = None
    return tuple(distinct)


def check_tags(value: object) -> tuple[str, ...]:
    """Tags as a tuple of non-empty strings of at most 64 characters, duplicates
    removed, first occurrence kept. Stops reading `value` at its 17th distinct tag."""
    if value is None:
        return ()
    distinct: dict[str, None] = {}
    for i, item in enumerate(_iterable("tags", value, "must be a list of strings")):
        tag = _text(f"tags[{i}]", item, non_blank=True, max_bytes=MAX_TEXT_BYTES)
        if len(tag) > MAX_TAG_CHARS:
            raise ValidationError(f"tags[{i}]", f"must be at most {MAX_TAG_CHARS} characters", tag)
        if tag not in distinct:
            if len(distinct) == MAX_TAGS:
                raise ValidationError("tags", f"must hold at most {MAX_TAGS} distinct tags", value)
            distinct[tag] = None
    return tuple(distinct)


def check_instances(field_name: str, value: object, cls: type[_T], rule: str, *, refused: tuple[type, ...] = ()) -> list[_T]:
    """`value`'s items as a list, each an instance of `cls` (`cortex.<cls>`). `rule`
    is broken when `value` is not list-like or is one of `refused` (a lone item, a
    mapping); an item of another type names its index."""
    if isinstance(value, refused):
        raise ValidationError(field_name, rule, value)
    items = list(_iterable(field_name, value, rule))
    for i, item in enumerate(items):
        if not isinstance(item, cls):
            raise ValidationError(f"{field_name}[{i}]", f"must be a cortex.{cls.__name__}, not {type(item).__name__}", item)
    return cast(list[_T], items)  # every item was just checked


# ---------------------------------------------------------------------------
# Field rules: what each data field must hold, declared beside the field.

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


class Rule(ABC, Generic[_T_co]):
    """How one data field is checked: `check(name, value)` returns the value to
    store (normalised) or raises `ValidationError` naming the field `name`."""

    @abstractmethod
    def check(self, name: str, value: object) -> _T_co:
        """The value to store for `value`, or a `ValidationError` naming `name`."""


@dataclass(frozen=True)
class Text(Rule[str]):
    """A string of at most `MAX_TEXT_BYTES` of UTF-8; not blank unless `blank_ok`."""

    blank_ok: bool = False

    def check(self, name: str, value: object) -> str:
        return _text(name, value, non_blank=not self.blank_ok, max_bytes=MAX_TEXT_BYTES)


@dataclass(frozen=True)
class OneOf(Rule[str]):
    """One of a closed set of strings."""

    choices: tuple[str, ...]

    def check(self, name: str, value: object) -> str:
        return check_choice(name, value, self.choices)


@dataclass(frozen=True)
class Number(Rule[float]):
    """A finite number (not a bool) within [lo, hi], stored as a float."""

    lo: float | None = None
    hi: float | None = None

    def check(self, name: str, value: object) -> float:
        return check_number(name, value, lo=self.lo, hi=self.hi)


@dataclass(frozen=True)
class Int(Rule[int]):
    """An integer (not a bool) within lo..hi."""

    lo: int
    hi: int

    def check(self, name: str, value: object) -> int:
        return check_int(name, value, lo=self.lo, hi=self.hi)


class When(Rule[datetime]):
    """An aware datetime from 1970 on, stored in UTC (and on disk as microseconds)."""

    def check(self, name: str, value: object) -> datetime:
        return _utc(name, value)


class Texts(Rule[tuple[str, ...]]):
    """A list of at most `MAX_LIST_ITEMS` non-empty strings, stored as a tuple; None is empty."""

    def check(self, name: str, value: object) -> tuple[str, ...]:
        return check_texts(name, value)


class Cost(Rule[tuple[str, float]]):
    """An `(asset, amount)` pair (or a mapping with those keys): a non-empty asset
    and a non-negative amount, stored as a tuple."""

    def check(self, name: str, value: object) -> tuple[str, float]:
        pair = (value.get("asset"), value.get("amount")) if isinstance(value, Mapping) else value
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Iterable):
            raise ValidationError(name, "must be (asset, amount)", value)
        items = tuple(itertools.islice(pair, 3))
        if len(items) != 2:
            raise ValidationError(name, "must be (asset, amount)", value)
        asset = _text(f"{name}.asset", items[0], non_blank=True, max_bytes=MAX_TEXT_BYTES)
        return (asset, check_number(f"{name}.amount", items[1], lo=0.0))


class TextMap(Rule[dict[str, str]]):
    """A mapping of non-empty strings to strings (at most `MAX_LIST_ITEMS` entries),
    stored as a dict sorted by key; None is empty."""

    def check(self, name: str, value: object) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValidationError(name, "must be a mapping of strings to strings", value)
        if len(value) > MAX_LIST_ITEMS:
            raise ValidationError(name, f"must hold at most {MAX_LIST_ITEMS} items", value)
        entries: dict[str, str] = {}
        for key, text in value.items():
            checked_key = _text(f"{name} key", key, non_blank=True, max_bytes=MAX_TEXT_BYTES)
            if text is None:
                raise ValidationError(f"{name}[{shown(key)}]", "must be a string", text)
            entries[checked_key] = _text(f"{name}[{shown(key)}]", text, non_blank=False, max_bytes=MAX_TEXT_BYTES)
        return dict(sorted(entries.items()))


class Flag(Rule[bool]):
    """True or False (nothing else)."""

    def check(self, name: str, value: object) -> bool:
        if not isinstance(value, bool):
            raise ValidationError(name, "must be a bool", value)
        return value


# The rules the data classes use, one instance each.
TEXT = Text()
OPTIONAL_TEXT = Text(blank_ok=True)
UNIT = Number(0.0, 1.0)
NON_NEGATIVE = Number(lo=0.0)
TEXTS = Texts()
WHEN = When()

_RULE = "cortex.rule"
_REQUIRED = "cortex.required"


@overload
def rule(check: Rule[_T]) -> _T: ...
@overload
def rule(check: Rule[_T], *, default: _T) -> _T: ...
@overload
def rule(check: Rule[_T], *, default_factory: Callable[[], _T]) -> _T: ...


def rule(check: Rule[Any], *, default: object = MISSING, default_factory: Callable[[], object] | None = None) -> Any:
    """Declare a data field checked by `check` (this is its `dataclasses.field`).

    Without a default the field is required: it still defaults to None at run time,
    so that leaving it out raises a `ValidationError` naming it (like any other broken
    rule) rather than a `TypeError`, while a type checker reports it missing. A field
    whose default is None keeps None as "absent" without running `check`.
    """
    # Returns `Any`: until @dataclass replaces it, the declaration's value is a
    # `Field` standing in for a value of the field's type (the overloads say which).
    if default_factory is not None:
        return field(default_factory=default_factory, metadata={_RULE: check, _REQUIRED: False})
    if default is MISSING:
        return field(default=None, metadata={_RULE: check, _REQUIRED: True})
    return field(default=default, metadata={_RULE: check, _REQUIRED: False})


class _FieldCheck(NamedTuple):
    """One field's rule, as the validator runs it."""

    name: str
    check: Callable[[str, object], object]  # the rule's `check`
    none_is_absent: bool  # an optional field defaulting to None: None is kept unchecked


@dataclass(frozen=True, slots=True)
class _Layout:
    """What the generic code needs to know about one data class, worked out once."""

    names: tuple[str, ...]  # the data fields, in declaration (= record) order
    checks: tuple[_FieldCheck, ...]
    getter: Callable[[object], tuple[Any, ...]]  # every field value in one C call
    setters: tuple[Callable[[object, Any], None], ...]  # per field: its slot's own setter (frozen or not)
    # The fields whose record form is not their value, as (index, conversion from the
    # record form): microseconds for a datetime, a list for a tuple.
    converted: tuple[tuple[int, Callable[[Any], Any]], ...]


def _layout(cls: type) -> _Layout:
    """The layout of a dataclass whose every field is declared with `rule()`."""
    declared: tuple[Field[Any], ...] = fields(cls)
    checks: list[_FieldCheck] = []
    converted: list[tuple[int, Callable[[Any], Any]]] = []
    for i, f in enumerate(declared):
        field_rule = f.metadata.get(_RULE)
        if not isinstance(field_rule, Rule):
            raise TypeError(f"{cls.__name__}.{f.name} must be declared with cortex.model.rule()")
        checks.append(_FieldCheck(f.name, field_rule.check, not f.metadata[_REQUIRED] and f.default is None))
        if isinstance(field_rule, (When, Texts, Cost)):
            converted.append((i, from_micros if isinstance(field_rule, When) else tuple))
    names = tuple(f.name for f in declared)
    getter = operator.attrgetter(*names)
    setters = tuple(cls.__dict__[name].__set__ for name in names)
    return _Layout(names, tuple(checks), getter if len(names) > 1 else lambda value: (getter(value),), setters, tuple(converted))


_Data = TypeVar("_Data", bound="MemoryData")


@dataclass_transform(frozen_default=True, field_specifiers=(rule,))
def memory_data(cls: type[_Data]) -> type[_Data]:
    """Make `cls` a frozen, slotted dataclass whose fields are declared with `rule()`."""
    data_cls = dataclass(frozen=True, slots=True)(cls)
    data_cls._layout = _layout(data_cls)
    return data_cls


# ---------------------------------------------------------------------------
# The nine data classes


class MemoryData:
    """Base of the nine data classes. `TYPE` is the memory type it is stored as.

    Construction runs every field's rule, in declaration order, and stores the
    normalised value (a tuple for a list, a float for a number, UTC for a datetime).
    """

    TYPE: ClassVar[MemoryType]
    _layout: ClassVar[_Layout]

    def __post_init__(self) -> None:
        for name, check, none_is_absent in self._layout.checks:
            value = getattr(self, name)
            if value is None and none_is_absent:
                continue
            checked = check(name, value)
            if checked is not value:
                object.__setattr__(self, name, checked)

    def to_record(self) -> list[Any]:
        """Field values in declaration order, as msgpack-ready plain values."""
        return [v if type(v) in _PLAIN_TYPES else _encode_value(v) for v in field_values(self)]

    def to_dict(self) -> dict[str, Any]:
        """Field values as JSON-ready plain values (datetimes as ISO 8601 UTC text)."""
        return {name: json_value(value) for name, value in zip(self._layout.names, field_values(self))}

    @classmethod
    def from_record(cls, record: Sequence[Any], validate: bool = True) -> MemoryData:
        """The value of a record (a list, or a tuple from `cortex.records.unpack_head`).
        With `validate=False` (the read path: records were validated when written) the
        rules are not run again, which is 5x faster; `verify()` decodes with them."""
        layout = cls._layout
        if type(record) not in (list, tuple) or len(record) != len(layout.names):
            raise ValueError(f"{cls.__name__} record must be a list of {len(layout.names)} values")
        value = object.__new__(cls)
        if layout.converted:
            record = list(record)
            for i, convert in layout.converted:
                if record[i] is not None:
                    record[i] = convert(record[i])
        for set_field, raw in zip(layout.setters, record):
            set_field(value, raw)
        if validate:
            value.__post_init__()  # what construction runs once the fields are set
        return value


def field_names(cls: type[MemoryData]) -> tuple[str, ...]:
    """The data fields of a data class, in declaration (= record) order."""
    return cls._layout.names


def field_values(data: MemoryData) -> tuple[Any, ...]:
    """The data fields of `data`, in declaration (= record) order."""
    return data._layout.getter(data)


# Values a record holds as they are (everything else goes through `_encode_value`).
_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


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


@memory_data
class Identity(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.IDENTITY
    name: str = rule(TEXT)
    did: str | None = rule(OPTIONAL_TEXT, default=None)
    wallets: tuple[str, ...] = rule(TEXTS, default=())
    roles: tuple[str, ...] = rule(TEXTS, default=())
    public_keys: tuple[str, ...] = rule(TEXTS, default=())


@memory_data
class Fact(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.FACT
    statement: str = rule(TEXT)
    subject: str = rule(TEXT)
    predicate: str = rule(TEXT)
    object: str | None = rule(OPTIONAL_TEXT, default=None)
    source: str | None = rule(OPTIONAL_TEXT, default=None)
    as_of: datetime | None = rule(WHEN, default=None)


@memory_data
class Preference(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.PREFERENCE
    topic: str = rule(TEXT)
    polarity: str = rule(OneOf(POLARITIES))
    strength: float = rule(UNIT, default=0.5)
    value: str | None = rule(OPTIONAL_TEXT, default=None)
    rationale: str | None = rule(OPTIONAL_TEXT, default=None)


@memory_data
class Belief(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.BELIEF
    statement: str = rule(TEXT)
    stance: str = rule(OneOf(STANCES))
    subject: str | None = rule(OPTIONAL_TEXT, default=None)
    evidence_for: tuple[str, ...] = rule(TEXTS, default=())
    evidence_against: tuple[str, ...] = rule(TEXTS, default=())


@memory_data
class Event(MemoryData):
    """The outcome of an action. `cost` is `(asset, amount)`; `duration` is in seconds."""

    TYPE: ClassVar[MemoryType] = MemoryType.EVENT
    kind: str = rule(OneOf(EVENT_KINDS))
    outcome: str = rule(OneOf(OUTCOMES))
    intent_ref: str | None = rule(OPTIONAL_TEXT, default=None)
    counterparty: str | None = rule(OPTIONAL_TEXT, default=None)
    cost: tuple[str, float] | None = rule(Cost(), default=None)
    duration: float | None = rule(NON_NEGATIVE, default=None)
    artifacts: tuple[str, ...] = rule(TEXTS, default=())
    summary: str | None = rule(OPTIONAL_TEXT, default=None)


@memory_data
class Goal(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.GOAL
    statement: str = rule(TEXT)
    status: str = rule(OneOf(GOAL_STATUSES))
    horizon_end: datetime | None = rule(WHEN, default=None)
    success_criteria: tuple[str, ...] = rule(TEXTS, default=())
    subgoals: tuple[str, ...] = rule(TEXTS, default=())


@memory_data
class Constraint(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.CONSTRAINT
    statement: str = rule(TEXT)
    strength: str = rule(OneOf(STRENGTHS))
    polarity: str = rule(OneOf(POLARITIES))
    source: str = rule(OneOf(CONSTRAINT_SOURCES))
    trigger: str | None = rule(OPTIONAL_TEXT, default=None)


@memory_data
class Capability(MemoryData):
    """What a subject can do. `parameters` maps names to strings."""

    TYPE: ClassVar[MemoryType] = MemoryType.CAPABILITY
    subject: str = rule(TEXT)
    capability: str = rule(TEXT)
    parameters: dict[str, str] = rule(TextMap(), default_factory=dict)
    verified: bool = rule(Flag(), default=False)
    last_observed: datetime | None = rule(WHEN, default=None)


@memory_data
class Pattern(MemoryData):
    TYPE: ClassVar[MemoryType] = MemoryType.PATTERN
    statement: str = rule(TEXT)
    derived_from: tuple[str, ...] = rule(TEXTS, default=())
    strength: float = rule(UNIT, default=0.5)
    coverage: int = rule(Int(0, 2**53), default=0)


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
