"""pytest plugin: the `pg_dsn` fixture, a throwaway PostgreSQL server for the session.

Registered from `tests/conftest.py` with `pytest_plugins = ["pgfixture"]` (`tests` is
not a package: pytest puts the folder on `sys.path`, so the module is `pgfixture`).

The first test that asks for `pg_dsn` starts one server (`tests/pgserver.py`, about
a second); it stops when the session ends. Tests share its one database and keep
apart by actor name: `pg_actor` gives each test its own. `pg_server` is that server
(its log counts statements: `PgServer.statements`). `pg_replicated` starts, once, a
primary and a streaming hot standby of it (`tests/pgserver.py`), stopped at the end. When the machine has no
server binaries, the tests that need one are skipped with one line, except in CI
(the environment variable `CI` set), where PostgreSQL tests must run: they fail.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import pgserver

_server: pgserver.PgServer | None = None
_users = 0  # fixture instances using `_server` (a test module may import the fixture too)
_skipped = False  # whether tests were skipped for want of a server

NO_SERVER = ("PostgreSQL tests skipped: no server binaries under /usr/lib/postgresql/*/bin "
             "(apt-get install postgresql)")


def _need_binaries() -> None:
    """Skip (fail in CI) the calling test when the machine has no server binaries."""
    global _skipped
    if pgserver.find_bindir() is None:
        if os.environ.get("CI"):
            pytest.fail(NO_SERVER.replace("skipped", "cannot run in CI"), pytrace=False)
        _skipped = True
        pytest.skip(NO_SERVER)


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The DSN of a running throwaway server's database `cortex` (superuser, no password)."""
    global _server, _users
    if _server is None:
        _need_binaries()
        _server = pgserver.start()
    _users += 1
    try:
        yield _server.dsn
    finally:
        _users -= 1
        if _users == 0:
            _server.stop()
            _server = None


@pytest.fixture
def pg_server(pg_dsn: str) -> pgserver.PgServer:
    """The session's server itself (its log, for counting statements)."""
    assert _server is not None and _server.dsn == pg_dsn
    return _server


@dataclass
class Replicated:
    """A primary (`synchronous_commit` on) and a streaming hot standby of it."""

    primary: pgserver.PgServer
    standby: pgserver.PgServer

    def stop(self) -> None:
        self.standby.stop()
        self.primary.stop()


def start_replicated() -> Replicated:
    """A primary and its standby, both running (skipped without server binaries)."""
    _need_binaries()
    primary = pgserver.start(durable=True)
    try:
        return Replicated(primary, pgserver.start_standby(primary))
    except BaseException:
        primary.stop()
        raise


@pytest.fixture(scope="session")
def pg_replicated() -> Iterator[Replicated]:
    """A primary and a streaming standby for the session (tests keep apart by actor);
    a test that stops or kills a server makes a pair of its own (`start_replicated`)."""
    pair = start_replicated()
    try:
        yield pair
    finally:
        pair.stop()


@pytest.fixture
def pg_actor(request: pytest.FixtureRequest) -> str:
    """An actor name of this test alone (tests share one database)."""
    return "t-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.nodeid)[-120:]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The one line that says why PostgreSQL tests were skipped (shown under -q too)."""
    if _skipped:
        terminalreporter.write_line(NO_SERVER)
