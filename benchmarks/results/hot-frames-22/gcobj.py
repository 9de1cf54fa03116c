import collections
import gc
import sys
import time

import cortex
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
def census(label):
    gc.collect()
    objs = gc.get_objects()
    t = time.perf_counter(); gc.collect(); dt = (time.perf_counter() - t) * 1e3
    cnt = collections.Counter(type(o).__name__ for o in objs)
    print(label, "tracked", len(objs), f"full gc {dt:.1f} ms", cnt.most_common(12))
census("start")
w = Workload(n, seed=7)
qs = w.queries(1000)
census("after workload+queries")
with cortex.open(path, actor="bench-agent") as c:
    census("after open")
    for q in qs:
        c.context(**q)
    census("after first pass")
    objs = gc.get_objects()
    sized = []
    for o in objs:
        try:
            n_ = len(o)
        except TypeError:  # no len()
            continue
        if n_ > 5000:
            sized.append((n_, type(o).__name__, repr(o)[:80] if not isinstance(o, (list, dict)) else ""))
    sized.sort(reverse=True)
    print("total elements in big containers", sum(s[0] for s in sized))
    for s in sized[:25]:
        print(s)
    for gen in (0, 1, 2):
        t = time.perf_counter(); gc.collect(gen); print("collect", gen, "%.1f ms" % ((time.perf_counter() - t) * 1e3))
