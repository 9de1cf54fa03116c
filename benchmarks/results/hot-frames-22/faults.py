"""Minor page faults per hot and per cold call (getrusage), steady state."""
import resource
import sys
import time

import numpy as np

import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
w = Workload(n, seed=7)
def flt(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    cold = hotframe.cold_frames(c, w, len(hot), 7)
    pairs = [(h, cold[i % len(cold)]) for i, h in enumerate(hot)]
    for h, cf in pairs:
        for form in hotframe.FORMS:
            c.context(**h.query(form)); c.context(**cf.query(form))
    for rep in range(2):
        H, C = [], []
        for r in range(30):
            form = hotframe.FORMS[r % 3]
            for h, cf in pairs:
                f0 = flt(); t = time.perf_counter(); c.context(**h.query(form)); H.append(((time.perf_counter() - t) * 1e3, flt() - f0))
                f0 = flt(); t = time.perf_counter(); c.context(**cf.query(form)); C.append(((time.perf_counter() - t) * 1e3, flt() - f0))
        hm = np.array([x[0] for x in H]); hf = np.array([x[1] for x in H]); cf_ = np.array([x[1] for x in C])
        print(f"hot p50 {np.percentile(hm, 50):.2f} p99 {np.percentile(hm, 99):.2f}; faults per hot call mean {hf.mean():.1f} max {hf.max()}; cold mean {cf_.mean():.1f}")
        slow = np.argsort(-hm)[:8]
        print("  slowest hot (ms, faults):", [(round(hm[i], 2), int(hf[i])) for i in slow])
