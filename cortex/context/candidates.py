"""Candidates and dedup: a call's blocks joined into one set of columns, each row's
tier, and the rows every call leaves out before ranking (copies of an id an earlier
tier holds, expired memories).

The rows are in tier order, so keeping the first copy of an id is the dedup
priority Pinned > Outcomes > FrameRelevant (the rows of one id hold the same value:
every index entry of a memory does). What a call joined is kept in the handle's
`JoinedCalls` (`cortex.cache.joined`) for later calls on the same blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from ..cache.joined import JoinedCalls
from ..columns import Columns, locate
from ..model import Tier
from ..tuning import Tuning
from .gather import Block, decode
from .plan import PINNED_TIER, TIER_ORDER


@dataclass(frozen=True, slots=True)
class Candidates:
    """The blocks of a call joined (`cols`), each row's tier (its index in
    `TIER_ORDER`), the rows of the pinned tier, and the rows holding a later copy
    of an id (None: no id is in two blocks). The arrays are read-only: a handle's
    `JoinedCalls` keeps them for later calls on the same blocks."""

    cols: Columns
    tiers: np.ndarray
    pinned: np.ndarray
    copies: np.ndarray | None


def candidates(joins: JoinedCalls | None, tuning: Tuning, blocks: list[Block], included: list[Tier], counts: list[int],
               framing: bool) -> Candidates:
    """The `Candidates` of `blocks`: kept from an earlier call on the same blocks (the
    same cached columns, the same raw values) when there is one, else joined and
    kept. A call of `joined_below_rows` candidates or more (a hot frame's) is kept
    under its largest block's frame prefix, which saves it finding which rows of its
    frame the other tiers hold and the facts and token totals of its joined rows
    (about a fifth of the call at 10M); only with `framing`, when the frames' columns
    come from the handle's hot-frame cache."""
    small = sum(counts) < tuning.joined_below_rows
    framed = None if small or not framing else _framed(blocks)
    if joins is None or (not small and framed is None):
        return _joined_candidates(blocks, included, counts, tuning, kept=False)
    key = (tuple(included), tuple(counts), tuple(b.rows if isinstance(b.rows, Columns) else tuple(b.rows) for b in blocks))
    found = joins.get(key, framed)
    if found is not None:
        return cast(Candidates, found)
    made = _joined_candidates(blocks, included, counts, tuning, kept=True)
    for array in (made.tiers, made.pinned, made.copies):
        if array is not None:
            array.flags.writeable = False
    joins.put(key, made, len(made.cols) if framed is not None else len(made.cols) * tuning.row_bytes, framed)
    return made


def _framed(blocks: list[Block]) -> bytes | None:
    """The frame prefix a large call keeps what it made of its blocks under: that of
    its largest block, when that is a frame's cached columns holding more rows than
    all the other blocks together (so that what the key holds besides them is
    smaller than they are)."""
    largest = max(blocks, key=len)
    if largest.prefix is None or not isinstance(largest.rows, Columns) or 2 * len(largest) <= sum(map(len, blocks)):
        return None
    return largest.prefix


def _joined_candidates(blocks: list[Block], included: list[Tier], counts: list[int], tuning: Tuning, kept: bool) -> Candidates:
    cols = joined(blocks, kept)
    tiers = np.repeat(np.array([TIER_ORDER.index(t) for t in included], dtype=np.int8), counts)
    copies = None
    if len(blocks) > 1:
        copies = copies_by_sort(cols) if len(cols) <= tuning.sort_dedup_rows else copies_by_search(block_views(cols, blocks))
    return Candidates(cols, tiers, tiers == PINNED_TIER, copies)


def joined(blocks: list[Block], kept: bool) -> Columns:
    """All blocks' rows as one set of columns, in block order (new arrays: never a
    cached block's own). Consecutive raw blocks are decoded together: a call on cold
    objects decodes once. A join `kept` for later calls joins its small parts at once
    (`Columns.concat`)."""
    parts: list[Columns] = []
    raw: list[bytes] = []
    for block in blocks:
        if isinstance(block.rows, Columns):
            if raw:
                parts.append(decode(raw))
                raw = []
            parts.append(block.rows)
        else:
            raw += block.rows
    if raw or not parts:
        parts.append(decode(raw))
    return parts[0] if len(parts) == 1 and not any(isinstance(b.rows, Columns) for b in blocks) else Columns.concat(parts, small_joined=kept)


def block_views(cols: Columns, blocks: list[Block]) -> list[tuple[Columns, bool]]:
    """Each block's rows in `cols` (the `joined` of `blocks`) as (views, by_id)."""
    views, at = [], 0
    for block in blocks:
        views.append((cols.slice(at, at + len(block)), block.by_id))
        at += len(block)
    return views


def copies_by_sort(cols: Columns) -> np.ndarray | None:
    """The rows holding a copy of an id that an earlier row holds (None: no such
    row). `np.lexsort` is stable, so copies of an id end up side by side in row
    order, and every copy after the first goes."""
    order = np.lexsort((cols["id_hi"], cols["id_lo"]))
    lo, hi = cols["id_lo"][order], cols["id_hi"][order]
    later = (lo[1:] == lo[:-1]) & (hi[1:] == hi[:-1])
    if not later.any():
        return None
    copies: np.ndarray = order[1:][later]
    return copies


def copies_by_search(blocks: list[tuple[Columns, bool]]) -> np.ndarray | None:
    """`copies_by_sort` of the blocks' rows concatenated in order. Each block is
    (rows, by_id). A block holds an id once (its keys end with the id), so only ids
    already in an earlier block go; each pair of blocks is compared by binary search
    in whichever of the two is ordered by id, the smaller side searched for. Rows
    are found, not marked: a hot frame's tens of thousands of rows need no mask."""
    found = []
    at = 0
    for j, (b, b_by_id) in enumerate(blocks):
        for a, a_by_id in blocks[:j]:
            if not len(a) or not len(b):
                continue
            if b_by_id and (len(a) < len(b) or not a_by_id):
                rows = locate(a["id_hi"], a["id_lo"], b["id_hi"], b["id_lo"])
                found.append(rows[rows >= 0] + at)
            else:
                ref = a if a_by_id else a.take(np.lexsort((a["id_lo"], a["id_hi"])))
                found.append(np.flatnonzero(locate(b["id_hi"], b["id_lo"], ref["id_hi"], ref["id_lo"]) >= 0) + at)
        at += len(b)
    copies = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return copies if len(copies) else None


NONE_GOING = np.zeros(0, dtype=np.int64)


def dropped(cols: Columns, now: int, copies: np.ndarray | None) -> np.ndarray:
    """The rows every call leaves out before ranking: those expired at `now` and those
    holding a later copy of an id (`Candidates.copies`), in row order, each once
    (empty: no such row). Found as rows, not marked in a mask: a part whose earliest
    expiry is after `now` (a hot frame's cached columns, as a rule) is not read at
    all, and a hot call's tens of thousands of rows lose a handful."""
    found = [] if copies is None else [copies]
    at = 0
    for part in cols.parts():
        if part.facts().min_expires <= now:
            expires = part["expires"]
            found.append(np.flatnonzero((expires != 0) & (expires <= now)) + at)
        at += len(part)
    if not found:
        return NONE_GOING
    rows = found[0]
    if len(found) > 1 or copies is not None:  # copies come in pair order, and a row may be a copy twice
        rows = np.sort(np.concatenate(found))
        rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
    return rows


def kept_mask(size: int, going: np.ndarray) -> np.ndarray:
    """The mask of the rows not in `going`."""
    keep = np.ones(size, dtype=bool)
    if len(going):
        keep[going] = False
    return keep
