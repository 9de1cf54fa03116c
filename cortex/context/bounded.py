"""`BoundedRanker`: the same `top(m)` as `FullRanker` without scoring every
candidate, for calls whose candidates hold a large part in the frame tier (a hot
frame: tens of thousands of rows, of which the trim keeps a few dozen).

The rows of such a part are split into groups by importance, and each group has an
upper bound: the score of the part's greatest last use, access count and citation
count at that importance (`upper_bounds`; a score grows with each of its fields,
and no weight is negative). The other parts are scored whole first. Then, while
fewer than `m` scored candidates score above every bound of the rows not scored,
the rows with the highest bound are scored next: a group not opened yet (its
counted rows, and its first plain rows: `Group`), or more plain rows of an opened
group (its tail, whose bound is `raised` of its last scored plain row's score). No
row left unscored can then be among the `m` best (it scores below `m` scored ones,
strictly, so no tie by id can lift it), and the `m` best of the scored rows are the
`m` best of all. With the weights the harness's stores learn, a hot call opens one
group in eleven and scores a few hundred of its rows.

A part keeps its greatest fields and the groups it was asked for
(`Columns.derived`), and its last bounds in its typed per-frame state
(`Columns.state`): a hot frame's cached columns serve call after call. The
hot-frame cache does not count them in its budget: 41 bytes a row at most, when
calls have asked for every group (one or two groups in eleven, as a rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..columns import Columns
from ..salience.score import Weights, live_scores, raised, score_without_importance, upper_bounds
from ..tuning import Tuning
from .plan import FRAME_TIER
from .rank import ranked_scores, top

# A part's groups as (-bound, importance), best bound first.
Groups = list[tuple[float, int]]
# A part that `BoundedRanker` scores group by group: the row it starts at, its rows, its groups.
BoundedPart = tuple[int, Columns, Groups]


@dataclass(frozen=True, slots=True)
class Rows:
    """Rows of a part (`rows`, the part's own indexes) and the fields they are scored
    and ranked by, copied out in that order: a group is scored from arrays of its
    own, not gathered from the part's columns at every call."""

    rows: np.ndarray
    last_used: np.ndarray
    access: np.ndarray
    citations: np.ndarray
    importance: np.ndarray
    id_hi: np.ndarray
    id_lo: np.ndarray

    @staticmethod
    def of(part: Columns, rows: np.ndarray) -> Rows:
        return Rows(rows, *(part[name][rows] for name in ("last_used", "access", "citations", "importance", "id_hi", "id_lo")))

    def take(self, at: np.ndarray) -> Rows:
        """These rows at `at` (indexes into these rows)."""
        return Rows(*(getattr(self, name)[at] for name in self.__slots__))

    def scores(self, start: int, stop: int, now: int, weights: Weights) -> np.ndarray:
        """The live scores of rows `start` to `stop` (in this order; none is pinned)."""
        return live_scores(self.last_used[start:stop], self.access[start:stop], self.citations[start:stop],
                           self.importance[start:stop], np.zeros(stop - start, dtype=bool), now, weights)


@dataclass(frozen=True, slots=True)
class Group:
    """The rows of a part with one importance, in two sets: `counted`, those with an
    access or a citation (a few hundred of a hot frame's tens of thousands), in row
    order; and `plain`, the rest, latest last use first. A plain row's score is a
    function of its last use alone (its other fields are those of every plain row of
    the group), and grows with it: so the plain rows after any one of them score at
    most `raised` of its score, and a call scores them from the first down only as
    far as it needs."""

    counted: Rows
    plain: Rows

    @staticmethod
    def of(part: Columns, importance: int) -> Group:
        # Gathered from the part once (a hot frame's columns lie far apart in memory),
        # then split.
        group = Rows.of(part, np.flatnonzero(part["importance"] == importance))
        counted = _counted(group.access, group.citations)
        plain = np.flatnonzero(~counted)
        latest_first = plain[np.argsort(group.last_used[plain], kind="stable")[::-1]]
        return Group(group.take(np.flatnonzero(counted)), group.take(latest_first))


@dataclass(slots=True, eq=False)  # one tail is another only if it is the same object
class Tail:
    """The plain rows of a group that a call has not scored: those after the first
    `scored` (the group's rows start at row `start` of the call's candidates), none
    scoring above `bound`."""

    group: Group
    start: int
    scored: int
    bound: float


class BoundedRanker:
    """A call's ranking without scoring every candidate (see the module docstring).
    The rows in `going` score -inf, as in `ranked_scores`. `scores()` holds the
    scores of the rows `top` returned, where they lie; its other entries are unset."""

    def __init__(self, cols: Columns, pinned_rows: np.ndarray, parts: list[BoundedPart],
                 now: int, weights: Weights, going: np.ndarray) -> None:
        self._cols, self._pinned, self._going = cols, pinned_rows, going
        self._parts, self._now, self._weights = parts, now, weights
        self._gone: np.ndarray | None = None
        if len(going):
            self._gone = np.zeros(len(cols), dtype=bool)
            self._gone[going] = True
        self._top_scores = np.empty(len(cols))
        self._every: np.ndarray | None = None  # `all_scores()`, once asked for
        # What is scored, a part or some rows of a group at a time: (rows, their scores, id_hi, id_lo).
        self._scored: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._values: np.ndarray | None = None  # every score in `_scored`, joined when asked for
        bounded = {start for start, _, _ in parts}
        at = 0
        for part in cols.parts():
            stop = at + len(part)
            if at not in bounded:
                values = live_scores(part["last_used"], part["access"], part["citations"], part["importance"],
                                     pinned_rows[at:stop], now, weights)
                self._add(np.arange(at, stop), values, part["id_hi"], part["id_lo"])
            at = stop
        groups = [(bound, index, importance) for index, (_, _, part_groups) in enumerate(parts) for bound, importance in part_groups]
        if len(parts) > 1:
            groups.sort()
        self._groups = groups  # (-bound, part, importance), best bound first
        self._next = 0  # the first group not opened yet
        self._tails: list[Tail] = []  # the opened groups with plain rows not scored, in the order opened

    def scores(self) -> np.ndarray:
        return self._top_scores

    def all_scores(self) -> np.ndarray:
        if self._every is None:
            self._every = ranked_scores(self._cols, self._pinned, self._now, self._weights, self._going)
        return self._every

    def _add(self, rows: np.ndarray, values: np.ndarray, id_hi: np.ndarray, id_lo: np.ndarray) -> None:
        """Count `rows` as scored, the ones in `going` at -inf."""
        if self._gone is not None and len(rows):
            values[self._gone[rows]] = -np.inf
        self._scored.append((rows, values, id_hi, id_lo))
        self._values = None

    def _highest(self) -> Tail | None:
        """The tail with the highest bound (the first opened of equal ones), if any."""
        return max(self._tails, key=lambda tail: tail.bound, default=None)

    def _unscored_bound(self) -> float | None:
        """A score that no row left unscored exceeds (None: every row is scored)."""
        tail = self._highest()
        group = -self._groups[self._next][0] if self._next < len(self._groups) else None
        if tail is None:
            return group
        return tail.bound if group is None else max(tail.bound, group)

    def _holds_best(self, m: int) -> bool:
        """Whether the `m` best candidates are all scored: at least `m` scored ones
        score above the bound of every row not scored (-inf, a dropped row's, never
        does)."""
        above = self._unscored_bound()
        if above is None:
            return True
        if not self._scored:
            return False
        if self._values is None:
            self._values = np.concatenate([values for _, values, _, _ in self._scored])
        return int(np.count_nonzero(self._values > above)) >= m

    def _score_more(self, m: int) -> None:
        """Score the rows with the highest bound: twice as many plain rows of the
        tail with the highest bound, or (when the next group's bound is higher) the
        next group."""
        tail = self._highest()
        if tail is not None and (self._next == len(self._groups) or tail.bound >= -self._groups[self._next][0]):
            self._score_plain(tail, 2 * tail.scored)
            return
        _, index, importance = self._groups[self._next]
        self._next += 1
        start, part, _ = self._parts[index]
        group = part.derived(("group", importance), lambda p: Group.of(p, importance))
        counted = group.counted
        if len(counted.rows):
            self._add(counted.rows + start, counted.scores(0, len(counted.rows), self._now, self._weights), counted.id_hi, counted.id_lo)
        if len(group.plain.rows):
            tail = Tail(group, start, 0, np.inf)
            self._tails.append(tail)
            self._score_plain(tail, m + m // 4)  # a few more than asked for: enough, as a rule, to rank above the tail's bound

    def _score_plain(self, tail: Tail, stop: int) -> None:
        """Score the tail's plain rows up to the `stop`-th (or all), and close it when
        none is left."""
        plain = tail.group.plain
        start, stop = tail.scored, min(stop, len(plain.rows))
        values = plain.scores(start, stop, self._now, self._weights)
        tail.scored, tail.bound = stop, raised(float(values[-1]))
        if stop == len(plain.rows):
            self._tails.remove(tail)
        self._add(plain.rows[start:stop] + tail.start, values, plain.id_hi[start:stop], plain.id_lo[start:stop])

    def top(self, m: int) -> np.ndarray:
        while not self._holds_best(m):
            self._score_more(m)
        rows, values, id_hi, id_lo = (np.concatenate(column) for column in zip(*self._scored))
        above = self._unscored_bound()
        if above is not None:  # the m best are among those above it
            rows_above = np.flatnonzero(values > above)
            rows, values, id_hi, id_lo = rows[rows_above], values[rows_above], id_hi[rows_above], id_lo[rows_above]
        best = top(values, Columns({"id_hi": id_hi, "id_lo": id_lo}), m)
        ranked: np.ndarray = rows[best]
        self._top_scores[ranked] = values[best]
        return ranked


def bounded_parts(cols: Columns, tiers: np.ndarray, now: int, weights: Weights, tuning: Tuning) -> list[BoundedPart]:
    """The parts of `cols` that `BoundedRanker` scores importance by importance, each
    with the row it starts at and its groups (`part_groups`): those of
    `tuning.bounded_from` rows or more in the frame tier (the rows are in tier order,
    so a part whose first row is in the last tier is all in it: no pinned floor
    applies to its rows), where bounds can leave most of the part unscored."""
    found = []
    at = 0
    for part in cols.parts():
        if len(part) and len(part) >= tuning.bounded_from and tiers[at] == FRAME_TIER:
            groups = part_groups(part, now, weights, tuning)
            if groups is not None:
                found.append((at, part, groups))
        at += len(part)
    return found


@dataclass(frozen=True, slots=True)
class PartGroups:
    """What `part_groups` worked out for a part at `now` under `weights` (and
    `always_bound`): its groups, best bound first, or None where bounding does not pay."""

    weights: Weights
    now: int
    always: bool
    groups: Groups | None


def part_groups(part: Columns, now: int, weights: Weights, tuning: Tuning) -> Groups | None:
    """The groups of `part` as (-bound, importance), best bound first, or None where
    bounding would not pay (`worth_bounding`). Kept in the part's state for later
    calls with the same weights at the same time or later (one: weights learned call
    after call do not pile up beside a long-lived cached frame): a bound made at a
    time is still a bound later, as a memory's recency only falls while time passes
    (~27 µs a call saved at 10M).

    The first call on a part that writes or new entries made anew (`refreshed`: a
    writer's own cached frame is new columns after each of its writes) scores every
    row and works out nothing: the greatest fields and the counts by importance cost
    ~80 µs at 40,000 rows. Other parts (read from the store, as a reader's first call
    on an object reads them) are looked at from their first call."""
    state = part.state()
    if state.refreshed and not state.called:
        state.called = True
        return None
    kept = state.bounds
    if not isinstance(kept, PartGroups) or kept.weights != weights or kept.now > now or kept.always != tuning.always_bound:
        groups = None
        if tuning.always_bound or worth_bounding(part, now, weights, tuning):
            last_used, access, citations, importance = part.derived("maxima", _maxima)
            bounds = upper_bounds(last_used, access, citations, np.arange(importance + 1, dtype=np.uint8), now, weights)
            groups = sorted(zip((-bounds).tolist(), range(importance + 1)))
        kept = PartGroups(weights, now, tuning.always_bound, groups)
        state.bounds = kept
    return kept.groups


def _maxima(part: Columns) -> tuple[int, int, int, int]:
    """The greatest last use, access count, citation count and importance of the rows."""
    return (int(part["last_used"].max()), int(part["access"].max()), int(part["citations"].max()),
            int(part["importance"].max()))


def worth_bounding(part: Columns, now: int, weights: Weights, tuning: Tuning) -> bool:
    """Whether scoring `part` group by group costs less than scoring every row at
    once: whether the groups a call may have to open, at `tuning.group_rows` each
    (opening a group costs about what scoring and ranking that many rows at once
    costs: at 10M, ~31 µs a group against ~3.8 ns a row) and their counted rows,
    come to fewer rows than the part holds. At 10M, under the weights the harness's
    store learned (one group opened), a hot call took 0.28 ms bounded against 0.46
    unbounded; under the default weights (four or five) 0.44 against 0.52; with no
    weight on importance (all eleven) 0.69 against 0.50. This only chooses the way:
    both give the same bundle.

    A row of importance `v` or more scores at least `wd * v / 10` and its recency's
    share over the weights' sum (its other terms are never negative). So once the
    rows of importance `v` and above number `first_ranked`, the best `first_ranked`
    candidates score at least that share of `v` and of the `first_ranked`-th latest
    last use of those rows, and a group whose bound is no higher is never opened. A
    group's bound is its importance's share plus `score_without_importance` at the
    part's greatest fields."""
    first_ranked, group_rows = tuning.first_ranked, tuning.group_rows
    weight_sum = sum(weights.as_tuple())
    if weight_sum <= 0:
        return False
    last_used, access, citations, importance = part.derived("maxima", _maxima)
    counts: list[int] = part.derived("importance counts", lambda p: np.bincount(p["importance"]).tolist())
    per_step = weights.importance / 10.0 / weight_sum
    above = 0
    for floor_importance in range(importance, -1, -1):
        above += counts[floor_importance]
        if above >= first_ranked:
            break
    else:
        return False
    rest = score_without_importance(last_used, access, citations, now, weights)
    # First without the recency share, which takes two more passes over the part:
    # more groups open, each with all its rows counted; if bounding pays even so, it pays.
    opened = [v for v, count in enumerate(counts) if count and rest + per_step * v > per_step * floor_importance]
    if sum(group_rows + counts[v] for v in opened) < len(part):
        return True
    latest = part.derived(("latest of the best", first_ranked, floor_importance), lambda p: _latest(p, floor_importance, first_ranked))
    floor = per_step * floor_importance + score_without_importance(latest, 0, 0, now, weights)
    counted: list[int] = part.derived("counted counts", _counted_counts)
    opened = [v for v in opened if rest + per_step * v > floor]
    return sum(group_rows + counted[v] for v in opened) < len(part)


def _latest(part: Columns, importance: int, m: int) -> int:
    """The `m`-th latest last use of the rows of `importance` or more (there are `m` or more)."""
    last_used = part["last_used"][part["importance"] >= importance]
    return int(np.partition(last_used, len(last_used) - m)[len(last_used) - m])


def _counted(access: np.ndarray, citations: np.ndarray) -> np.ndarray:
    """Which rows have an access or a citation (`Group.counted`): the rest of a group
    score by their last use alone."""
    counted: np.ndarray = (access != 0) | (citations != 0)
    return counted


def _counted_counts(part: Columns) -> list[int]:
    """How many rows of each importance have an access or a citation (`_counted`)."""
    counted = _counted(part["access"], part["citations"])
    counts: list[int] = np.bincount(part["importance"][counted], minlength=int(part["importance"].max()) + 1).tolist()
    return counts
