"""pytest-benchmark timings of the hot paths.

CI runs these as a smoke test (`--benchmark-disable` in pyproject: each body runs
once on a 2,000-memory store). Real timings:

    CORTEX_BENCH_SIZES=10000,100000 python -m pytest benchmarks --benchmark-enable

Stores are built once per size per session with the seeded workload.
"""

from __future__ import annotations

import itertools
import os

import pytest

import cortex
from cortex.bench.workload import Workload
from cortex import Fact, Frame

SIZES = [int(n) for n in os.environ.get("CORTEX_BENCH_SIZES", "2000").split(",")]


@pytest.fixture(scope="session", params=SIZES, ids=lambda n: f"n{n}")
def workload_store(request, tmp_path_factory):
    workload = Workload(request.param)
    path = tmp_path_factory.mktemp(f"bench-n{request.param}") / "store"
    workload.build(str(path), progress=False)
    with cortex.open(path, actor="bench-agent") as c:
        yield workload, c


def test_context(benchmark, workload_store):
    workload, c = workload_store
    queries = itertools.cycle(workload.queries(200))
    bundle = benchmark(lambda: c.context(**next(queries)))
    assert isinstance(bundle, cortex.Bundle)


def test_resolve(benchmark, workload_store):
    _, c = workload_store
    uris = itertools.cycle([m.uri for m in c.find(type="Fact", limit=500)])
    memory = benchmark(lambda: c.resolve(next(uris)))
    assert memory.type is cortex.MemoryType.FACT


def test_write(benchmark, tmp_path):
    with cortex.open(tmp_path / "s", actor="bench") as c:
        counter = itertools.count()

        def write() -> str:
            i = next(counter)
            return c.write(Fact(statement=f"vendor {i} quoted {i % 97} USD per hour", subject=f"vendor-{i}", predicate="price"),
                           frames=[Frame("acquire", "service", f"obj-{i % 50}")])

        assert benchmark(write).startswith("cortex://Fact/")


def test_write_many_1000(benchmark, tmp_path):
    items = list(itertools.islice(Workload(1000, seed=9).writes(), 1000))
    with cortex.open(tmp_path / "s", actor="bench") as c:
        uris = benchmark(lambda: c.write_many(items))
        assert len(uris) == 1000
