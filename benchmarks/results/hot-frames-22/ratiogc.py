"""The hot-frame figure's calls with the collector's time inside each call (`mix`: after
the query mix's two passes, as the harness runs it)."""
import sys
import time

import numpy as np

import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
w = Workload(n, seed=7)
from gcpauses import pauses


def timed(c, q):
    k = len(pauses)
    t = time.perf_counter(); c.context(**q); ms = (time.perf_counter() - t) * 1e3
    return ms, sum(p[1] for p in pauses[k:]), [p[0] for p in pauses[k:]]
with cortex.open(path, actor="bench-agent") as c:
    if len(sys.argv) > 3 and sys.argv[3] == "mix":  # as the harness: the mix's two passes first
        qs = w.queries(1000)
        for q in qs[:50] + qs + qs:
            c.context(**q)
    hot = hotframe.hot_frames(c)
    cold = hotframe.cold_frames(c, w, len(hot), 7)
    pairs = [(h, cold[i % len(cold)]) for i, h in enumerate(hot)]
    for h, cf in pairs:
        c.context(**h.query(hotframe.FORMS[0])); c.context(**cf.query(hotframe.FORMS[0]))
    for rep in range(3):
        H, C = [], []
        pauses.clear()
        for r in range(30):
            form = hotframe.FORMS[r % 3]
            for i, (h, cf) in enumerate(pairs):
                if (r + i) % 2 == 0:
                    H.append(timed(c, h.query(form))); C.append(timed(c, cf.query(form)))
                else:
                    C.append(timed(c, cf.query(form))); H.append(timed(c, h.query(form)))
        hm = np.array([x[0] for x in H]); hg = np.array([x[1] for x in H]); cm = np.array([x[0] for x in C])
        g1 = [p for p in pauses if p[0] == 1]
        print(f"hot p50 {np.percentile(hm, 50):.2f} p99 {np.percentile(hm, 99):.2f} (without gc {np.percentile(hm - hg, 99):.2f}) | cold p50 {np.percentile(cm, 50):.2f} | ratio {np.percentile(hm, 99) / np.percentile(cm, 50):.2f} (without gc {np.percentile(hm - hg, 99) / np.percentile(cm, 50):.2f}) | gen1 {len(g1)} avg {np.mean([p[1] for p in g1]) if g1 else 0:.2f} ms collected {np.mean([p[2] for p in g1]) if g1 else 0:.0f}, gen0 {sum(1 for p in pauses if p[0] == 0)} avg {np.mean([p[1] for p in pauses if p[0] == 0]):.3f} ms")
        slow = np.argsort(-hm)[:6]
        print("   slowest hot:", ", ".join(f"{hm[i]:.2f} (gc {hg[i]:.2f} {H[i][2]})" for i in slow))
