"""pytest-benchmark timings of the hot paths, each checked against its exact answer.

CI runs these as a smoke test (`--benchmark-disable` in pyproject: each body runs
once on a 2,000-memory store). Real timings:

    CORTEX_BENCH_SIZES=10000,100000 python -m pytest benchmarks --benchmark-enable

Stores are built once per size per session with the seeded workload. Each timed
function returns what it was given with what it produced, and the test then checks
that result against an expectation computed another way, outside the timing: the
bundle against the original algorithm of `cortex.bench.baselines` (same store, same
`now`), a resolved memory against the workload item it was written from, a write
against what reading it back gives.
"""

from __future__ import annotations

import itertools
import os
import re
from datetime import datetime, timezone
from typing import Any

import pytest

import cortex
from cortex import Fact, Frame
from cortex.bench.baselines import original_context
from cortex.bench.workload import Workload

SIZES = [int(n) for n in os.environ.get("CORTEX_BENCH_SIZES", "2000").split(",")]
NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)  # after the workload's year of writes
URI = re.compile(r"cortex://(?P<type>[A-Z][a-z]+)/(?P<id>[0-9A-HJKMNP-TV-Z]{26})#(?P<version>[0-9]+)")


@pytest.fixture(scope="session", params=SIZES, ids=lambda n: f"n{n}")
def workload_store(request, tmp_path_factory):
    workload = Workload(request.param)
    path = tmp_path_factory.mktemp(f"bench-n{request.param}") / "store"
    workload.build(str(path), progress=False)
    with cortex.open(path, actor="bench-agent") as c:
        yield workload, c


def comparable(bundle: cortex.Bundle) -> dict[str, Any]:
    """Everything a bundle says but the journal root (the baselines leave it out)."""
    out = bundle.to_dict()
    del out["root"]
    return out


def test_context(benchmark, workload_store):
    workload, c = workload_store
    queries = itertools.cycle([{**q, "now": NOW} for q in workload.queries(200)])

    def call() -> tuple[dict[str, Any], cortex.Bundle]:
        query = next(queries)
        return query, c.context(**query)

    query, bundle = benchmark(call)
    assert bundle.memories(), f"the query found nothing to compare: {query}"
    # Ids per tier in order, every candidate's score and token count, the survivors'
    # text, the trimmed count and the reachable URIs: as the original algorithm has them.
    assert comparable(bundle) == comparable(original_context(c, **query)), query
    assert bundle.total_tokens == sum(bundle.tokens[m.id] for m in bundle.memories())
    assert bundle.total_tokens <= query["budget_tokens"] or len(bundle.memories()) == 1


def test_resolve(benchmark, workload_store):
    workload, c = workload_store
    oldest = c.find(type="Fact", order_by="created", limit=500)  # written early: cheap to regenerate
    uris = itertools.cycle([m.uri for m in oldest])

    def call() -> tuple[str, cortex.Memory]:
        uri = next(uris)
        return uri, c.resolve(uri)

    uri, memory = benchmark(call)
    # The workload writes its items in id order (one clock per batch, ids ascending in
    # item order), so the memory at position k of memories() was written from item k.
    item, listed = next((w, m) for w, m in zip(workload.writes(), c.memories(include_tombstoned=True)) if m.uri == uri)
    assert memory == listed
    assert (memory.uri, memory.type, memory.version) == (uri, cortex.MemoryType.FACT, 1)
    assert memory.data == item.data
    assert (memory.frames, memory.tags, memory.importance) == (item.frames, item.tags, item.importance)
    assert (memory.confidence, memory.source, memory.expires_at) == (1.0, "user_input", None)


def test_write(benchmark, tmp_path):
    with cortex.open(tmp_path / "s", actor="bench") as c:
        counter = itertools.count()

        def write() -> tuple[int, str]:
            i = next(counter)
            uri = c.write(Fact(statement=f"vendor {i} quoted {i % 97} USD per hour", subject=f"vendor-{i}", predicate="price"),
                          frames=[Frame("acquire", "service", f"obj-{i % 50}")])
            return i, uri

        i, uri = benchmark(write)
        match = URI.fullmatch(uri)
        assert match and match["type"] == "Fact" and match["version"] == "1", uri
        memory = c.resolve(uri)
        assert memory.data == Fact(statement=f"vendor {i} quoted {i % 97} USD per hour", subject=f"vendor-{i}", predicate="price")
        assert memory.frames == (Frame("acquire", "service", f"obj-{i % 50}"),)
        assert memory.forms["short"] == f"price(vendor-{i})=vendor {i} quoted {i % 97} USD per hour"
        assert c.stats()["memories"] == i + 1  # every timed write landed, once


def test_write_many_1000(benchmark, tmp_path):
    items = list(itertools.islice(Workload(1000, seed=9).writes(), 1000))
    with cortex.open(tmp_path / "s", actor="bench") as c:
        uris = benchmark(lambda: c.write_many(items))
        ids = [URI.fullmatch(uri)["id"] for uri in uris]
        assert len(set(ids)) == 1000 and ids == sorted(ids)  # one new memory per item, ids ascending in item order
        for uri, item in zip(uris, items, strict=True):
            memory = c.resolve(uri)
            assert (memory.type, memory.version) == (item.data.TYPE, 1)
            assert memory.uri == uri and memory.data == item.data
            assert (memory.frames, memory.tags, memory.importance) == (item.frames, item.tags, item.importance)
        assert c.stats()["memories"] % 1000 == 0  # whole batches only
