"""cortex vs SQLite lean + numpy, taking turns and alone, on a SQLite copy loaded once.
usage: sqlab.py STORE MEMORIES SQLITE_PATH TAG [with_original]"""
import sys, os, time, numpy as np
import cortex
from cortex.bench.workload import Workload
from cortex.bench import baselines as bl
from cortex.bench.harness import BASELINE_NOW
store, mem, path, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
queries = Workload(mem, seed=7).queries(1000)[:200]
with cortex.open(store, actor="bench-agent", mode="r") as c:
    fresh = not os.path.exists(path)
    sq = bl.SqliteStore(path)
    if fresh:
        t = time.perf_counter(); sq.load_from(c); print("loaded in %.0f s" % (time.perf_counter() - t))
    bl.check_agreement(c, sq, queries[:50], BASELINE_NOW)
    timed = [{**q, "now": BASELINE_NOW} for q in queries]
    impls = bl.implementations(c, sq)
    if len(sys.argv) <= 5:  # the harness's order (bl.implementations) less the original algorithm
        impls = {n: impls[n] for n in ("cortex", "sqlite", "sqlite_lean", "sqlite_bulk")}
    bl._times(impls, timed)
    turns = bl._times(impls, timed)
    alone = bl._times_alone({n: impls[n] for n in bl.ALONE}, timed)
    p = lambda v: float(np.percentile(v, 50))
    print(tag, "turns: cortex p50 %.3f bulk %.3f lean %.3f -> bulk/cortex %.2fx lean/cortex %.2fx | alone: cortex %.3f bulk %.3f -> %.2fx" % (
        p(turns["cortex"]), p(turns["sqlite_bulk"]), p(turns["sqlite_lean"]), p(turns["sqlite_bulk"]) / p(turns["cortex"]), p(turns["sqlite_lean"]) / p(turns["cortex"]),
        p(alone["cortex"]), p(alone["sqlite_bulk"]), p(alone["sqlite_bulk"]) / p(alone["cortex"])))
    sq.db.close()
