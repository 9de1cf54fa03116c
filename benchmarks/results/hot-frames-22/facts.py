import sys
import time

import cortex
from cortex import context as ctx
from cortex.bench import hotframe
from cortex.bench.workload import Workload
from cortex.index import entry

n, path = int(sys.argv[1]), sys.argv[2]
log = []
of = entry.Facts.of
def facts_of(cols):
    t = time.perf_counter(); r = of(cols); log.append(("Facts.of", len(cols), (time.perf_counter() - t) * 1e6)); return r
entry.Facts.of = staticmethod(facts_of)
ids_of = entry.ids_of
def ids2(rows):
    t = time.perf_counter(); r = ids_of(rows); log.append(("ids_of", len(r), (time.perf_counter() - t) * 1e6)); return r
entry.ids_of = ids2
loc = ctx.hot.locate
def loc2(*a):
    t = time.perf_counter(); r = loc(*a); log.append(("locate", (len(a[0]), len(a[2])), (time.perf_counter() - t) * 1e6)); return r
ctx.hot.locate = loc2
w = Workload(n, seed=7)
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    for f in hot:
        for form in hotframe.FORMS: c.context(**f.query(form))
    for f in hot[:3]:
        log.clear()
        c.context(**f.query("medium"))
        print(f.verb, log)
