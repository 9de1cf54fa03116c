"""`context()`: the cold-start composer (DESIGN §6).

One read-only call that gathers three tiers from the indexes, scores and trims them
from the index values alone, and only then reads the survivors:

1. validate and normalise the options (`_Plan`);
2. Pinned: every `idx/pinned` entry;
3. Outcomes: Events under `idx/actor_obj/<verb><hash(ref)>` per object, newest
   first, the `outcome_limit` newest not already pinned (ties: id ascending);
4. FrameRelevant: everything under `idx/frame/<verb><kind><hash(ref)>` per object,
   not already in an earlier tier (dedup priority Pinned > Outcomes > FrameRelevant);
5. score every candidate with the live salience (store weights, pinned floor for
   the pinned tier); expired memories are dropped (tombstoned ones have no entries);
6. trim: drop the lowest (score, id) while the chosen form's tokens exceed the
   budget, keeping at least one; the dropped become `reachable_uris` (at most 64);
7. read the survivors' heads with one multi-get and render them;
8. order the tiers.

Nothing is written: no journal entry, no salience bump; the root is unchanged. The
tokenizer is never loaded: token counts come from the index values.
"""

from __future__ import annotations

import heapq
import json
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import CorruptRecord, NoTiersIncluded, StoreError, ValidationError, shown
from .forms import FORM_NAMES, render_full
from .ids import encode_id, format_uri
from .index import actor_obj, entry, frame, pinned
from .index.entry import Columns
from .memory import Memory
from .model import MemoryType, ObjKind, Tier, Verb, check_datetime, check_ref, to_micros
from .salience.score import live_scores
from .store import HEAD_PREFIX, head_key, unpack

if TYPE_CHECKING:
    from .core import Cortex

DEFAULT_BUDGET_TOKENS = 3000
MAX_BUDGET_TOKENS = 4000
DEFAULT_OUTCOME_LIMIT = 3
MAX_REACHABLE_URIS = 64

_TIER_ORDER = (Tier.PINNED, Tier.OUTCOMES, Tier.FRAME_RELEVANT)


@dataclass(frozen=True)
class ContextOpts:
    """Options of `context()`; every field can also be passed as a keyword argument.

    `verb`: a `Verb` or its name; None runs the pinned tier only. `objects`: object
    kind name -> ref. `budget_tokens`: 0 means 3000, above 4000 is capped at 4000.
    `include_tiers`: None for all three, else `Tier` members or their names.
    `outcome_limit`: 0 means 3. `form`: "short", "medium" or "full". `now`: the
    instant scores are computed at (None: the store clock).
    """

    verb: Verb | str | None = None
    objects: Mapping[str, str] = field(default_factory=dict)
    budget_tokens: int = 0
    include_tiers: Any = None
    outcome_limit: int = 0
    form: str = "medium"
    scope: Any = None
    now: datetime | None = None


@dataclass(frozen=True, slots=True)
class _Plan:
    verb: Verb | None
    objects: tuple[tuple[ObjKind, str], ...]
    budget: int
    tiers: frozenset[Tier]
    outcome_limit: int
    form: str
    now: int


def _plan(opts: ContextOpts, clock_now: Any) -> _Plan:
    """Validate every option (even those a verb-less call does not use) and normalise."""
    if not isinstance(opts.objects, Mapping):
        raise ValidationError("objects", "must be a mapping of object kind name to ref", opts.objects)
    objects = sorted({(ObjKind.parse(kind, "objects"), check_ref(f"objects[{shown(kind)}]", ref)) for kind, ref in opts.objects.items()})
    verb = None if opts.verb is None else Verb.parse(opts.verb)
    budget = opts.budget_tokens
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ValidationError("budget_tokens", "must be a non-negative integer", budget)
    limit = opts.outcome_limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValidationError("outcome_limit", "must be a non-negative integer", limit)
    if opts.form not in FORM_NAMES:
        raise ValidationError("form", f"must be one of {', '.join(FORM_NAMES)}", opts.form)
    if opts.include_tiers is None:
        tiers = frozenset(Tier)
    else:
        if isinstance(opts.include_tiers, (str, bytes, Tier)) or not isinstance(opts.include_tiers, Iterable):
            raise ValidationError("include_tiers", "must be a collection of tiers", opts.include_tiers)
        tiers = frozenset(_tier(t) for t in opts.include_tiers)
        if not tiers:
            raise NoTiersIncluded("include_tiers", "must name at least one tier")
    if opts.scope is not None:
        raise ValidationError("scope", "scoped context() is not available in this version; pass scope=None", opts.scope)
    now = check_datetime("now", opts.now) or clock_now()
    return _Plan(
        verb=verb,
        objects=tuple(objects),
        budget=DEFAULT_BUDGET_TOKENS if budget == 0 else min(budget, MAX_BUDGET_TOKENS),
        tiers=tiers,
        outcome_limit=DEFAULT_OUTCOME_LIMIT if limit == 0 else limit,
        form=opts.form,
        now=to_micros(now),
    )


def _tier(value: object) -> Tier:
    if isinstance(value, Tier):
        return value
    if isinstance(value, str) and value in Tier._value2member_map_:
        return Tier(value)
    raise ValidationError("include_tiers", f"unknown tier {shown(value)}; tiers: pinned, outcomes, frame_relevant", value)


# ---------------------------------------------------------------------------
# The Bundle


class _LazyIdMap(Mapping[str, Any]):
    """id -> value for every scored candidate, built on first access.

    A call at a hot object scores thousands of candidates; turning each 16-byte id
    into its 26-character text costs more than the whole scoring, so it is done
    only when a caller looks. `ids()` and `values()` give the raw ids and the
    values in the same order.
    """

    def __init__(self, size: int, ids: Callable[[], list[bytes]], values: Callable[[], list[Any]]) -> None:
        self._size = size
        self._ids = ids
        self._values = values
        self._dict: dict[str, Any] | None = None

    def _built(self) -> dict[str, Any]:
        if self._dict is None:
            self._dict = {encode_id(i): v for i, v in zip(self._ids(), self._values())}
        return self._dict

    def __getitem__(self, key: str) -> Any:
        return self._built()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"{{...{len(self)} ids}}"


@dataclass(frozen=True)
class Bundle:
    """The result of `context()`. `tokens` and `scores` cover every scored candidate
    (in the chosen form); `rendered` only the survivors."""

    pinned: list[Memory]
    frame_relevant: list[Memory]
    outcomes: list[Memory]
    rendered: dict[str, str]
    tokens: Mapping[str, int]
    scores: Mapping[str, float]
    reachable_uris: list[str]
    total_tokens: int
    trimmed: int
    candidates: int
    latency_ms: float
    form: str
    root: str

    def memories(self) -> list[Memory]:
        """Every survivor: pinned, then outcomes, then frame-relevant."""
        return self.pinned + self.outcomes + self.frame_relevant

    def to_dict(self) -> dict[str, Any]:
        """Every field but `latency_ms`, JSON-ready; deterministic for a given store state."""
        return {
            "pinned": [m.to_dict() for m in self.pinned],
            "frame_relevant": [m.to_dict() for m in self.frame_relevant],
            "outcomes": [m.to_dict() for m in self.outcomes],
            "rendered": dict(self.rendered),
            "tokens": dict(self.tokens),
            "scores": dict(self.scores),
            "reachable_uris": list(self.reachable_uris),
            "total_tokens": self.total_tokens,
            "trimmed": self.trimmed,
            "candidates": self.candidates,
            "form": self.form,
            "root": self.root,
        }

    def to_json(self) -> str:
        """`to_dict()` as JSON with sorted keys: byte-identical for the same state and options."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def to_markdown(self) -> str:
        lines: list[str] = []
        for title, members in (("Pinned", self.pinned), ("Frame-relevant", self.frame_relevant), ("Outcomes", self.outcomes)):
            lines.append(f"## {title}")
            lines += [f"- {m.uri} — {self.rendered[m.id]}" for m in members] or ["(none)"]
            lines.append("")
        lines.append("## Reachable")
        lines += [f"- {uri}" for uri in self.reachable_uris] or ["(none)"]
        lines.append("")
        lines.append(f"_form={self.form}, total_tokens={self.total_tokens}, trimmed={self.trimmed}, latency_ms={self.latency_ms:.2f}_")
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Tier scans

# The index value fields the composer uses (see cortex.index.entry).
_FIELDS = ("id_hi", "id_lo", "type", "version", "created", "last_used", "expires", "access", "citations", "importance")


def _decode(values: list[bytes], plan: _Plan) -> Columns:
    return Columns.decode(values, (*_FIELDS, entry.TOKEN_FIELDS[plan.form]))


def _eligible(cols: Columns, now: int, excluded: set[tuple[int, int]]) -> np.ndarray:
    """Mask of rows not expired at `now` and not in `excluded` (ids of earlier tiers)."""
    expires = cols["expires"]
    keep = (expires == 0) | (expires > now)
    if excluded and len(cols):
        maybe = np.isin(cols["id_lo"], np.fromiter((lo for _, lo in excluded), dtype=np.uint64, count=len(excluded)))
        for i in np.flatnonzero(maybe).tolist():  # exact check of the few lo matches
            if (int(cols["id_hi"][i]), int(cols["id_lo"][i])) in excluded:
                keep[i] = False
    return keep


def _scanned_prefixes(plan: _Plan) -> list[bytes]:
    """Every index prefix a call with this plan reads."""
    prefixes = [pinned.PREFIX] if Tier.PINNED in plan.tiers else []
    if plan.verb is not None:
        if Tier.OUTCOMES in plan.tiers:
            prefixes += [actor_obj.prefix(plan.verb, ref) for ref in sorted({ref for _, ref in plan.objects})]
        if Tier.FRAME_RELEVANT in plan.tiers:
            prefixes += [frame.prefix(plan.verb, kind, ref) for kind, ref in plan.objects]
    return prefixes


def _corrupt_index(c: Cortex, plan: _Plan, detail: str, record: bytes | None = None) -> CorruptRecord:
    return entry.first_bad(c._kv, _scanned_prefixes(plan), detail, record)


def _id_pairs(cols: Columns) -> set[tuple[int, int]]:
    return set(zip(cols["id_hi"].tolist(), cols["id_lo"].tolist()))


def _first_of_each_id(cols: Columns) -> np.ndarray:
    """Mask keeping one row per id. Rows of one id are identical (every index entry of
    a memory holds the same value), so which copy survives does not matter. Sorting
    on the random low 64 bits puts copies side by side; equal lows are then compared
    in full."""
    lo = cols["id_lo"]
    order = np.argsort(lo, kind="stable")
    keep = np.ones(len(lo), dtype=bool)
    same = np.flatnonzero(lo[order][1:] == lo[order][:-1])
    if len(same):
        hi = cols["id_hi"]
        seen: set[tuple[int, int]] = set()
        for i in np.unique(np.concatenate([same, same + 1])).tolist():
            row = int(order[i])
            key = (int(hi[row]), int(lo[row]))
            if key in seen:
                keep[row] = False
            seen.add(key)
    return keep


def _pinned(c: Cortex, plan: _Plan) -> Columns:
    cols = _decode(c._kv.scan_values(pinned.PREFIX, pinned.key_of), plan)
    return cols.take(_eligible(cols, plan.now, set()))


def _outcomes(c: Cortex, plan: _Plan, excluded: set[tuple[int, int]]) -> Columns:
    """The `outcome_limit` newest live Events under (verb, ref) of any object."""
    assert plan.verb is not None
    refs = sorted({ref for _, ref in plan.objects})
    streams = [
        ((actor_obj.created_of(k), v) for k, v in c._kv.scan_items_backward(actor_obj.prefix(plan.verb, ref)))
        for ref in refs
    ]
    chosen: dict[bytes, tuple[int, bytes]] = {}
    cutoff = None
    for created, value in heapq.merge(*streams, key=lambda item: -item[0]):
        if cutoff is not None and created < cutoff:
            break  # everything still to come is older than the limit-th newest
        raw_id = value[:16]
        expires = entry.expires_of(value)
        if raw_id in chosen or 0 < expires <= plan.now or entry.id_pair(value) in excluded:
            continue
        chosen[raw_id] = (created, value)
        if cutoff is None and len(chosen) >= plan.outcome_limit:
            cutoff = created
    newest = sorted(chosen.items(), key=lambda kv: (-kv[1][0], kv[0]))[: plan.outcome_limit]
    return _decode([value for _, (_, value) in newest], plan)


def _frame_relevant(c: Cortex, plan: _Plan, excluded: set[tuple[int, int]]) -> Columns:
    """Every live memory under one of the (verb, kind, ref) frames, once each."""
    assert plan.verb is not None
    values: list[bytes] = []
    for kind, ref in plan.objects:
        prefix = frame.prefix(plan.verb, kind, ref)
        values += c._kv.scan_values(prefix, frame.key_of(prefix))
    cols = _decode(values, plan)
    keep = _eligible(cols, plan.now, excluded)
    if len(plan.objects) > 1:
        keep &= _first_of_each_id(cols)
    return cols.take(keep)


# ---------------------------------------------------------------------------
# compose


def compose(c: Cortex, opts: ContextOpts | None, overrides: dict[str, Any]) -> Bundle:
    started = time.perf_counter()
    c._check_open()
    if opts is not None and not isinstance(opts, ContextOpts):
        raise ValidationError("opts", f"must be a ContextOpts, not {type(opts).__name__}", opts)
    names = {f.name for f in fields(ContextOpts)}
    for name in overrides:
        if name not in names:
            raise ValidationError(name, f"unknown context() option; options: {', '.join(sorted(names))}")
    opts = replace(opts or ContextOpts(), **overrides)
    plan = _plan(opts, c._now)
    for attempt in range(_VIEW_RETRIES + 1):
        c._catch_up_if_changed()
        try:
            with c._lock.read():
                c._check_open()
                return _compose_locked(c, plan, started)
        except _TornView as torn:
            if attempt == _VIEW_RETRIES:
                raise StoreError(f"the reader's view of the store stayed inconsistent over {attempt + 1} catch-ups: {torn}") from None
            time.sleep(0.001 * (attempt + 1))
            c.refresh(reopen=attempt > 0)
    raise AssertionError("unreachable")


class _TornView(Exception):
    """A `mode="r"` view that mixes two committed states (RocksDB secondaries can show
    one for a moment around a writer's flush): the call catches up and tries again."""


# Catch-ups a reader tries before giving up on a torn view.
_VIEW_RETRIES = 5


def _compose_locked(c: Cortex, plan: _Plan, started: float) -> Bundle:
    root = c._journal.root.hex()
    weights = c._weights_locked()
    parts: list[Columns] = []
    tier_of: list[np.ndarray] = []
    excluded: set[tuple[int, int]] = set()
    tiered = plan.verb is not None and bool(plan.objects)
    included = [t for t in _TIER_ORDER if t in plan.tiers and (t is Tier.PINNED or tiered)]
    try:
        for tier in included:
            if tier is Tier.PINNED:
                cols = _pinned(c, plan)
            elif tier is Tier.OUTCOMES:
                cols = _outcomes(c, plan, excluded)
            else:
                cols = _frame_relevant(c, plan, excluded)
            if tier is not included[-1]:
                excluded |= _id_pairs(cols)  # dedup: a later tier skips these ids
            parts.append(cols)
            tier_of.append(np.full(len(cols), _TIER_ORDER.index(tier), dtype=np.int8))
    except (ValueError, struct.error) as exc:  # a value of the wrong size
        raise _corrupt_index(c, plan, str(exc)) from None

    token_field = entry.TOKEN_FIELDS[plan.form]
    cols = Columns.concat(parts, (*_FIELDS, token_field))
    tiers = np.concatenate(tier_of) if tier_of else np.empty(0, dtype=np.int8)
    scores = live_scores(
        cols["last_used"], cols["access"], cols["citations"], cols["importance"],
        tiers == _TIER_ORDER.index(Tier.PINNED), plan.now, weights,
    )
    tokens = cols[token_field].astype(np.int64)
    if entry.unsound(cols):
        raise _corrupt_index(c, plan, "type or version out of range")
    if c._journal_at is not None and len(cols) and int(cols["created"].max()) > c._journal_at:
        raise _TornView("a memory newer than the view's last journal entry")

    # Trim: drop the lowest (score, id) first while over budget, keeping one.
    order = np.lexsort((cols["id_lo"], cols["id_hi"], scores))
    total = int(tokens.sum())
    dropped = 0
    if total > plan.budget and len(order) > 1:
        remaining = total - np.cumsum(tokens[order])
        fits = np.flatnonzero(remaining <= plan.budget)
        dropped = min(int(fits[0]) + 1 if len(fits) else len(order) - 1, len(order) - 1)
        total = int(remaining[dropped - 1])
    gone = cols.take(order[:dropped][:MAX_REACHABLE_URIS])
    reachable = [
        format_uri(MemoryType(t), raw_id, v)
        for t, raw_id, v in zip(gone["type"].tolist(), gone.ids(), gone["version"].tolist())
    ]

    # Read and render the survivors only: one multi-get of their heads.
    keep = order[dropped:]
    keys = [head_key(raw_id) for raw_id in cols.take(keep).ids()]
    memories: dict[int, list[tuple[tuple[Any, ...], Memory]]] = {0: [], 1: [], 2: []}
    rendered: dict[str, str] = {}
    outcome_tier = _TIER_ORDER.index(Tier.OUTCOMES)
    for key, raw, tier, score, created, version in zip(
        keys, c._kv.multi_get(keys), tiers[keep].tolist(), scores[keep].tolist(), cols["created"][keep].tolist(), cols["version"][keep].tolist()
    ):
        memory = None if raw is None else Memory.stored(key[len(HEAD_PREFIX):], unpack(key, raw))
        if memory is None or memory.version != version:
            if c._journal_at is not None:
                raise _TornView("an index entry and its head disagree")
            detail = "an index entry names a memory with no head" if raw is None else "an index entry and its head disagree on the version"
            raise _corrupt_index(c, plan, detail, key)
        rendered[memory.id] = render_full(memory.data) if plan.form == "full" else memory.form(plan.form)
        sort_key: tuple[Any, ...] = (-created, -score, memory.id) if tier == outcome_tier else (-score, memory.id)
        memories[tier].append((sort_key, memory))
    ordered = {t: [m for _, m in sorted(items, key=lambda x: x[0])] for t, items in memories.items()}

    return Bundle(
        pinned=ordered[0],
        frame_relevant=ordered[2],
        outcomes=ordered[1],
        rendered=rendered,
        tokens=_LazyIdMap(len(cols), cols.ids, tokens.tolist),
        scores=_LazyIdMap(len(cols), cols.ids, scores.tolist),
        reachable_uris=reachable,
        total_tokens=total,
        trimmed=dropped,
        candidates=len(cols),
        latency_ms=(time.perf_counter() - started) * 1000.0,
        form=plan.form,
        root=root,
    )
