"""share_ab.py STORE: hot calls at 10M in one process, the count-share lookup switched between the old
(fancy index with u32 counts) and the new (take with native indices) in alternating blocks; medians per block."""
import sys, time, statistics
import numpy as np
import cortex
from cortex.salience import score
from cortex.bench import hotframe
new = score._count_share
def old(counts):
    if len(counts) and int(counts.max()) < len(score._SHARE_TABLE):
        return score._SHARE_TABLE[counts]
    return score._count_share_of(counts)
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
qs = [f.query(form) for form in hotframe.FORMS for f in hotframe.hot_frames(c)]
for q in qs: c.context(**q)
res = {"old": [], "new": []}
for block in range(12):
    for name, fn in (("old", old), ("new", new)) if block % 2 == 0 else (("new", new), ("old", old)):
        score._count_share = fn
        ts = []
        for _ in range(5):
            for q in qs:
                t = time.perf_counter(); c.context(**q); ts.append((time.perf_counter() - t) * 1e3)
        res[name].append(statistics.median(ts))
for k, v in res.items(): print(k, "hot call medians per block:", " ".join(f"{x:.2f}" for x in v), "| median %.3f ms" % statistics.median(v))
