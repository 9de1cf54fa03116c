"""Alternating A/B timing of context() for two checkouts on one store.

    (cd ../before && python ../main/benchmarks/ab.py STORE N)   # the cortex of the folder you stand in
    (cd ../after && python ../main/benchmarks/ab.py STORE N)

Opens STORE (a harness store of N memories, actor bench-agent) with mode="r", makes
200 warm-up calls, then times 2,000 of the workload's queries and prints p50, p99
and mean in ms as JSON. Run it alternately for two versions to compare them on a
machine whose load drifts (RESULTS.md).
"""

import json
import sys
import time

import numpy as np

import cortex

try:
    from cortex.bench.workload import Workload
except ImportError:  # checkouts from before the harness moved into the package
    from benchmarks.workload import Workload  # type: ignore[no-redef]

store, n = sys.argv[1], int(sys.argv[2])
queries = Workload(n, seed=7).queries(2000)
with cortex.open(store, actor="bench-agent", mode="r") as c:
    for q in queries[:200]:
        c.context(**q)
    latencies = []
    for q in queries:
        started = time.perf_counter()
        c.context(**q)
        latencies.append((time.perf_counter() - started) * 1000)
a = np.array(latencies)
print(json.dumps({"p50": round(float(np.percentile(a, 50)), 3), "p99": round(float(np.percentile(a, 99)), 3),
                  "mean": round(float(a.mean()), 3)}))
