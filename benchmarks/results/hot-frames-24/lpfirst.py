"""Line profile of _compose_locked over one round of hot calls: python lpfirst.py STORE [FORM [ROUNDS]]
(FORM: calls made ROUNDS times on each frame first; without it the first full-form round)."""
import sys
import cortex
from cortex import context as ctx
from cortex.bench import hotframe
from line_profiler import LineProfiler
c = cortex.open(sys.argv[1], actor="bench-agent")
hot = hotframe.hot_frames(c)
for f in hot:
    c.context(**f.query("short"))
for f in hot:
    for _ in range(int(sys.argv[3]) if len(sys.argv) > 3 else 1):
        c.context(**f.query(sys.argv[2])) if len(sys.argv) > 2 else None
lp = LineProfiler(ctx._compose_locked)
lp.enable()
for f in hot:
    c.context(**f.query("full"))
lp.disable()
lp.print_stats(output_unit=1e-6)
