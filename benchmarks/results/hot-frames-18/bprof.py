import sys, time, numpy as np
import cortex, cortex.context as cc
from cortex.bench import hotframe
from line_profiler import LineProfiler
calls = {"n": 0, "groups": 0, "scored": 0}
orig = cc._Bounded.top
def top(self, m):
    r = orig(self, m); calls["n"] += 1; calls["groups"] += self._next; return r
cc._Bounded.top = top
lp = LineProfiler(cc._candidates, cc._copies_by_search, cc._joined, cc._dropped, cc._Bounded.__init__, cc._Bounded.top, cc._top)
with cortex.open(sys.argv[1], actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c)
    qs = [h.query(f) for f in ("short","medium","full") for h in hot]
    for q in qs: c.context(**q)
    calls.update(n=0, groups=0, scored=0)
    lp.enable()
    for r in range(10):
        for q in qs: c.context(**q)
    lp.disable()
print(calls)
lp.print_stats(output_unit=1e-6, stripzeros=True)
