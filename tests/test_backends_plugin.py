"""The mapping that runs the suites on PostgreSQL (tests/backends.py): a directory path
is one PostgreSQL store of its own, the same again on every open, and the skip lists
skip only on the PostgreSQL side."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

import cortex
from backends import PgStores

pytest_plugins = ["pgfixture", "pytester"]  # pg_dsn (a no-op once tests/conftest.py lists it)

TESTS = Path(__file__).resolve().parent


def test_a_path_is_one_store_of_its_own(tmp_path, pg_dsn) -> None:
    stores = PgStores(pg_dsn)
    try:
        with stores.open(tmp_path / "a", actor="agent-1") as a:
            uri = a.write(cortex.Fact(statement="in a", subject="a", predicate="is"))
            root = a.root()
            assert a.path.startswith(pg_dsn) and "search_path" in a.path
            a._engine.storage.flush()  # RocksDB's memtable flush: nothing to do here
            with stores.open(str(tmp_path / "a"), actor="agent-1", mode="r") as reader:  # str or Path: the same store
                assert reader.root() == root and reader.resolve(uri).data.statement == "in a"
            with pytest.raises(cortex.StoreLocked):
                stores.open(tmp_path / "a", actor="agent-1")
        with stores.open(tmp_path / "b", actor="agent-1") as b:
            assert b.root() == "0" * 64  # another path, another store, the same actor
        with stores.open(tmp_path / "a", actor="agent-1") as again:
            assert again.root() == root and again.actor == "agent-1"
        assert not (tmp_path / "a").exists()  # nothing on disk
        for bad in ("", None, 7, "a\x00b"):
            with pytest.raises(cortex.ValidationError):
                stores.open(bad, actor="agent-1")  # what open() says of it on RocksDB too
        left = stores.open(tmp_path / "c", actor="agent-1")
        stores.close_from(0)
        with pytest.raises(cortex.StoreClosed):
            left.root()
    finally:
        stores.close()


def test_skip_lists_apply_to_the_postgresql_module_only(pytester: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(
        suite_x=textwrap.dedent('''
            import pytest

            def test_plain():
                pass

            def test_listed():
                pass

            def test_parser():
                pass

            @pytest.mark.rocksdb_only("needs SST files")
            def test_marked():
                pass
        '''),
        test_suite_x="from suite_x import *",
        test_backends_suite_x=textwrap.dedent('''
            from suite_x import *

            ROCKSDB_ONLY = {"test_listed": "copies the folder"}
            NO_STORE = {"test_parser"}
        '''),
    )
    pytester.makeconftest('pytest_plugins = ["backends"]')
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, skipped=3)
    result.stdout.fnmatch_lines_random([
        "*not on PostgreSQL (RocksDB only): copies the folder*",
        "*not on PostgreSQL (RocksDB only): needs SST files*",
        "*not on PostgreSQL: opens no store, the same on every backend*",
    ])
