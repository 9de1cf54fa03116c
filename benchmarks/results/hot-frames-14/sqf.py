"""cortex per-call time and minor faults: taking turns with the SQLite impls vs alone."""
import sys, os, time, resource, gc, numpy as np
import cortex
from cortex.bench.workload import Workload
from cortex.bench import baselines as bl
from cortex.bench.harness import BASELINE_NOW
store, mem, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
queries = Workload(mem, seed=7).queries(1000)[:200]
ru = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with cortex.open(store, actor="bench-agent", mode="r") as c:
    sq = bl.SqliteStore(path)
    timed = [{**q, "now": BASELINE_NOW} for q in queries]
    impls = bl.implementations(c, sq)
    impls = {n: impls[n] for n in ("cortex", "sqlite", "sqlite_lean", "sqlite_bulk")}
    rec = []
    inner = impls["cortex"]
    def wrapped(**q):
        f = ru(); g = gc.get_count(); t = time.perf_counter()
        inner(**q)
        rec.append(((time.perf_counter() - t) * 1e3, ru() - f))
    impls["cortex"] = wrapped
    for rnd in range(3):
        rec.clear(); bl._times(impls, timed); turns = list(rec)
        rec.clear()
        for r in range(2):
            for q in timed: wrapped(**q)
        alone = list(rec)
        for name, v in (("turns", turns), ("alone", alone)):
            t = np.array([x[0] for x in v]); f = np.array([x[1] for x in v])
            print(f"{name}: p50 {np.median(t):.3f} ms mean {t.mean():.3f}  faults/call median {np.median(f):.0f} mean {f.mean():.1f}")
