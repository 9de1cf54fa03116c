"""storage time share of cortex calls, interleaved with synthetic work."""
import sys, time, json, numpy as np, collections
import cortex
from cortex.bench.workload import Workload
from cortex.bench.harness import BASELINE_NOW
store, mem = sys.argv[1], int(sys.argv[2])
queries = [{**q, "now": BASELINE_NOW} for q in Workload(mem, seed=7).queries(1000)[:200]]
big = np.ones(64 << 17)
blob = [{"k%d" % i: [i, str(i), {"x": i * 1.5}]} for i in range(3000)]
acc = collections.Counter(); cnt = collections.Counter()
def wrap(obj, name):
    f = getattr(obj, name)
    def w(*a, **k):
        t = time.perf_counter()
        try: return f(*a, **k)
        finally: acc[name] += time.perf_counter() - t; cnt[name] += 1
    setattr(obj, name, w)
with cortex.open(store, actor="bench-agent", mode="r") as c:
    st = c._engine.storage
    for n in ("get", "multi_get", "scan_values", "scan_items", "last_key", "catch_up", "writer_moved"):
        wrap(st, n)
    ctx = lambda q: c.context(**q)
    for q in queries: ctx(q)
    for name, between in (("none", None), ("touch64MB", lambda: big.sum()), ("py-json", lambda: json.loads(json.dumps(blob))), ("none", None)):
        ts = []; acc.clear(); cnt.clear()
        for r in range(2):
            for q in queries:
                if between: between()
                t = time.perf_counter(); ctx(q); ts.append((time.perf_counter() - t) * 1e3)
        n = len(ts)
        print(f"{name:10s} p50 {np.median(ts):.3f} mean {np.mean(ts):.3f} | " + " ".join(f"{k} {1e3*v/n:.3f}ms/{cnt[k]/n:.1f}" for k, v in acc.most_common()), flush=True)
