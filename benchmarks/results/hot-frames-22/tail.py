"""First pass of the harness's query mix on an existing store: the slowest calls, what they read."""
import sys

import cortex
from cortex.bench.calls import timed_call
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
w = Workload(n, seed=7)
qs = w.queries(1000)
with cortex.open(path, actor="bench-agent") as c:
    for q in qs[:50]:
        c.context(**q)
    calls = [timed_call(c, q) for q in qs]
    warm = [timed_call(c, q) for q in qs]
order = sorted(range(len(calls)), key=lambda i: -calls[i].ms)
import numpy as np

print(f"p50 {np.percentile([x.ms for x in calls], 50):.2f} p99 {np.percentile([x.ms for x in calls], 99):.2f}")
for i in order[:25]:
    q = qs[i]
    print(f"{i:4d} {calls[i].ms:7.2f} ms warm {warm[i].ms:6.2f} read {calls[i].entries_read:6d} cand {calls[i].candidates:6d} {q.get('verb')} {q.get('objects')} {q.get('form')} {q.get('budget_tokens')}")
big = [i for i in range(len(calls)) if calls[i].entries_read > 10000]
print("calls reading >10k entries:", len(big), "their ms:", sorted(round(calls[i].ms,1) for i in big))
