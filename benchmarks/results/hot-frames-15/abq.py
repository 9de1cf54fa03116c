"""p50 of cortex context() alone and with synthetic work between calls."""
import sys, time, json, numpy as np
import cortex
from cortex.bench.workload import Workload
from cortex.bench.harness import BASELINE_NOW
store, mem, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
queries = [{**q, "now": BASELINE_NOW} for q in Workload(mem, seed=7).queries(1000)[:200]]
big = np.ones(64 << 17)
blob = [{"k%d" % i: [i, str(i), {"x": i * 1.5}]} for i in range(3000)]
out = []
with cortex.open(store, actor="bench-agent", mode="r") as c:
    for q in queries: c.context(**q)
    for name, between in (("none", None), ("touch64MB", lambda: big.sum()), ("py-json", lambda: json.loads(json.dumps(blob)))):
        ts = []
        for r in range(3):
            for q in queries:
                if between: between()
                t = time.perf_counter(); c.context(**q); ts.append((time.perf_counter() - t) * 1e3)
        out.append(f"{name} {np.median(ts):.3f}")
print(tag, " | ".join(out), flush=True)
