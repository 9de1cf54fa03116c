"""The `Bundle` a `context()` call returns, and `CallRows`: the one lazy view of
a call's candidates that the bundle's per-candidate fields read on first access.

A call at a hot object scores thousands of candidates; turning each 16-byte id into
its 26-character text costs more than the whole scoring, so the fields that cover
every candidate (`tokens`, `scores`, `dropped_ids`, the superseded memories) are
made only when a caller looks. They read columns that no later write changes
(`cortex.cache.hot`), so a bundle stays as its call returned it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, overload

import numpy as np

from ..cache.uris import UriMemo
from ..columns import Columns
from ..ids import encode_ids
from ..markdown import bullet_text
from ..index import entry
from ..memory import Memory
from ..model import Edge
from ..salience.score import DEFAULT_WEIGHTS, Weights, live_scores
from ..view import exporters
from .candidates import kept_mask
from .plan import PINNED_TIER, Plan
from .rank import Ranker, ranking

V = TypeVar("V")


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

    # The exports are built by the interop formats, which read the bundle as a
    # `cortex.view.BundleView`; `cortex.view.exporters()` reaches them.

    def to_hmx_pack(self, query_context: str | Mapping[str, Any] | None = None, *, edges: Iterable[Edge] = (),
                    sections: Sequence[str] | None = None) -> dict[str, Any]:
        """This bundle as an HMX-1.0 Context Pack (`cortex.interop.hmx_pack`). `edges`:
        the edges between its memories, for the pack's graph_relations section (for
        example `[e for m in bundle.memories() for e in store.edges(m.uri)]`; edges
        to memories outside the pack are ignored). `sections`: only these sections
        (seed 000's names, e.g. `["procedures", "constraints"]`)."""
        return exporters().hmx_pack(self, query_context, edges, sections)

    def to_context_pack(self, intent: str) -> dict[str, Any]:
        """This bundle as a SecondBrain ContextPackV2 (`cortex.interop.context_pack`)."""
        return exporters().context_pack(self, intent)

    def ledger(self) -> dict[str, Any]:
        """The replay record of the call that made this bundle (`cortex.interop.ledger`)."""
        return exporters().ledger(self)

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


class IdMap(Mapping[str, V]):
    """id -> value for some of a call's candidates, built on first access from the
    raw ids and the values in the same order (`CallRows`)."""

    __slots__ = ("_size", "_ids", "_values", "_dict")

    def __init__(self, size: int, ids: Callable[[], list[bytes]], values: Callable[[], list[V]]) -> None:
        self._size = size
        self._ids = ids
        self._values = values
        self._dict: dict[str, V] | None = None

    def _built(self) -> dict[str, V]:
        if self._dict is None:
            self._dict = dict(zip(encode_ids(self._ids()), self._values()))
        return self._dict

    def __getitem__(self, key: str) -> V:
        return self._built()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built())

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"{{...{len(self)} ids}}"


class Texts(Sequence[str]):
    """Ids or URIs as text, made on first access (a hot call drops thousands)."""

    __slots__ = ("_make", "_texts")

    def __init__(self, make: Callable[[], list[str]]) -> None:
        self._make = make
        self._texts: list[str] | None = None

    def _built(self) -> list[str]:
        if self._texts is None:
            self._texts = self._make()
        return self._texts

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._built()[index]

    def __len__(self) -> int:
        return len(self._built())

    def __repr__(self) -> str:  # what print() shows: the ids, as for a list (built on demand)
        return repr(self._built())


class CallRows:
    """What a bundle reads of its call's candidates when first asked: the kept rows'
    ids, tokens and scores, the dropped ids best first, and the superseded memories
    the call left out (in id order, with the score and token count each would have
    had as a candidate). Every array it reads is one no later write changes."""

    def __init__(self, cols: Columns, going: np.ndarray, ranker: Ranker, token_field: str, survivors: int, count: int,
                 stale: Columns | None, stale_tiers: np.ndarray | None, plan: Plan, weights: Weights, uris: UriMemo) -> None:
        self._cols, self._going, self._ranker = cols, going, ranker
        self._token_field, self._survivors, self._count = token_field, survivors, count
        self._stale, self._stale_tiers, self._plan, self._weights, self._uris = stale, stale_tiers, plan, weights, uris
        self._mask: np.ndarray | None = None
        self._kept: Columns | None = None
        self._stale_sorted: tuple[Columns, np.ndarray] | None = None

    # -- the kept candidates ---------------------------------------------------

    def keep_mask(self) -> np.ndarray:
        if self._mask is None:
            self._mask = kept_mask(len(self._cols), self._going)
        return self._mask

    def kept(self) -> Columns:
        """The candidates not left out (the call's columns themselves when none was)."""
        if self._kept is None:
            self._kept = self._cols if not len(self._going) else self._cols.take(self.keep_mask())
        return self._kept

    def kept_ids(self) -> list[bytes]:
        return self.kept().ids()

    def kept_tokens(self) -> list[int]:
        tokens = self._cols[self._token_field]
        values: list[int] = (tokens if not len(self._going) else tokens[self.keep_mask()]).tolist()
        return values

    def kept_scores(self) -> list[float]:
        scores = self._ranker.all_scores()
        values: list[float] = (scores if not len(self._going) else scores[self.keep_mask()]).tolist()
        return values

    def dropped_ids(self) -> list[str]:
        cols = self._cols
        order = ranking(self._ranker.all_scores(), cols["id_hi"], cols["id_lo"])
        return encode_ids(cols.take(order[self._survivors : self._count]).ids())

    # -- the superseded memories left out ----------------------------------------

    def stale_count(self) -> int:
        return 0 if self._stale is None else len(self._stale)

    def _in_id_order(self) -> tuple[Columns, np.ndarray] | None:
        if self._stale_sorted is None and self._stale is not None and self._stale_tiers is not None:
            order = np.lexsort((self._stale["id_lo"], self._stale["id_hi"]))
            self._stale_sorted = self._stale.take(order), self._stale_tiers[order]
        return self._stale_sorted

    def stale_ids(self) -> list[bytes]:
        got = self._in_id_order()
        return [] if got is None else got[0].ids()

    def stale_id_texts(self) -> list[str]:
        return encode_ids(self.stale_ids())

    def stale_uris(self) -> list[str]:
        got = self._in_id_order()
        if got is None:
            return []
        cols = got[0]
        return self._uris.uris(cols["type"].tolist(), cols.ids(), cols["version"].tolist())

    def stale_scores(self) -> list[float]:
        got = self._in_id_order()
        if got is None:
            return []
        c, tiers = got
        scores: list[float] = live_scores(
            c["last_used"], c["access"], c["citations"], c["importance"], tiers == PINNED_TIER, self._plan.now, self._weights,
        ).tolist()
        return scores

    def stale_tokens(self) -> list[int]:
        got = self._in_id_order()
        if got is None:
            return []
        tokens: list[int] = got[0][entry.TOKEN_FIELDS[self._plan.form]].astype(np.int64).tolist()
        return tokens
