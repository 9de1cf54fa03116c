"""pytest plugin: the `pg_dsn` fixture, a throwaway PostgreSQL server for the session.

Registered from `tests/conftest.py` with `pytest_plugins = ["pgfixture"]` (`tests` is
not a package: pytest puts the folder on `sys.path`, so the module is `pgfixture`).

The first test that asks for `pg_dsn` starts one server (`tests/pgserver.py`, about
a second); it stops when the session ends. Tests share its one database and keep
apart by actor name: `pg_actor` gives each test its own. When the machine has no
server binaries, the tests that need one are skipped with one line, except in CI
(the environment variable `CI` set), where PostgreSQL tests must run: they fail.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest

import pgserver

_server: pgserver.PgServer | None = None
_users = 0  # fixture instances using `_server` (a test module may import the fixture too)
_skipped = False  # whether tests were skipped for want of a server

NO_SERVER = ("PostgreSQL tests skipped: no server binaries under /usr/lib/postgresql/*/bin "
             "(apt-get install postgresql)")


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The DSN of a running throwaway server's database `cortex` (superuser, no password)."""
    global _server, _users, _skipped
    if _server is None:
        if pgserver.find_bindir() is None:
            if os.environ.get("CI"):
                pytest.fail(NO_SERVER.replace("skipped", "cannot run in CI"), pytrace=False)
            _skipped = True
            pytest.skip(NO_SERVER)
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
def pg_actor(request: pytest.FixtureRequest) -> str:
    """An actor name of this test alone (tests share one database)."""
    return "t-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.nodeid)[-120:]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The one line that says why PostgreSQL tests were skipped (shown under -q too)."""
    if _skipped:
        terminalreporter.write_line(NO_SERVER)
