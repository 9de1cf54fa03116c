"""Helpers of the integration tests (MCP server, LangGraph store, memory JSON).

* `TickClock`: a clock that moves on by a fixed step at every call, so that every
  write of a test gets a distinct, predictable time.
* `seeded(path)`: a store with one memory of each kind an agent has (identity, a hard
  constraint, facts on a frame, an event outcome), for the MCP tests.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import cortex

ACTOR = "agent-int"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
GPU = cortex.Frame("acquire", "service", "gpu_inference")


class TickClock:
    """`clock()` returns `clock.now`, then moves it on by `step`."""

    def __init__(self, start: datetime = START, step: timedelta = timedelta(milliseconds=1)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        now = self.now
        self.now = now + self.step
        return now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


def open_store(path: Path | str, **kwargs: object) -> cortex.Cortex:
    """`cortex.open()` with this suite's actor and reproducible ids."""
    kwargs.setdefault("actor", ACTOR)
    kwargs.setdefault("entropy", random.Random(11).randbytes)
    return cortex.open(str(path), **kwargs)  # type: ignore[arg-type]


def seed(c: cortex.Cortex) -> dict[str, str]:
    """Write an agent's first memories; their URIs by name."""
    uris = c.write_many([
        cortex.Write(cortex.Identity(name="agent-int", roles=("operator",))),
        cortex.Write(cortex.Constraint(statement="never pay more than 2 USD per GPU hour", strength="hard",
                                       polarity="dont", source="user_declared")),
        cortex.Write(cortex.Fact(statement="A100 spot is 1.40 USD/h", subject="acme-cloud", predicate="price"),
                     frames=[GPU], importance=5, tags=["pricing"]),
        cortex.Write(cortex.Preference(topic="tone", polarity="prefer", strength=0.8, rationale="short answers"),
                     frames=[GPU], tags=["style"]),
        cortex.Write(cortex.Event(kind="intent_completed", outcome="success", counterparty="acme-cloud",
                                  cost=("USD", 1.3), summary="GPU lease #1"), frames=[GPU], importance=3),
    ])
    return dict(zip(("identity", "constraint", "fact", "preference", "event"), uris))
