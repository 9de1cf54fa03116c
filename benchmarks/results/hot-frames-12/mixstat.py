import sys, time, collections, numpy as np
import cortex, cortex.context as cm, cortex.index.hot as hm
from cortex.bench.workload import Workload
qs = Workload(10_000_000, seed=7).queries(1000)
stats = collections.Counter(); T = collections.defaultdict(float)
oc = hm.cells_of
def co(cols):
    t = time.perf_counter(); r = oc(cols); T["chunks_of"] += time.perf_counter() - t; stats["chunks_of"] += 1; stats["rows_chunked"] += len(cols); return r
hm.cells_of = co
op = cm._Ranked._pool
def pool(self, m, chunked):
    t = time.perf_counter(); r = op(self, m, chunked); T["pool"] += time.perf_counter() - t; stats["pool"] += 1; stats["pool_rows"] += len(r[0]); stats["pool_joined"] += len(self._joined); stats["m"+str(m)] += 1; return r
cm._Ranked._pool = pool
cm._CELLS_FROM = int(sys.argv[2]) if len(sys.argv) > 2 else cm._CELLS_FROM
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
for q in qs[:50]: c.context(**q)
for q in qs: c.context(**q)
print("first pass", dict(stats), {k: round(v*1e3, 1) for k, v in T.items()}); stats.clear(); T.clear()
for q in qs: c.context(**q)
print("warm pass", dict(stats), {k: round(v*1e3, 1) for k, v in T.items()})
print("hot cache prefixes", len(c._engine.hot), "rows", c._engine.hot._rows)
