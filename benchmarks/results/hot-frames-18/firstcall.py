import sys, time, numpy as np
import cortex
from cortex.bench import hotframe
from cortex.bench.hotframe import FORMS
with cortex.open(sys.argv[1], actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c)
    for h in hot: c.context(**h.query(FORMS[0]))   # warm-up round, as the harness
    first, rest = [], []
    for r in range(30):
        for h in hot:
            t = time.perf_counter(); c.context(**h.query(FORMS[r % 3])); dt = (time.perf_counter() - t) * 1e3
            (first if r == 0 else rest).append(dt)
    print("first timed call per frame: median %.3f max %.3f | the rest: p50 %.3f p99 %.3f" % (np.median(first), max(first), np.median(rest), np.percentile(rest, 99)))
