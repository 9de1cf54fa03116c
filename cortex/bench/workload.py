"""A seeded, deterministic generator of realistic agent stores and query mixes.

N memories across the nine types (mostly Events and Facts, a few dozen pinned
members), 1–3 frames each over object refs whose popularity follows a Zipf law (a
few hot objects with tens of thousands of memories at 1M, a long tail), text of
40–400 characters, creation times spread over a year, about 1% tombstoned and 0.5%
attested. Everything derives from `seed`, so the same arguments build the same
store content.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

import cortex
from cortex import Belief, Capability, Constraint, Event, Fact, Frame, Goal, Identity, Pattern, Preference, Write
from cortex.model import ObjKind, Verb

from .progress import progress as progress_bar

START = datetime(2025, 11, 1, tzinfo=timezone.utc)
YEAR = timedelta(days=365)
PINNED_MEMBERS = 40
ZIPF_S = 0.9
BATCH = 1000
_WORDS = (
    "agent gpu lease price provider latency region budget contract spot capacity model "
    "inference token payment invoice retry timeout schedule deliver build analyze plan "
    "cluster queue worker memory cache storage network policy audit report customer "
    "vendor quote risk limit failover nightly weekly eu us asia cheap fast reliable"
).split()
_TYPE_MIX = (("event", 40), ("fact", 30), ("preference", 8), ("belief", 7), ("capability", 5), ("pattern", 5), ("constraint", 3), ("goal", 2))


class Clock:
    """An injectable clock that the loader moves forward."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@dataclass(frozen=True)
class Workload:
    memories: int
    seed: int = 7

    @property
    def objects(self) -> int:
        return max(100, self.memories // 5)

    def _zipf(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Object indexes drawn with P(rank k) ~ 1/k^ZIPF_S. With N/5 objects and
        s = 0.9, at 1M memories the hottest objects carry about 80k, 44k and 30k
        memories (spread over the ten verbs) and the median object a handful."""
        ranks = np.arange(1, self.objects + 1, dtype=np.float64)
        p = 1.0 / ranks**ZIPF_S
        return rng.choice(self.objects, size=size, p=p / p.sum())

    @staticmethod
    def ref(index: int) -> tuple[ObjKind, str]:
        """The object kind and ref of object `index` (its kind is fixed)."""
        return ObjKind(index % 12 + 1), f"obj-{index:07d}"

    def _text(self, rng: random.Random) -> str:
        target = rng.randint(40, 400)
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(_WORDS))
        return " ".join(words)[:target]

    def _data(self, rng: random.Random, i: int) -> cortex.model.MemoryData:
        if i == 0:
            return Identity(name="bench-agent", did="did:example:bench", roles=("operator",))
        if i < PINNED_MEMBERS:
            if i % 2:
                return Constraint(statement=self._text(rng), strength="hard", polarity="dont", source="user_declared")
            return Goal(statement=self._text(rng), status="active", success_criteria=("done",))
        kind = rng.choices([t for t, _ in _TYPE_MIX], weights=[w for _, w in _TYPE_MIX])[0]
        text = self._text(rng)
        if kind == "event":
            return Event(kind=rng.choice(("intent_completed", "intent_failed", "payment", "dispatch")), outcome=rng.choice(("success", "failure", "partial")),
                         counterparty=f"vendor-{rng.randint(1, 500)}", cost=("USD", round(rng.uniform(0.1, 90), 2)), summary=text)
        if kind == "fact":
            return Fact(statement=text, subject=f"subject-{rng.randint(1, 5000)}", predicate=rng.choice(("price", "latency", "region", "owner")))
        if kind == "preference":
            return Preference(topic=rng.choice(_WORDS), polarity=rng.choice(("prefer", "avoid")), strength=round(rng.random(), 2), rationale=text)
        if kind == "belief":
            return Belief(statement=text, stance=rng.choice(("believe", "doubt", "suspect")), evidence_for=("obs",) * rng.randint(0, 3))
        if kind == "capability":
            return Capability(subject=f"vendor-{rng.randint(1, 500)}", capability=text[:80], verified=rng.random() < 0.5)
        if kind == "pattern":
            return Pattern(statement=text, strength=round(rng.random(), 2), coverage=rng.randint(0, 50))
        if kind == "constraint":
            return Constraint(statement=text, strength=rng.choice(("soft", "firm")), polarity="avoid", source="learned")
        return Goal(statement=text, status=rng.choice(("paused", "completed", "abandoned")))

    def writes(self) -> Iterator[Write]:
        rng = random.Random(self.seed)
        nprng = np.random.default_rng(self.seed)
        objects = self._zipf(nprng, self.memories * 3)
        for i in range(self.memories):
            frames = []
            for j in range(rng.randint(1, 3)):
                kind, ref = self.ref(int(objects[i * 3 + j]))
                frames.append(Frame(Verb(rng.randint(1, 10)), kind, ref))
            yield Write(self._data(rng, i), frames=tuple(frames), tags=(rng.choice(_WORDS),), importance=rng.randint(0, 10))

    def build(self, path: str, *, progress: bool = True, helper: bool = True) -> float:
        """Bulk-load the store at `path` with `write_many`, then tombstone and attest a
        few. Returns the seconds spent inside `write_many` (generating the workload's
        text and the tombstones and attests afterwards are not counted). `helper`:
        open with `ingest_helper` (a helper process renders and counts forms).
        `progress`: a progress bar on standard error when it is a terminal."""
        ingest = 0.0
        clock = Clock(START)
        rng = random.Random(self.seed + 1)
        step = YEAR / max(1, self.memories // BATCH)
        uris: list[str] = []
        with cortex.open(path, actor="bench-agent", clock=clock, entropy=random.Random(self.seed).randbytes, ingest_helper=helper) as c:
            with progress_bar("loading", self.memories, enabled=progress) as advance:
                batch: list[Write] = []
                for item in self.writes():
                    batch.append(item)
                    if len(batch) == BATCH:
                        started = time.perf_counter()
                        uris += c.write_many(batch)
                        ingest += time.perf_counter() - started
                        advance(len(batch))
                        batch = []
                        clock.now += step
                if batch:
                    started = time.perf_counter()
                    uris += c.write_many(batch)
                    ingest += time.perf_counter() - started
                    advance(len(batch))
            for uri in rng.sample(uris[PINNED_MEMBERS:], len(uris) // 100):
                c.tombstone(uri, "superseded")
            live = uris[PINNED_MEMBERS:]
            for _ in range(len(uris) // 200 // 3):
                cited = rng.sample(live, 3)
                try:
                    c.attest(cited, rng.choice(("success", "success", "failure")), "factual_error")
                except cortex.MemoryTombstoned:
                    continue
        return ingest

    def queries(self, count: int, seed: int = 11) -> list[dict[str, Any]]:
        """`count` context() calls: hot and tail objects, 1–3 objects, all verbs and forms."""
        rng = random.Random(seed)
        nprng = np.random.default_rng(seed)
        picks = self._zipf(nprng, count * 3)
        out = []
        for q in range(count):
            objects = dict(self.ref(int(picks[q * 3 + j])) for j in range(rng.randint(1, 3)))
            out.append({
                "verb": Verb(rng.randint(1, 10)).name.lower(),
                "objects": {k.name.lower(): ref for k, ref in objects.items()},
                "form": rng.choice(("short", "medium", "full")),
                "budget_tokens": rng.randint(500, 4000),
            })
        return out

