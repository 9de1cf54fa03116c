import sys, time, json, numpy as np
import cortex
from cortex.bench.workload import Workload
w = Workload(int(sys.argv[2]), seed=7)
qs = w.queries(1000)
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
for q in qs[:50]: c.context(**q)
for q in qs: c.context(**q)
lat, cand = [], []
for q in qs:
    t = time.perf_counter(); b = c.context(**q); lat.append((time.perf_counter() - t) * 1e3); cand.append(b.candidates)
json.dump({"lat": lat, "cand": cand}, open(sys.argv[3], "w"))
print(sys.argv[3], "warm p50 %.3f p99 %.3f" % (np.median(lat), np.percentile(lat, 99)))
