"""gcobj.py STORE: tracked objects by type after opening, after the mix's first pass, and what the pass added."""
import sys, gc, collections
import cortex
from cortex.bench.workload import Workload
qs = Workload(10_000_000, seed=7).queries(1000)
def census():
    return collections.Counter(type(o).__name__ for o in gc.get_objects())
gc.collect(); base = census(); print("before open: tracked", sum(base.values()))
c = cortex.open(sys.argv[1], actor="bench-agent")
gc.collect(); opened = census(); print("after open: tracked", sum(opened.values()))
for q in qs: c.context(**q)
gc.collect(); after = census(); print("after the pass: tracked", sum(after.values()))
print("added by the pass:", (after - opened).most_common(12))
print("gc counts/thresholds", gc.get_count(), gc.get_threshold())
st = gc.get_stats(); print(st)
