"""The benchmark baselines give exactly cortex's answers (`cortex.bench.baselines`),
and `compare()` reports what it measured.

The baselines exist to be timed against `Cortex.context()`; a timing means nothing
unless all of them return the same bundle for the same store, query and `now`, so
that is what these tests hold them to: whole bundles (every tier's memories, the
rendered text, every candidate's score to the bit and token count, the trim and the
reachable URIs), on the workload's queries and on the cases the workload does not
make. The ratios in `compare()`'s report are arithmetic on the medians it reports
beside them; the tests check what the report says about the calls it timed instead.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone

import pytest

import cortex
from cortex.bench import baselines as B
from cortex.bench.workload import Workload
from cortex import Constraint, Event, Fact, Frame, Goal, Identity

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


def _variants(base: list[dict]) -> list[dict]:
    """The workload's queries plus budgets small enough to trim hard, tier subsets,
    outcome limits, every form and a verb-less call."""
    out = list(base)
    for i, q in enumerate(base[:12]):
        out.append({**q, "budget_tokens": (1, 60, 150, 400)[i % 4]})
    for i, q in enumerate(base[12:18]):
        tiers = (["outcomes", "frame_relevant"], ["frame_relevant"], ["pinned", "frame_relevant"])[i % 3]
        out.append({**q, "include_tiers": tiers, "budget_tokens": 300})
    for i, q in enumerate(base[18:22]):
        out.append({**q, "outcome_limit": (1, 10)[i % 2], "form": ("short", "full")[i % 2]})
    out.append({"verb": None, "budget_tokens": 200})
    out.append({"verb": "acquire", "objects": {}, "form": "full"})
    return out


def _comparable(bundle: cortex.Bundle) -> dict:
    """Everything a bundle says but the journal root, which the baselines leave out."""
    out = bundle.to_dict()
    del out["root"]
    return out


def _assert_same(c, sqlite, query):
    """cortex, the original algorithm and SQLite (both scorings) return the same
    bundle: the same memories in every tier in order, with all their fields, the
    same rendered text, scores (bit-identical floats) and token counts."""
    q = {**query, "now": NOW}
    want = c.context(**q)
    expected = _comparable(want)
    for name, got in (("original", B.original_context(c, **q)), ("sqlite", sqlite.context(**q)),
                      ("sqlite bulk", sqlite.context(scoring="bulk", **q))):
        assert _comparable(got) == expected, f"{name} differs from cortex on {query}"
    return want


@pytest.fixture(scope="module")
def workload_env(tmp_path_factory):
    path = tmp_path_factory.mktemp("baselines") / "s"
    workload = Workload(500, seed=5)
    workload.build(str(path), progress=False)
    with cortex.open(path, actor="bench-agent", mode="r") as c, B.SqliteStore() as sqlite:
        assert sqlite.load_from(c) == 500
        yield workload, c, sqlite


def test_three_implementations_agree_on_the_workload(workload_env):
    workload, c, sqlite = workload_env
    queries = _variants(workload.queries(30))
    bundles = [_assert_same(c, sqlite, q) for q in queries]
    # The variants reach the cases where implementations could part: a trim, the
    # keep-one rule of budget 1, and each of the three tiers.
    assert [i for i, b in enumerate(bundles) if b.trimmed], "no variant trims"
    assert [i for i, b in enumerate(bundles) if len(b.memories()) == 1 and b.trimmed], "no variant keeps only one"
    for tier in ("pinned", "outcomes", "frame_relevant"):
        assert [i for i, b in enumerate(bundles) if getattr(b, tier)], f"no variant fills {tier}"


IMPLEMENTATIONS = ("cortex", "original", "sqlite", "sqlite_lean", "sqlite_bulk")
REPORT_KEYS = {"queries", "candidates", "alone", *IMPLEMENTATIONS, *(f"ratio_{name}" for name in IMPLEMENTATIONS[1:])}


def _check_report(report: dict, c, queries: list[dict], elapsed_s: float) -> None:
    """What a report must say about the calls it timed: one summary per
    implementation, the candidate counts cortex scored on these queries, and
    timings that fit inside the wall time of the compare() call."""
    assert report["queries"] == len(queries)
    cands = sorted(c.context(**q, now=NOW).candidates for q in queries)
    assert report["candidates"]["max"] == cands[-1]
    assert report["candidates"]["p50"] == statistics.median(cands)
    assert cands[-2] <= report["candidates"]["p99"] <= cands[-1]
    timed_ms = 0.0
    for name in IMPLEMENTATIONS:
        summary = report[name]
        assert set(summary) == {"p50_ms", "p99_ms", "mean_ms"}
        assert summary["p50_ms"] <= summary["p99_ms"], name
        timed_ms += summary["mean_ms"] * len(queries)
    # Then cortex and the lean SQLite variants ran every query alone, twice each.
    alone = report["alone"]
    assert set(alone) == {*B.ALONE, "ratio_sqlite_lean", "ratio_sqlite_bulk"}
    for name in B.ALONE:
        assert set(alone[name]) == {"p50_ms", "p99_ms", "mean_ms"}
        assert alone[name]["p50_ms"] <= alone[name]["p99_ms"], name
        timed_ms += alone[name]["mean_ms"] * 2 * len(queries)
    # The timed passes ran inside the call: the reported milliseconds cannot add up
    # to more than the call took.
    assert timed_ms <= elapsed_s * 1000, f"{timed_ms:.1f} ms timed in a call of {elapsed_s * 1000:.1f} ms"


def test_compare_checks_then_reports_what_it_timed(workload_env):
    workload, c, sqlite = workload_env
    queries = workload.queries(10)
    started = time.perf_counter()
    report = B.compare(c, queries, NOW, sqlite=sqlite)
    elapsed = time.perf_counter() - started
    assert set(report) == REPORT_KEYS  # no sqlite_load_s: it loaded nothing
    _check_report(report, c, queries, elapsed)
    assert B.answer(sqlite.context(**queries[0], now=NOW)) == B.answer(c.context(**queries[0], now=NOW))  # left open


def test_compare_loads_its_own_sqlite_copy_and_removes_it(workload_env, tmp_path, monkeypatch):
    workload, c, _ = workload_env
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where SqliteStore() puts its copy
    queries = workload.queries(3)
    started = time.perf_counter()
    report = B.compare(c, queries, NOW)
    elapsed = time.perf_counter() - started
    assert set(report) == REPORT_KEYS | {"sqlite_load_s"}
    _check_report(report, c, queries, elapsed)
    assert report["sqlite_load_s"] < elapsed
    assert list(tmp_path.iterdir()) == []  # the copy was deleted


def test_a_disagreement_names_the_query(workload_env, monkeypatch):
    workload, c, sqlite = workload_env
    real = B.original_context

    def wrong(c, **q):
        r = real(c, **q)
        return B.Result(**{**r.__dict__, "pinned": r.pinned[1:]})

    monkeypatch.setattr(B, "original_context", wrong)
    with pytest.raises(AssertionError, match=r"original disagrees with cortex on query 0 .*differing \['pinned'"):
        B.compare(c, workload.queries(3), NOW, sqlite=sqlite)


class _Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def test_agree_on_updates_expiry_tombstones_and_feedback(tmp_path):
    """The cases the workload does not make: expiry, pinned membership changed by
    update, importance from update_head, attest both ways, a tombstoned newest
    outcome, same-instant outcomes, tiers left out."""
    clock = _Clock(NOW - timedelta(days=200))
    gpu = Frame("acquire", "service", "gpu")
    alt = Frame("acquire", "model", "gpu")  # same ref, other kind: an outcome, not frame-relevant for {"service": "gpu"}
    rng = random.Random(3)
    with cortex.open(tmp_path / "s", actor="a", clock=clock, entropy=rng.randbytes) as c:
        c.write(Identity(name="me"), frames=[gpu])
        hard = c.write(Constraint(statement="never pay above 2 USD", strength="hard", polarity="dont", source="user_declared"), frames=[gpu])
        soft = c.write(Constraint(statement="prefer eu", strength="soft", polarity="prefer", source="learned"), frames=[gpu], importance=3)
        goal = c.write(Goal(statement="lease a gpu", status="active"), frames=[gpu])
        c.write(Goal(statement="expiring goal", status="active"), expires_at=NOW - timedelta(days=1))
        events = []
        for day in range(12):
            clock.now += timedelta(days=7)
            batch = c.write_many([
                cortex.Write(Event(kind="payment", outcome=rng.choice(("success", "failure")), summary=f"paid {day}.{j}"),
                             frames=[rng.choice((gpu, alt))], importance=rng.randint(0, 10),
                             expires_at=NOW - timedelta(hours=1) if (day, j) == (11, 0) else (NOW + timedelta(days=3) if j == 1 else None))
                for j in range(3)
            ])
            events += batch
            c.write(Fact(statement=f"gpu price {day}", subject="gpu", predicate="price"), frames=[gpu], importance=day % 11,
                    expires_at=NOW - timedelta(days=1) if day == 5 else None)
        c.write_many([cortex.Write(Fact(statement=f"quote {i}: " + "cheap " * (i % 30), subject="gpu", predicate="price"),
                                   frames=[gpu], importance=i % 11) for i in range(70)])  # > 64 to trim
        c.tombstone(events[-1], "wrong")
        c.update(goal, Goal(statement="lease a gpu", status="completed"))  # leaves the pinned tier
        c.update(soft, Constraint(statement="prefer eu", strength="hard", polarity="prefer", source="learned"))  # joins it
        c.update_head(hard, importance=9)
        c.attest([events[3], events[5]], "success")
        c.attest([events[4]], "failure", "factual_error")
        c.tombstone(hard, "revoked")

    with cortex.open(tmp_path / "s", actor="a", mode="r") as c, B.SqliteStore() as sqlite:
        sqlite.load_from(c)
        base = {"verb": "acquire", "objects": {"service": "gpu"}}
        queries = [
            base,
            {**base, "objects": {"service": "gpu", "model": "gpu"}},
            {**base, "outcome_limit": 1},
            {**base, "outcome_limit": 5, "form": "full"},
            {**base, "budget_tokens": 40},
            {**base, "budget_tokens": 1},
            {**base, "include_tiers": ["frame_relevant"]},
            {**base, "include_tiers": ["outcomes", "frame_relevant"], "budget_tokens": 100},
            {**base, "include_tiers": ["pinned"]},
            {"verb": None},
            {**base, "outcome_limit": 5, "include_tiers": ["outcomes"]},
        ]
        bundles = [_assert_same(c, sqlite, q) for q in queries]
        B.check_agreement(c, sqlite, queries, NOW)
    first = bundles[0]
    assert {getattr(m.data, "name", None) or m.data.statement for m in first.pinned} == {"me", "prefer eu"}
    assert first.outcomes and all(m.type == cortex.MemoryType.EVENT for m in first.outcomes)
    assert len(bundles[2].outcomes) == 1 and len(bundles[10].outcomes) == 5
    assert len(bundles[5].memories()) == 1 and len(bundles[5].reachable_uris) == B.MAX_REACHABLE_URIS < bundles[5].trimmed
