"""What edges cost `context()`: a store where 10% of the memories are superseded,
against the same store without edges.

    python -m cortex.bench.edges --memories 100000 --queries 1000 [--store DIR]

Builds the workload store (`cortex.bench.workload`, reused when DIR holds one),
copies it, and in the copy links a random 10% of the memories (the stale ones) from
other memories with `supersedes` edges, and 1% of them in `contradicts` pairs. The
superseding memories are drawn from those never superseded, so there are no chains
and no cycles. Then both stores answer the same query mix, query by query in
alternating order (the machine's other load falls on both alike), after a warm-up,
and the report gives p50 / p95 / p99 / max per store, the candidates scored (fewer
with edges: stale memories go before scoring) and how many bundles carried
conflicts. `measure()` is the harness's entry.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np

import cortex

from .workload import Workload

FRACTION_SUPERSEDED = 0.10
FRACTION_CONTRADICTED = 0.01
WARM_UP = 50


def _pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


def _summary(latencies: list[float], candidates: list[int]) -> dict[str, float]:
    return {
        "p50_ms": _pct(latencies, 50), "p95_ms": _pct(latencies, 95), "p99_ms": _pct(latencies, 99), "max_ms": max(latencies),
        "candidates_p50": _pct([float(c) for c in candidates], 50),
    }


def add_edges(path: str, seed: int = 7, superseded: float = FRACTION_SUPERSEDED, contradicted: float = FRACTION_CONTRADICTED) -> dict[str, Any]:
    """Link the store at `path`: `superseded` of its memories get a `supersedes` edge
    from a memory that is never superseded, `contradicted` of them a `contradicts`
    edge to another. Returns the counts and the seconds spent in `link()`."""
    rng = random.Random(seed)
    with cortex.open(path, actor="bench-agent") as c:
        uris = [m.uri for m in c.memories(include_tombstoned=True)]
        stale = rng.sample(range(len(uris)), int(len(uris) * superseded))
        stale_set = set(stale)
        fresh = [i for i in range(len(uris)) if i not in stale_set]
        started = time.perf_counter()
        for i in stale:
            c.link(uris[rng.choice(fresh)], "supersedes", uris[i])
        pairs = 0
        for _ in range(int(len(uris) * contradicted)):
            a, b = rng.sample(range(len(uris)), 2)
            c.link(uris[a], "contradicts", uris[b])
            pairs += 1
        seconds = time.perf_counter() - started
        problems = c.verify()
    if problems:
        raise RuntimeError(f"the linked store does not verify: {problems[:3]}")
    return {"memories": len(uris), "superseded": len(stale), "contradicts": pairs, "link_seconds": seconds,
            "link_per_s": (len(stale) + pairs) / seconds if seconds else 0.0}


def measure(store: str, queries: list[dict[str, Any]], seed: int = 7) -> dict[str, Any]:
    """Copy `store`, add edges to the copy (`add_edges`), and time `context()` on both
    with `queries`, interleaved; the copy is removed afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        linked = os.path.join(tmp, "linked")
        shutil.copytree(store, linked)
        edges = add_edges(linked, seed)
        times: dict[str, list[float]] = {"without_edges": [], "with_edges": []}
        candidates: dict[str, list[int]] = {"without_edges": [], "with_edges": []}
        with_conflicts = 0
        with cortex.open(store, actor="bench-agent", mode="r") as plain, cortex.open(linked, actor="bench-agent", mode="r") as edged:
            stores = {"without_edges": plain, "with_edges": edged}
            for q in queries[:WARM_UP]:
                plain.context(**q)
                edged.context(**q)
            for n, q in enumerate(queries):
                for name in (("without_edges", "with_edges") if n % 2 else ("with_edges", "without_edges")):
                    started = time.perf_counter()
                    bundle = stores[name].context(**q)
                    times[name].append((time.perf_counter() - started) * 1000)
                    candidates[name].append(bundle.candidates)
                    if name == "with_edges" and bundle.conflicts:
                        with_conflicts += 1
    return {
        "edges": edges,
        "queries": len(queries),
        "without_edges": _summary(times["without_edges"], candidates["without_edges"]),
        "with_edges": _summary(times["with_edges"], candidates["with_edges"]),
        "bundles_with_conflicts": with_conflicts,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cortex.bench.edges", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--store", help="workload store directory (default bench-stores/n<N>-s<seed>; built when missing)")
    args = parser.parse_args(argv)
    workload = Workload(args.memories, seed=args.seed)
    store = args.store or os.path.join("bench-stores", f"n{args.memories}-s{args.seed}")
    try:
        cortex.store_actor(store)
    except cortex.NotFound:
        print(f"building {args.memories:,} memories in {store}", file=sys.stderr)
        workload.build(store)
    report = measure(store, workload.queries(args.queries), args.seed)
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
