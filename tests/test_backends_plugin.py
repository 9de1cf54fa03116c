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


def test_a_listed_suite_runs_twice_and_its_marks_skip_on_the_postgresql_side_only(pytester: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]))
    tests = pytester.path / "tests"
    tests.mkdir()
    (tests / "test_suite_x.py").write_text(textwrap.dedent('''
        import pytest

        def test_plain():
            pass

        @pytest.mark.no_store
        def test_parser():
            pass

        @pytest.mark.rocksdb_only("needs SST files")
        def test_marked():
            pass
    '''))
    (tests / "test_suite_y.py").write_text("def test_only_once():\n    pass\n")
    pytester.makeconftest(textwrap.dedent('''
        import backends

        pytest_plugins = ["pgfixture", "backends"]
        backends.ON_POSTGRESQL = backends.ON_POSTGRESQL | {"test_suite_x.py"}
    '''))
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider", "-v", "tests")
    result.assert_outcomes(passed=5, skipped=2)
    result.stdout.fnmatch_lines_random([
        "*tests/test_suite_x.py::test_plain PASSED*",
        "*tests/test_suite_x.py[[]postgresql[]]::test_plain PASSED*",
        "*tests/test_suite_x.py[[]postgresql[]]::test_marked SKIPPED*",
        "*not on PostgreSQL (RocksDB only): needs SST files*",
        "*not on PostgreSQL: opens no store, the same on every backend*",
    ])
    assert "test_suite_y.py[postgresql]" not in result.stdout.str()
