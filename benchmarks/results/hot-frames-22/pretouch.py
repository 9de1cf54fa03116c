"""First pass of the mix with and without touching every table file first (a get of
each file's smallest key: loads its index and filter blocks)."""
import sys
import time

import numpy as np

import cortex
from cortex.bench.calls import timed_call
from cortex.bench.workload import Workload

n, path, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
qs = Workload(n, seed=7).queries(1000)
with cortex.open(path, actor="bench-agent") as c:
    st = c._engine.storage
    if mode == "touch":
        t = time.perf_counter()
        files = st.db.live_files()
        for f in files:
            st.db.get(bytes(f["start_key"]) if not isinstance(f["start_key"], bytes) else f["start_key"])
        print(f"touched {len(files)} files in {(time.perf_counter() - t) * 1e3:.1f} ms")
    for q in qs[:50]:
        c.context(**q)
    calls = [timed_call(c, q) for q in qs]
    warm = [timed_call(c, q) for q in qs]
    ms = [x.ms for x in calls]; wm = [x.ms for x in warm]
    print(mode, f"first p50 {np.percentile(ms, 50):.2f} p95 {np.percentile(ms, 95):.2f} p99 {np.percentile(ms, 99):.2f} | warm p50 {np.percentile(wm, 50):.2f} p99 {np.percentile(wm, 99):.2f}")
