"""Traces as `learn()` reads them: the memories of each session, in trace order.

A trace memory is a memory whose provenance names a session (`cortex.provenance`;
HMX ingest gives every event one). `learn()` reads each once, when it is new (its
id is past the watermark), and files it in its session's record:

| key | holds |
|---|---|
| `meta/learn/state` | `[format 1, watermark id16, events filed, thresholds of the last learn]` |
| `meta/learn/s/<xxh3_128(session)16>` | `[session, [item, ...]]`, items in trace order |

An item is `[sequence, id16, code, label, outcome, detail]`, ordered by (sequence, id)
like `find(session=..., order_by="sequence")`:

* code `STEP`: an Event of kind dispatch, intent_completed, intent_failed or payment
  (an action or its result). `label` names what was acted on: the first frame as
  `"verb kind:ref"` (`"delegate tool:deploy"`), else `"<kind> <counterparty>"`, else the
  kind. `outcome` is the Event's; `detail` is `"call"` for a dispatch and, for a
  failure, the counterparty (an error's type), else "".
* code `DECISION`: a Belief (HMX `decision` events become Beliefs): `label` the
  statement, `detail` its subject (the domain) or "".
* code `CONTEXT`: any other trace memory with frames (a Fact from a state change, an
  observation): `label` its first frame, `outcome` "", `detail` "".

Trace memories without frames that are not steps or decisions (messages, feedback)
add nothing and are not filed. The records depend on the events alone, never on the
thresholds, so learning with other parameters reads nothing again. They are derived
state: `learn(full=True)` recreates them from the memories (after events were
edited or tombstoned: an incremental learn reads each memory once).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import xxhash

from ..engine import Engine
from ..errors import CorruptRecord
from ..ids import decode_id
from ..memory import Memory
from ..model import Belief, Event, Frame, MemoryType
from ..records import H_PROV, H_TOMBSTONE, H_TYPE, HEAD_PREFIX, META_PREFIX, pack, unpack, unpack_head

STATE_KEY = META_PREFIX + b"learn/state"
SESSION_PREFIX = META_PREFIX + b"learn/s/"
STATE_FORMAT = 1

STEP, DECISION, CONTEXT = 0, 1, 2
STEP_KINDS = frozenset({"dispatch", "intent_completed", "intent_failed", "payment"})
# Items buffered before their sessions' records are read, merged and written back:
# what bounds learn()'s memory while it reads new events.
FLUSH_ITEMS = 4096

Item = tuple[int, bytes, int, str, str, str]


@dataclass(frozen=True, slots=True)
class State:
    watermark: bytes  # the id of the last memory read (b"" before the first learn)
    events: int  # trace memories filed so far
    params: dict[str, Any]  # the thresholds of the last learn (`LearnParams.to_dict()`)

    def encode(self) -> bytes:
        return pack([STATE_FORMAT, self.watermark, self.events, self.params])

    @staticmethod
    def load(e: Engine) -> State | None:
        raw = e.storage.get(STATE_KEY)
        if raw is None:
            return None
        rec = unpack(STATE_KEY, raw)
        if not (isinstance(rec, list) and len(rec) == 4 and rec[0] == STATE_FORMAT and isinstance(rec[1], bytes)
                and isinstance(rec[2], int) and isinstance(rec[3], dict)):
            raise CorruptRecord(STATE_KEY, "bad learn state record")
        return State(rec[1], rec[2], rec[3])


def frame_label(f: Frame) -> str:
    return f"{f.verb.name.lower()} {f.kind.name.lower()}:{f.ref}"


def item_of(m: Memory) -> Item | None:
    """The item a trace memory files (see the module docstring), or None."""
    data = m.data
    sequence = m.sequence or 0
    raw_id = _raw_id(m)
    if isinstance(data, Event) and data.kind in STEP_KINDS:
        if m.frames:
            label = frame_label(m.frames[0])
        elif data.counterparty:
            label = f"{data.kind} {data.counterparty}"
        else:
            label = data.kind
        detail = "call" if data.kind == "dispatch" else (data.counterparty or "") if data.outcome != "success" else ""
        return (sequence, raw_id, STEP, label, data.outcome, detail)
    if isinstance(data, Belief):
        return (sequence, raw_id, DECISION, data.statement, "", data.subject or "")
    if m.frames:
        return (sequence, raw_id, CONTEXT, frame_label(m.frames[0]), "", "")
    return None


def _raw_id(m: Memory) -> bytes:
    return decode_id(m.id)


def session_key(session: str) -> bytes:
    return SESSION_PREFIX + xxhash.xxh3_128_digest(session.encode("utf-8"))


def decode_session(key: bytes, raw: bytes) -> tuple[str, list[Item]]:
    """A session record; `CorruptRecord` naming the key unless well-formed. (Written
    flat: every pass of the compiler decodes every record.)"""
    rec = unpack(key, raw, use_list=False)
    try:
        session, raw_items = rec
        items: list[Item] = []
        for seq, raw_id, code, label, outcome, detail in raw_items:
            if (type(seq) is not int or type(raw_id) is not bytes or code not in _CODES or type(label) is not str
                    or type(outcome) is not str or type(detail) is not str):
                raise ValueError
            items.append((seq, raw_id, code, label, outcome, detail))
        if type(session) is not str:
            raise ValueError
    except (ValueError, TypeError):
        raise CorruptRecord(key, "bad learn session record") from None
    return session, items


_CODES = frozenset((STEP, DECISION, CONTEXT))


def encode_session(session: str, items: list[Item]) -> bytes:
    return pack([session, [list(it) for it in items]])


def new_trace_memories(e: Engine, after: bytes) -> Iterator[tuple[bytes, Memory]]:
    """Live trace memories with an id past `after`, in id order (a scan of the heads
    that decodes only those whose head carries a session)."""
    start = HEAD_PREFIX + after + b"\x00" if after else HEAD_PREFIX
    for key, raw in e.storage.scan_items(HEAD_PREFIX, start=start):
        head = unpack_head(key, raw)
        if len(head) <= H_PROV or head[H_PROV][1] is None or head[H_TOMBSTONE] is not None:
            yield key[len(HEAD_PREFIX):], _NOT_TRACE
            continue
        if head[H_TYPE] not in _TRACE_TYPES:
            yield key[len(HEAD_PREFIX):], _NOT_TRACE
            continue
        yield key[len(HEAD_PREFIX):], Memory.stored(key[len(HEAD_PREFIX):], head)


_TRACE_TYPES = frozenset(int(t) for t in MemoryType if t != MemoryType.PATTERN)
# Marks a head that is not a trace memory (the scan still reports its id: the watermark moves past it).
_NOT_TRACE: Any = None


def file_items(e: Engine, after: bytes) -> tuple[bytes, int]:
    """File the trace memories past `after` in their sessions' records; return the
    new watermark and how many were filed. Memory holds at most `FLUSH_ITEMS` items."""
    watermark = after
    filed = 0
    pending: dict[str, list[Item]] = {}
    count = 0
    for raw_id, memory in new_trace_memories(e, after):
        watermark = raw_id
        if memory is None:
            continue
        item = item_of(memory)
        if item is None:
            continue
        session = memory.session
        assert session is not None
        pending.setdefault(session, []).append(item)
        count += 1
        filed += 1
        if count >= FLUSH_ITEMS:
            _flush(e, pending)
            pending.clear()
            count = 0
    _flush(e, pending)
    return watermark, filed


def _flush(e: Engine, pending: dict[str, list[Item]]) -> None:
    if not pending:
        return
    keys = [session_key(s) for s in pending]
    puts: dict[bytes, bytes | None] = {}
    for (session, new), key, raw in zip(pending.items(), keys, e.storage.multi_get(keys)):
        items = [] if raw is None else decode_session(key, raw)[1]
        known = {it[1] for it in items}
        items.extend(it for it in new if it[1] not in known)
        items.sort(key=lambda it: (it[0], it[1]))
        puts[key] = encode_session(session, items)
    e.write(puts)


def clear(e: Engine) -> None:
    """Drop every session record and the state (the start of `learn(full=True)`)."""
    puts: dict[bytes, bytes | None] = {key: None for key, _ in e.storage.scan_items(SESSION_PREFIX)}
    puts[STATE_KEY] = None
    e.write(puts)


def sessions(e: Engine) -> Iterator[tuple[str, list[Item]]]:
    """Every session record, in key order (a stream: one record in memory at a time)."""
    for key, raw in e.storage.scan_items(SESSION_PREFIX):
        yield decode_session(key, raw)


def sessions_of(memories: Iterator[Memory]) -> dict[str, list[Item]]:
    """Session records built in memory from trace memories (what `verify()` recomputes
    against): the same records `file_items` stores."""
    out: dict[str, list[Item]] = {}
    for m in memories:
        if m.session is None or m.tombstoned or m.type == MemoryType.PATTERN:
            continue
        item = item_of(m)
        if item is not None:
            out.setdefault(m.session, []).append(item)
    for items in out.values():
        items.sort(key=lambda it: (it[0], it[1]))
    return out
