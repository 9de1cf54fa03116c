import sys, time, resource, numpy as np
import cortex
from cortex.bench import hotframe
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hot = hotframe.hot_frames(c)
qs = [f.query(form) for form in hotframe.FORMS for f in hot]
for q in qs: c.context(**q)
v=[]; fl=[]
for _ in range(16):
    f0=resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t=time.perf_counter()
    for q in qs: c.context(**q)
    v.append((time.perf_counter()-t)/len(qs)*1e3)
    fl.append((resource.getrusage(resource.RUSAGE_SELF).ru_minflt-f0)/len(qs))
print(sys.argv[2:], "median ms/call %.3f min %.3f" % (np.median(v), min(v)), "faults/call", np.median(fl))
