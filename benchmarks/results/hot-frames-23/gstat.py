"""Bounded calls forced on: groups opened, counted and plain rows scored, plain-row extensions, per call."""
import collections
import statistics
import sys

import cortex
from cortex import context as ctx
from cortex.bench import hotframe
from cortex.salience.score import DEFAULT_WEIGHTS, Weights

n, path, wname = int(sys.argv[1]), sys.argv[2], sys.argv[3]
W = {"default": DEFAULT_WEIGHTS, "noimp": Weights(0.5, 0.25, 0.25, 0.0), "learned": None}[wname]
ctx._worth_bounding = lambda p, now, w: True
stats = collections.defaultdict(list)
class B(ctx._Bounded):
    def top(self, m):
        r = super().top(m)
        opened = self._next
        scored = [len(v) for _, v, _, _ in self._scored]
        stats["opened"].append(opened); stats["entries"].append(len(scored)); stats["rows"].append(sum(scored))
        return r
ctx._Bounded = B
with cortex.open(path, actor="bench-agent") as c:
    e = c._engine
    if W is not None: e.weights = lambda: W
    print(wname, e.weights())
    for fr in hotframe.hot_frames(c):
        for form in hotframe.FORMS: c.context(**fr.query(form))
    part = None
    for k, v in stats.items(): print(k, "median", statistics.median(v), "max", max(v))
