"""`cortex context --query TEXT --format hmx`: the HMX-1.0 pack that `synthesize()`
builds from a query text (the pinned tier and the memories recalled by content;
docs/recall.md), printed as `--format hmx` prints a bundle's pack."""

from __future__ import annotations

import json
from datetime import datetime

import click

from ._common import _open

DEFAULT_BUDGET = 3000  # as `context()`: a budget of 0 means 3000


def print_synthesized(store: str, actor: str | None, query: str, budget: int, fmt: str, now: datetime | None,
                      conflicting: dict[str, bool]) -> int:
    """Print the pack of `query`; `conflicting` names the options that do not go with
    `--query` (those given are refused)."""
    if fmt != "hmx":
        raise click.BadParameter("--query builds an HMX pack: give --format hmx", param_hint="--query")
    for option, given in conflicting.items():
        if given:
            raise click.BadParameter(f"--query recalls by content; {option} selects a task's frames: give one of them",
                                     param_hint="--query")
    with _open(store, actor) as c:
        pack = c.synthesize(query, max_tokens=budget or DEFAULT_BUDGET, now=now)
    click.echo(json.dumps(pack, indent=2, sort_keys=True, ensure_ascii=False))
    return 0
