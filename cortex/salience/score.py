"""The salience record of a memory and its live score.

At time `now` a memory scores, in [0, 1]:

    R = exp(-max(0, now - last_used) / 90 days)
    A = min(1, ln(1 + access_count) / ln(1001))
    C = min(1, ln(1 + citations) / ln(1001))
    D = importance / 10
    score = (wR*R + wA*A + wC*C + wD*D) / (wR + wA + wC + wD)

and a pinned-tier member at least `PINNED_FLOOR`. `live_scores` computes it for
many memories at once from index values; `score_of` for one goes through the same
code, so both agree to the last bit.

The record changes only through `apply()`, one journal entry at a time: the write
path calls it for each entry it journals and `rebuild()` folds the whole journal
through it, which is why both give the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import msgpack
import numpy as np

from ..model import from_micros, to_micros

PINNED_FLOOR = 0.7
RECENCY_SCALE_US = 90 * 24 * 3600 * 1_000_000
_LOG_1001 = math.log(1001.0)


@dataclass(frozen=True, slots=True)
class Weights:
    recency: float
    access: float
    citation: float
    importance: float

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.recency, self.access, self.citation, self.importance)


DEFAULT_WEIGHTS = Weights(recency=0.25, access=0.15, citation=0.30, importance=0.20)


@dataclass(frozen=True, slots=True)
class Score:
    """The salience record of one memory (`sal/<id>`)."""

    last_used: datetime
    access_count: int
    citations: int
    importance: int
    pinned: bool

    def encode(self) -> bytes:
        return msgpack.packb([to_micros(self.last_used), self.access_count, self.citations, self.importance, self.pinned])

    @staticmethod
    def decode(raw: bytes) -> Score:
        last_used, access, citations, importance, pinned = msgpack.unpackb(raw)
        return Score(from_micros(last_used), access, citations, importance, bool(pinned))


ZERO = Score(from_micros(0), 0, 0, 0, False)


def apply(prev: Score | None, kind: str, at: int, payload: dict[str, Any]) -> Score:
    """The record of one memory after a journal entry that touches it."""
    when = from_micros(at)
    if kind == "write":
        return Score(when, 0, 0, payload["importance"], payload["pinned"])
    assert prev is not None, f"journal entry {kind!r} before the memory's write"
    if kind == "update":
        return replace(prev, last_used=when, pinned=payload["pinned"])
    if kind == "update_head":
        importance = payload.get("importance")
        return replace(prev, last_used=when, importance=prev.importance if importance is None else importance)
    if kind == "tombstone":
        return ZERO
    raise ValueError(f"unknown journal entry kind {kind!r}")


def live_scores(
    last_used: np.ndarray,
    access: np.ndarray,
    citations: np.ndarray,
    importance: np.ndarray,
    pinned: np.ndarray,
    now: int,
    weights: Weights,
) -> np.ndarray:
    """Scores of many memories at `now` (microseconds), as float64."""
    age = np.maximum(0, now - last_used.astype(np.int64)).astype(np.float64)
    r = np.exp(-age / RECENCY_SCALE_US)
    a = np.minimum(1.0, np.log1p(access.astype(np.float64)) / _LOG_1001)
    c = np.minimum(1.0, np.log1p(citations.astype(np.float64)) / _LOG_1001)
    d = importance.astype(np.float64) / 10.0
    wr, wa, wc, wd = weights.as_tuple()
    total = wr + wa + wc + wd
    score = (wr * r + wa * a + wc * c + wd * d) / total
    return np.where(pinned.astype(bool), np.maximum(score, PINNED_FLOOR), score)


def score_of(record: Score, now: datetime, weights: Weights = DEFAULT_WEIGHTS, pinned_floor: bool = True) -> float:
    """The live score of one record (through `live_scores`, so the two agree)."""
    one = lambda v: np.array([v])  # noqa: E731
    return float(
        live_scores(
            one(to_micros(record.last_used)), one(record.access_count), one(record.citations),
            one(record.importance), one(record.pinned and pinned_floor), to_micros(now), weights,
        )[0]
    )
