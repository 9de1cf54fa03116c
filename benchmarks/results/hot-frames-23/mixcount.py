"""The mix's two passes: how often each pass builds groups, works out the best rows' latest last use and
the counted rows, and joins runs of small parts; and the time of each (us, summed over the pass)."""
import collections
import functools
import sys
import time

import cortex
from cortex import context as ctx
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
count, spent = collections.Counter(), collections.Counter()
def wrap(owner, name, static=False):
    f = getattr(owner, name)
    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter()
        try: return f(*a, **k)
        finally: count[name] += 1; spent[name] += time.perf_counter() - t
    setattr(owner, name, staticmethod(g) if static else g)
wrap(ctx._Group, "of", True)
for name in ("_latest", "_counted_counts", "_worth_bounding", "_bounded_parts", "_trim"):
    if hasattr(ctx, name): wrap(ctx, name)
qs = Workload(n, seed=7).queries(1000)
with cortex.open(path, actor="bench-agent") as c:
    for q in qs[:50]: c.context(**q)
    for label in ("first", "warm"):
        count.clear(); spent.clear()
        for q in qs: c.context(**q)
        print(label, ", ".join(f"{k} {count[k]}x {spent[k]*1e6:.0f}us" for k in sorted(count)))
