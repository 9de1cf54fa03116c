import sys, time, numpy as np
import cortex
from cortex.bench.workload import Workload
wl = Workload(int(sys.argv[2]), seed=7)
qs = wl.queries(1000)
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
small = []; mid = []
for q in qs:
    b = c.context(**q)
    (small if b.candidates < 500 else mid if b.candidates < 8000 else []).append(q)
for q in small + mid: c.context(**q)
res = {}
for name, group in (("small", small), ("mid", mid)):
    v = []
    for _ in range(7):
        t = time.perf_counter()
        for q in group: c.context(**q)
        v.append((time.perf_counter() - t) / len(group) * 1e3)
    res[name] = (np.median(v), min(v))
print(sys.argv[3], " ".join("%s med %.3f min %.3f" % (k, *v) for k, v in res.items()))
