import sys, time, gc, numpy as np
import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload
ev = []
t0 = [0.0]
def cb(phase, info):
    if phase == "start": t0[0] = time.perf_counter()
    else: ev.append((info["generation"], (time.perf_counter() - t0[0]) * 1e3))
with cortex.open(sys.argv[1], actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c)
    cold = hotframe.cold_frames(c, Workload(int(sys.argv[2]), seed=7), len(hot), seed=7)
    qs = [f.query(fm) for fm in ("short","medium","full") for pair in zip(hot, cold) for f in pair]
    for q in qs: c.context(**q)
    print("tracked objects", len(gc.get_objects()), "thresholds", gc.get_threshold(), "counts", gc.get_count())
    gc.callbacks.append(cb)
    ts = []
    for r in range(10):
        for q in qs:
            n0 = len(ev); t = time.perf_counter(); c.context(**q); ts.append(((time.perf_counter() - t) * 1e3, len(ev) - n0))
    gc.callbacks.remove(cb)
    import collections
    print("collections", collections.Counter(g for g, _ in ev), "ms by gen", {g: round(sum(d for gg, d in ev if gg == g), 2) for g in (0, 1, 2)})
    print("max gc ms", max((d for _, d in ev), default=0))
    with_gc = [t for t, k in ts if k]; without = [t for t, k in ts if not k]
    print("calls with gc", len(with_gc), "median", np.median(with_gc) if with_gc else None, "without", len(without), np.median(without))
