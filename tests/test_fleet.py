"""The fleet figure (cortex.bench.fleet) at a tiny size: it loads what is missing, runs
N worker processes against a real server and reports throughput and latency."""

from __future__ import annotations

import psycopg
import pytest

import cortex
from cortex.bench.fleet import FleetOptions, actor_name, run_fleet, summary

pytest_plugins = ["pgfixture"]  # pg_dsn (a no-op once tests/conftest.py lists it)


@pytest.fixture
def fleet_dsn(pg_dsn: str) -> str:
    """A database of its own (the fleet's actor names are fixed)."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS fleet_test")
        conn.execute("CREATE DATABASE fleet_test")
    return pg_dsn.rsplit("/", 1)[0] + "/fleet_test"


def test_the_fleet_figure_loads_once_and_measures_each_worker_count(fleet_dsn: str) -> None:
    options = FleetOptions(actors=3, memories=40, workers=(1, 2), seconds=0.5)
    report = run_fleet(fleet_dsn, options, progress=False)
    assert report["load"]["memories_per_s"] > 0
    for index in range(3):
        with cortex.open(fleet_dsn, actor=actor_name(index), mode="r") as c:
            assert c.stats()["memories"] == 40 and c.verify() == []
    assert [run["workers"] for run in report["runs"]] == [1, 2]
    for run in report["runs"]:
        assert run["contexts"] > 0 and run["contexts_per_s"] == run["contexts"] / 0.5
        for key in ("context_ms", "task_ms"):
            assert 0 < run[key]["p50"] <= run[key]["p99"] <= run[key]["max"]
        assert run["context_ms"]["p50"] <= run["task_ms"]["p50"]
    assert report["postgresql"].startswith("PostgreSQL ")
    assert "N=2:" in summary(report)
    warm = run_fleet(fleet_dsn, FleetOptions(actors=3, memories=40, workers=(1,), seconds=0.3, warm_actors=2),
                     progress=False)
    assert warm["load"]["memories_per_s"] == 0  # nothing was missing
    (run,) = warm["runs"]
    assert run["contexts"] > 0 and run["context_ms"]["p50"] <= run["task_ms"]["p50"]
    assert "keeps 2 actors' stores open" in summary(warm)


@pytest.mark.parametrize("field, value", [("actors", 0), ("memories", True), ("workers", ()), ("workers", (0,)),
                                          ("seconds", 0), ("seconds", float("nan")),
                                          ("warm_actors", -1)])
def test_fleet_options_are_validated(field: str, value: object) -> None:
    with pytest.raises(cortex.ValidationError) as info:
        FleetOptions(**{field: value})  # type: ignore[arg-type]
    assert info.value.field == field
