"""Cost of building one importance group of a cached hot frame (the first call that opens it)."""
import sys, time
import numpy as np
import cortex
from cortex import context as ctx
from cortex.index import frame
from cortex.bench import hotframe
n, path = int(sys.argv[1]), sys.argv[2]
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    for h in hot: c.context(**h.query("short"))
    e = c._engine
    for h in hot[:4]:
        part = e.hot.lookup(frame.prefix(int(h.verb), int(h.kind), h.ref), e.storage)
        for v in (10, 9):
            t = time.perf_counter(); g = ctx._Group.of(part, v); d = time.perf_counter() - t
            rows = np.flatnonzero(part["importance"] == v)
            lu = part["last_used"][rows]
            t = time.perf_counter(); np.argsort(lu, kind="stable"); ds = time.perf_counter() - t
            t = time.perf_counter(); np.argsort(lu); dq = time.perf_counter() - t
            print(f"importance {v}: {len(rows)} rows, {len(g.counted.rows) if hasattr(g, 'counted') else '-'} counted; _Group.of {d*1e6:.0f} us; argsort stable {ds*1e6:.0f} us, default {dq*1e6:.0f} us")
