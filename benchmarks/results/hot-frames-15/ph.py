import sys, time, json, numpy as np, collections
import cortex, cortex.context as cc
from cortex.bench.workload import Workload
from cortex.bench.harness import BASELINE_NOW
store, mem = sys.argv[1], int(sys.argv[2])
queries = [{**q, "now": BASELINE_NOW} for q in Workload(mem, seed=7).queries(1000)[:200]]
big = np.ones(64 << 17)
blob = [{"k%d" % i: [i, str(i), {"x": i * 1.5}]} for i in range(3000)]
names = ["weights","pinned","outcomes","frames","join","live/dedup","score","trim","uris","views","loop","order","bundle+read-exit"]
names0 = ["view","weights","pinned","outcomes","frames","join","live/dedup","score","trim","uris","keys","views","loop","order/bundle"]
with cortex.open(store, actor="bench-agent", mode="r") as c:
    for q in queries: c.context(**q)
    for name, between in (("none", None), ("touch64MB", lambda: big.sum()), ("py-json", lambda: json.loads(json.dumps(blob))), ("none", None)):
        ts = []; cc.PH.clear(); cc.PRE.clear()
        for r in range(2):
            for q in queries:
                if between: between()
                t = time.perf_counter(); c.context(**q); ts.append((time.perf_counter() - t) * 1e3)
        lens = collections.Counter(len(p) for p in cc.PH)
        L = lens.most_common(1)[0][0]
        ph = np.array([np.diff(p) for p in cc.PH if len(p) == L]) * 1e3
        print(f"{name:10s} p50 {np.median(ts):.3f} | " + " ".join(f"{n} {v:.3f}" for n, v in zip(names, np.median(ph, axis=0))), "n", len(ph), "pre %.3f" % np.median(cc.PRE) * 1e3 if False else "pre %.3f" % (np.median(cc.PRE) * 1e3), flush=True)
