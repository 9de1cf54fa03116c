import sys, time, resource, numpy as np
import cortex
from cortex.bench.workload import Workload
store, mem = sys.argv[1], int(sys.argv[2])
queries = Workload(mem, seed=7).queries(1000)
def flt(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with cortex.open(store, actor="bench-agent") as c:
    e = c._engine
    for q in queries[:50]: c.context(**q)
    for p in range(3):
        ts, fs, rd = [], [], []
        for q in queries:
            f0 = flt(); r0 = e.index_entries_read; t = time.perf_counter(); c.context(**q); ts.append((time.perf_counter() - t) * 1e3); fs.append(flt() - f0); rd.append(e.index_entries_read - r0)
        print(f"pass {p}: p50 {np.median(ts):.2f} p99 {np.percentile(ts, 99):.2f} | faults/call mean {np.mean(fs):.1f} p99 {np.percentile(fs, 99):.0f} | entries read p50 {np.median(rd):.0f} mean {np.mean(rd):.0f} | hot prefixes {len(e.hot)} rows {e.hot._rows} joins {len(e.joins) if getattr(e, 'joins', None) is not None else '-'}", flush=True)
