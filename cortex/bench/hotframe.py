"""The hot-frame figure: `context()` on the workload's hottest frames against cold ones, in one run.

    figure, entries_read = hotframe.measure(c, workload, rounds=20, seed=7)

The workload draws objects from a Zipf law (`Workload._zipf`), so object 0 is the
hottest: its ten frames (object 0 with each verb) hold the most index entries of
the store. The cold frames are frames of objects that hold a handful of memories:
objects of the Zipf tail (the second half of the ranks), examined in a seeded random
order, that have between 1 and `COLD_MAX_ENTRIES` frame entries over all ten verbs;
each gives its frame with the most entries (ties: the first verb). There are as many
cold frames as hot ones when the tail has them.

Each round calls `context()` once on every hot frame and once on every cold one,
pairs of one hot and one cold call back to back, in alternating order (the
machine's other load falls on both sides alike), all with a budget of
`BUDGET_TOKENS` and the form taking turns between rounds (short, medium, full).
One untimed round warms up first. The figure: hot and cold latency (p50 / p95 /
p99 / max), the candidates scored on each side, the index entries of every frame
(a direct count of its prefix in storage), and hot p99 ÷ cold p50 (hot-frames
issue: at most 5). `entries_read` gives the scan counter on each side.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import cortex
from cortex.index import frame
from cortex.model import ObjKind, Verb

from .calls import Call, latency, spread, timed_call
from .workload import Workload

HOT_OBJECT = 0  # the Zipf law's first rank
COLD_MAX_ENTRIES = 10  # a cold object holds at most this many frame entries, over all verbs
COLD_SEARCH = 5000  # tail objects examined at most to find the cold frames
BUDGET_TOKENS = 2000
FORMS = ("short", "medium", "full")
GOAL_RATIO = 5.0  # hot p99 ÷ cold p50


@dataclass(frozen=True)
class FrameCount:
    """One (verb, kind, ref) frame and the index entries under it."""

    verb: Verb
    kind: ObjKind
    ref: str
    entries: int

    def query(self, form: str) -> dict[str, Any]:
        """The `context()` keywords of a call on this frame alone."""
        return {"verb": self.verb.name.lower(), "objects": {self.kind.name.lower(): self.ref}, "form": form,
                "budget_tokens": BUDGET_TOKENS}

    def to_dict(self) -> dict[str, Any]:
        return {"verb": self.verb.name.lower(), "kind": self.kind.name.lower(), "ref": self.ref, "entries": self.entries}


def count_entries(c: cortex.Cortex, verb: Verb, kind: ObjKind, ref: str) -> int:
    """The index entries under the frame (verb, kind, ref), counted in storage."""
    engine = c._engine
    prefix = frame.prefix(int(verb), int(kind), ref)
    return engine.read(lambda: len(engine.storage.scan_values(prefix)))


def hot_frames(c: cortex.Cortex) -> list[FrameCount]:
    """The hottest object's frame with each verb, in verb order."""
    kind, ref = Workload.ref(HOT_OBJECT)
    return [FrameCount(verb, kind, ref, count_entries(c, verb, kind, ref)) for verb in Verb]


def cold_frames(c: cortex.Cortex, workload: Workload, count: int, seed: int) -> list[FrameCount]:
    """Up to `count` frames of tail objects with a handful of memories (module docstring).
    Raises `ValidationError` when the store has none (it is not the workload's)."""
    tail = range(workload.objects // 2, workload.objects)
    found: list[FrameCount] = []
    for index in random.Random(seed).sample(tail, min(COLD_SEARCH, len(tail))):
        kind, ref = Workload.ref(index)
        counts = [(count_entries(c, verb, kind, ref), -int(verb)) for verb in Verb]
        if not 1 <= sum(n for n, _ in counts) <= COLD_MAX_ENTRIES:
            continue
        entries, negative_verb = max(counts)
        found.append(FrameCount(Verb(-negative_verb), kind, ref, entries))
        if len(found) == count:
            break
    if not found:
        raise cortex.ValidationError(
            "store", f"must hold the workload's cold objects (tail objects with 1..{COLD_MAX_ENTRIES} frame entries); none found",
            c.path)
    return found


def measure(c: cortex.Cortex, workload: Workload, rounds: int, seed: int) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """The hot-frame figure on the open workload store `c` (module docstring), and the
    index entries read per call on each side (`{"hot": ..., "cold": ...}`)."""
    hot = hot_frames(c)
    cold = cold_frames(c, workload, len(hot), seed)
    pairs = [(hot_frame, cold[i % len(cold)]) for i, hot_frame in enumerate(hot)]
    for hot_frame, cold_frame in pairs:  # warm-up
        c.context(**hot_frame.query(FORMS[0]))
        c.context(**cold_frame.query(FORMS[0]))
    hot_calls: list[Call] = []
    cold_calls: list[Call] = []
    for r in range(rounds):
        form = FORMS[r % len(FORMS)]
        for i, (hot_frame, cold_frame) in enumerate(pairs):
            if (r + i) % 2 == 0:
                hot_calls.append(timed_call(c, hot_frame.query(form)))
                cold_calls.append(timed_call(c, cold_frame.query(form)))
            else:
                cold_calls.append(timed_call(c, cold_frame.query(form)))
                hot_calls.append(timed_call(c, hot_frame.query(form)))
    hot_ms = latency([call.ms for call in hot_calls])
    cold_ms = latency([call.ms for call in cold_calls])
    ratio = hot_ms["p99"] / cold_ms["p50"] if cold_ms["p50"] else 0.0
    figure = {
        "object": {"index": HOT_OBJECT, "kind": hot[0].kind.name.lower(), "ref": hot[0].ref},
        "hot_frames": [f.to_dict() for f in hot],
        "cold_frames": [f.to_dict() for f in cold],
        "hottest_entries": max(f.entries for f in hot),
        "rounds": rounds,
        "calls_per_side": len(hot_calls),
        "budget_tokens": BUDGET_TOKENS,
        "hot_ms": hot_ms,
        "cold_ms": cold_ms,
        "hot_candidates": spread([call.candidates for call in hot_calls]),
        "cold_candidates": spread([call.candidates for call in cold_calls]),
        "ratio_hot_p99_cold_p50": ratio,
    }
    entries_read = {"hot": spread([call.entries_read for call in hot_calls]),
                    "cold": spread([call.entries_read for call in cold_calls])}
    return figure, entries_read
