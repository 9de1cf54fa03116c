import sys, time, numpy as np
import cortex
from cortex.bench.workload import Workload
from cortex.bench.calls import timed_call
wl = Workload(int(sys.argv[2]), seed=7)
qs = wl.queries(1000)
with cortex.open(sys.argv[1], actor="bench-agent") as c:
    for q in qs[:50]: c.context(**q)
    first = [timed_call(c, q) for q in qs]
    res = []
    for p in range(3):
        calls = [timed_call(c, q) for q in qs]
        ms = np.array([x.ms for x in calls]); cand = np.array([x.candidates for x in calls])
        res.append((np.median(ms), np.percentile(ms, 99), np.median(ms[cand < 500]), np.median(ms[(cand >= 500) & (cand < 8000)]), np.median(ms[cand >= 8000]), (cand>=8000).sum()))
print(sys.argv[3], " | ".join("p50 %.2f p99 %.2f small %.2f mid %.2f big %.2f (%d)" % r for r in res))
