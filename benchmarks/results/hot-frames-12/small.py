import sys, time, numpy as np
import cortex
from cortex.bench.workload import Workload
qs = Workload(10_000_000, seed=7).queries(1000)
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
sizes = [c.context(**q).candidates for q in qs]
for q in qs: c.context(**q)
groups = {"small": [q for q, n in zip(qs, sizes) if n < 100], "mid": [q for q, n in zip(qs, sizes) if 512 <= n < 16384], "big": [q for q, n in zip(qs, sizes) if n >= 16384]}
out = []
for name, g in groups.items():
    lat = []
    for _ in range(3):
        for q in g:
            t = time.perf_counter(); c.context(**q); lat.append(time.perf_counter() - t)
    out.append(f"{name} {np.median(lat)*1e3:.3f}")
print(sys.argv[2], " ".join(out))
