"""The hot-frame figure's sequence (bench.hotframe.measure), hot call times by round: does a frame's first call with a form make the p99?"""
import statistics
import sys
import time

import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
w = Workload(n, seed=7)
with cortex.open(path, actor="bench-agent") as c:
    for q in w.queries(300): c.context(**q)   # some of the mix first, as the harness does
    hot = hotframe.hot_frames(c); cold = hotframe.cold_frames(c, w, len(hot), 7)
    pairs = list(zip(hot, cold))
    for h, cf in pairs:
        c.context(**h.query("short")); c.context(**cf.query("short"))
    rows = []
    for r in range(20):
        form = hotframe.FORMS[r % 3]
        for i, (h, cf) in enumerate(pairs):
            t = time.perf_counter(); c.context(**h.query(form)); d = (time.perf_counter() - t) * 1e3
            c.context(**cf.query(form))
            rows.append((d, r, form, h.verb.name))
    allt = sorted(x[0] for x in rows)
    print(f"hot p50 {statistics.median(allt):.3f} p99 {allt[int(0.99 * (len(allt) - 1))]:.3f}")
    for r in range(6):
        print(r, hotframe.FORMS[r % 3], " ".join(f"{d:.2f}" for d, rr, _, _ in rows if rr == r))
    print("slowest:", sorted(rows, reverse=True)[:6])
