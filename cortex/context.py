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
   the pinned tier; when the trim drops some, a hot frame's rows only as far as
   bounds by importance show they could rank among the best: `_Bounded`, which
   gives the same bundle); expired memories are dropped (tombstoned ones have no entries),
   and so are memories outside the call's scope, before anything is scored (a
   scope is verified once per call, in the same view: `cortex.scope`);
6. trim: drop the lowest (score, id) while the chosen form's tokens exceed the
   budget, keeping at least one; the 64 best of the dropped become `reachable_uris`,
   best first (the memories the budget would admit next);
7. read the survivors' heads with one multi-get and render them;
8. order the tiers.

Edges (`cortex.edges`): a superseded memory (a live `supersedes` edge points at it
from a live memory) is not a candidate in any tier unless `include_superseded=True`
(one mask over a flag bit of the index values); its id goes to
`Bundle.superseded_ids`. `Bundle.conflicts` pairs the candidates linked by a live
`contradicts` edge, looking up the edges of flagged candidates only.

Nothing is written: no journal entry, no salience bump; the root is unchanged. The
tokenizer is never loaded: token counts come from the index values.
"""

from __future__ import annotations

import functools
import heapq
import json
import operator
import struct
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Any, cast

import numpy as np

from .engine import Engine, TornView
from .errors import CorruptRecord, NoTiersIncluded, ValidationError, shown
from .scope import Evaluator, Refusal, SignedScope, capped_budget, check_signed, verify
from .writes import report_violation
from .forms import FORM_NAMES
from .markdown import bullet_text
from .ids import encode_id, encode_ids, format_uris
from .index import actor_obj, edge, entry, frame, hot, packs, pinned
from .index.entry import Columns
from .memory import Memory
from .model import Edge, MemoryType, ObjKind, Tier, Verb, check_datetime, check_ref, from_micros, json_value, to_micros
from .salience.score import DEFAULT_WEIGHTS, Weights, live_scores, raised, score_without_importance, upper_bounds
from .records import FLAG_CONTRADICTED, FLAG_SUPERSEDED, IV_FLAGS, head_keys

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
    `outcome_limit`: 0 means 3. `form`: "short", "medium" or "full". `scope`: a
    `cortex.SignedScope` the call is limited to (DESIGN §7; its budget cap applies,
    0 asking for the cap). `now`: the instant scores are computed at and the scope's
    expiry is checked at (None: the store clock). `include_superseded`: keep
    memories that a live memory supersedes (left out by default; `cortex.edges`).
    """

    verb: Verb | str | None = None
    objects: Mapping[str, str] = field(default_factory=dict)
    budget_tokens: int = 0
    include_tiers: Any = None
    outcome_limit: int = 0
    form: str = "medium"
    scope: Any = None
    now: datetime | None = None
    include_superseded: bool = False


_OPTION_NAMES = frozenset(f.name for f in fields(ContextOpts))


@dataclass(frozen=True, slots=True)
class _Plan:
    verb: Verb | None
    objects: tuple[tuple[ObjKind, str], ...]
    budget: int
    tiers: frozenset[Tier]
    outcome_limit: int
    form: str
    now: int
    scope: SignedScope | None = None
    requested_budget: int = 0  # as asked for (a scope's cap decides the budget later)
    include_superseded: bool = False


def _plan(opts: ContextOpts, clock_now: Any) -> _Plan:
    """Validate every option (even those a verb-less call does not use) and normalise."""
    if not isinstance(opts.objects, Mapping):
        raise ValidationError("objects", "must be a mapping of object kind name to ref", opts.objects)
    objects = sorted({_object(kind, ref) for kind, ref in opts.objects.items()})
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
    scope = None if opts.scope is None else check_signed(opts.scope)
    now = check_datetime("now", opts.now) or clock_now()
    return _Plan(
        verb=verb,
        objects=tuple(objects),
        budget=DEFAULT_BUDGET_TOKENS if budget == 0 else min(budget, MAX_BUDGET_TOKENS),
        tiers=tiers,
        outcome_limit=DEFAULT_OUTCOME_LIMIT if limit == 0 else limit,
        form=opts.form,
        now=to_micros(now),
        scope=scope,
        requested_budget=budget,
        include_superseded=_flag("include_superseded", opts.include_superseded),
    )


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(name, "must be a bool", value)
    return value


def _object(kind: object, ref: object) -> tuple[ObjKind, str]:
    try:
        return ObjKind.parse(kind, "objects"), check_ref("objects", ref)
    except ValidationError as exc:
        if exc.field == "objects" and isinstance(kind, str) and kind.upper() in ObjKind.__members__:
            raise type(exc)(f"objects[{shown(kind)}]", exc.rule, ref) from None  # the ref is bad: name its kind
        raise


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
            self._dict = dict(zip(encode_ids(self._ids()), self._values()))
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
    (in the chosen form); `rendered` only the survivors.

    `request` is the call's normalised options (verb name or None, objects as
    sorted [kind, ref] pairs, effective budget, tiers, outcome limit, form, and
    `now` as ISO-8601 text); `dropped_ids` every trimmed memory's id, best first;
    `weights` the salience weights the call scored with; `now` its instant. The
    interop exports (ledger, packs) are built from these.

    `conflicts`: the pairs (a, b) of candidates (survivors or trimmed) linked by a
    live `contradicts` edge, a < b by id, in id order. `superseded_ids`: the
    memories the tier scans found but left out as superseded (none with
    `include_superseded=True`), in id order (`cortex.edges`);
    `superseded_uris`, `superseded_scores` and `superseded_tokens` give their
    current URIs (same order) and the score and token count they would have had as
    candidates (the interop packs list them as drops with reason `superseded`).
    """

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
    request: Mapping[str, Any] = field(default_factory=dict, compare=False)
    dropped_ids: Sequence[str] = field(default=(), compare=False)
    weights: Weights = field(default=DEFAULT_WEIGHTS, compare=False)
    now: datetime | None = field(default=None, compare=False)
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    superseded_ids: Sequence[str] = field(default=(), compare=False)
    superseded_uris: Sequence[str] = field(default=(), compare=False)
    superseded_scores: Mapping[str, float] = field(default_factory=dict, compare=False)
    superseded_tokens: Mapping[str, int] = field(default_factory=dict, compare=False)

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
            "conflicts": [[a, b] for a, b in self.conflicts],
            "superseded_ids": list(self.superseded_ids),
        }

    def to_json(self) -> str:
        """`to_dict()` as JSON with sorted keys: byte-identical for the same state and options."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    # The exports (DESIGN §9) are built by the interop formats, which read the bundle.

    def to_hmx_pack(self, query_context: str | Mapping[str, Any] | None = None, *, edges: Iterable[Edge] = ()) -> dict[str, Any]:
        """This bundle as an HMX-1.0 Context Pack (`cortex.interop.hmx_pack`). `edges`:
        the edges between its memories, for the pack's graph_relations section (for
        example `[e for m in bundle.memories() for e in store.edges(m.uri)]`; edges
        to memories outside the pack are ignored)."""
        from .interop import hmx_pack

        return hmx_pack.build(self, query_context, edges=edges)

    def to_context_pack(self, intent: str) -> dict[str, Any]:
        """This bundle as a SecondBrain ContextPackV2 (`cortex.interop.context_pack`)."""
        from .interop import context_pack

        return context_pack.build(self, intent)

    def ledger(self) -> dict[str, Any]:
        """The replay record of the call that made this bundle (`cortex.interop.ledger`)."""
        from .interop import ledger

        return ledger.build(self)

    def to_markdown(self) -> str:
        """Sections Pinned, Frame-relevant, Outcomes and Reachable, one bullet
        `- <uri> — <text>` per memory (a full form's further lines indented under
        its bullet, so the list stays one list), and a footer. When candidates
        contradict each other, a Conflicts section comes before Reachable."""
        lines: list[str] = []
        for title, members in (("Pinned", self.pinned), ("Frame-relevant", self.frame_relevant), ("Outcomes", self.outcomes)):
            lines.append(f"## {title}")
            lines += [f"- {m.uri} — {bullet_text(self.rendered[m.id])}" for m in members] or ["(none)"]
            lines.append("")
        lines += self._conflict_lines()
        lines.append("## Reachable")
        lines += [f"- {uri}" for uri in self.reachable_uris] or ["(none)"]
        lines.append("")
        lines.append(f"_form={self.form}, total_tokens={self.total_tokens}, trimmed={self.trimmed}, latency_ms={self.latency_ms:.2f}_")
        return "\n".join(lines) + "\n"

    def _conflict_lines(self) -> list[str]:
        """A Conflicts section (only when there are some): `- <a> contradicts <b>`,
        each memory by its URI when the bundle holds it, else by its id."""
        if not self.conflicts:
            return []
        uris = {m.id: m.uri for m in self.memories()}
        uris.update({uri.rsplit("/", 1)[1].split("#")[0]: uri for uri in self.reachable_uris})
        return ["## Conflicts", *(f"- {uris.get(a, a)} contradicts {uris.get(b, b)}" for a, b in self.conflicts), ""]


# ---------------------------------------------------------------------------
# Tier scans

def _decode(values: list[bytes]) -> Columns:
    """Index values as columns of every field (the hot-frame cache keeps them all)."""
    return Columns.decode(values, hot.FIELDS)


def _dropped(cols: Columns, now: int, copies: np.ndarray | None) -> np.ndarray | None:
    """The rows every call leaves out before ranking: those expired at `now` and those
    holding a later copy of an id (`_Candidates.copies`), in row order, each once
    (None: no such row). Found as rows, not marked in a mask: a part whose earliest
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
        return None
    rows = found[0]
    if len(found) > 1 or copies is not None:  # copies come in pair order, and a row may be a copy twice
        rows = np.sort(np.concatenate(found))
        rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
    return rows if len(rows) else None


def _kept_mask(size: int, going: np.ndarray | None) -> np.ndarray:
    """The mask of the rows not in `going`."""
    keep = np.ones(size, dtype=bool)
    if going is not None:
        keep[going] = False
    return keep


def _scores(cols: Columns, pinned_rows: np.ndarray, now: int, weights: Weights) -> np.ndarray:
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


def _scanned_prefixes(plan: _Plan) -> list[bytes]:
    """Every index prefix a call with this plan reads."""
    prefixes = [pinned.PREFIX] if Tier.PINNED in plan.tiers else []
    if plan.verb is not None:
        if Tier.OUTCOMES in plan.tiers:
            prefixes += [actor_obj.prefix(plan.verb, ref) for ref in sorted({ref for _, ref in plan.objects})]
        if Tier.FRAME_RELEVANT in plan.tiers:
            prefixes += [frame.prefix(plan.verb, kind, ref) for kind, ref in plan.objects]
    return prefixes


def _corrupt_index(e: Engine, plan: _Plan, detail: str, record: bytes | None = None) -> CorruptRecord:
    return entry.first_bad(e.storage, _scanned_prefixes(plan), detail, record)


# Up to this many rows, dedup sorts them all by id (a few numpy calls); above it,
# it searches the blocks in one another (`_copies_by_search`), which scales better.
_SORT_DEDUP_ROWS = 2048


def _copies_by_sort(cols: Columns) -> np.ndarray | None:
    """The rows holding a copy of an id that an earlier row holds (None: no such
    row). Rows are in tier order, so this is the dedup priority Pinned > Outcomes >
    FrameRelevant (the rows of one id hold the same value: every index entry of a
    memory does). `np.lexsort` is stable, so copies of an id end up side by side in
    row order, and every copy after the first goes."""
    order = np.lexsort((cols["id_hi"], cols["id_lo"]))
    lo, hi = cols["id_lo"][order], cols["id_hi"][order]
    later = (lo[1:] == lo[:-1]) & (hi[1:] == hi[:-1])
    if not later.any():
        return None
    copies: np.ndarray = order[1:][later]
    return copies


@dataclass(frozen=True, slots=True)
class _Block:
    """The rows one scan gave (one tier, or one object's frame), in the order read:
    raw index values, or columns from the hot-frame cache. `by_id` when that order
    is by id (a prefix scan: the id ends the key)."""

    rows: list[bytes] | Columns
    by_id: bool
    prefix: bytes | None = None  # the frame prefix whose cached columns `rows` are

    def __len__(self) -> int:
        return len(self.rows)


def _joined(blocks: list[_Block], kept: bool) -> Columns:
    """All blocks' rows as one set of columns, in block order (new arrays: never a
    cached block's own). Consecutive raw blocks are decoded together: a call on cold
    objects decodes once. A join `kept` for later calls joins its small parts at once
    (`Columns.concat`)."""
    parts: list[Columns] = []
    raw: list[bytes] = []
    for block in blocks:
        if isinstance(block.rows, Columns):
            if raw:
                parts.append(_decode(raw))
                raw = []
            parts.append(block.rows)
        else:
            raw += block.rows
    if raw or not parts:
        parts.append(_decode(raw))
    return parts[0] if len(parts) == 1 and not any(isinstance(b.rows, Columns) for b in blocks) else Columns.concat(parts, small_joined=kept)


def _block_views(cols: Columns, blocks: list[_Block]) -> list[tuple[Columns, bool]]:
    """Each block's rows in `cols` (the `_joined` of `blocks`) as (views, by_id)."""
    views, at = [], 0
    for block in blocks:
        views.append((cols.slice(at, at + len(block)), block.by_id))
        at += len(block)
    return views


def _copies_by_search(blocks: list[tuple[Columns, bool]]) -> np.ndarray | None:
    """`_copies_by_sort` of the blocks' rows concatenated in order. Each block is
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
                rows = hot.locate(a["id_hi"], a["id_lo"], b["id_hi"], b["id_lo"])
                found.append(rows[rows >= 0] + at)
            else:
                ref = a if a_by_id else a.take(np.lexsort((a["id_lo"], a["id_hi"])))
                found.append(np.flatnonzero(hot.locate(b["id_hi"], b["id_lo"], ref["id_hi"], ref["id_lo"]) >= 0) + at)
        at += len(b)
    copies = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return copies if len(copies) else None


def _pinned(e: Engine) -> _Block:
    """Every `idx/pinned` entry (from the handle's cache after the first call)."""
    cached = None if e.hot is None else e.hot.lookup(pinned.PREFIX, e.storage)
    if cached is not None:
        return _Block(cached, by_id=True)
    values = e.storage.scan_values(pinned.PREFIX, pinned.key_of)
    e.entries_scanned += len(values)
    if e.hot is not None:
        decoded = _decode(values)
        if not entry.unsound(decoded):
            e.hot.store(pinned.PREFIX, decoded, always=True)
            return _Block(decoded, by_id=True)
    return _Block(values, by_id=True)


def _block_ids(blocks: list[_Block]) -> set[bytes]:
    """The ids of every row of `blocks`."""
    ids: set[bytes] = set()
    for block in blocks:
        ids.update(block.rows.ids() if isinstance(block.rows, Columns) else (value[:16] for value in block.rows))
    return ids


def _outcomes(e: Engine, plan: _Plan, pinned_ids: set[bytes], scope: Evaluator | None) -> _Block:
    """The `outcome_limit` newest live Events under (verb, ref) of any object that are
    not pinned and are in scope (ties: id ascending), newest first."""
    return _Block(_outcome_values(e, plan, pinned_ids, scope), by_id=False)


def _outcome_values(e: Engine, plan: _Plan, pinned_ids: set[bytes], scope: Evaluator | None) -> list[bytes]:
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


def _frame_relevant(e: Engine, plan: _Plan) -> list[_Block]:
    """Every entry under each (verb, kind, ref) frame, one block per object (copies and
    expired memories included: the composer drops them for all tiers at once). A hot
    object's entries come from the handle's cache (`cortex.index.hot`) when it has them,
    and from its pack (`cortex.index.packs`) when it has one."""
    assert plan.verb is not None
    blocks = []
    for kind, ref in plan.objects:
        prefix = frame.prefix(plan.verb, kind, ref)
        cached = None if e.hot is None else e.hot.lookup(prefix, e.storage)
        if cached is not None:
            blocks.append(_Block(cached, by_id=True, prefix=prefix))
            continue
        if e.packs is not None and prefix in e.packs:
            decoded = packs.read(e.storage, prefix)
            e.entries_scanned += len(decoded)
            if e.hot is not None:
                e.hot.store(prefix, decoded)
            blocks.append(_Block(decoded, by_id=True, prefix=prefix))
            continue
        values = e.storage.scan_values(prefix, frame.key_of(prefix))
        e.entries_scanned += len(values)
        if e.hot is not None and len(values) >= e.hot.min_rows:
            decoded = _decode(values)
            if not entry.unsound(decoded):
                e.hot.store(prefix, decoded)
                blocks.append(_Block(decoded, by_id=True, prefix=prefix))
                continue
        blocks.append(_Block(values, by_id=True))
    return blocks


@dataclass(frozen=True, slots=True)
class _Candidates:
    """The blocks of a call joined (`cols`), each row's tier (its index in
    `_TIER_ORDER`), the rows of the pinned tier, and the rows holding a later copy
    of an id (None: no id is in two blocks). The arrays are read-only: a handle's
    `JoinedCalls` keeps them for later calls on the same blocks."""

    cols: Columns
    tiers: np.ndarray
    pinned: np.ndarray
    copies: np.ndarray | None


# What `JoinedCalls` counts for a row of a call's candidates: its joined copy (14
# columns), its tier and pinned flag, and the cached row its key keeps alive.
_ROW_BYTES = 128


def _candidates(e: Engine, blocks: list[_Block], included: list[Tier], counts: list[int]) -> _Candidates:
    """The `_Candidates` of `blocks`: kept from an earlier call on the same blocks (the
    same cached columns, the same raw values) when there is one, else joined and
    kept. Calls of fewer than `JOINED_BELOW_ROWS` candidates are kept in the
    handle's `JoinedCalls`; a larger one (a hot frame's) with its frame's cached
    columns (`HotFrames.keep_joined`), which saves it finding which rows of its frame
    the other tiers hold and the facts and token totals of its joined rows (about a
    fifth of the call at 10M)."""
    small = sum(counts) < hot.JOINED_BELOW_ROWS
    joins = e.joins if small else None
    framed = None if small or e.hot is None else _framed(e.hot, blocks)
    if joins is None and framed is None:
        return _joined_candidates(blocks, included, counts, kept=False)
    key = (tuple(included), tuple(counts), tuple(b.rows if isinstance(b.rows, Columns) else tuple(b.rows) for b in blocks))
    found: object | None = None
    if framed is not None:
        frames, prefix, frame_cols = framed
        found = frames.joined(prefix, key)
    elif joins is not None:
        found = joins.get(key)
    if found is not None:
        return cast(_Candidates, found)
    made = _joined_candidates(blocks, included, counts, kept=True)
    for array in (made.tiers, made.pinned, made.copies):
        if array is not None:
            array.flags.writeable = False
    if framed is not None:
        frames.keep_joined(prefix, frame_cols, key, made)
    elif joins is not None:
        joins.put(key, made, len(made.cols) * _ROW_BYTES)
    return made


def _framed(frames: hot.HotFrames, blocks: list[_Block]) -> tuple[hot.HotFrames, bytes, Columns] | None:
    """Where a large call keeps what it made of its blocks, as (cache, prefix, columns):
    with its largest block, when that is a frame's cached columns holding more rows
    than all the other blocks together (so that what the key holds besides them is
    smaller than they are)."""
    largest = max(blocks, key=len)
    if largest.prefix is None or not isinstance(largest.rows, Columns) or 2 * len(largest) <= sum(map(len, blocks)):
        return None
    return frames, largest.prefix, largest.rows


def _joined_candidates(blocks: list[_Block], included: list[Tier], counts: list[int], kept: bool) -> _Candidates:
    cols = _joined(blocks, kept)
    tiers = np.repeat(np.array([_TIER_ORDER.index(t) for t in included], dtype=np.int8), counts)
    copies = None
    if len(blocks) > 1:
        copies = _copies_by_sort(cols) if len(cols) <= _SORT_DEDUP_ROWS else _copies_by_search(_block_views(cols, blocks))
    return _Candidates(cols, tiers, tiers == _TIER_ORDER.index(Tier.PINNED), copies)


# ---------------------------------------------------------------------------
# compose


def compose(e: Engine, opts: ContextOpts | None, overrides: dict[str, Any]) -> Bundle:
    """The Bundle for a task (DESIGN §6): validate, then compose on one consistent view."""
    started = time.perf_counter()
    e.check_open()
    if opts is not None and not isinstance(opts, ContextOpts):
        raise ValidationError("opts", f"must be a ContextOpts, not {type(opts).__name__}", opts)
    for name in overrides:
        if name not in _OPTION_NAMES:
            raise ValidationError(name, f"unknown context() option; options: {', '.join(sorted(_OPTION_NAMES))}")
    opts = ContextOpts(**overrides) if opts is None else replace(opts, **overrides)
    plan = _plan(opts, e.now)
    if plan.scope is None:
        return e.read(lambda: _compose_locked(e, plan, started), catch_up=True)
    clock_now = to_micros(e.now()) if opts.now is not None else plan.now
    try:
        return e.read(lambda: _compose_locked(e, plan, started, clock_now), catch_up=True)
    except Refusal as refusal:
        report_violation(e, refusal)
        raise refusal.error from None


# URIs by (type code, id, version): hot objects trim the same memories call after
# call. A plain dict, cleared when full: its lookups and updates need no lock.
_URIS: dict[tuple[int, bytes, int], str] = {}
_URIS_MAX = 1 << 16


def _uris(types: list[int], raw_ids: list[bytes], versions: list[int]) -> list[str]:
    """The URIs of memories named by columns: from `_URIS`, the rest made in one batch."""
    keys = list(zip(types, raw_ids, versions))
    found = [_URIS.get(k) for k in keys]
    missing = [k for k, uri in zip(keys, found) if uri is None]
    if not missing:
        return cast("list[str]", found)
    made = dict(zip(missing, format_uris([t for t, _, _ in missing], [i for _, i, _ in missing], [v for _, _, v in missing])))
    if len(_URIS) + len(made) > _URIS_MAX:
        _URIS.clear()
    _URIS.update(made)
    return [made[k] if uri is None else uri for k, uri in zip(keys, found)]


_SORT_KEY = operator.itemgetter(0)


def _compose_locked(e: Engine, plan: _Plan, started: float, clock_now: int = 0) -> Bundle:
    journal, journal_at = e.view_state()
    root = journal.root.hex()
    scope: Evaluator | None = None
    if plan.scope is not None:
        signed = plan.scope
        digest = verify(e.storage, signed, e.actor, plan.now, clock_now, e.scopes, (journal.seq, journal.root))
        requested = capped_budget(signed, digest, plan.requested_budget, 0)
        plan = replace(plan, budget=DEFAULT_BUDGET_TOKENS if requested == 0 else min(requested, MAX_BUDGET_TOKENS))
        scope = e.scopes.evaluator(e.storage, signed, journal.seq, journal.root)
    weights = e.weights()
    tiered = plan.verb is not None and bool(plan.objects)
    included = [t for t in _TIER_ORDER if t in plan.tiers and (t is Tier.PINNED or tiered)]
    token_field = entry.TOKEN_FIELDS[plan.form]
    blocks: list[_Block] = []
    counts: list[int] = []
    try:
        for tier in included:
            if tier is Tier.PINNED:
                found = [_pinned(e)]
            elif tier is Tier.OUTCOMES:
                found = [_outcomes(e, plan, _block_ids(blocks), scope)]
            else:
                found = _frame_relevant(e, plan)
            blocks += found
            counts.append(sum(len(b) for b in found))
        candidates = _candidates(e, blocks, included, counts)
    except (ValueError, struct.error) as exc:  # a value of the wrong size
        raise _corrupt_index(e, plan, str(exc)) from None
    cols, tiers = candidates.cols, candidates.tiers
    facts = cols.facts()
    if not facts.sound:
        raise _corrupt_index(e, plan, "type or version out of range")
    if journal_at is not None and facts.max_created > journal_at:
        raise TornView("a memory newer than the view's last journal entry")
    going = _dropped(cols, plan.now, candidates.copies)
    stale = _Stale.empty()
    superseding = not plan.include_superseded and bool(facts.flags & FLAG_SUPERSEDED)
    if scope is not None or superseding:
        keep = _kept_mask(len(cols), going)
        if scope is not None:
            keep &= scope.mask(e.storage, cols["id_hi"], cols["id_lo"], cols["type"])
        if superseding:
            superseded = (cols["flags"] & FLAG_SUPERSEDED) != 0
            stale = _Stale(cols.take(keep & superseded), tiers[keep & superseded], plan, weights)
            keep &= ~superseded
        going = np.flatnonzero(~keep) if not keep.all() else None
    count = len(cols) - (0 if going is None else len(going))
    # The bundle reads the kept rows' ids, tokens and scores when first asked (no
    # later write changes the arrays they are read from: `cortex.index.hot`).
    keep_mask = functools.cache(lambda: _kept_mask(len(cols), going))
    kept: Callable[[], Columns] = functools.cache(lambda: cols if going is None else cols.take(keep_mask()))
    tokens = cols[token_field]  # u16 or u32: summed as int64, never copied whole
    candidate_tokens = cols.total(token_field) - (0 if going is None else int(tokens[going].sum(dtype=np.int64)))
    # Every candidate is scored, unless the trim drops some and a large part of them
    # lies in the frame tier: then `_Bounded` scores only what can rank among the best,
    # and the bundle's `scores` and `dropped_ids` score every candidate when first read.
    all_scores: Callable[[], np.ndarray]
    some_dropped = candidate_tokens > plan.budget and count > 1
    bounded = _bounded_parts(cols, tiers, plan.now, weights) if some_dropped else []
    if bounded:
        ranking = _Bounded(cols, candidates.pinned, bounded, plan.now, weights, going)
        scores = ranking.scores  # the scores of the rows it ranked, where they lie
        all_scores = functools.cache(lambda: _ranked_scores(cols, candidates.pinned, plan.now, weights, going))
        trim = _trim(ranking.top, tokens, plan.budget, count)
    else:
        scores = _ranked_scores(cols, candidates.pinned, plan.now, weights, going)
        all_scores = lambda: scores
        if not some_dropped:  # every candidate survives
            trim = _Trimmed(_ranking(scores, cols["id_hi"], cols["id_lo"])[:count][::-1], np.zeros(0, dtype=np.int64), candidate_tokens)
        else:
            trim = _trim(functools.partial(_top, scores, cols), tokens, plan.budget, count)
    dropped, total = count - len(trim.survivors), trim.total

    # The survivors and the reachable rows in one take (its columns gathered once);
    # then read and render the survivors only: one multi-get of the heads not in view.
    survivors = trim.survivors
    named = cols.take(np.concatenate([survivors, trim.reachable]))
    named_ids, versions = named.ids(), named["version"].tolist()
    picked = len(survivors)
    reachable = _uris(named["type"][picked:].tolist(), named_ids[picked:], versions[picked:])
    keys = head_keys(named_ids[:picked])
    memories: dict[int, list[tuple[tuple[Any, ...], Memory]]] = {0: [], 1: [], 2: []}
    rendered: dict[str, str] = {}
    outcome_tier = _TIER_ORDER.index(Tier.OUTCOMES)
    for key, memory, tier, score, created, version in zip(
        keys, e.current_views(keys), tiers[survivors].tolist(), scores[survivors].tolist(), named["created"][:picked].tolist(), versions[:picked]
    ):
        if memory is None or memory.version != version:
            if journal_at is not None:
                raise TornView("an index entry and its head disagree")
            detail = "an index entry names a memory with no head" if memory is None else "an index entry and its head disagree on the version"
            raise _corrupt_index(e, plan, detail, key)
        memory_id = memory.id
        rendered[memory_id] = memory.form(plan.form)
        sort_key: tuple[Any, ...] = (-created, -score, memory_id) if tier == outcome_tier else (-score, memory_id)
        memories[tier].append((sort_key, memory))
    ordered = {t: [m for _, m in sorted(items, key=_SORT_KEY)] for t, items in memories.items()}

    return Bundle(
        pinned=ordered[0],
        frame_relevant=ordered[2],
        outcomes=ordered[1],
        rendered=rendered,
        tokens=_LazyIdMap(count, lambda: kept().ids(), lambda: (tokens if going is None else tokens[keep_mask()]).tolist()),
        scores=_LazyIdMap(count, lambda: kept().ids(), lambda: (all_scores() if going is None else all_scores()[keep_mask()]).tolist()),
        reachable_uris=reachable,
        total_tokens=total,
        trimmed=dropped,
        candidates=count,
        latency_ms=(time.perf_counter() - started) * 1000.0,
        form=plan.form,
        root=root,
        request=_request(plan),
        dropped_ids=_LazyTexts(lambda: _texts(cols.take(_ranking(all_scores(), cols["id_hi"], cols["id_lo"])[len(trim.survivors):count]).ids())),
        weights=weights,
        now=from_micros(plan.now),
        conflicts=_conflicts(e, kept()) if facts.flags & FLAG_CONTRADICTED else [],
        superseded_ids=_LazyTexts(lambda: _texts(stale.ids())),
        superseded_uris=_LazyTexts(stale.uris),
        superseded_scores=_LazyIdMap(len(stale), stale.ids, stale.scores),
        superseded_tokens=_LazyIdMap(len(stale), stale.ids, stale.tokens),
    )


@dataclass(frozen=True, slots=True)
class _Trimmed:
    """The outcome of the trim: `survivors` (row indexes, lowest (score, id) first:
    the order the heads are read and rendered in), `reachable` (the best dropped
    rows, best first, at most `MAX_REACHABLE_URIS`) and the survivors' token total."""

    survivors: np.ndarray
    reachable: np.ndarray
    total: int


# How many of the best rows the trim ranks first; it ranks four times more while
# the budget and the reachable list need more than it ranked.
_FIRST_RANKED = 256


def _ranked_scores(cols: Columns, pinned_rows: np.ndarray, now: int, weights: Weights, going: np.ndarray | None) -> np.ndarray:
    """The live score of every row, and -inf for the rows in `going` (a live score is
    never negative), so that they rank after every candidate and the trim reaches
    none of them. They stay where they are: taking the rest out would copy every
    column a hot call reads, tens of thousands of rows, to lose a handful."""
    scores = _scores(cols, pinned_rows, now, weights)
    if going is not None:
        scores[going] = -np.inf
    return scores


def _trim(top: Callable[[int], np.ndarray], tokens: np.ndarray, budget: int, count: int) -> _Trimmed:
    """DESIGN §6 step 6 when the `count` candidates' tokens exceed the budget: while
    the token total exceeds the budget, drop the candidate with the lowest (score,
    id), always keeping one; the survivors are thus the longest run of best rows
    whose tokens fit (at least one), and `reachable` the rows that come next.
    Only the best rows are ranked (a hot object has tens of thousands of candidates
    and a budget admits at most a few hundred): `top(m)` gives the `m` best exactly,
    best first (`_top`, `_Bounded.top`), and when the survivors plus the reachable
    list do not fit in them, `m` grows until they do or every candidate is ranked."""
    m = min(count, _FIRST_RANKED)
    while True:
        best = top(m)
        running = np.cumsum(tokens[best], dtype=np.int64)
        over = np.flatnonzero(running > budget)
        # Tokens are never negative, so the running total only grows: the survivors are
        # the rows before the first one that takes it over the budget (at least one).
        kept = max(1, int(over[0])) if len(over) else m
        if len(over) and (kept + MAX_REACHABLE_URIS <= m or m == count):
            break
        m = min(count, m * 4)
    return _Trimmed(best[:kept][::-1], best[kept : kept + MAX_REACHABLE_URIS], int(running[kept - 1]))


# A frame-tier part of a call's candidates with at least this many rows (a hot
# frame's cached columns) is scored importance by importance (`_Bounded`).
_BOUNDED_FROM = 16384


def _bounded_parts(cols: Columns, tiers: np.ndarray, now: int, weights: Weights) -> list[tuple[int, Columns, list[tuple[float, int]]]]:
    """The parts of `cols` that `_Bounded` scores importance by importance, each with
    the row it starts at and its groups (`_part_groups`): those of `_BOUNDED_FROM`
    rows or more in the frame tier (the rows are in tier order, so a part whose first
    row is in the last tier is all in it: no pinned floor applies to its rows),
    where bounds can leave most of the part unscored."""
    found = []
    at = 0
    frame_tier = _TIER_ORDER.index(Tier.FRAME_RELEVANT)
    for part in cols.parts():
        if len(part) and len(part) >= _BOUNDED_FROM and tiers[at] == frame_tier:
            groups = _part_groups(part, now, weights)
            if groups is not None:
                found.append((at, part, groups))
        at += len(part)
    return found


@dataclass(frozen=True, slots=True)
class _PartGroups:
    """What `_part_groups` worked out for a part at `now` under `weights`: its groups
    as (-bound, importance), best bound first, or None where bounding does not pay."""

    weights: Weights
    now: int
    groups: list[tuple[float, int]] | None


class _LastGroups:
    """A part's last `_PartGroups` (one, so that weights learned call after call do
    not pile up beside a long-lived cached frame)."""

    __slots__ = ("kept",)

    def __init__(self) -> None:
        self.kept: _PartGroups | None = None


def _part_groups(part: Columns, now: int, weights: Weights) -> list[tuple[float, int]] | None:
    """The groups of `part` as (-bound, importance), best bound first, or None where
    bounding would not pay (`_worth_bounding`). Kept with the part for later calls
    with the same weights at the same time or later: a bound made at a time is still
    a bound later, as a memory's recency only falls while time passes (~27 µs a call
    saved at 10M).

    The first call on a part that writes or new entries made anew (`hot.REFRESHED`:
    a writer's own cached frame is new columns after each of its writes) scores
    every row and works out nothing: the greatest fields and the counts by
    importance cost ~80 µs at 40,000 rows. Other parts (read from the store, as a
    reader's first call on an object reads them) are looked at from their first call."""
    if part.known(hot.REFRESHED) and not part.known("called"):
        part.derived("called", lambda _: True)
        return None
    last = part.derived("last groups", lambda _: _LastGroups())
    kept = last.kept
    if kept is None or kept.weights != weights or kept.now > now:
        groups = None
        if _worth_bounding(part, now, weights):
            last_used, access, citations, importance = part.derived("maxima", _maxima)
            bounds = upper_bounds(last_used, access, citations, np.arange(importance + 1, dtype=np.uint8), now, weights)
            groups = sorted(zip((-bounds).tolist(), range(importance + 1)))
        kept = last.kept = _PartGroups(weights, now, groups)
    return kept.groups


def _maxima(part: Columns) -> tuple[int, int, int, int]:
    """The greatest last use, access count, citation count and importance of the rows."""
    return (int(part["last_used"].max()), int(part["access"].max()), int(part["citations"].max()),
            int(part["importance"].max()))


# Opening a group (`_Bounded`) costs about what scoring and ranking this many rows
# at once costs: a dozen numpy calls on its counted rows and first plain rows (at
# 10M, ~31 µs a group opened against ~3.8 ns a row scored and ranked whole).
_GROUP_ROWS = 8192


def _worth_bounding(part: Columns, now: int, weights: Weights) -> bool:
    """Whether scoring `part` group by group (`_Bounded`) costs less than scoring every
    row at once: whether the groups a call may have to open, at `_GROUP_ROWS` each
    and their counted rows, come to fewer rows than the part holds. At 10M, under
    the weights the harness's store learned (one group opened), a hot call took 0.28
    ms bounded against 0.46 unbounded; under DESIGN's default weights (four or five)
    0.44 against 0.52; with no weight on importance (all eleven) 0.69 against 0.50.
    This only chooses the way: both give the same bundle.

    A row of importance `v` or more scores at least `wd * v / 10` and its recency's
    share over the weights' sum (its other terms are never negative). So once the
    rows of importance `v` and above number `_FIRST_RANKED`, the best `_FIRST_RANKED`
    candidates score at least that share of `v` and of the `_FIRST_RANKED`-th latest
    last use of those rows, and a group whose bound is no higher is never opened. A
    group's bound is its importance's share plus `score_without_importance` at the
    part's greatest fields."""
    weight_sum = sum(weights.as_tuple())
    if weight_sum <= 0:
        return False
    last_used, access, citations, importance = part.derived("maxima", _maxima)
    counts: list[int] = part.derived("importance counts", lambda p: np.bincount(p["importance"]).tolist())
    per_step = weights.importance / 10.0 / weight_sum
    above = 0
    for floor_importance in range(importance, -1, -1):
        above += counts[floor_importance]
        if above >= _FIRST_RANKED:
            break
    else:
        return False
    rest = score_without_importance(last_used, access, citations, now, weights)
    # First without the recency share, which takes two more passes over the part:
    # more groups open, each with all its rows counted; if bounding pays even so, it pays.
    opened = [v for v, count in enumerate(counts) if count and rest + per_step * v > per_step * floor_importance]
    if sum(_GROUP_ROWS + counts[v] for v in opened) < len(part):
        return True
    latest = part.derived(("latest of the best", _FIRST_RANKED, floor_importance), lambda p: _latest(p, floor_importance, _FIRST_RANKED))
    floor = per_step * floor_importance + score_without_importance(latest, 0, 0, now, weights)
    counted: list[int] = part.derived("counted counts", _counted_counts)
    opened = [v for v in opened if rest + per_step * v > floor]
    return sum(_GROUP_ROWS + counted[v] for v in opened) < len(part)


def _latest(part: Columns, importance: int, m: int) -> int:
    """The `m`-th latest last use of the rows of `importance` or more (there are `m` or more)."""
    last_used = part["last_used"][part["importance"] >= importance]
    return int(np.partition(last_used, len(last_used) - m)[len(last_used) - m])


def _counted(access: np.ndarray, citations: np.ndarray) -> np.ndarray:
    """Which rows have an access or a citation (`_Group.counted`): the rest of a group
    score by their last use alone."""
    counted: np.ndarray = (access != 0) | (citations != 0)
    return counted


def _counted_counts(part: Columns) -> list[int]:
    """How many rows of each importance have an access or a citation (`_counted`)."""
    counted = _counted(part["access"], part["citations"])
    counts: list[int] = np.bincount(part["importance"][counted], minlength=int(part["importance"].max()) + 1).tolist()
    return counts


@dataclass(frozen=True, slots=True)
class _Rows:
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
    def of(part: Columns, rows: np.ndarray) -> _Rows:
        return _Rows(rows, *(part[name][rows] for name in ("last_used", "access", "citations", "importance", "id_hi", "id_lo")))

    def take(self, at: np.ndarray) -> _Rows:
        """These rows at `at` (indexes into these rows)."""
        return _Rows(*(getattr(self, name)[at] for name in self.__slots__))

    def scores(self, start: int, stop: int, now: int, weights: Weights) -> np.ndarray:
        """The live scores of rows `start` to `stop` (in this order; none is pinned)."""
        return live_scores(self.last_used[start:stop], self.access[start:stop], self.citations[start:stop],
                           self.importance[start:stop], np.zeros(stop - start, dtype=bool), now, weights)


@dataclass(frozen=True, slots=True)
class _Group:
    """The rows of a part with one importance, in two sets: `counted`, those with an
    access or a citation (a few hundred of a hot frame's tens of thousands), in row
    order; and `plain`, the rest, latest last use first. A plain row's score is a
    function of its last use alone (its other fields are those of every plain row of
    the group), and grows with it: so the plain rows after any one of them score at
    most `raised` of its score, and a call scores them from the first down only as
    far as it needs (`_Bounded`)."""

    counted: _Rows
    plain: _Rows

    @staticmethod
    def of(part: Columns, importance: int) -> _Group:
        # Gathered from the part once (a hot frame's columns lie far apart in memory),
        # then split.
        group = _Rows.of(part, np.flatnonzero(part["importance"] == importance))
        counted = _counted(group.access, group.citations)
        plain = np.flatnonzero(~counted)
        latest_first = plain[np.argsort(group.last_used[plain], kind="stable")[::-1]]
        return _Group(group.take(np.flatnonzero(counted)), group.take(latest_first))


@dataclass(slots=True, eq=False)  # one tail is another only if it is the same object
class _Tail:
    """The plain rows of a group that a call has not scored: those after the first
    `scored` (the group's rows start at row `start` of the call's candidates), none
    scoring above `bound`."""

    group: _Group
    start: int
    scored: int
    bound: float


class _Bounded:
    """A call's ranking without scoring every candidate: the same `top(m)` as `_top`
    over the scores of every row, for calls whose candidates hold a large part in
    the frame tier (a hot frame: tens of thousands of rows, of which the trim keeps
    a few dozen).

    The rows of such a part are split into groups by importance, and each group has
    an upper bound: the score of the part's greatest last use, access count and
    citation count at that importance (`upper_bounds`; a score grows with each of
    its fields, and no weight is negative). The other parts are scored whole first.
    Then, while fewer than `m` scored candidates score above every bound of the rows
    not scored, the rows with the highest bound are scored next: a group not opened
    yet (its counted rows, and its first plain rows: `_Group`), or more plain rows of
    an opened group (its tail, whose bound is `raised` of its last scored plain row's
    score). No row left unscored can then be among the `m` best (it scores below `m`
    scored ones, strictly, so no tie by id can lift it), and the `m` best of the
    scored rows are the `m` best of all. With the weights the harness's stores learn,
    a hot call opens one group in eleven and scores a few hundred of its rows.

    The rows in `going` score -inf, as in `_ranked_scores`. `scores` holds the
    scores of the rows `top` returned, where they lie; its other entries are unset.
    A part keeps its greatest fields and the groups it was asked for
    (`Columns.derived`): a hot frame's cached columns serve call after call. The
    hot-frame cache does not count them in its budget: 41 bytes a row at most, when
    calls have asked for every group (one or two groups in eleven, as a rule).
    """

    def __init__(self, cols: Columns, pinned_rows: np.ndarray, parts: list[tuple[int, Columns, list[tuple[float, int]]]],
                 now: int, weights: Weights, going: np.ndarray | None) -> None:
        self._parts, self._now, self._weights = parts, now, weights
        self._gone: np.ndarray | None = None
        if going is not None:
            self._gone = np.zeros(len(cols), dtype=bool)
            self._gone[going] = True
        self.scores = np.empty(len(cols))
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
        self._tails: list[_Tail] = []  # the opened groups with plain rows not scored, in the order opened

    def _add(self, rows: np.ndarray, values: np.ndarray, id_hi: np.ndarray, id_lo: np.ndarray) -> None:
        """Count `rows` as scored, the ones in `going` at -inf."""
        if self._gone is not None and len(rows):
            values[self._gone[rows]] = -np.inf
        self._scored.append((rows, values, id_hi, id_lo))
        self._values = None

    def _highest(self) -> _Tail | None:
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
        group = part.derived(("group", importance), lambda p: _Group.of(p, importance))
        counted = group.counted
        if len(counted.rows):
            self._add(counted.rows + start, counted.scores(0, len(counted.rows), self._now, self._weights), counted.id_hi, counted.id_lo)
        if len(group.plain.rows):
            tail = _Tail(group, start, 0, np.inf)
            self._tails.append(tail)
            self._score_plain(tail, m + m // 4)  # a few more than asked for: enough, as a rule, to rank above the tail's bound

    def _score_plain(self, tail: _Tail, stop: int) -> None:
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
        """The indexes of the `m` best candidates by (score, id), best first (`m` at
        most the candidates not in `going`)."""
        while not self._holds_best(m):
            self._score_more(m)
        rows, values, id_hi, id_lo = (np.concatenate(column) for column in zip(*self._scored))
        above = self._unscored_bound()
        if above is not None:  # the m best are among those above it
            rows_above = np.flatnonzero(values > above)
            rows, values, id_hi, id_lo = rows[rows_above], values[rows_above], id_hi[rows_above], id_lo[rows_above]
        best = _top(values, Columns({"id_hi": id_hi, "id_lo": id_lo}), m)
        ranked: np.ndarray = rows[best]
        self.scores[ranked] = values[best]
        return ranked


def _ranking(scores: np.ndarray, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Every row index, best (score, id) first."""
    order: np.ndarray = np.lexsort((lo, hi, scores))[::-1]
    return order


def _top(scores: np.ndarray, cols: Columns, m: int) -> np.ndarray:
    """The indexes of the `m` best rows by (score, id), best first: every row scoring
    at least a cutoff that `m` rows reach (ties included) is ranked, and the first
    `m` kept. `cols` gives the rows' ids; only the ranked rows' are read."""
    n = len(scores)
    if m >= n:
        return _ranking(scores, cols["id_hi"], cols["id_lo"])
    rows = _above_cutoff(scores, m)
    ids = cols.take(rows)
    ranked: np.ndarray = rows[_ranking(scores[rows], ids["id_hi"], ids["id_lo"])][:m]
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


def _texts(raw_ids: list[bytes]) -> list[str]:
    return encode_ids(raw_ids)


class _Stale:
    """The superseded memories a call left out, in id order, with the score and
    token count each would have had as a candidate (all computed on first access:
    a hot object can hold thousands of them). `cols` is a take of the call's
    candidates, whose arrays no later write changes (`cortex.index.hot`)."""

    def __init__(self, cols: Columns | None, tiers: np.ndarray | None, plan: _Plan | None, weights: Weights) -> None:
        self._rows, self._tiers, self._plan, self._weights = cols, tiers, plan, weights
        self._sorted: tuple[Columns, np.ndarray] | None = None

    @staticmethod
    def empty() -> _Stale:
        return _Stale(None, None, None, DEFAULT_WEIGHTS)

    def __len__(self) -> int:
        return 0 if self._rows is None else len(self._rows)

    def _in_id_order(self) -> tuple[Columns, np.ndarray] | None:
        if self._sorted is None and self._rows is not None and self._tiers is not None:
            order = np.lexsort((self._rows["id_lo"], self._rows["id_hi"]))
            self._sorted = self._rows.take(order), self._tiers[order]
        return self._sorted

    def ids(self) -> list[bytes]:
        got = self._in_id_order()
        return [] if got is None else got[0].ids()

    def uris(self) -> list[str]:
        got = self._in_id_order()
        if got is None:
            return []
        cols = got[0]
        return _uris(cols["type"].tolist(), cols.ids(), cols["version"].tolist())

    def scores(self) -> list[float]:
        got = self._in_id_order()
        if got is None or self._plan is None:
            return []
        c, tiers = got
        scores: list[float] = live_scores(
            c["last_used"], c["access"], c["citations"], c["importance"], tiers == _TIER_ORDER.index(Tier.PINNED),
            self._plan.now, self._weights,
        ).tolist()
        return scores

    def tokens(self) -> list[int]:
        got = self._in_id_order()
        if got is None or self._plan is None:
            return []
        tokens: list[int] = got[0][entry.TOKEN_FIELDS[self._plan.form]].astype(np.int64).tolist()
        return tokens


def _conflicts(e: Engine, cols: Columns) -> list[tuple[str, str]]:
    """The pairs of candidates linked by a live `contradicts` edge, in id order."""
    flagged = (cols["flags"] & FLAG_CONTRADICTED) != 0
    if not flagged.any():
        return []
    return [(encode_id(a), encode_id(b)) for a, b in edge.conflicts(e.storage, cols.take(flagged).ids())]


def _request(plan: _Plan) -> dict[str, Any]:
    """The normalised options of a call, JSON-ready (the ledger's `request`)."""
    return {
        "verb": None if plan.verb is None else plan.verb.name.lower(),
        "objects": [[kind.name.lower(), ref] for kind, ref in plan.objects],
        "budget_tokens": plan.budget,
        "include_tiers": [t.value for t in _TIER_ORDER if t in plan.tiers],
        "outcome_limit": plan.outcome_limit,
        "form": plan.form,
        "now": json_value(from_micros(plan.now)),
        **({"include_superseded": True} if plan.include_superseded else {}),
    }


class _LazyTexts(Sequence[str]):
    """Ids or URIs as text, made on first access (a hot call drops thousands)."""

    def __init__(self, make: Callable[[], list[str]]) -> None:
        self._make = make
        self._ids: list[str] | None = None

    def _built(self) -> list[str]:
        if self._ids is None:
            self._ids = self._make()
        return self._ids

    def __getitem__(self, index: Any) -> Any:
        return self._built()[index]

    def __len__(self) -> int:
        return len(self._built())

    def __repr__(self) -> str:  # what print() shows: the ids, as for a list (built on demand)
        return repr(self._built())
