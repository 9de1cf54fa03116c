import sys, time, gc, numpy as np, resource
import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload
from cortex.bench.calls import timed_call
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
wl = Workload(10_000_000, seed=7)
hot = hotframe.hot_frames(c); cold = hotframe.cold_frames(c, wl, len(hot), 7)
pairs = [(h, cold[i % len(cold)]) for i, h in enumerate(hot)]
for h, cf in pairs:
    c.context(**h.query("short")); c.context(**cf.query("short"))
gcs = []
def cb(phase, info):
    if phase == "start": cb.t = time.perf_counter()
    else: gcs.append((info["generation"], (time.perf_counter()-cb.t)*1e3))
gc.callbacks.append(cb)
hot_ms=[]; cold_ms=[]; hot_gc=[]; hot_flt=[]
for r in range(int(sys.argv[2])):
    form = hotframe.FORMS[r % 3]
    for i, (h, cf) in enumerate(pairs):
        order = [(h, True), (cf, False)] if (r+i)%2==0 else [(cf, False), (h, True)]
        for f, is_hot in order:
            n0 = len(gcs); f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            t = time.perf_counter(); c.context(**f.query(form)); ms = (time.perf_counter()-t)*1e3
            if is_hot:
                hot_ms.append(ms); hot_gc.append(gcs[n0:]); hot_flt.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt-f0)
            else: cold_ms.append(ms)
h = np.array(hot_ms); cold = np.array(cold_ms)
print(sys.argv[3], "hot p50 %.2f p99 %.2f cold p50 %.2f ratio %.2f" % (np.median(h), np.percentile(h, 99), np.median(cold), np.percentile(h,99)/np.median(cold)))
idx = np.argsort(h)[::-1][:8]
for i in idx: print("   %.2f ms gc=%s faults=%d" % (h[i], hot_gc[i], hot_flt[i]))
print("   gc events total", len(gcs), "gen2", sum(1 for g in gcs if g[0]==2))
