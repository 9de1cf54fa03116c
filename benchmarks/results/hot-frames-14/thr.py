"""cortex per-call time interleaved with synthetic work."""
import sys, time, json, numpy as np
import cortex
from cortex.bench.workload import Workload
from cortex.bench.harness import BASELINE_NOW
store, mem = sys.argv[1], int(sys.argv[2])
queries = [{**q, "now": BASELINE_NOW} for q in Workload(mem, seed=7).queries(1000)[:200]]
bufs = {mb: np.ones(mb << 17) for mb in (1, 4, 16, 64)}
blob = [{"k%d" % i: [i, str(i), {"x": i * 1.5}]} for i in range(3000)]
def touch(mb):
    def f(): bufs[mb].sum()
    return f
def pyheavy():
    json.loads(json.dumps(blob))
def sleep1(): time.sleep(0.001)
with cortex.open(store, actor="bench-agent", mode="r") as c:
    ctx = lambda q: c.context(**{k: v for k, v in q.items()})
    from cortex.bench import baselines as bl
    impls = bl.implementations(c, None) if False else None
    for q in queries: ctx(q)
    for name, between in (("none", None), ("touch1MB", touch(1)), ("touch4MB", touch(4)), ("touch16MB", touch(16)), ("touch64MB", touch(64)),
                          ("py-json", pyheavy), ("sleep1ms", sleep1), ("none", None)):
        ts = []
        for r in range(2):
            for q in queries:
                if between: between()
                t = time.perf_counter(); ctx(q); ts.append((time.perf_counter() - t) * 1e3)
        print(f"{name:10s} p50 {np.median(ts):.3f} mean {np.mean(ts):.3f}", flush=True)
