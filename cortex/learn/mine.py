"""Gap-constrained sequential pattern mining: the task_schema miner.

A pattern `(a, b, c)` occurs in a sequence when its labels appear in order with at
most `max_gap` other labels between consecutive ones; its support is the number of
sequences it occurs in (each counts once). `mine()` finds every pattern of 1 to
`max_len` labels with support >= `min_support`, level by level (Apriori): a pattern
of length k is counted only if its prefix and its suffix of length k-1 are
frequent, and each level is one pass over the sequences, which the caller streams
(`passes` is called once per level and yields the sequences again). Memory holds
the counts of one level's candidates and one sequence's occurrences, never the
sequences: what grows with the events is the time, not the memory.

Why not `prefixspan` (PyPI 0.5.2): on the harness's traces, with the same
projection and cover rule, both recover the planted procedures with the same
precision and recall in about the same time (benchmarks/learn_prefixspan.py). But
it holds the whole database in memory (its projected databases), where these passes
stream from a spool; it has no gap constraint, so a pattern's steps may lie any
distance apart in a long session; the containment test the rest of learn() needs
(support of a reported pattern, strategies, verify()) would be a second definition
beside it; and it has had no release since 2018 and pulls in docopt (unmaintained).
Ours is a few dozen lines, tested against an enumeration of every position
combination (tests/test_learn.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

L = TypeVar("L")  # a label (anything hashable and ordered)
Pattern = tuple[L, ...]


def windows(seq: Sequence[L], max_gap: int, frequent: Sequence[set[tuple[L, ...]]]) -> set[tuple[L, ...]]:
    """The distinct candidates of length `len(frequent) + 1` that occur in `seq`:
    extensions of frequent patterns of the previous level whose suffix is frequent
    too. `frequent[j]` holds the frequent patterns of length j + 1."""
    k = len(frequent) + 1
    if k == 1:
        return {(label,) for label in seq}
    n = len(seq)
    first = frequent[0]
    occ: dict[tuple[L, ...], set[int]] = {}
    for i, label in enumerate(seq):
        single: tuple[L, ...] = (label,)
        if single in first:
            at = occ.get(single)
            if at is None:
                occ[single] = {i}
            else:
                at.add(i)
    for j in range(2, k):  # occurrences of the frequent patterns of lengths 2..k-1
        level = frequent[j - 1]
        nxt: dict[tuple[L, ...], set[int]] = {}
        for p, ends in occ.items():
            for end in ends:
                for t in range(end + 1, min(n, end + 2 + max_gap)):
                    q = p + (seq[t],)
                    if q in level:
                        at = nxt.get(q)
                        if at is None:
                            nxt[q] = {t}
                        else:
                            at.add(t)
        if not nxt:
            return set()
        occ = nxt
    suffixes = frequent[k - 2]
    found: set[tuple[L, ...]] = set()
    for p, ends in occ.items():
        for end in ends:
            for t in range(end + 1, min(n, end + 2 + max_gap)):
                q = p + (seq[t],)
                if q[1:] in suffixes:
                    found.add(q)
    return found


def mine(passes: Callable[[], Iterable[Sequence[L]]], min_support: int, max_gap: int, max_len: int) -> dict[tuple[L, ...], int]:
    """Every pattern of 1..`max_len` labels with support >= `min_support` -> its support."""
    frequent: list[set[tuple[L, ...]]] = []
    out: dict[tuple[L, ...], int] = {}
    for _ in range(max_len):
        counts: dict[tuple[L, ...], int] = {}
        for seq in passes():
            for q in windows(seq, max_gap, frequent):
                counts[q] = counts.get(q, 0) + 1
        level = {q for q, c in counts.items() if c >= min_support}
        if not level:
            break
        for q in level:
            out[q] = counts[q]
        frequent.append(level)
    return out


def ends(seq: Sequence[L], pattern: Sequence[L], max_gap: int) -> dict[int, int]:
    """The occurrences of `pattern` in `seq`: end position -> the latest start of an
    occurrence ending there ({} when it does not occur)."""
    cur: dict[int, int] = {i: i for i, label in enumerate(seq) if label == pattern[0]}
    n = len(seq)
    for label in pattern[1:]:
        nxt: dict[int, int] = {}
        for end, start in cur.items():
            for t in range(end + 1, min(n, end + 2 + max_gap)):
                if seq[t] == label and nxt.get(t, -1) < start:
                    nxt[t] = start
        cur = nxt
        if not cur:
            return {}
    return cur


def occurs(seq: Sequence[L], pattern: Sequence[L], max_gap: int) -> bool:
    return bool(ends(seq, pattern, max_gap))


def first_occurrence(seq: Sequence[L], pattern: Sequence[L], max_gap: int) -> list[int] | None:
    """The positions of the occurrence that ends first (ties: the latest positions
    before it, step by step), or None."""
    levels: list[dict[int, int]] = [{i: -1 for i, label in enumerate(seq) if label == pattern[0]}]
    n = len(seq)
    for label in pattern[1:]:
        nxt: dict[int, int] = {}
        for end in sorted(levels[-1]):
            for t in range(end + 1, min(n, end + 2 + max_gap)):
                if seq[t] == label:
                    nxt[t] = max(nxt.get(t, -1), end)
        if not nxt:
            return None
        levels.append(nxt)
    pos = min(levels[-1])
    out = [pos]
    for level in reversed(levels[1:]):
        pos = level[pos]
        out.append(pos)
    out.reverse()
    return out


def is_subsequence(small: Sequence[L], big: Sequence[L]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)
