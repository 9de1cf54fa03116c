"""HMX-1.0 events (HMX-E, seed 001) ingested as memories.

    uris = hmx_events.ingest(store, "events.jsonl")       # or an iterable of dicts

Each event becomes one memory. The result has one URI per event, in input order
(for an event already ingested, the URI of the memory it became).

Envelope (every field of seed 001's table, checked in this order; `metadata` is
optional, as its description says): `hmx_version` "HMX-<major>.<minor>" with
major 1 (another major raises `UnsupportedHMXVersion`); `event_id`, `agent_id`,
`tenant_id`, `session_id` non-empty strings of at most 200 UTF-8 bytes;
`event_type` one of the 13 types (under HMX-1.1 and later, whose minor versions may
add types, an unknown type is kept as an observation Event); `timestamp` ISO 8601
with a timezone, not before 1970; `sequence` an integer >= 0; `content` an object;
`metadata` an object. A broken rule raises `MalformedEvent` naming the line (the
line number in a file, the 1-based position in an iterable) and the field, e.g.
`line 3: content.tool_name: is required`.

The 13 types (content fields in brackets are optional; `name` fields are non-empty
strings of at most 256 bytes, text fields any JSON value, kept as text cut to 2 KiB):

| event_type | memory | data | frame |
|---|---|---|---|
| message | Event interaction, success | counterparty=role, summary=content | - |
| tool_call | Event dispatch, success | counterparty=tool_name, summary=[input] | delegate tool:<tool_name> |
| tool_result | Event intent_completed, success; intent_failed, failure when [error] is set, [success] is false or [is_error] is true | counterparty=tool_name, summary=[output] or [error] | delegate tool:<tool_name> |
| file_edit | Event intent_completed, success | artifacts=[path], summary=[operation] path: [description] | modify asset:<path> |
| test_run | Event intent_completed, success when failed == 0; intent_failed, partial when passed > 0, else failure | artifacts=[[suite]], summary=passed, failed, [skipped] | analyze asset:<suite> (with a suite) |
| command_exec | Event intent_completed, success when [exit_code] is 0 or absent; intent_failed, failure | counterparty=the first word of command (a string or an argv list), summary=command (exit code) | delegate tool:<first word> |
| browser_action | Event interaction, success; failure when [error] is set | counterparty=[url]'s host, summary=action [url] | find address:<host> (with a url) |
| api_result | Event intent_completed, success; intent_failed, failure when [status_code] >= 400 or [error] is set | counterparty=endpoint, summary=endpoint -> status: [body] | acquire service:<endpoint> |
| decision | Belief, stance believe | statement=decision, subject=[domain], evidence_for=[[rationale]], confidence=[confidence] | - |
| error | Event intent_failed, failure | counterparty=[error_type], summary=message | delegate tool:<[tool_name]> (with a tool_name) |
| observation | Event observation, success | summary=observation | - |
| state_change | Fact | subject=entity, predicate=[field] or "state", object=to, statement=entity.field: [from] -> to, as_of=timestamp | monitor knowledge:<entity> |
| feedback | Event interaction, success / failure / partial for sentiment positive / negative / neutral | counterparty=[source], intent_ref=[target_event_id], summary=sentiment: [comment] | - |

Frames: the seed's events name no verb, only an agent and, per type, the object
acted on (a tool, a file, a URL, an endpoint, an entity); that object is the frame,
under the verb that says what the agent did with it (so `context(verb="delegate",
objects={"tool": "deploy"})` brings back the recent results of the deploy tool).
The agent itself is not a frame: every event of a store's agent would share it.

Provenance (`cortex.provenance`): every memory gets `occurred_at` = the event's
`timestamp`, `session` = `session_id`, `sequence`, and `origin` = (event_id, the
`message_id` of the content or the metadata when it is a string, tenant_id,
agent_id). Content fields the table above does not name are kept, not dropped: in
the memory's `attributes` as `{"content": {field: value}}` (with the event's
`metadata`, when not empty, as `"metadata"`), and, for an Event, at the end of its
summary as canonical JSON, so `{"endpoint": "billing-api", "status": 503}` reads
`... api_result: billing-api {"status":503}`. (Attributes too large or not
representable, beyond 16 KiB as JSON or numbers past 2**53, are kept as text cut
to 2 KiB under `"text"`.)

Every memory gets the tags `hmx:<event_id>`, `hmx.type:<event_type>` and
`hmx.session:<session_id>` (a value that would make the tag longer than 64
characters is replaced by its SHA-256: `hmx~<hex>`), the source `hmx:<agent_id>`,
and an Event's summary starts with the event's timestamp and type. Idempotence:
an event whose `hmx:` tag is already in the store (tombstoned memories included)
is skipped, and so is an event_id seen earlier in the same input (the first wins);
ingesting the same events again writes nothing and leaves `root()` unchanged.
Checking the store costs a `find()` per event, so a session the store has never
seen (no memory tagged with it when the ingest first meets it) is checked once:
its events can only repeat events of this same ingest, which are remembered. (So
an event_id already in the store arriving under a session the store has never
seen, against the seed's "unique event identifier", is ingested again.)

All or nothing, in bounded memory: a first streaming pass validates every event
by building the memory it becomes, and appends that memory (pickled) to a
temporary spool file; the first bad event raises before anything is written. A
second pass reads the spool back in batches of `BATCH_SIZE` and writes each with
one atomic `write_many`, so memory holds one batch, never the input (what grows
with it is small: the returned URIs and the tags of the events written).
Validation makes a refusal all or nothing; the writes are atomic per batch: if the
store fails in the middle (a full disk, a killed process), the batches before stay
written, and running the same ingest again completes it, since written events are
skipped.

Length: over the ~600 lines a module keeps to, on purpose: one mapping per event type
(the table above), its validation and the ingest read together; splitting them would
separate a row of the table from the code that applies it.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import IO, Any
from urllib.parse import urlsplit

from ..errors import MalformedEvent, UnsupportedHMXVersion, ValidationError
from ..model import Belief, Event, Fact, Frame
from ..provenance import MAX_ORIGIN_BYTES, MAX_SEQUENCE, Origin, canonical_attributes
from ..writes import Write
from . import InteropStore
from .limits import MAX_EVENT_LINE_BYTES
from .canonical import canonical_json, cut_utf8, sha256_hex
from .hmx_order import SessionOrder
from .schema_check import check_event

__all__ = ["ingest", "EVENT_TYPES", "MalformedEvent", "UnsupportedHMXVersion", "BATCH_SIZE", "event_tag"]

EVENT_TYPES = (
    "message", "tool_call", "tool_result", "file_edit", "test_run", "command_exec", "browser_action",
    "api_result", "decision", "error", "observation", "state_change", "feedback",
)
BATCH_SIZE = 1000
MAX_ID_BYTES = 200
MAX_NAME_BYTES = 256
MAX_TEXT_BYTES = 2048
_MAX_TAG_CHARS = 64
_SUPPORTED_MAJOR = 1
_VERSION = re.compile(r"HMX-(\d+)\.(\d+)")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SENTIMENTS = {"positive": "success", "negative": "failure", "neutral": "partial"}


def event_tag(event_id: str) -> str:
    """The tag that marks the memory an event became (`hmx:<event_id>`)."""
    return _tag("hmx:", event_id)


def _tag(prefix: str, value: str) -> str:
    tag = prefix + value
    if len(tag) <= _MAX_TAG_CHARS:
        return tag
    short = prefix.rstrip(":") + "~"
    return short + sha256_hex(value.encode("utf-8"))[: _MAX_TAG_CHARS - len(short)]


def ingest(store: InteropStore, events: Iterable[Mapping[str, Any]] | str | os.PathLike[str],
           *, batch_size: int = BATCH_SIZE) -> list[str]:
    """Ingest HMX events (an iterable of dicts, or the path of a JSON Lines file) as
    memories; return one URI per event (see the module docstring)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError("batch_size", "must be a positive integer", batch_size)
    order = SessionOrder(store)
    with tempfile.TemporaryFile() as spool:
        for line, event in _source(events):
            converted = _convert(line, event)  # each check raises before anything is written
            check_event(line, event)
            order.check(line, event["session_id"], event["sequence"], event["event_id"])
            pickle.dump(converted, spool)
        spool.seek(0)
        uris: list[str] = []
        seen = _Seen(store)
        for batch in _batches(spool, batch_size):
            uris += _write_batch(store, batch, seen)
    return uris


# ---------------------------------------------------------------------------
# Reading


def _source(events: object) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(line, event) pairs from a path or an iterable, each event a JSON object."""
    if isinstance(events, (str, os.PathLike)):
        yield from _read_file(os.fspath(events))
        return
    if isinstance(events, (bytes, Mapping)) or not isinstance(events, Iterable):
        raise ValidationError("events", "must be an iterable of HMX event objects or the path of a JSON Lines file", events)
    for line, event in enumerate(events, start=1):
        if not isinstance(event, Mapping):
            raise MalformedEvent(line, "event", f"must be an object, not {type(event).__name__}")
        try:
            canonical_json(event)
        except (TypeError, ValueError) as exc:
            raise MalformedEvent(line, "event", f"must hold JSON values only ({exc})") from None
        yield line, event


def _read_file(path: str | bytes) -> Iterator[tuple[int, Mapping[str, Any]]]:
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise ValidationError("events", f"cannot read {path!r}: {exc.strerror}", path) from None
    with handle:
        line = 0
        while raw := handle.readline(MAX_EVENT_LINE_BYTES + 1):  # bounded: a huge line is not read whole
            line += 1
            if len(raw) > MAX_EVENT_LINE_BYTES:
                raise MalformedEvent(line, "event", f"is longer than {MAX_EVENT_LINE_BYTES} bytes, the most an event line may be")
            if not raw.strip():
                continue
            try:
                event = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
            except UnicodeDecodeError:
                raise MalformedEvent(line, "event", "is not valid UTF-8") from None
            except RecursionError:
                raise MalformedEvent(line, "event", "is nested too deeply to be JSON an event holds") from None
            except json.JSONDecodeError as exc:
                raise MalformedEvent(line, "event", f"is not valid JSON ({exc.msg} at column {exc.colno})") from None
            except ValueError as exc:
                raise MalformedEvent(line, "event", str(exc)) from None
            if not isinstance(event, dict):
                raise MalformedEvent(line, "event", f"must be a JSON object, not {type(event).__name__}")
            yield line, event


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _batches(spool: IO[bytes], size: int) -> Iterator[list[_Converted]]:
    """The spooled memories, `size` at a time (the spool is this module's own file)."""
    batch: list[_Converted] = []
    while True:
        try:
            item = pickle.load(spool)
        except EOFError:
            break
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Seen:
    """What one ingest knows: the sessions the store had no memory of when the
    ingest met them, and the tags of the events it wrote."""

    def __init__(self, store: InteropStore) -> None:
        self._store = store
        self._new_sessions: dict[str, bool] = {}
        self.written: set[str] = set()

    def new_session(self, session_tag: str) -> bool:
        new = self._new_sessions.get(session_tag)
        if new is None:
            new = self._new_sessions[session_tag] = not self._store.find(tags=[session_tag], limit=1, include_tombstoned=True)
        return new


def _write_batch(store: InteropStore, batch: list[_Converted], seen: _Seen) -> list[str]:
    """Write the batch's new events in one `write_many`; one URI per event."""
    slots: list[str | int] = []  # per event: the URI it already has, or its index in `writes`
    writes: list[Write] = []
    pending: dict[str, int] = {}
    for item in batch:
        if item.tag in pending:
            slots.append(pending[item.tag])
            continue
        if not seen.new_session(item.session_tag) or item.tag in seen.written:
            found = store.find(tags=[item.tag], limit=1, include_tombstoned=True)
            if found:
                slots.append(found[0].uri)
                continue
        pending[item.tag] = len(writes)
        slots.append(len(writes))
        writes.append(item.write)
    written = store.write_many(writes) if writes else []
    seen.written.update(pending)
    return [slot if isinstance(slot, str) else written[slot] for slot in slots]


# ---------------------------------------------------------------------------
# Validation and conversion


@dataclass(frozen=True, slots=True)
class _Converted:
    """An event as the memory it becomes, with its event and session tags."""

    tag: str
    session_tag: str
    write: Write


class _Fields:
    """Typed reads of one object of an event, each refusing with line and field.
    `name`, `text` and `integer` require the key; the `opt_` reads allow it to be
    absent or null."""

    def __init__(self, line: int, obj: Mapping[str, Any], prefix: str = "") -> None:
        self.line = line
        self.obj = obj
        self.prefix = prefix

    def fail(self, key: str, rule: str, value: object = None) -> MalformedEvent:
        return MalformedEvent(self.line, self.prefix + key, rule, value)

    def _present(self, key: str) -> object:
        value = self.obj.get(key)
        if value is None:
            raise self.fail(key, "is required")
        return value

    def name(self, key: str, max_bytes: int = MAX_NAME_BYTES) -> str:
        """A non-empty string of at most `max_bytes` of UTF-8."""
        value = self._present(key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "must be a non-empty string", value)
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError:
            raise self.fail(key, "must be valid Unicode (no lone surrogates)", value) from None
        if size > max_bytes:
            raise self.fail(key, f"must be at most {max_bytes} bytes of UTF-8 (got {size})", value)
        return value

    def opt_name(self, key: str, max_bytes: int = MAX_NAME_BYTES) -> str | None:
        return None if self.obj.get(key) is None else self.name(key, max_bytes)

    def text(self, key: str) -> str:
        """Any JSON value but an empty string, as text (see `_as_text`)."""
        value = self._present(key)
        if isinstance(value, str) and not value.strip():
            raise self.fail(key, "must not be empty", value)
        return _as_text(value)

    def opt_text(self, key: str) -> str | None:
        value = self.obj.get(key)
        return None if value is None else _as_text(value)

    def integer(self, key: str, lo: int | None = None) -> int:
        value = self._present(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer, not {type(value).__name__}", value)
        if lo is not None and value < lo:
            raise self.fail(key, f"must be at least {lo}", value)
        return value

    def opt_integer(self, key: str, lo: int | None = None) -> int | None:
        return None if self.obj.get(key) is None else self.integer(key, lo)

    def opt_number(self, key: str, lo: float, hi: float) -> float | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            raise self.fail(key, f"must be a number within [{lo}, {hi}]", value)
        return float(value)

    def opt_flag(self, key: str) -> bool | None:
        value = self.obj.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, "must be true or false", value)
        return value

    def choice(self, key: str, options: tuple[str, ...]) -> str:
        value = self._present(key)
        if not isinstance(value, str) or value not in options:
            raise self.fail(key, f"must be one of {', '.join(options)}", value)
        return value

    def mapping(self, key: str) -> Mapping[str, Any]:
        value = self._present(key)
        if not isinstance(value, Mapping):
            raise self.fail(key, f"must be an object, not {type(value).__name__}", value)
        return value

    def opt_mapping(self, key: str) -> Mapping[str, Any] | None:
        return None if self.obj.get(key) is None else self.mapping(key)


def _as_text(value: object) -> str:
    text = value if isinstance(value, str) else canonical_json(value).decode("utf-8")
    return cut_utf8(text.encode("utf-8", errors="replace").decode("utf-8"), MAX_TEXT_BYTES)


@dataclass(frozen=True, slots=True)
class _Envelope:
    event_id: str
    event_type: str
    agent_id: str
    tenant_id: str
    session_id: str
    timestamp: str
    at: datetime
    sequence: int
    content: _Fields
    metadata: Mapping[str, Any] | None
    unknown: dict[str, Any]  # the content fields the event's type does not name


# The content fields each type reads (the table in the module docstring); the others
# are kept in the memory's attributes. (A type a later minor version adds keeps its
# whole content in the summary and the attributes.)
_KNOWN_CONTENT: dict[str, frozenset[str]] = {
    "message": frozenset({"role", "content", "message_id"}),
    "tool_call": frozenset({"tool_name", "input"}),
    "tool_result": frozenset({"tool_name", "error", "success", "is_error", "output"}),
    "file_edit": frozenset({"path", "operation", "description"}),
    "test_run": frozenset({"suite", "passed", "failed", "skipped"}),
    "command_exec": frozenset({"command", "exit_code"}),
    "browser_action": frozenset({"action", "url", "error"}),
    "api_result": frozenset({"endpoint", "status_code", "error", "body"}),
    "decision": frozenset({"decision", "rationale", "domain", "confidence"}),
    "error": frozenset({"message", "error_type", "tool_name"}),
    "observation": frozenset({"observation"}),
    "state_change": frozenset({"entity", "field", "to", "from"}),
    "feedback": frozenset({"sentiment", "comment", "source", "target_event_id"}),
}


def _envelope(line: int, event: Mapping[str, Any]) -> _Envelope:
    top = _Fields(line, event)
    version = event.get("hmx_version")
    if version is None:
        raise top.fail("hmx_version", "is required")
    match = _VERSION.fullmatch(version) if isinstance(version, str) else None
    if match is None:
        raise top.fail("hmx_version", 'must look like "HMX-<major>.<minor>", e.g. "HMX-1.0"', version)
    major, minor = int(match.group(1)), int(match.group(2))
    if major != _SUPPORTED_MAJOR:
        raise UnsupportedHMXVersion(line, "hmx_version", f"major version {major} is not supported: this reader takes HMX-1.x", version)
    event_id = top.name("event_id", MAX_ID_BYTES)
    event_type = top.name("event_type", MAX_ID_BYTES)
    if event_type not in EVENT_TYPES and minor == 0:
        raise top.fail("event_type", f"must be one of the HMX-1.0 types: {', '.join(EVENT_TYPES)}", event_type)
    agent_id = top.name("agent_id", MAX_ID_BYTES)
    tenant_id = top.name("tenant_id", MAX_ID_BYTES)
    session_id = top.name("session_id", MAX_ID_BYTES)
    timestamp = top.name("timestamp", 64)
    at = _parse_time(top, timestamp)
    sequence = top.integer("sequence", lo=0)
    content = top.mapping("content")
    metadata = top.opt_mapping("metadata")
    known = _KNOWN_CONTENT.get(event_type)
    unknown = {k: v for k, v in content.items() if known is not None and k not in known}
    return _Envelope(event_id, event_type, agent_id, tenant_id, session_id, timestamp, at, sequence,
                     _Fields(line, content, "content."), metadata, unknown)


def _attributes(env: _Envelope) -> dict[str, Any] | None:
    """What the memory keeps of the event beyond its data: unknown content fields and metadata."""
    attrs: dict[str, Any] = {}
    if env.unknown:
        attrs["content"] = env.unknown
    elif env.event_type not in _KNOWN_CONTENT and env.content.obj:
        attrs["content"] = dict(env.content.obj)
    if env.metadata:
        attrs["metadata"] = dict(env.metadata)
    if not attrs:
        return None
    try:
        canonical_attributes(attrs)
    except ValidationError:
        return {"text": _as_text(attrs)}
    return attrs


def _message_id(env: _Envelope) -> str | None:
    for source in (env.content.obj, env.metadata or {}):
        value = source.get("message_id")
        if isinstance(value, str) and value.strip() and len(value.encode("utf-8", errors="replace")) <= MAX_ORIGIN_BYTES:
            return value
    return None


def _parse_time(top: _Fields, text: str) -> datetime:
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise top.fail("timestamp", "must be ISO 8601 text, e.g. 2026-03-15T00:12:34.567Z", text) from None
    if at.tzinfo is None or at.utcoffset() is None:
        raise top.fail("timestamp", "must carry a timezone (Z or an offset)", text)
    try:
        at = at.astimezone(timezone.utc)
    except OverflowError:
        raise top.fail("timestamp", "is out of the representable range", text) from None
    if at < _EPOCH:
        raise top.fail("timestamp", "must not be before 1970-01-01", text)
    return at


# What one event becomes: its data, its frames and its confidence.
_Built = tuple[Event | Belief | Fact, list[Frame], float]


def _convert(line: int, event: Mapping[str, Any]) -> _Converted:
    """Validate one event and build the `cortex.Write` it becomes."""
    env = _envelope(line, event)
    convert = _CONVERTERS.get(env.event_type, _unknown)
    tags = (event_tag(env.event_id), _tag("hmx.type:", env.event_type), _tag("hmx.session:", env.session_id))
    try:
        data, frames, confidence = convert(env)
        origin = Origin(event_id=env.event_id, message_id=_message_id(env), tenant=env.tenant_id, agent=env.agent_id)
        write = Write(data, frames=tuple(frames), tags=tags, confidence=confidence, source=f"hmx:{env.agent_id}",
                      occurred_at=env.at, session=env.session_id,
                      sequence=env.sequence if env.sequence <= MAX_SEQUENCE else None,
                      origin=origin, attributes=_attributes(env))
    except MalformedEvent:
        raise
    except ValidationError as exc:  # a rule of the memory the reads did not check: name it anyway
        raise MalformedEvent(line, "content", f"{exc.field}: {exc.rule}") from None
    return _Converted(tags[0], tags[2], write)


def _event(env: _Envelope, kind: str, outcome: str, detail: str | None, *, counterparty: str | None = None,
           artifacts: tuple[str, ...] = (), intent_ref: str | None = None) -> Event:
    """The Event an event becomes; its summary starts with the timestamp and type and
    ends with the content fields the type does not name (canonical JSON)."""
    summary = f"{env.timestamp} {env.event_type}" + (f": {detail}" if detail else "")
    if env.unknown:
        summary += " " + _as_text(env.unknown)
    return Event(kind=kind, outcome=outcome, counterparty=counterparty, artifacts=artifacts,
                        intent_ref=intent_ref, summary=cut_utf8(summary, MAX_TEXT_BYTES))


def _frame(verb: str, kind: str, ref: str | None) -> list[Frame]:
    return [] if ref is None else [Frame(verb, kind, ref)]


def _message(env: _Envelope) -> _Built:
    c = env.content
    role = c.name("role")
    return _event(env, "interaction", "success", c.text("content"), counterparty=role), [], 1.0


def _tool_call(env: _Envelope) -> _Built:
    c = env.content
    tool = c.name("tool_name")
    return _event(env, "dispatch", "success", c.opt_text("input"), counterparty=tool), _frame("delegate", "tool", tool), 1.0


def _tool_result(env: _Envelope) -> _Built:
    c = env.content
    tool = c.name("tool_name")
    error = c.opt_text("error")
    failed = error is not None or c.opt_flag("success") is False or c.opt_flag("is_error") is True
    kind, outcome = ("intent_failed", "failure") if failed else ("intent_completed", "success")
    detail = c.opt_text("output") or error
    return _event(env, kind, outcome, detail, counterparty=tool), _frame("delegate", "tool", tool), 1.0


def _file_edit(env: _Envelope) -> _Built:
    c = env.content
    path = c.name("path")
    operation = c.opt_name("operation")
    description = c.opt_text("description")
    detail = f"{operation + ' ' if operation else ''}{path}" + (f": {description}" if description else "")
    return _event(env, "intent_completed", "success", detail, artifacts=(path,)), _frame("modify", "asset", path), 1.0


def _test_run(env: _Envelope) -> _Built:
    c = env.content
    suite = c.opt_name("suite")
    passed = c.integer("passed", lo=0)
    failed = c.integer("failed", lo=0)
    skipped = c.opt_integer("skipped", lo=0)
    if not failed:
        kind, outcome = "intent_completed", "success"
    else:
        kind, outcome = "intent_failed", "partial" if passed else "failure"
    detail = f"{suite + ': ' if suite else ''}passed={passed}, failed={failed}" + (f", skipped={skipped}" if skipped is not None else "")
    artifacts = (suite,) if suite else ()
    return _event(env, kind, outcome, detail, artifacts=artifacts), _frame("analyze", "asset", suite), 1.0


def _command_exec(env: _Envelope) -> _Built:
    """`command` is a string or a list of strings (argv); the program is its first word."""
    c = env.content
    raw = c.obj.get("command")
    if isinstance(raw, list) and raw and all(isinstance(arg, str) for arg in raw):
        command = " ".join(raw)
    else:
        command = c.name("command", MAX_TEXT_BYTES)
    if not command.split():
        raise c.fail("command", "must hold a program name", raw)
    program = cut_utf8(command.split()[0], MAX_NAME_BYTES)
    exit_code = c.opt_integer("exit_code")
    kind, outcome = ("intent_completed", "success") if not exit_code else ("intent_failed", "failure")
    detail = command + (f" (exit {exit_code})" if exit_code is not None else "")
    return _event(env, kind, outcome, detail, counterparty=program), _frame("delegate", "tool", program), 1.0


def _browser_action(env: _Envelope) -> _Built:
    c = env.content
    action = c.name("action")
    url = c.opt_text("url")
    host = _host(url)
    outcome = "failure" if c.opt_text("error") is not None else "success"
    detail = action + (f" {url}" if url else "")
    return _event(env, "interaction", outcome, detail, counterparty=host), _frame("find", "address", host), 1.0


def _host(url: str | None) -> str | None:
    if not url:
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return cut_utf8(host, MAX_NAME_BYTES) if host else None


def _api_result(env: _Envelope) -> _Built:
    c = env.content
    endpoint = c.name("endpoint")
    status = c.opt_integer("status_code")
    failed = (status is not None and status >= 400) or c.opt_text("error") is not None
    kind, outcome = ("intent_failed", "failure") if failed else ("intent_completed", "success")
    body = c.opt_text("body")
    detail = endpoint + (f" -> {status}" if status is not None else "") + (f": {body}" if body else "")
    return _event(env, kind, outcome, detail, counterparty=endpoint), _frame("acquire", "service", endpoint), 1.0


def _decision(env: _Envelope) -> _Built:
    c = env.content
    decision = c.text("decision")
    rationale = c.opt_text("rationale")
    domain = c.opt_name("domain")
    confidence = c.opt_number("confidence", 0.0, 1.0)
    data = Belief(statement=decision, stance="believe", subject=domain, evidence_for=(rationale,) if rationale else ())
    return data, [], 1.0 if confidence is None else confidence


def _error(env: _Envelope) -> _Built:
    c = env.content
    message = c.text("message")
    error_type = c.opt_name("error_type")
    tool = c.opt_name("tool_name")
    return _event(env, "intent_failed", "failure", message, counterparty=error_type), _frame("delegate", "tool", tool), 1.0


def _observation(env: _Envelope) -> _Built:
    return _event(env, "observation", "success", env.content.text("observation")), [], 1.0


def _state_change(env: _Envelope) -> _Built:
    c = env.content
    entity = c.name("entity")
    field = c.opt_name("field")
    new = c.text("to")
    old = c.opt_text("from")
    subject = f"{entity}.{field}" if field else entity
    statement = cut_utf8(f"{subject}: {old if old is not None else '?'} -> {new}", MAX_TEXT_BYTES)
    data = Fact(statement=statement, subject=entity, predicate=field or "state", object=new, as_of=env.at)
    return data, _frame("monitor", "knowledge", entity), 1.0


def _feedback(env: _Envelope) -> _Built:
    c = env.content
    sentiment = c.choice("sentiment", tuple(_SENTIMENTS))
    comment = c.opt_text("comment")
    source = c.opt_name("source")
    target = c.opt_name("target_event_id", MAX_ID_BYTES)
    detail = sentiment + (f": {comment}" if comment else "")
    return _event(env, "interaction", _SENTIMENTS[sentiment], detail, counterparty=source, intent_ref=target), [], 1.0


def _unknown(env: _Envelope) -> _Built:
    """A type added by a later HMX-1.x minor version: kept as an observation."""
    return _event(env, "observation", "success", _as_text(dict(env.content.obj))), [], 1.0


_CONVERTERS: dict[str, Callable[[_Envelope], _Built]] = {
    "message": _message,
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "file_edit": _file_edit,
    "test_run": _test_run,
    "command_exec": _command_exec,
    "browser_action": _browser_action,
    "api_result": _api_result,
    "decision": _decision,
    "error": _error,
    "observation": _observation,
    "state_change": _state_change,
    "feedback": _feedback,
}
assert tuple(_CONVERTERS) == EVENT_TYPES
