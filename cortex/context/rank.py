"""Ranking and the trim: one `Ranker` interface, chosen once per call.

`FullRanker` scores every candidate; `BoundedRanker` (`cortex.context.bounded`)
scores only the rows that can rank among the best, for calls whose trim drops some
and whose candidates hold a large part in the frame tier (a hot frame). Both give
the same `top(m)`: the `m` best rows by (score, id), best first, so the same bundle.

The trim (README: "context()"): while the candidates' tokens exceed the budget,
drop the candidate with the lowest (score, id), always keeping one; the best of
the dropped become `reachable_uris`, best first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..columns import Columns
from ..salience.score import Weights, live_scores
from ..tuning import Tuning


class Ranker(Protocol):
    """A call's ranking of its candidates (the rows in `going` score -inf)."""

    def top(self, m: int) -> np.ndarray:
        """The indexes of the `m` best candidates by (score, id), best first (`m` at
        most the candidates not in `going`)."""
        ...

    def scores(self) -> np.ndarray:
        """The scores of the rows `top` returned, where they lie (other entries may be unset)."""
        ...

    def all_scores(self) -> np.ndarray:
        """The score of every row, -inf for the rows in `going` (computed when first asked)."""
        ...


class FullRanker:
    """Every row scored at once, ranked as far as asked."""

    __slots__ = ("_cols", "_scores")

    def __init__(self, cols: Columns, pinned_rows: np.ndarray, now: int, weights: Weights, going: np.ndarray) -> None:
        self._cols = cols
        self._scores = ranked_scores(cols, pinned_rows, now, weights, going)

    def top(self, m: int) -> np.ndarray:
        return top(self._scores, self._cols, m)

    def scores(self) -> np.ndarray:
        return self._scores

    def all_scores(self) -> np.ndarray:
        return self._scores


def ranking(scores: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Every row index, best (score, id) first."""
    order: np.ndarray = np.lexsort((lo, hi, scores))[::-1]
    return order


def top(scores: np.ndarray, cols: Columns, m: int) -> np.ndarray:
    """The indexes of the `m` best rows by (score, id), best first: every row scoring
    at least a cutoff that `m` rows reach (ties included) is ranked, and the first
    `m` kept. `cols` gives the rows' ids; only the ranked rows' are read."""
    n = len(scores)
    if m >= n:
        return ranking(scores, cols["id_hi"], cols["id_lo"])
    rows = _above_cutoff(scores, m)
    ids = cols.take(rows)
    ranked: np.ndarray = rows[ranking(scores[rows], ids["id_hi"], ids["id_lo"])][:m]
    return ranked


def _above_cutoff(scores: np.ndarray, m: int) -> np.ndarray:
    """The rows scoring at least a score that at least `m` rows reach (so the `m` best
    rows, ties included), and usually not many more. The score is read off an evenly
    spaced sample, aiming at about 2m rows, and checked; if fewer than `m` rows reach
    it, the exact m-th best score is found by partition instead."""
    n = len(scores)
    step = max(1, n // (8 * m))
    sample = scores[::step]
    if step > 1:
        k = min(len(sample), 2 * -(-m // step))
        guess = float(np.partition(sample, len(sample) - k)[len(sample) - k])
        rows = np.flatnonzero(scores >= guess)
        if len(rows) >= m:
            return rows
    return np.flatnonzero(scores >= float(np.partition(scores, n - m)[n - m]))


def scores_of(cols: Columns, pinned_rows: np.ndarray, now: int, weights: Weights) -> np.ndarray:
    """The live score of every row, part by part on the parts' own arrays (a hot
    frame's cached columns are scored where they are, not copied first) into one
    array. A row's score depends on its own fields alone, so the bits are those of
    one call over the joined rows."""
    scores = np.empty(len(cols))
    at = 0
    for part in cols.parts():
        stop = at + len(part)
        live_scores(part["last_used"], part["access"], part["citations"], part["importance"],
                    pinned_rows[at:stop], now, weights, scores[at:stop])
        at = stop
    return scores


def ranked_scores(cols: Columns, pinned_rows: np.ndarray, now: int, weights: Weights, going: np.ndarray) -> np.ndarray:
    """The live score of every row, and -inf for the rows in `going` (a live score is
    never negative), so that they rank after every candidate and the trim reaches
    none of them. They stay where they are: taking the rest out would copy every
    column a hot call reads, tens of thousands of rows, to lose a handful."""
    scores = scores_of(cols, pinned_rows, now, weights)
    if len(going):
        scores[going] = -np.inf
    return scores


@dataclass(frozen=True, slots=True)
class Trimmed:
    """The outcome of the trim: `survivors` (row indexes, lowest (score, id) first:
    the order the heads are read and rendered in), `reachable` (the best dropped
    rows, best first, at most `Tuning.reachable_uris`) and the survivors' token total."""

    survivors: np.ndarray
    reachable: np.ndarray
    total: int


NOTHING = np.zeros(0, dtype=np.int64)


def trim(ranker: Ranker, tokens: np.ndarray, budget: int, count: int, tuning: Tuning) -> Trimmed:
    """The trim of `count` candidates whose tokens exceed the budget: the survivors
    are the longest run of best rows whose tokens fit (at least one), and
    `reachable` the rows that come next. Only the best rows are ranked (a hot object
    has tens of thousands of candidates and a budget admits at most a few hundred):
    `ranker.top(m)` gives the `m` best exactly, best first, and when the survivors
    plus the reachable list do not fit in them, `m` grows until they do or every
    candidate is ranked."""
    reach = tuning.reachable_uris
    m = min(count, tuning.first_ranked)
    while True:
        best = ranker.top(m)
        running = np.cumsum(tokens[best], dtype=np.int64)
        over = np.flatnonzero(running > budget)
        # Tokens are never negative, so the running total only grows: the survivors are
        # the rows before the first one that takes it over the budget (at least one).
        kept = max(1, int(over[0])) if len(over) else m
        if len(over) and (kept + reach <= m or m == count):
            break
        m = min(count, m * 4)
    return Trimmed(best[:kept][::-1], best[kept : kept + reach], int(running[kept - 1]))


def keep_all(ranker: Ranker, cols: Columns, count: int, total: int) -> Trimmed:
    """The trim of candidates whose tokens fit the budget: every one survives."""
    return Trimmed(ranking(ranker.scores(), cols["id_hi"], cols["id_lo"])[:count][::-1], NOTHING, total)
