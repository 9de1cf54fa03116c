import sys, time, gc, collections
import cortex
from cortex.bench.workload import Workload
wl = Workload(int(sys.argv[2]), seed=7)
print("objects at start", len(gc.get_objects()))
qs = wl.queries(1000)
print("objects after queries", len(gc.get_objects()))
events = []
def cb(phase, info):
    if phase == "start": cb.t = time.perf_counter(); cb.n = len(gc.get_objects(2)) if info["generation"] == 2 else 0
    elif info["generation"] == 2: events.append(((time.perf_counter()-cb.t)*1e3, cb.n, info["collected"]))
gc.callbacks.append(cb)
with cortex.open(sys.argv[1], actor="bench-agent") as c:
    print("objects after open", len(gc.get_objects()))
    for q in qs: c.context(**q)
    print("gen2 events:", events)
    objs = gc.get_objects()
    print("objects after pass", len(objs))
    print(collections.Counter(type(o).__name__ for o in objs).most_common(12))
    for i in range(3):
        t = time.perf_counter(); gc.collect(); print("gc.collect %.1f ms" % ((time.perf_counter()-t)*1e3))
    gc.freeze(); t = time.perf_counter(); gc.collect(); print("after freeze %.1f ms" % ((time.perf_counter()-t)*1e3)); gc.unfreeze()
    import numpy as np
    big = [o for o in objs if isinstance(o, dict) and len(o) > 10000]
    print("big dicts", [len(d) for d in big])
    big = [o for o in objs if isinstance(o, (list, set)) and len(o) > 10000]
    print("big lists/sets", [(type(d).__name__, len(d)) for d in big])
