import sys, time, numpy as np
import cortex, cortex.context as cm
from cortex.bench import hotframe
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hot = hotframe.hot_frames(c)
qs = [f.query(form) for form in hotframe.FORMS for f in hot]
def run(side):
    cm._CHUNKED_FROM = 4096 if side == "on" else 1 << 40
    t = time.perf_counter()
    for _ in range(3):
        for q in qs: c.context(**q)
    return (time.perf_counter() - t) / (3 * len(qs)) * 1e3
for side in sys.argv[2].split(","):
    print(side, "%.2f" % run(side))
