"""The benchmark workload is deterministic and gives answerable queries."""

from __future__ import annotations

import cortex
from cortex.bench.workload import PINNED_MEMBERS, Workload


def test_same_seed_builds_the_same_store(tmp_path):
    roots = []
    for name in ("a", "b"):
        Workload(400, seed=3).build(str(tmp_path / name), progress=False)
        with cortex.open(tmp_path / name, actor="bench-agent", mode="r") as c:
            roots.append(c.root())
            assert c.verify() == []
            stats = c.stats()
    assert roots[0] == roots[1]
    assert stats["memories"] + stats["tombstoned"] == 400
    assert stats["tombstoned"] == 4


def test_queries_hit_hot_objects_and_return_pinned(tmp_path):
    workload = Workload(600, seed=5)
    workload.build(str(tmp_path / "s"), progress=False)
    queries = workload.queries(40)
    assert queries == workload.queries(40)
    with cortex.open(tmp_path / "s", actor="bench-agent") as c:
        bundles = [c.context(**q) for q in queries]
    assert all(len(b.pinned) + len(b.outcomes) + len(b.frame_relevant) >= 1 for b in bundles)
    assert max(b.candidates for b in bundles) > PINNED_MEMBERS
    assert all(b.total_tokens <= q["budget_tokens"] or len(b.memories()) == 1 for b, q in zip(bundles, queries))
