"""Hot calls: wall time of the main steps, timed by wrapping functions (no tracer)."""
import collections
import functools
import sys
import time

import cortex
from cortex import context as ctx
from cortex.bench import hotframe
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
acc = collections.defaultdict(float)
def wrap(owner, name, label):
    f = getattr(owner, name)
    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter()
        try: return f(*a, **k)
        finally: acc[label] += time.perf_counter() - t
    setattr(owner, name, g)
for name in ("_candidates", "_trim", "_bounded_parts", "_dropped", "_outcomes", "_pinned", "_frame_relevant", "_uris", "_request", "_plan"):
    wrap(ctx, name, name)
wrap(ctx._Bounded, "__init__", "Bounded.__init__")
wrap(ctx._Bounded, "_score_next_group", "Bounded._score_next_group")
wrap(ctx.Columns, "facts", "Columns.facts")
wrap(ctx.Columns, "ids", "Columns.ids")
import cortex.engine as eng

wrap(eng.Engine, "current_views", "current_views")
wrap(ctx, "_compose_locked", "_compose_locked")
w = Workload(n, seed=7)
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    cold = hotframe.cold_frames(c, w, len(hot), 7)
    for side, frames in (("hot", hot), ("cold", cold), ("hot", hot), ("cold", cold)):
        for f in frames:
            for form in hotframe.FORMS: c.context(**f.query(form))
        acc.clear()
        t = time.perf_counter(); k = 0
        for r in range(30):
            for f in frames:
                c.context(**f.query(hotframe.FORMS[r % 3])); k += 1
        total = (time.perf_counter() - t) / k * 1e6
        print(side, f"per call {total:.0f} us:", ", ".join(f"{name} {v / k * 1e6:.0f}" for name, v in sorted(acc.items(), key=lambda x: -x[1])))
