import sys, time, numpy as np
import cortex, cortex.context as cc
from cortex.bench.workload import Workload
from cortex.bench.harness import BASELINE_NOW
store, mem = sys.argv[1], int(sys.argv[2])
queries = [{**q, "now": BASELINE_NOW} for q in Workload(mem, seed=7).queries(1000)[:200]]
acc = {"block_ids": [], "outcome_values": [], "pinned": []}
ob, ov, op = cc._block_ids, cc._outcome_values, cc._pinned
def w(name, f):
    def g(*a):
        t = time.perf_counter(); r = f(*a); acc[name].append(time.perf_counter() - t); return r
    return g
cc._block_ids = w("block_ids", ob); cc._outcome_values = w("outcome_values", ov); cc._pinned = w("pinned", op)
with cortex.open(store, actor="bench-agent", mode="r") as c:
    for q in queries: c.context(**q)
    for k in acc: acc[k].clear()
    for q in queries: c.context(**q)
    print({k: "%.1f us" % (np.median(v) * 1e6) for k, v in acc.items()})
    e = c._engine
    print("pinned rows", len(e.hot.lookup(b"idx/pinned/", e.storage)), "objects per query", np.mean([len(q.get("objects", {})) for q in queries]))
