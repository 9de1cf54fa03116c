"""pytest plugin: the engine's test suites run again on PostgreSQL, unchanged.

The suites (tests/test_store.py, test_context.py, ...) open stores at directory paths
through `cortex.open`. To run one of them on PostgreSQL, a module
`tests/test_backends_<suite>.py` collects the suite's tests a second time and asks for
the `postgresql_stores` fixture:

    import pytest

    from test_store import *  # noqa: F403 - the suite's tests and fixtures, collected again here

    pytestmark = pytest.mark.usefixtures("postgresql_stores")
    ROCKSDB_ONLY = {"test_name": "why it cannot run on PostgreSQL", ...}

While that module's tests run, `cortex.open` (and `cortex.facade.open`) maps every
directory path to a PostgreSQL store of its own: a schema per path
(`cx_<sha256 of the absolute path>`) in the session's throwaway database (`pg_dsn`,
tests/pgfixture.py), reached through the DSN option `-csearch_path=<schema>`. So the
same path is the same store again (reopening, `mode="r"` beside the writer), two
paths are two stores, the actor is the test's own (assertions on it hold), and the
handle's `path` is that DSN, which a child process can open directly. Anything that
is not a usable path (None, an int, "", a NUL, a name longer than open() takes) is
passed through unchanged, so validation errors are the ones RocksDB tests see.

Why a second module instead of a parametrised fixture on the suite's own module: a
suite's module-scoped store fixtures (tests/test_reliability_input.py's `world`)
would be built once and shared by both parameters; collected again in another
module, they are built again there, after the mapping is in place (`usefixtures`
puts `postgresql_stores` first among the module's fixtures). The suites' files stay
as they are, and a test added to a suite runs on both backends by itself. (No suite
sets a module `pytestmark` today; one that does must have its marks added to the
second module's `pytestmark`, which the `import *` would otherwise override.)

Tests that cannot run on PostgreSQL (they copy store directories, flip bytes in SST
files, or hand a directory path to a child process) are skipped there with a reason:
listed in the module's `ROCKSDB_ONLY` dict, or marked `@pytest.mark.rocksdb_only(reason)`
in the suite itself. Slow tests that open no store at all (parsers fuzzed with
Hypothesis) are listed in the module's `NO_STORE` set and skipped there too: they
would only run the same code again.

Two more things the mapping does, both for RocksDB-only calls some suites make:
a mapped handle's storage gets a no-op `flush()` (RocksDB moves its memtable to SST
files; PostgreSQL has nothing to flush), and handles a test leaves open are closed
after its call (each holds server connections; the server takes about a hundred).

Registered with `pytest_plugins = ["backends"]` (tests/conftest.py, or the modules
above until it is listed there).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

import psycopg
import pytest

import cortex
import cortex.facade
from cortex.storage import is_dsn

_MAX_PATH_BYTES = 4096  # what cortex.open() takes (longer paths raise ValidationError)


class PgStores:
    """Directory paths mapped to PostgreSQL stores, one schema per path."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.real_open: Callable[..., cortex.Cortex] = cortex.facade.open
        self.schemas: dict[str, str] = {}  # path -> schema
        self.opened: list[cortex.Cortex] = []
        self._lock = threading.Lock()
        self._admin = psycopg.connect(dsn, autocommit=True)

    def location(self, path: Any) -> Any:
        """The DSN of the store for directory `path`, or `path` itself when it is
        not a usable directory path (open() then rejects it as it would anyway)."""
        if not isinstance(path, (str, os.PathLike)):
            return path
        text = os.fspath(path)
        if not isinstance(text, str) or not text or "\x00" in text or is_dsn(text):
            return path
        if len(text.encode("utf-8", "surrogateescape")) > _MAX_PATH_BYTES:
            return path
        absolute = os.path.abspath(text)
        with self._lock:
            schema = self.schemas.get(absolute)
            if schema is None:
                schema = "cx_" + hashlib.sha256(os.fsencode(absolute)).hexdigest()[:24]
                self._admin.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                self.schemas[absolute] = schema
        return f"{self.dsn}?options=-csearch_path%3D{schema}"

    def open(self, path: Any, *args: Any, **kwargs: Any) -> cortex.Cortex:
        """`cortex.open` with directory paths mapped to PostgreSQL stores."""
        handle = self.real_open(self.location(path), *args, **kwargs)
        storage = handle._engine.storage
        if not hasattr(storage, "flush"):
            storage.flush = _nothing_to_flush
        with self._lock:
            self.opened.append(handle)
        return handle

    def close_from(self, start: int) -> None:
        """Close the handles opened since `len(self.opened)` was `start`."""
        with self._lock:
            left, self.opened[start:] = self.opened[start:], []
        for handle in left:
            handle.close()

    def close(self) -> None:
        """Close every handle still open. (The schemas stay: dropping them costs
        seconds, and the server and its folder go at the end of the session.)"""
        self.close_from(0)
        self._admin.close()


def _nothing_to_flush() -> None:
    """PostgreSQL's stand-in for RocksDB's memtable flush: nothing to do."""


_active: PgStores | None = None  # the mapping of the module running now, if any


@pytest.fixture(scope="module")
def postgresql_stores(pg_dsn: str) -> Iterator[PgStores]:
    """While the module runs, `cortex.open` maps directory paths to PostgreSQL stores."""
    global _active
    stores = PgStores(pg_dsn)
    patch = pytest.MonkeyPatch()
    patch.setattr(cortex, "open", stores.open)
    patch.setattr(cortex.facade, "open", stores.open)
    _active = stores
    try:
        yield stores
    finally:
        _active = None
        patch.undo()
        stores.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "rocksdb_only(reason): the test needs RocksDB's files; skipped where a suite runs on PostgreSQL")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip, on PostgreSQL, the tests its module lists in ROCKSDB_ONLY or NO_STORE, or
    marked rocksdb_only."""
    for item in items:
        module = getattr(item, "module", None)
        listed: dict[str, str] | None = getattr(module, "ROCKSDB_ONLY", None)
        if listed is None:
            continue
        name = getattr(item, "originalname", item.name)
        marker = item.get_closest_marker("rocksdb_only")
        if name in listed:
            item.add_marker(pytest.mark.skip(reason=f"not on PostgreSQL (RocksDB only): {listed[name]}"))
        elif name in getattr(module, "NO_STORE", ()):
            item.add_marker(pytest.mark.skip(reason="not on PostgreSQL: opens no store, the same on every backend"))
        elif marker is not None:
            reason = marker.args[0] if marker.args else "needs RocksDB's files"
            item.add_marker(pytest.mark.skip(reason=f"not on PostgreSQL (RocksDB only): {reason}"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Close the PostgreSQL handles a test body opened and left open."""
    stores = _active
    start = len(stores.opened) if stores is not None else 0
    try:
        return (yield)
    finally:
        if stores is not None:
            stores.close_from(start)
