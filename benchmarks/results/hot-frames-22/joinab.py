"""Hot and cold calls, alternating blocks with hot calls' joins kept (JOINED_BELOW_ROWS raised) or not
(`big`: the kept side's `JoinedCalls` also four times larger, so the ten hot frames' joins fit)."""
import sys
import time

import numpy as np

import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload
from cortex.index import hot as hotmod

n, path = int(sys.argv[1]), sys.argv[2]
w = Workload(n, seed=7)
BASE = hotmod.JOINED_BELOW_ROWS
BIG = len(sys.argv) > 3 and sys.argv[3] == "big"
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    cold = hotframe.cold_frames(c, w, len(hot), 7)
    pairs = [(h, cold[i % len(cold)]) for i, h in enumerate(hot)]
    for rep in range(4):
        for label, limit in (("base", BASE), ("kept", 1 << 30)):
            hotmod.JOINED_BELOW_ROWS = limit
            c._engine.joins = hotmod.JoinedCalls(4 * hotmod.JOINED_BYTES if BIG and label == "kept" else hotmod.JOINED_BYTES)
            for h, cf in pairs:
                for form in hotframe.FORMS:
                    c.context(**h.query(form)); c.context(**cf.query(form))
            H, C = [], []
            for r in range(30):
                form = hotframe.FORMS[r % 3]
                for i, (h, cf) in enumerate(pairs):
                    t = time.perf_counter(); c.context(**h.query(form)); H.append((time.perf_counter() - t) * 1e3)
                    t = time.perf_counter(); c.context(**cf.query(form)); C.append((time.perf_counter() - t) * 1e3)
            print(label, f"hot p50 {np.percentile(H, 50):.3f} p99 {np.percentile(H, 99):.3f} | cold p50 {np.percentile(C, 50):.3f} | p50 ratio {np.percentile(H, 50) / np.percentile(C, 50):.2f} p99 ratio {np.percentile(H, 99) / np.percentile(C, 50):.2f}")
