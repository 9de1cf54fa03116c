"""Section budgets of an HMX-C pack (seed 000 §4, rules 1-5): pure arithmetic.

    alloc = allocate(total=500, needs={"facts": 700, "core": 40}, firsts={"facts": 30, "core": 40},
                     weights={"facts": 0.2, "core": 0.15})

How a pack's token budget is shared among its non-empty sections (docs/interop-seeds.md):

1. every non-empty section, in section priority, is first given its *floor*: the
   tokens of its best entry, at most `TRUNCATE_FLOOR` (so that a long first entry
   can still be shown, cut, under rule 5), while the total allows (rule 1 wins
   over rule 4 when the total cannot hold a floor for every section);
2. the rest of the total is shared by weight (largest remainder, ties by section
   priority) among the sections that need more than they hold; a section's share
   above its need goes back to the pool and is shared again among the others
   (rule 3, overflow redistribution), until the pool is empty or no section needs
   more;
3. what is still left once every section holds its need is shared by weight among
   all of them, as budget they do not use, so that the section budgets add up to
   the total.

Weights of zero are allowed; when every section that still needs room has weight
zero, they share equally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..forms import DEFAULT_ENCODING, Tokenizer

__all__ = ["allocate", "shares", "truncate", "TRUNCATED_MARKER", "TRUNCATE_FLOOR"]

TRUNCATED_MARKER = " [truncated]"
"""Appended to an entry cut to fit its section's budget (seed 000 §4 rule 5)."""
TRUNCATE_FLOOR = 16
"""The room a section's first entry is guaranteed (its whole size when smaller)."""


def shares(amount: int, weights: Mapping[str, float], order: Sequence[str]) -> dict[str, int]:
    """`amount` split among `order` in proportion to `weights` (all equal when they
    add up to zero), whole tokens by largest remainder, ties by position in `order`."""
    if not order:
        return {}
    raw = {name: max(0.0, float(weights.get(name, 0.0))) for name in order}
    total = sum(raw.values())
    if total <= 0.0:
        raw = dict.fromkeys(order, 1.0)
        total = float(len(order))
    exact = {name: amount * raw[name] / total for name in order}
    whole = {name: int(exact[name]) for name in order}
    left = amount - sum(whole.values())
    by_remainder = sorted(order, key=lambda name: (-(exact[name] - whole[name]), order.index(name)))
    for name in by_remainder[:left]:
        whole[name] += 1
    return whole


def allocate(total: int, needs: Mapping[str, int], firsts: Mapping[str, int], weights: Mapping[str, float],
             order: Sequence[str]) -> dict[str, int]:
    """Each section's budget (see the module docstring). `needs`: the tokens of all
    of a section's entries; `firsts`: of its best entry; `order`: the sections in
    priority order (only those in `needs` are given a budget)."""
    sections = [name for name in order if name in needs]
    budget = dict.fromkeys(sections, 0)
    pool = total
    for name in sections:  # rule 4: a floor for every section, in priority order, while the total allows
        floor = min(firsts[name], TRUNCATE_FLOOR, pool)
        budget[name] = floor
        pool -= floor
    while pool > 0:  # rules 2-3: by weight among those that need more, the overflow shared again
        wanting = [name for name in sections if needs[name] > budget[name]]
        if not wanting:
            break
        given = shares(pool, weights, wanting)
        for name in wanting:
            take = min(given[name], needs[name] - budget[name])
            budget[name] += take
            pool -= take
    for name, extra in shares(pool, weights, sections).items():  # unused room, so the budgets add up to the total
        budget[name] += extra
    return budget


def truncate(text: str, room: int) -> tuple[str, int] | None:
    """`text` cut to at most `room` tokens (cl100k_base, the store's tokenizer) with
    `TRUNCATED_MARKER` appended, and its token count; None when not even one token
    of the text fits beside the marker."""
    tokenizer = Tokenizer(DEFAULT_ENCODING)
    marker = tokenizer.count(TRUNCATED_MARKER)
    tokens = tokenizer.encode(text)
    keep = min(len(tokens), room - marker)
    while keep > 0:
        head = tokenizer.encoding.decode(tokens[:keep]).rstrip("\ufffd")
        cut = head + TRUNCATED_MARKER
        count = tokenizer.count(cut)
        if head and count <= room:
            return cut, count
        keep -= 1
    return None
