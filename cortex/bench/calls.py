"""One timed `context()` call and the percentiles the harness's figures report.

`timed_call(c, query)` times a call and takes, around it, the difference of the
engine's count of index entries read from storage (`Engine.index_entries_read`, a
cumulative count on the handle): the scan counter of the report. The harness's
query mix, the hot-frame figure (`hotframe`) and the reader beside a writer
(`beside`) all time their calls through it, and summarise them with `latency()`
and `spread()`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import cortex


@dataclass(frozen=True)
class Call:
    """What one `context()` call cost and gave: wall time in ms, index entries read
    from storage, candidates scored and tokens delivered."""

    ms: float
    entries_read: int
    candidates: int
    tokens: int


def timed_call(c: cortex.Cortex, query: dict[str, Any]) -> Call:
    """`c.context(**query)`, timed, with the index entries it read."""
    engine = c._engine
    before = engine.index_entries_read
    started = time.perf_counter()
    bundle = c.context(**query)
    ms = (time.perf_counter() - started) * 1000
    return Call(ms, engine.index_entries_read - before, bundle.candidates, bundle.total_tokens)


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (numpy's linear interpolation)."""
    return float(np.percentile(np.array(values, dtype=np.float64), q))


def latency(ms: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 / max of a non-empty list of milliseconds."""
    return {"p50": pct(ms, 50), "p95": pct(ms, 95), "p99": pct(ms, 99), "max": float(max(ms))}


def spread(counts: Sequence[int]) -> dict[str, float]:
    """p50 / p99 / max of a non-empty list of counts."""
    return {"p50": pct(counts, 50), "p99": pct(counts, 99), "max": max(counts)}
