"""The progress bar that `cortex write`, `cortex bench` and the workload loader share.

A rich progress bar on standard error when standard error is a terminal, and nothing
at all otherwise: a log file or a pipe gets no carriage-return updates (the old
loader wrote one per 1,000 memories, a million lines of noise at 1M). rich is
imported only when a bar is drawn.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

Advance = Callable[[int], None]


def _quiet(_: int) -> None:
    """The advance of a bar that is not drawn."""


@contextmanager
def progress(label: str, total: int | None, *, stream: TextIO | None = None, enabled: bool = True) -> Iterator[Advance]:
    """A bar titled `label` counting up to `total` (None: unknown) on `stream`
    (standard error by default); yields `advance(n)`, which moves it on by n.
    `enabled=False` draws nothing, as when `stream` is not a terminal."""
    out = sys.stderr if stream is None else stream
    if not enabled or not out.isatty():
        yield _quiet
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(file=out), transient=False) as bar:
        task = bar.add_task(label, total=total)

        def advance(n: int) -> None:
            bar.advance(task, n)

        yield advance
