"""The harness on PostgreSQL (cortex.bench.backends) at a tiny size: the workload store
is built on RocksDB, copied with cortex.migrate, and both are timed side by side."""

from __future__ import annotations

import psycopg
import pytest

import cortex
import cortex.bench.backends as backends
from cortex.bench.harness import RunOptions

pytest_plugins = ["pgfixture"]  # pg_dsn (a no-op once tests/conftest.py lists it)


def test_run_postgresql_reports_both_backends_on_the_same_queries(tmp_path, pg_dsn, monkeypatch) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_test")
        conn.execute("CREATE DATABASE bench_test")
    dsn = pg_dsn.rsplit("/", 1)[0] + "/bench_test"
    monkeypatch.setattr(backends, "COLD_RUNS", 1)
    options = RunOptions(memories=400, queries=120, baseline_queries=0)
    report = backends.run_postgresql(options, dsn, str(tmp_path / "n400"))
    assert report["rows"] > 400 and report["migrate_keys_per_s"] > 0 and report["bulk_ingest_per_s"] > 0
    for key in ("context_ms", "rocksdb_context_ms"):
        assert 0 < report[key]["p50"] <= report[key]["p99"] <= report[key]["max"]
    assert report["resolve_us_mean"] > 0 and report["single_write_per_s"] > 0
    assert 0 < report["cold_process_ms_median"] < report["cold_process_whole_ms_median"]
    assert set(report["verdict"]) == {"ours_p50_5ms", "ours_p99_25ms"}
    with cortex.open(dsn, actor=backends.ACTOR, mode="r") as pg, \
            cortex.open(tmp_path / "n400", actor=backends.ACTOR, mode="r") as rocks:
        assert pg.root() == rocks.root()
    again = backends.run_postgresql(options, dsn, str(tmp_path / "n400"))  # reuses both stores
    assert "rows" not in again and "bulk_ingest_per_s" not in again
    assert "on PostgreSQL" in backends.summary(report)


def test_measure_context_times_every_query(tmp_path) -> None:
    with cortex.open(tmp_path / "s", actor="a") as c:
        c.write(cortex.Fact(statement="x", subject="s", predicate="p"), frames=[cortex.Frame("find", "tool", "t")])
        got = backends.measure_context(c, [{"verb": "find", "objects": {"tool": "t"}}] * 5, warmup=2)
    assert got["candidates"]["max"] == 1 and got["context_ms"]["p50"] > 0
