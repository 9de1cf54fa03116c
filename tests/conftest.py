"""Shared fixtures for the cortex test suite.

* `FakeClock`: a settable clock (a callable returning an aware UTC datetime).
  It stands still unless `advance()`d, or moves by `tick` seconds after each call.
* `open_store(path, clock=None, **kwargs)`: `cortex.open()` with the suite's
  defaults (actor "agent-1", a FakeClock, reproducible ids from
  `random.Random(7).randbytes`). Extra keyword arguments (`mode="r"`, ...) pass
  through to `cortex.open()`.
* fixtures `clock` (a FakeClock at 2025-01-01T00:00:00Z) and `store` (a fresh
  read-write store under `tmp_path / "s"` on that clock, closed afterwards).

Reopening a store with the default entropy restarts the same random sequence; the
store still never repeats an id (new ids start above the largest stored one).
"""

from __future__ import annotations

import gc
import os
import random
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import settings

import cortex

# Under CI every property test draws the same examples on every run (derandomized: the
# seed comes from the test itself), so a run's verdict depends on the code alone. Run
# locally without CI to explore new examples.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

# The throwaway PostgreSQL server and its fixtures (`pg_dsn`, `pg_actor`): tests/pgfixture.py.
pytest_plugins = ["pgfixture", "backends"]

ACTOR = "agent-1"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


class FakeClock:
    """A clock for tests: `clock()` returns `clock.now` (aware UTC), then moves it
    on by `tick` seconds (0 by default: the clock stands still)."""

    def __init__(self, start: datetime = START, tick: float = 0.0) -> None:
        self.now = start
        self.tick = timedelta(seconds=tick)

    def __call__(self) -> datetime:
        now = self.now
        self.now = now + self.tick
        return now

    def advance(self, seconds: float) -> datetime:
        self.now = self.now + timedelta(seconds=seconds)
        return self.now


def open_store(path, clock=None, **kwargs) -> cortex.Cortex:
    """`cortex.open(path)` with the suite's defaults; keyword arguments override them."""
    kwargs.setdefault("actor", ACTOR)
    kwargs.setdefault("entropy", random.Random(7).randbytes)
    return cortex.open(path, clock=clock if clock is not None else FakeClock(), **kwargs)


@pytest.fixture(scope="session", autouse=True)
def no_reader_folders_left_behind() -> Iterator[None]:
    """After the whole session, every reader the suite opened has been closed: no
    `cortex-secondary-<pid>-*` folder of this process is left in the temporary folder.
    (A reader that is never closed keeps its folder until a later reader of any process
    finds its process gone: tests/test_open_paths.py.) Checked at the session's end, so
    it does not depend on the order tests are collected in; a failure shows as an
    error at the teardown of the last test."""
    yield
    gc.collect()
    prefix = f"cortex-secondary-{os.getpid()}-"
    left = sorted(name for name in os.listdir(tempfile.gettempdir()) if name.startswith(prefix))
    assert left == [], f"reader folders left behind: {left}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path, clock):
    s = open_store(tmp_path / "s", clock)
    try:
        yield s
    finally:
        s.close()
