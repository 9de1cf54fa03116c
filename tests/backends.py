"""pytest plugin: the engine's test suites run again on PostgreSQL, unchanged.

The suites (tests/test_store.py, test_context.py, ...) open stores at directory paths
through `cortex.open`. Every suite named in `ON_POSTGRESQL` below is collected twice:
once as itself (RocksDB) and once more as a module node `<file>[postgresql]` whose
tests ask for the `postgresql_stores` fixture. So the backend is a property of the
collected module, chosen here in one list, and `pytest tests/test_store.py` runs the
suite on both backends.

While a `[postgresql]` module's tests run, `cortex.open` (and `cortex.facade.open`)
maps every directory path to a PostgreSQL store of its own: a schema per path
(`cx_<sha256 of the absolute path>`) in the session's throwaway database (`pg_dsn`,
tests/pgfixture.py), reached through the DSN option `-csearch_path=<schema>`. So the
same path is the same store again (reopening, `mode="r"` beside the writer), two
paths are two stores, the actor is the test's own (assertions on it hold), and the
handle's `path` is that DSN, which a child process can open directly. Anything that
is not a usable path (None, an int, "", a NUL, a name longer than open() takes) is
passed through unchanged, so validation errors are the ones RocksDB tests see.

Why a second module node instead of a parametrised fixture: a suite's module-scoped
store fixtures (tests/test_reliability_input.py's `world`) would be built once and
shared by both parameters; under a module node of its own they are built again, after
the mapping is in place (`usefixtures` puts `postgresql_stores` first among the
module's fixtures).

Marks in the suites say what does not run on PostgreSQL, beside the test:
`@pytest.mark.rocksdb_only(reason)` for tests that need RocksDB's files (they copy
store directories, flip bytes in SST files, or hand a directory path to a child
process), and `@pytest.mark.no_store` for slow tests that open no store at all
(parsers fuzzed with Hypothesis), which would only run the same code again.

Two more things the mapping does, both for RocksDB-only calls some suites make:
a mapped handle's storage gets a no-op `flush()` (RocksDB moves its memtable to SST
files; PostgreSQL has nothing to flush), and handles a test leaves open are closed
after its call (each holds server connections; the server takes about a hundred).

Registered with `pytest_plugins = ["backends"]` in tests/conftest.py.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
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


# The suites that run a second time on PostgreSQL, as paths under the rootdir's tests/.
ON_POSTGRESQL = frozenset({
    "interop/test_interop_seeds_contextos.py",
    "interop/test_interop_seeds_events.py",
    "interop/test_interop_seeds_fingerprint.py",
    "interop/test_interop_seeds_pack.py",
    "test_context.py",
    "test_edges.py",
    "test_erase.py",
    "test_find_validation.py",
    "test_import_in_progress.py",
    "test_learn.py",
    "test_natural_keys.py",
    "test_provenance.py",
    "test_query.py",
    "test_recall.py",
    "test_reliability_concurrency.py",
    "test_reliability_input.py",
    "test_salience.py",
    "test_scope.py",
    "test_scope_oracles.py",
    "test_store.py",
})

POSTGRESQL = "postgresql"


class OnPostgreSQL(pytest.Module):
    """A suite's module collected a second time: its tests run on PostgreSQL stores."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "rocksdb_only(reason): the test needs RocksDB's files; skipped where a suite runs on PostgreSQL")
    config.addinivalue_line(
        "markers", "no_store: the test opens no store; run once, not again where a suite runs on PostgreSQL")


@pytest.hookimpl(trylast=True)  # after the suite's own module, so RocksDB runs first
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The second collection of a suite named in ON_POSTGRESQL."""
    try:
        name = file_path.relative_to(parent.config.rootpath / "tests").as_posix()
    except ValueError:
        return None
    if name not in ON_POSTGRESQL:
        return None
    module: pytest.Module = OnPostgreSQL.from_parent(
        parent, path=file_path, nodeid=f"{parent.nodeid}/{file_path.name}[{POSTGRESQL}]".lstrip("/"))
    module.add_marker(pytest.mark.usefixtures("postgresql_stores"))
    return module


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip, on PostgreSQL, the tests marked rocksdb_only or no_store."""
    for item in items:
        if item.getparent(OnPostgreSQL) is None:
            continue
        marker = item.get_closest_marker("rocksdb_only")
        if marker is not None:
            reason = marker.args[0] if marker.args else "needs RocksDB's files"
            item.add_marker(pytest.mark.skip(reason=f"not on PostgreSQL (RocksDB only): {reason}"))
        elif item.get_closest_marker("no_store") is not None:
            item.add_marker(pytest.mark.skip(reason="not on PostgreSQL: opens no store, the same on every backend"))


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
