import sys, time, resource, numpy as np
import cortex
from cortex.bench import hotframe
def flt(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with cortex.open(sys.argv[1], actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c)
    qs = [h.query(f) for f in ("short","medium","full") for h in hot]
    for q in qs: c.context(**q)
    ts, fs = [], []
    for r in range(10):
        for q in qs:
            f0 = flt(); t = time.perf_counter(); c.context(**q); ts.append((time.perf_counter() - t) * 1e3); fs.append(flt() - f0)
    print(f"p50 {np.median(ts):.3f} p99 {np.percentile(ts,99):.3f} faults/call mean {np.mean(fs):.1f} p50 {np.median(fs)}")
