import sys, time, gc, resource, numpy as np
import cortex
from cortex.bench.workload import Workload
from cortex.bench.calls import timed_call
wl = Workload(int(sys.argv[2]), seed=7)
qs = wl.queries(1000)
gcs = []
def cb(phase, info):
    if phase == "start": cb.t = time.perf_counter()
    else: gcs.append((info["generation"], (time.perf_counter()-cb.t)*1e3))
gc.callbacks.append(cb)
with cortex.open(sys.argv[1], actor="bench-agent") as c:
    for q in qs[:50]: c.context(**q)
    rows = []
    for q in qs:
        n0 = len(gcs); f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt; m0 = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        call = timed_call(c, q)
        rows.append((call.ms, call.entries_read, call.candidates, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0, resource.getrusage(resource.RUSAGE_SELF).ru_majflt - m0, gcs[n0:], len(q["objects"]) if "objects" in q else 0))
ms = np.array([r[0] for r in rows])
print(sys.argv[3], "p50 %.2f p99 %.2f max %.1f" % (np.median(ms), np.percentile(ms, 99), ms.max()))
for r in sorted(rows, key=lambda r: -r[0])[:14]:
    print("  %6.2f ms read %6d cand %6d minflt %5d majflt %3d gc %s objs %d" % r)
big = [r for r in rows if r[1] > 5000]
print("  calls reading >5000 entries:", len(big), "sum ms %.1f" % sum(r[0] for r in big))
