"""The harness's reading order on one handle (mix twice, hot-frame figure), then the
process's peak RSS and what the handle keeps of large calls."""
import resource
import sys

import cortex
from cortex.bench import hotframe
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
w = Workload(n, seed=7)
qs = w.queries(1000)
with cortex.open(path, actor="bench-agent") as c:
    for q in qs[:50] + qs + qs:
        c.context(**q)
    hotframe.measure(c, w, 30, 7)
    j, frames = c._engine.joins, c._engine.hot
    kept = []  # what large calls keep: in JoinedCalls' large pool (v1-v3) or with the frames (final)
    large = getattr(j, "_large", None)
    if large is not None:
        kept += [large.get(key, touch=False) for key in large]
    for pool in (frames._large, frames._small):
        for prefix in pool:
            joined = getattr(pool.get(prefix, touch=False), "joined", None)
            if joined is not None:
                kept.append(joined[1])
    held = sum(made.tiers.nbytes + made.pinned.nbytes + (0 if made.copies is None else made.copies.nbytes)
               + sum(a.nbytes for a in getattr(made.cols._base, "_joined", {}).values()) for made in kept)
    print("peak RSS {:.0f} MB; JoinedCalls {} small entries ({:.1f} MB counted); large calls kept: {} ({:.1f} MB of arrays)".format(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, len(j._calls), j._calls.total / 2**20, len(kept), held / 2**20))
