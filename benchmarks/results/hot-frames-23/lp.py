"""Line profile of _compose_locked on hot calls (after warm-up)."""
import sys

from line_profiler import LineProfiler

import cortex
from cortex import context as ctx
from cortex.bench import hotframe
from cortex.bench.workload import Workload

n, path, side = int(sys.argv[1]), sys.argv[2], sys.argv[3]
w = Workload(n, seed=7)
with cortex.open(path, actor="bench-agent") as c:
    hot = hotframe.hot_frames(c)
    frames = hot if side == "hot" else hotframe.cold_frames(c, w, len(hot), 7)
    for f in frames:
        for form in hotframe.FORMS: c.context(**f.query(form))
    lp = LineProfiler(ctx._compose_locked, *[getattr(ctx._Bounded, n) for n in sys.argv[4:]])
    lp.enable()
    k = 0
    for r in range(30):
        for f in frames:
            b = c.context(**f.query(hotframe.FORMS[r % 3])); k += 1
    lp.disable()
    print("calls", k, "survivors", len(b.memories()), "candidates", b.candidates)
    lp.print_stats(output_unit=1e-6)
