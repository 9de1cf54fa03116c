"""Shared pieces of the interop tests: stores on a fixed clock, a store holding every
memory type, and JSON Schema validation against `tests/schemas/`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema

import cortex
from cortex import Frame

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
GPU = Frame("acquire", "service", "gpu_inference")
DEPLOY = Frame("delegate", "tool", "deploy")


class Clock:
    """A fixed clock that moves on only when told (`advance`)."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def open_store(path: Path, actor: str = "a", clock: Clock | None = None) -> cortex.Cortex:
    return cortex.open(str(path), actor=actor, clock=clock or Clock())


def validate(document: Any, schema_name: str) -> None:
    """Raise `jsonschema.ValidationError` unless `document` passes `tests/schemas/<name>.schema.json`."""
    schema = json.loads((SCHEMAS / f"{schema_name}.schema.json").read_text())
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(document)


def populate(c: cortex.Cortex) -> dict[str, str]:
    """One memory (or two) of every type, most under the GPU frame; name -> URI."""
    w = c.write
    return {
        "identity": w(cortex.Identity(name="agent-ops-1", roles=("ops",))),
        "hard": w(cortex.Constraint(statement="never pay above 2 USD/h", strength="hard", polarity="dont",
                                    source="user_declared", trigger="price check"), frames=[GPU], tags=["billing"]),
        "soft": w(cortex.Constraint(statement="prefer spot instances", strength="soft", polarity="prefer",
                                    source="learned"), frames=[GPU], tags=["billing"]),
        "goal": w(cortex.Goal(statement="cut inference cost 20%", status="active",
                              success_criteria=("cost report shows -20%", "no SLA breach"))),
        "paused": w(cortex.Goal(statement="migrate to ARM", status="paused", success_criteria=("all on ARM",)),
                    frames=[GPU]),
        "fact": w(cortex.Fact(statement="1.40 USD/h", subject="acme", predicate="price"), frames=[GPU],
                  importance=6, source="vendor_api"),
        "belief": w(cortex.Belief(statement="acme throttles at night", stance="suspect",
                                  evidence_for=("two slow nights",)), frames=[GPU]),
        "preference": w(cortex.Preference(topic="region", polarity="prefer", strength=0.8, value="eu-west",
                                          rationale="latency"), frames=[GPU]),
        "capability": w(cortex.Capability(subject="agent-ops-1", capability="reserve GPUs", verified=True),
                        frames=[GPU]),
        "pattern": w(cortex.Pattern(statement="retry a 502 once after 5 s", strength=0.9, coverage=12),
                     frames=[GPU, DEPLOY], tags=["deploy"]),
        "event": w(cortex.Event(kind="payment", outcome="success", counterparty="acme", cost=("USD", 14.0),
                                summary="reserved 10 h"), frames=[GPU]),
        "failed": w(cortex.Event(kind="intent_failed", outcome="failure", counterparty="acme",
                                 summary="quota exceeded"), frames=[GPU]),
    }
