"""In-process A/B on the query mix: base tree (cortex_base) and working tree (cortex), calls alternating."""
import sys, time, numpy as np
import os; sys.path.insert(0, os.environ.get("ABPKG", "/tmp/abpkg"))
import cortex, cortex_base
from cortex.bench.workload import Workload
store, mem, passes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
queries = Workload(mem, seed=7).queries(1000)
with cortex.open(store, actor="bench-agent", mode="r") as new, cortex_base.open(store, actor="bench-agent", mode="r") as base:
    sides = {"base": base, "new": new}
    for p in range(passes):
        res = {s: [] for s in sides}
        for i, q in enumerate(queries):
            order = ("base", "new") if (i + p) % 2 else ("new", "base")
            for s in order:
                t = time.perf_counter(); sides[s].context(**q); res[s].append((time.perf_counter() - t) * 1e3)
        print(f"pass {p}: " + " | ".join(f"{s} p50 {np.median(v):.3f} p95 {np.percentile(v, 95):.3f} p99 {np.percentile(v, 99):.3f}" for s, v in res.items()), flush=True)
    for s, c in sides.items():
        e = c._engine
        print(s, "hot prefixes", len(e.hot), "entries read", e.index_entries_read)
