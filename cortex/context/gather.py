"""Gathering the tiers of a call: one `Block` of rows per scan, from the handle's
caches where they hold the prefix, else from storage.

* Pinned: every `idx/pinned` entry.
* Outcomes: Events under `idx/actor_obj/<verb><hash(ref)>` per object, newest first,
  the `outcome_limit` newest not already pinned (ties: id ascending).
* FrameRelevant: everything under `idx/frame/<verb><kind><hash(ref)>` per object
  (copies and expired memories included: the composer drops them for all tiers at
  once, `cortex.context.candidates`).
"""

from __future__ import annotations

import heapq
from collections.abc import Generator
from dataclasses import dataclass

from ..engine import Engine
from ..errors import CorruptRecord
from ..index import actor_obj, entry, frame, packs, pinned
from ..columns import FIELDS, Columns
from ..model import MemoryType, Tier
from ..records import FLAG_SUPERSEDED, IV_FLAGS
from ..scope import Evaluator
from .plan import Plan


@dataclass(frozen=True, slots=True)
class Block:
    """The rows one scan gave (one tier, or one object's frame), in the order read:
    raw index values, or columns from the hot-frame cache. `by_id` when that order
    is by id (a prefix scan: the id ends the key)."""

    rows: list[bytes] | Columns
    by_id: bool
    prefix: bytes | None = None  # the frame prefix whose cached columns `rows` are

    def __len__(self) -> int:
        return len(self.rows)


def decode(values: list[bytes]) -> Columns:
    """Index values as columns of every field (the hot-frame cache keeps them all)."""
    return Columns.decode(values, FIELDS)


def block_ids(blocks: list[Block]) -> set[bytes]:
    """The ids of every row of `blocks`."""
    ids: set[bytes] = set()
    for block in blocks:
        ids.update(block.rows.ids() if isinstance(block.rows, Columns) else (value[:16] for value in block.rows))
    return ids


def scanned_prefixes(plan: Plan) -> list[bytes]:
    """Every index prefix a call with this plan reads."""
    prefixes = [pinned.PREFIX] if Tier.PINNED in plan.tiers else []
    if plan.verb is not None:
        if Tier.OUTCOMES in plan.tiers:
            prefixes += [actor_obj.prefix(plan.verb, ref) for ref in sorted({ref for _, ref in plan.objects})]
        if Tier.FRAME_RELEVANT in plan.tiers:
            prefixes += [frame.prefix(plan.verb, kind, ref) for kind, ref in plan.objects]
    return prefixes


def corrupt_index(e: Engine, plan: Plan, detail: str, record: bytes | None = None) -> CorruptRecord:
    """The error naming the first unsound entry a call with this plan read."""
    return entry.first_bad(e.storage, scanned_prefixes(plan), detail, record)


def pinned_block(e: Engine) -> Block:
    """Every `idx/pinned` entry (from the handle's cache after the first call)."""
    cached = None if e.hot is None else e.hot.lookup(pinned.PREFIX, e.storage)
    if cached is not None:
        return Block(cached, by_id=True)
    values = e.storage.scan_values(pinned.PREFIX, pinned.key_of)
    e.entries_scanned += len(values)
    if e.hot is not None:
        decoded = decode(values)
        if not entry.unsound(decoded):
            e.hot.store(pinned.PREFIX, decoded, always=True)
            return Block(decoded, by_id=True)
    return Block(values, by_id=True)


def outcomes_block(e: Engine, plan: Plan, pinned_ids: set[bytes], scope: Evaluator | None) -> Block:
    """The `outcome_limit` newest live Events under (verb, ref) of any object that are
    not pinned and are in scope (ties: id ascending), newest first."""
    return Block(_outcome_values(e, plan, pinned_ids, scope), by_id=False)


def _outcome_values(e: Engine, plan: Plan, pinned_ids: set[bytes], scope: Evaluator | None) -> list[bytes]:
    assert plan.verb is not None
    if scope is not None and not scope.may_admit_type(MemoryType.EVENT):
        return []  # no Event is in scope: do not walk the object's whole history
    prefixes = [actor_obj.prefix(plan.verb, ref) for ref in sorted({ref for _, ref in plan.objects})]
    if e.newest is None:
        streams: list[Generator[tuple[int, bytes], None, None]] = [_scanned_backward(e, prefix) for prefix in prefixes]
    else:
        streams = [e.newest.newest(prefix, e.storage) for prefix in prefixes]
    # Entries of one creation time may come in any order: the loop takes all of them.
    newest_first = streams[0] if len(streams) == 1 else heapq.merge(*streams, reverse=True)
    chosen: dict[bytes, tuple[int, bytes]] = {}
    cutoff = None
    try:
        for created, value in newest_first:
            if cutoff is not None and created < cutoff:
                break  # everything still to come is older than the limit-th newest
            raw_id = value[:16]
            expires = entry.expires_of(value)
            if raw_id in chosen or 0 < expires <= plan.now or raw_id in pinned_ids:
                continue
            if scope is not None and not scope.admits_value(e.storage, value):
                continue
            if value[IV_FLAGS] & FLAG_SUPERSEDED and not plan.include_superseded:
                continue  # stale: a later memory takes its place in the limit
            chosen[raw_id] = (created, value)
            if cutoff is None and len(chosen) >= plan.outcome_limit:
                cutoff = created
    finally:
        for stream in streams:
            stream.close()  # `newest` keeps what each read; a scan lets its iterator go
    newest = sorted(chosen.items(), key=lambda kv: (-kv[1][0], kv[0]))[: plan.outcome_limit]
    return [value for _, (_, value) in newest]


def _scanned_backward(e: Engine, prefix: bytes) -> Generator[tuple[int, bytes], None, None]:
    """The entries under an outcomes-tier prefix as (created, value), newest first,
    from storage (backends without `Engine.newest`)."""
    for item in actor_obj.newest_first(e.storage, prefix):
        e.entries_scanned += 1
        yield item


def frame_blocks(e: Engine, plan: Plan) -> list[Block]:
    """Every entry under each (verb, kind, ref) frame, one block per object. A hot
    object's entries come from the handle's cache (`cortex.cache.hot`) when it has
    them, and from its pack (`cortex.index.packs`) when it has one."""
    assert plan.verb is not None
    blocks = []
    for kind, ref in plan.objects:
        prefix = frame.prefix(plan.verb, kind, ref)
        cached = None if e.hot is None else e.hot.lookup(prefix, e.storage)
        if cached is not None:
            blocks.append(Block(cached, by_id=True, prefix=prefix))
            continue
        if e.packs is not None and prefix in e.packs:
            decoded = packs.read(e.storage, prefix)
            e.entries_scanned += len(decoded)
            if e.hot is None:
                blocks.append(Block(decoded, by_id=True))
                continue
            e.hot.store(prefix, decoded)
            blocks.append(Block(decoded, by_id=True, prefix=prefix))
            continue
        values = e.storage.scan_values(prefix, frame.key_of(prefix))
        e.entries_scanned += len(values)
        if e.hot is not None and len(values) >= e.hot.min_rows:
            decoded = decode(values)
            if not entry.unsound(decoded):
                e.hot.store(prefix, decoded)
                blocks.append(Block(decoded, by_id=True, prefix=prefix))
                continue
        blocks.append(Block(values, by_id=True))
    return blocks


def gather(e: Engine, plan: Plan, included: list[Tier], scope: Evaluator | None) -> tuple[list[Block], list[int]]:
    """The blocks of every included tier, in tier order, and each tier's row count."""
    blocks: list[Block] = []
    counts: list[int] = []
    for tier in included:
        if tier is Tier.PINNED:
            found = [pinned_block(e)]
        elif tier is Tier.OUTCOMES:
            found = [outcomes_block(e, plan, block_ids(blocks), scope)]
        else:
            found = frame_blocks(e, plan)
        blocks += found
        counts.append(sum(len(b) for b in found))
    return blocks, counts
