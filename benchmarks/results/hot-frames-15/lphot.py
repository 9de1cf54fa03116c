import sys, time
from line_profiler import LineProfiler
import numpy as np
import cortex, cortex.context as cc
from cortex.bench import hotframe
from cortex.bench.workload import Workload
store, mem = sys.argv[1], int(sys.argv[2])
with cortex.open(store, actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c)
    qs = [h.query("medium") for h in hot]
    for q in qs: c.context(**q)
    ts = []
    for r in range(10):
        for q in qs:
            t = time.perf_counter(); c.context(**q); ts.append(time.perf_counter() - t)
    print("hot p50 %.3f ms" % (np.median(ts) * 1e3))
    lp = LineProfiler()
    for name in sys.argv[3:]:
        mod, fn = name.rsplit(".", 1)
        lp.add_function(getattr(sys.modules[mod], fn))
    lp.enable_by_count()
    for r in range(5):
        for q in qs: c.context(**q)
    lp.disable_by_count()
lp.print_stats(output_unit=1e-6)
