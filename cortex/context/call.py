"""One `context()` call from start to end: `compose()` validates the options, and a
`Call` (the call's working state) composes the bundle on one consistent view:

1. verify the scope, if any (`cortex.scoped.read`, the protocol every scoped read
   follows), and cap the budget (`Call.__init__`);
2. gather the tiers (`cortex.context.gather`);
3. join them into candidates and find the rows every call leaves out: copies,
   expired memories, and (when asked) those outside the scope or superseded
   (`cortex.context.candidates`, `Call.going`);
4. rank and trim (`cortex.context.rank`: a `Ranker` chosen once, `Call.trim`);
5. read the survivors' heads with one multi-get, render and order them
   (`Call.survivors`);
6. build the Bundle, whose per-candidate fields read the call's rows when first
   asked (`cortex.context.bundle.CallRows`).
"""

from __future__ import annotations

import operator
import struct
import time
from dataclasses import replace
from typing import Any

import numpy as np

from ..engine import Engine, TornView
from ..errors import ValidationError
from ..ids import encode_id
from ..index import edge, entry
from ..index.prefetch import context_reads
from ..memory import Memory
from ..model import Tier, from_micros, to_micros
from ..records import FLAG_CONTRADICTED, FLAG_SUPERSEDED, head_keys
from ..columns import Columns
from .. import scoped
from ..scope import Evaluator
from ..scoped import Granted
from ..storage import Reads
from .bounded import BoundedRanker, bounded_parts
from .bundle import Bundle, CallRows, IdMap, Texts
from .candidates import Candidates, candidates, dropped, kept_mask
from .gather import corrupt_index, gather
from .plan import OPTION_NAMES, OUTCOMES_TIER, ContextOpts, Plan, effective_budget, plan
from .rank import FullRanker, Ranker, Trimmed, keep_all, trim

_SORT_KEY = operator.itemgetter(0)


def _reads(planned: Plan) -> Reads:
    """What the call will read, for a backend that fetches it at once (PostgreSQL: one
    statement; `cortex.index.prefetch`). The reads and their answers stay the same."""
    return context_reads(planned.verb, planned.objects, pinned_tier=Tier.PINNED in planned.tiers,
                         outcomes=Tier.OUTCOMES in planned.tiers, frames=Tier.FRAME_RELEVANT in planned.tiers)


def compose(e: Engine, opts: ContextOpts | None, overrides: dict[str, Any]) -> Bundle:
    """The Bundle for a task: validate, then compose on one consistent view."""
    started = time.perf_counter()
    e.check_open()
    if opts is not None and not isinstance(opts, ContextOpts):
        raise ValidationError("opts", f"must be a ContextOpts, not {type(opts).__name__}", opts)
    for name in overrides:
        if name not in OPTION_NAMES:
            raise ValidationError(name, f"unknown context() option; options: {', '.join(sorted(OPTION_NAMES))}")
    opts = ContextOpts(**overrides) if opts is None else replace(opts, **overrides)
    planned = plan(opts, e.now)
    clock_now = None if planned.scope is None else to_micros(e.now()) if opts.now is not None else planned.now
    return scoped.read(e, planned.scope, lambda granted: Call(e, planned, started, granted).bundle(), now=planned.now,
                       clock_now=clock_now, catch_up=True, reads=_reads(planned))


class Call:
    """The working state of one call, inside `Engine.read()` (see the module docstring)."""

    def __init__(self, e: Engine, plan: Plan, started: float, granted: Granted | None = None) -> None:
        self.e, self.started = e, started
        journal, self.journal_at = e.view_state()
        self.root = journal.root.hex()
        self.granted = granted  # the scope, verified by `cortex.scoped.read`
        self.scope: Evaluator | None = None
        if granted is not None:
            plan = replace(plan, budget=effective_budget(granted.budget(plan.requested_budget)))
            self.scope = granted.evaluator()
        self.plan = plan
        self.weights = e.weights()
        self.tuning = e.tuning

    def candidates(self) -> Candidates:
        """The call's candidates, joined from the tiers it gathers (checked sound)."""
        e, plan = self.e, self.plan
        included = plan.included()
        try:
            blocks, counts = gather(e, plan, included, self.scope)
            found = candidates(e.joins, self.tuning, blocks, included, counts, framing=e.hot is not None)
        except (ValueError, struct.error) as exc:  # a value of the wrong size
            raise corrupt_index(e, plan, str(exc)) from None
        facts = found.cols.facts()
        if not facts.sound:
            raise corrupt_index(e, plan, "type or version out of range")
        if self.journal_at is not None and facts.max_created > self.journal_at:
            raise TornView("a memory newer than the view's last journal entry")
        return found

    def going(self, found: Candidates) -> tuple[np.ndarray, Columns | None, np.ndarray | None]:
        """The rows left out before ranking (row order), and the superseded rows left
        out that the bundle reports, with their tiers (None: none)."""
        cols, plan = found.cols, self.plan
        going = dropped(cols, plan.now, found.copies)
        superseding = not plan.include_superseded and bool(cols.facts().flags & FLAG_SUPERSEDED)
        if self.scope is None and not superseding:
            return going, None, None
        keep = kept_mask(len(cols), going)
        if self.scope is not None:
            keep &= self.scope.mask(self.e.storage, cols["id_hi"], cols["id_lo"], cols["type"])
        stale = stale_tiers = None
        if superseding:
            superseded = (cols["flags"] & FLAG_SUPERSEDED) != 0
            if self.granted is not None:
                # Superseded under the scope only by an in-scope memory: one superseded
                # by out-of-scope memories alone stays a candidate (docs/scopes.md).
                rows = np.flatnonzero(keep & superseded)
                ids = cols.take(keep & superseded).ids()
                stale_ids = self.granted.stale(ids)
                superseded[rows] = [raw_id in stale_ids for raw_id in ids]
            stale, stale_tiers = cols.take(keep & superseded), found.tiers[keep & superseded]
            keep &= ~superseded
        return (np.flatnonzero(~keep) if not keep.all() else going[:0]), stale, stale_tiers

    def ranker(self, found: Candidates, going: np.ndarray, some_dropped: bool) -> Ranker:
        """Every candidate is scored, unless the trim drops some and a large part of
        them lies in the frame tier: then the bounded ranking scores only what can
        rank among the best, and the bundle scores every candidate when first read."""
        cols, plan = found.cols, self.plan
        parts = bounded_parts(cols, found.tiers, plan.now, self.weights, self.tuning) if some_dropped else []
        if parts:
            return BoundedRanker(cols, found.pinned, parts, plan.now, self.weights, going)
        return FullRanker(cols, found.pinned, plan.now, self.weights, going)

    def survivors(self, found: Candidates, trimmed: Trimmed, scores: np.ndarray) -> tuple[dict[int, list[Memory]], dict[str, str], list[str]]:
        """The survivors read and rendered, by tier in bundle order, and the reachable
        URIs: the survivors and the reachable rows in one take (its columns gathered
        once), then one multi-get of the heads not in view."""
        e, plan, cols = self.e, self.plan, found.cols
        survivors = trimmed.survivors
        named = cols.take(np.concatenate([survivors, trimmed.reachable]))
        named_ids, versions = named.ids(), named["version"].tolist()
        picked = len(survivors)
        reachable = e.uris.uris(named["type"][picked:].tolist(), named_ids[picked:], versions[picked:])
        keys = head_keys(named_ids[:picked])
        memories: dict[int, list[tuple[tuple[Any, ...], Memory]]] = {0: [], 1: [], 2: []}
        rendered: dict[str, str] = {}
        for key, memory, tier, score, created, version in zip(
            keys, e.current_views(keys), found.tiers[survivors].tolist(), scores[survivors].tolist(),
            named["created"][:picked].tolist(), versions[:picked],
        ):
            if memory is None or memory.version != version:
                if self.journal_at is not None:
                    raise TornView("an index entry and its head disagree")
                detail = "an index entry names a memory with no head" if memory is None else "an index entry and its head disagree on the version"
                raise corrupt_index(e, plan, detail, key)
            memory_id = memory.id
            rendered[memory_id] = memory.form(plan.form)
            if tier == OUTCOMES_TIER:  # newest first by when it happened (occurred_at: created_at unless given)
                occurred = created if memory.occurred_at == memory.created_at else to_micros(memory.occurred_at)
                sort_key: tuple[Any, ...] = (-occurred, -score, memory_id)
            else:
                sort_key = (-score, memory_id)
            memories[tier].append((sort_key, memory))
        ordered = {t: [m for _, m in sorted(items, key=_SORT_KEY)] for t, items in memories.items()}
        return ordered, rendered, reachable

    def bundle(self) -> Bundle:
        plan, tuning = self.plan, self.tuning
        found = self.candidates()
        cols = found.cols
        going, stale, stale_tiers = self.going(found)
        count = len(cols) - len(going)
        token_field = entry.TOKEN_FIELDS[plan.form]
        tokens = cols[token_field]  # u16 or u32: summed as int64, never copied whole
        candidate_tokens = cols.total(token_field) - (int(tokens[going].sum(dtype=np.int64)) if len(going) else 0)
        some_dropped = candidate_tokens > plan.budget and count > 1
        ranker = self.ranker(found, going, some_dropped)
        trimmed = trim(ranker, tokens, plan.budget, count, tuning) if some_dropped else keep_all(ranker, cols, count, candidate_tokens)
        ordered, rendered, reachable = self.survivors(found, trimmed, ranker.scores())
        rows = CallRows(cols, going, ranker, token_field, len(trimmed.survivors), count, stale, stale_tiers, plan, self.weights, self.e.uris)
        stale_count = rows.stale_count()
        return Bundle(
            pinned=ordered[0],
            frame_relevant=ordered[2],
            outcomes=ordered[1],
            rendered=rendered,
            tokens=IdMap(count, rows.kept_ids, rows.kept_tokens),
            scores=IdMap(count, rows.kept_ids, rows.kept_scores),
            reachable_uris=reachable,
            total_tokens=trimmed.total,
            trimmed=count - len(trimmed.survivors),
            candidates=count,
            latency_ms=(time.perf_counter() - self.started) * 1000.0,
            form=plan.form,
            root=self.root,
            request=plan.request(),
            dropped_ids=Texts(rows.dropped_ids),
            weights=self.weights,
            now=from_micros(plan.now),
            conflicts=self.conflicts(rows) if cols.facts().flags & FLAG_CONTRADICTED else [],
            superseded_ids=Texts(rows.stale_id_texts),
            superseded_uris=Texts(rows.stale_uris),
            superseded_scores=IdMap(stale_count, rows.stale_ids, rows.stale_scores),
            superseded_tokens=IdMap(stale_count, rows.stale_ids, rows.stale_tokens),
        )

    def conflicts(self, rows: CallRows) -> list[tuple[str, str]]:
        """The pairs of candidates linked by a live `contradicts` edge, in id order."""
        cols = rows.kept()
        flagged = (cols["flags"] & FLAG_CONTRADICTED) != 0
        if not flagged.any():
            return []
        return [(encode_id(a), encode_id(b)) for a, b in edge.conflicts(self.e.storage, cols.take(flagged).ids())]
