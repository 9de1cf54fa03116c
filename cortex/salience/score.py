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

Records change only through `apply()` and the weights only through `learn()`, one
journal entry at a time: the write path calls them for each entry it journals and
`rebuild()` folds the whole journal through them, which is why both give the same
bytes.

Uses: a write, an update and an update_head set `last_used` to their time. A
successful attest is a use of each cited memory: one more citation, one more access,
and `last_used` set to the attest time; so is the access that a `late_binding=True`
`find()` counts for each result (one more access, `last_used` set). A failed attest
with a reason in `CITATION_LOSING_REASONS` (`FACTUAL_ERROR`, `WRONG_ASSUMPTION`) takes
one citation away (not below 0) and is not a use; any other reason is free text that
changes no record.

Learning (`attest`): the weights learn from the cited memories' mean profile
(R, A, C, D) as it was before this attest's bumps (after them R would always read 1),
normalised to sum 1: each weight moves toward it by `LEARNING_RATE` of the gap on
success, away from it on failure (clamped at 0), and the weights are renormalised to
sum 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from ..model import from_micros, to_micros
from ..records import decode_score, decode_weights, encode_score, encode_weights

PINNED_FLOOR = 0.7
RECENCY_SCALE_US = 90 * 24 * 3600 * 1_000_000
_LOG_1001 = math.log(1001.0)


LEARNING_RATE = 0.05

# The two attest reasons that take a citation away (exported as cortex.FACTUAL_ERROR
# and cortex.WRONG_ASSUMPTION); any other reason is kept as free text.
FACTUAL_ERROR = "factual_error"
"""An `attest(..., "failure", reason=FACTUAL_ERROR)` takes a citation away: the memory was wrong."""
WRONG_ASSUMPTION = "wrong_assumption"
"""An `attest(..., "failure", reason=WRONG_ASSUMPTION)` takes a citation away: relying on the memory was wrong."""
CITATION_LOSING_REASONS = (FACTUAL_ERROR, WRONG_ASSUMPTION)


@dataclass(frozen=True, slots=True)
class Weights:
    recency: float
    access: float
    citation: float
    importance: float

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.recency, self.access, self.citation, self.importance)

    def encode(self) -> bytes:
        return encode_weights(self.as_tuple())

    @staticmethod
    def decode(raw: bytes) -> Weights:
        """Stored weights; `CorruptRecord` unless four finite non-negative floats."""
        return Weights(*decode_weights(raw))


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
        return encode_score((to_micros(self.last_used), self.access_count, self.citations, self.importance, self.pinned))

    @staticmethod
    def decode(raw: bytes, key: bytes = b"sal/") -> Score:
        """A stored record; `CorruptRecord` naming `key` unless well-formed."""
        last_used, access, citations, importance, pinned = decode_score(key, raw)
        return Score(from_micros(last_used), access, citations, importance, pinned)


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
    # Entries journaled before uses set `last_used` lack the "use" mark: replaying
    # them as they were written keeps older stores verifying clean.
    last_used = when if payload.get("use") else prev.last_used
    if kind == "attest":
        if payload["outcome"] == "success":
            return replace(prev, last_used=last_used, access_count=prev.access_count + 1, citations=prev.citations + 1)
        if payload.get("reason") in CITATION_LOSING_REASONS:
            return replace(prev, citations=max(0, prev.citations - 1))
        return prev
    if kind == "access":
        return replace(prev, last_used=last_used, access_count=prev.access_count + 1)
    raise ValueError(f"unknown journal entry kind {kind!r}")


class NewRecords(dict[tuple[int, bool], tuple[Score, bytes]]):
    """The records of memories written at the instant `at`, with their stored bytes,
    by (importance, pinned): `apply()` gives a new memory a record that depends on
    nothing else, so a `write_many` batch, whose memories share one instant, builds
    each distinct record once (decoding `at` and encoding the record cost ~3 µs a
    memory)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def __missing__(self, key: tuple[int, bool]) -> tuple[Score, bytes]:
        importance, pinned = key
        score = apply(None, "write", self.at, {"importance": importance, "pinned": pinned})
        record = self[key] = (score, score.encode())
        return record


def touched_ids(payload: dict[str, Any]) -> list[bytes]:
    """The memories a journal entry changes the record of."""
    return list(payload["ids"]) if "ids" in payload else [payload["id"]]


def step(weights: Weights, records: dict[bytes, Score | None], kind: str, at: int, payload: dict[str, Any]) -> tuple[Weights, dict[bytes, Score]]:
    """One journal entry: the new weights and the new records of the memories it touches
    (`records` holds their records before it)."""
    if kind == "attest":
        weights = learn(weights, [records[i] for i in touched_ids(payload)], at, payload["outcome"])  # type: ignore[misc]
    return weights, {i: apply(records[i], kind, at, payload) for i in touched_ids(payload)}


def learn(weights: Weights, cited: list[Score], at: int, outcome: str) -> Weights:
    """The weights after an attest of `cited` (their records before the attest)."""
    r, a, c, d = components(
        np.array([to_micros(s.last_used) for s in cited], dtype=np.int64),
        np.array([s.access_count for s in cited]),
        np.array([s.citations for s in cited]),
        np.array([s.importance for s in cited]),
        at,
    )
    profile = [float(r.mean()), float(a.mean()), float(c.mean()), float(d.mean())]
    total = sum(profile)
    if total <= 0:
        return weights
    sign = 1.0 if outcome == "success" else -1.0
    moved = [max(0.0, w + sign * LEARNING_RATE * (p / total - w)) for w, p in zip(weights.as_tuple(), profile)]
    norm = sum(moved)
    if norm <= 0:
        return weights
    return Weights(*(m / norm for m in moved))


def components(last_used: np.ndarray, access: np.ndarray, citations: np.ndarray, importance: np.ndarray, now: int) -> tuple[np.ndarray, ...]:
    """The (R, A, C, D) profile of many memories at `now` (microseconds), each in an
    array of its own."""
    r = _recency(last_used, now, np.empty(len(last_used)))
    a = _count_share(access)
    c = _count_share(citations)
    d = importance.astype(np.float64) / 10.0
    return r, a, c, d


def _recency(last_used: np.ndarray, now: int, out: np.ndarray) -> np.ndarray:
    """R of each memory, `exp(-max(0, now - last_used) / scale)`, written into `out`.

    The same bits as that expression in fewer passes over a hot frame's rows: native
    u64 stamps are read as int64 in place (a view gives the values a copy would), the
    cap at 0 is skipped when no memory was used after `now`, and the negation is
    folded into the division (IEEE division is exact in sign: (-x) / s == x / -s)."""
    stamps = last_used.view(np.int64) if last_used.dtype == np.uint64 else last_used.astype(np.int64)
    ages = now - stamps
    if len(ages) and int(ages.min()) < 0:
        np.maximum(ages, 0, out=ages)
    np.divide(ages, -float(RECENCY_SCALE_US), out=out)
    np.exp(out, out=out)
    return out


def _count_share_of(counts: np.ndarray) -> np.ndarray:
    """min(1, ln(1 + n) / ln(1001)) of each count: the A and C components."""
    share: np.ndarray = np.minimum(1.0, np.log1p(counts.astype(np.float64)) / _LOG_1001)
    return share


# The same function, computed once for the counts almost every memory has: a hot
# call scores tens of thousands of memories, and two logarithms each were a third
# of its scoring time. The table holds what `_count_share_of` gives for each count,
# so a lookup and the computation agree to the bit (a test holds them to it).
_SHARE_TABLE = _count_share_of(np.arange(4096))


def _count_share(counts: np.ndarray) -> np.ndarray:
    # `take` with native indices: indexing the table with the stored u32 counts
    # converted them element by element (85-140 µs at 60,000 rows against 45).
    if len(counts) and int(counts.max()) < len(_SHARE_TABLE):
        looked_up: np.ndarray = _SHARE_TABLE.take(counts.astype(np.intp))
        return looked_up
    return _count_share_of(counts)


def live_scores(
    last_used: np.ndarray,
    access: np.ndarray,
    citations: np.ndarray,
    importance: np.ndarray,
    pinned: np.ndarray,
    now: int,
    weights: Weights,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Scores of many memories at `now` (microseconds), as float64 (in `out` when given).

    `(wr*R + wa*A + wc*C + wd*D) / total`, summed left to right in place (the same
    bits as the expression, fewer passes over a hot frame's rows), then the pinned
    floor. A memory with no access (no citation) adds +0.0 for A (for C), which
    leaves its running sum as it is, so only the memories with some are summed when
    they are few (a hot frame's are: a few hundred of 60,000)."""
    wr, wa, wc, wd = weights.as_tuple()
    score = _recency(last_used, now, np.empty(len(last_used)) if out is None else out)
    score *= wr
    _add_count_share(score, access, wa)
    _add_count_share(score, citations, wc)
    d = importance.astype(np.float64)
    d /= 10.0
    d *= wd
    score += d
    score /= wr + wa + wc + wd
    floored = pinned if pinned.dtype == bool else pinned.astype(bool)
    if floored.any():
        score[floored] = np.maximum(score[floored], PINNED_FLOOR)
    return score


# `_add_count_share` sums only the memories with a count when there are at least
# `_SPARSE_FROM` of them and fewer than one in `_SPARSE_SHARE` has one (below that,
# counting them costs more than it saves).
_SPARSE_FROM = 4096
_SPARSE_SHARE = 8


def _add_count_share(score: np.ndarray, counts: np.ndarray, weight: float) -> None:
    """`score += weight * share(counts)`, row by row (A or C of `live_scores`). A
    weight of 0 (learning can take one there) adds +0.0 to every row."""
    if not weight:
        return
    counted = np.count_nonzero(counts) if len(counts) >= _SPARSE_FROM else len(counts)
    if not counted:
        return
    if counted * _SPARSE_SHARE < len(counts):
        rows = np.flatnonzero(counts != 0)
        share = _count_share(counts[rows])
        share *= weight
        score[rows] += share
        return
    share = _count_share(counts)
    share *= weight
    score += share


# `upper_bounds` raises each bound by this share of itself. Every step of
# `live_scores` keeps the order of its inputs (round-to-nearest is monotone, and so
# are the share table and the cap at 0) except exp(), which may miss it by an ulp.
BOUND_MARGIN = 1e-9


def raised(score: float) -> float:
    """A score that no memory exceeds at the time and under the weights `score` was
    scored with, if it has the importance of the memory `score` is of and a last use,
    access count and citation count each at most that memory's (the pinned floor
    aside): `score` raised by `BOUND_MARGIN`, as `upper_bounds` raises its own."""
    return score * (1.0 + BOUND_MARGIN)


def upper_bounds(last_used: int, access: int, citations: int, importances: np.ndarray, now: int, weights: Weights) -> np.ndarray:
    """For each importance: a score that no memory of that importance reaches at `now`
    (the pinned floor aside) if its last use, access count and citations are at most
    these. The score of those fields through `live_scores`, raised by `BOUND_MARGIN`."""
    k = len(importances)
    bounds = live_scores(
        np.full(k, last_used, dtype=np.uint64), np.full(k, access, dtype=np.uint32), np.full(k, citations, dtype=np.uint32),
        importances, np.zeros(k, dtype=bool), now, weights,
    )
    bounds *= 1.0 + BOUND_MARGIN
    return bounds


def score_without_importance(last_used: int, access: int, citations: int, now: int, weights: Weights) -> float:
    """`(wr*R + wa*A + wc*C) / (wr + wa + wc + wd)` of one memory at `now`: its score
    but for importance (and the pinned floor), in Python floats, within an ulp or
    two of `live_scores`. For estimates that choose a way of computing, never for a
    score that ranks."""
    wr, wa, wc, wd = weights.as_tuple()
    r = math.exp(-max(0, now - last_used) / RECENCY_SCALE_US)
    a, c = (min(1.0, math.log1p(n) / _LOG_1001) for n in (access, citations))
    return (wr * r + wa * a + wc * c) / (wr + wa + wc + wd)


def score_of(record: Score, now: datetime, weights: Weights = DEFAULT_WEIGHTS, pinned_floor: bool = True) -> float:
    """The live score of one record (through `live_scores`, so the two agree)."""
    def one(value: int | bool) -> np.ndarray:
        return np.array([value])

    return float(
        live_scores(
            one(to_micros(record.last_used)), one(record.access_count), one(record.citations),
            one(record.importance), one(record.pinned and pinned_floor), to_micros(now), weights,
        )[0]
    )
