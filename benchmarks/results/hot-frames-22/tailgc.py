"""First pass of the mix: GC pauses and the slowest calls."""
import sys

import numpy as np

import cortex
from cortex.bench.calls import timed_call
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
qs = Workload(n, seed=7).queries(1000)
from gcpauses import pauses

with cortex.open(path, actor="bench-agent") as c:
    for q in qs[:50]:
        c.context(**q)
    pauses.clear()
    calls = []
    gcs = []
    for q in qs:
        k = len(pauses)
        calls.append(timed_call(c, q))
        gcs.append(sum(p[1] for p in pauses[k:]))
ms = np.array([x.ms for x in calls]); g = np.array(gcs)
print(f"first p50 {np.percentile(ms, 50):.2f} p99 {np.percentile(ms, 99):.2f}", f"; without gc time: p99 {np.percentile(ms - g, 99):.2f}")
for gen in (0, 1, 2):
    ps = [p[1] for p in pauses if p[0] == gen]
    print("gen", gen, "count", len(ps), f"total {sum(ps):.1f} ms max {max(ps) if ps else 0:.2f}")
for i in np.argsort(-ms)[:8]:
    print(i, f"{ms[i]:.2f} ms, gc {g[i]:.2f}, read {calls[i].entries_read}, cand {calls[i].candidates}")
