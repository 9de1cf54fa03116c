"""The entries of an HMX-C pack and how its budget is shared among them (seed 000 §3-§4).

A `Candidate` is a memory as an entry, a `Relation` an edge between two entries;
`Plan` fills the sections by the budgets `hmx_budget.allocate` gives them (rules
1-4), cuts a section's first entry when it alone does not fit (rule 5), lends
the room left over to the best entries that did not fit (rule 3), then gives
relations the room the memory sections leave, and sheds entries for the entry
and size limits (lowest first, relations first, a section's last entry last).
docs/interop-seeds.md has the whole account.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..forms import DEFAULT_ENCODING, Tokenizer
from ..learn.artifacts import ARTIFACT_TAG, PAYLOAD_KEY
from ..memory import Memory
from ..model import Belief, Edge, Event, Pattern
from .canonical import JSONDict
from .hmx_budget import allocate, truncate

__all__ = [
    "HMX_VERSION", "SECTION_OF_TYPE", "SECTION_ORDER", "DEFAULT_SECTION_WEIGHTS", "DROP_REASONS", "MAX_ENTRIES",
    "Candidate", "Relation", "Item", "Plan", "best_first", "pack_order", "relations_among", "artifact_of", "section_of",
    "SECTION_OF_ARTIFACT",
]

HMX_VERSION = "HMX-1.0"

SECTION_OF_TYPE: Mapping[str, str] = {
    "Identity": "core",
    "Constraint": "constraints",
    "Goal": "goals",
    "Fact": "facts",
    "Belief": "facts",
    "Preference": "facts",
    "Capability": "facts",
    "Pattern": "procedures",
    "Event": "episodes",
}
"""Memory type name -> HMX-C section."""

SECTION_ORDER = (
    "core", "constraints", "goals", "procedures", "facts", "episodes",
    "graph_relations", "workflow", "conflicts", "evidence",
)
"""Section priority of seed 000 §3.3."""

DEFAULT_SECTION_WEIGHTS: Mapping[str, float] = {
    "core": 0.15, "constraints": 0.15, "goals": 0.10, "procedures": 0.15, "facts": 0.20,
    "episodes": 0.10, "graph_relations": 0.0, "workflow": 0.05, "conflicts": 0.05, "evidence": 0.05,
}
"""Each section's share of the budget (rule 2); graph_relations has none: relations
relate entries, so they take the room the memory sections leave."""

DROP_REASONS = ("budget_exceeded", "duplicate", "stale", "low_confidence", "low_relevance", "superseded", "deprecated")
"""The drop reasons this engine gives (seed 001's list, and seed 000's `deprecated`)."""

SECTION_OF_ARTIFACT: Mapping[str, str] = {
    "task_schema": "procedures", "failure_playbook": "procedures", "decision_policy": "constraints",
    "causal_pattern": "evidence", "strategy_template": "workflow",
}
"""HMX-A artifact type (a memory `learn()` compiled) -> HMX-C section."""

SOURCE_TYPE_OF_SECTION: Mapping[str, str] = {
    "core": "entity", "constraints": "policy", "goals": "memory", "facts": "memory", "procedures": "memory",
    "episodes": "episode", "graph_relations": "relation", "conflicts": "conflict", "evidence": "memory",
    "workflow": "artifact",
}
MAX_ENTRIES = 500
RELATIONS = "graph_relations"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory as a pack entry (before ranking); `content`/`tokens` may be cut."""

    memory: Memory
    section: str
    content: str
    score: float
    tokens: int

    @property
    def source_id(self) -> str:
        return self.memory.uri

    @property
    def source_type(self) -> str:
        if artifact_of(self.memory) is not None:
            return "artifact"
        if self.section == "evidence" and isinstance(self.memory.data, Event):
            return "episode"
        return SOURCE_TYPE_OF_SECTION[self.section]

    def provenance(self) -> JSONDict:
        m = self.memory
        origin = "compiler" if artifact_of(m) is not None else m.source
        return {"origin": origin, "confidence": m.confidence, "evidence_count": _evidence_count(m)}


def artifact_of(m: Memory) -> Mapping[str, Any] | None:
    """The HMX-A payload of a compiled artifact (a Pattern `learn()` wrote), else None."""
    if ARTIFACT_TAG not in m.tags or not isinstance(m.attributes, Mapping):
        return None
    body = m.attributes.get(PAYLOAD_KEY)
    return body if isinstance(body, Mapping) and body.get("artifact_type") in SECTION_OF_ARTIFACT else None


def section_of(m: Memory) -> str:
    """The section of a memory by its type, or of an artifact by its artifact type."""
    artifact = artifact_of(m)
    return SECTION_OF_ARTIFACT[str(artifact["artifact_type"])] if artifact is not None else SECTION_OF_TYPE[m.type.type_name]


@dataclass(frozen=True, slots=True)
class Relation:
    """One edge between two memory entries as a graph_relations entry."""

    edge: Edge
    content: str
    score: float
    tokens: int

    @property
    def section(self) -> str:
        return RELATIONS

    @property
    def source_type(self) -> str:
        return "relation"

    @property
    def source_id(self) -> str:
        e = self.edge
        return f"edge:{e.src}/{e.type.name.lower()}/{e.dst}"

    def provenance(self) -> JSONDict:
        return {"origin": "graph", "confidence": self.edge.weight, "evidence_count": 1}


Item = Candidate | Relation


def best_first(item: Item) -> tuple[float, int, str]:
    """Relevance descending, tokens ascending, source_id ascending (§3.3 inside a section)."""
    return (-item.score, item.tokens, item.source_id)


def pack_order(item: Item) -> tuple[int, float, int, str]:
    """Seed 000 §3.3: section priority first, then `best_first`."""
    return (SECTION_ORDER.index(item.section), *best_first(item))


class Plan:
    """The entries of a pack as its budget is shared out: memory sections by
    weight, relations in what they leave, the limits last."""

    def __init__(self, total: int, weights: Mapping[str, float]) -> None:
        self.total = total
        self.weights = weights
        self.entries: list[Item] = []
        self._used: dict[str, int] = {}  # section -> tokens of its entries
        self.budgets: dict[str, int] = {}
        self.allocated: dict[str, int] = {}  # the budgets as rules 2-4 shared them, before any lending
        self.dropped: list[Item] = []  # for the budget or a limit, in the order they went
        self.truncated = False

    @property
    def kept(self) -> list[Candidate]:
        return [item for item in self.entries if isinstance(item, Candidate)]

    def used(self, section: str | None = None) -> int:
        """The tokens of the entries (of one section)."""
        return sum(self._used.values()) if section is None else self._used.get(section, 0)

    def _add(self, item: Item) -> None:
        self.entries.append(item)
        self._used[item.section] = self._used.get(item.section, 0) + item.tokens

    def _remove(self, item: Item) -> None:
        self.entries.remove(item)
        self._used[item.section] -= item.tokens

    def fill(self, candidates: Sequence[Candidate]) -> None:
        by_section: dict[str, list[Candidate]] = {}
        for c in sorted(candidates, key=pack_order):
            by_section.setdefault(c.section, []).append(c)
        self.budgets = allocate(self.total, {s: sum(c.tokens for c in cs) for s, cs in by_section.items()},
                                {s: cs[0].tokens for s, cs in by_section.items()}, self.weights, SECTION_ORDER)
        self.allocated = dict(self.budgets)
        left: list[Candidate] = []
        for section, members in by_section.items():
            room = self.budgets[section]
            for i, c in enumerate(members):
                if c.tokens <= room:  # the section's best entries while they fit (a prefix)
                    self._add(c)
                    room -= c.tokens
                    continue
                cut = truncate(c.content, room) if i == 0 else None  # rule 4, by rule 5 when it alone is too large
                if cut is not None:
                    self._add(Candidate(c.memory, c.section, cut[0], c.score, cut[1]))
                    self.truncated = True
                    i += 1
                left.extend(members[i:])
                break
        for c in sorted(left, key=best_first):  # rule 3: the room left over goes to the best that did not fit
            if c.tokens <= self.total - self.used() and self._borrow(c.section, c.tokens):
                self._add(c)
            else:
                self.dropped.append(c)
        self._limit()

    def _borrow(self, section: str, tokens: int) -> bool:
        """Move `tokens` of unused budget to `section` (its own first, then from the
        lowest-priority sections), or False when the sections have not that much unused."""
        spare = {s: b - self.used(s) for s, b in self.budgets.items()}
        own = max(0, spare.get(section, 0))
        if sum(max(0, v) for v in spare.values()) < tokens:
            return False
        need = tokens - min(own, tokens)
        self.budgets.setdefault(section, 0)
        for lender in sorted(spare, key=SECTION_ORDER.index, reverse=True):
            if need == 0:
                break
            if lender == section or spare[lender] <= 0:
                continue
            take = min(need, spare[lender])
            self.budgets[lender] -= take
            self.budgets[section] += take
            need -= take
        return True

    def addrelations_among(self, relations: Sequence[Relation]) -> None:
        for r in relations:
            if r.tokens <= self.total - self.used() and self._borrow(RELATIONS, r.tokens):
                self._add(r)
            else:
                self.dropped.append(r)
        self._limit()

    def _limit(self) -> None:
        while len(self.entries) > MAX_ENTRIES:
            self.shed(1)

    def shed(self, count: int) -> None:
        """Drop `count` entries, lowest first, relations first, a section's last
        entry only when nothing else is left (rule 4)."""
        for _ in range(count):
            if not self.entries:
                return
            sizes: dict[str, int] = {}
            for item in self.entries:
                sizes[item.section] = sizes.get(item.section, 0) + 1
            ranked = sorted(self.entries, key=lambda item: (isinstance(item, Relation), sizes[item.section] > 1, best_first(item)))
            worst = ranked[-1]
            self._remove(worst)
            self.dropped.append(worst)


def relations_among(kept: Sequence[Candidate], edges: Sequence[Edge]) -> list[Relation]:
    """The live edges of `edges` between two of `kept`, one per (src, type, dst)."""
    entry_of = {c.memory.id: c for c in kept}
    tokenizer: Tokenizer | None = None
    seen: set[tuple[str, int, str]] = set()
    out: list[Relation] = []
    for edge in sorted(edges, key=lambda e: (e.src, int(e.type), e.dst, e.weight, e.created_at)):
        src, dst = entry_of.get(edge.src), entry_of.get(edge.dst)
        triple = (edge.src, int(edge.type), edge.dst)
        if edge.tombstoned or src is None or dst is None or triple in seen:
            continue
        seen.add(triple)
        tokenizer = tokenizer or Tokenizer(DEFAULT_ENCODING)  # loads tiktoken only when there is a relation
        content = f"{src.memory.uri} {edge.type.name.lower()} {dst.memory.uri}"
        out.append(Relation(edge, content, edge.weight * min(src.score, dst.score), tokenizer.count(content)))
    return out



def _evidence_count(m: Memory) -> int:
    data = m.data
    if isinstance(data, Belief):
        return len(data.evidence_for)
    if isinstance(data, Pattern):
        return len(data.derived_from)
    return 1
