import sys, time, resource, numpy as np
import cortex, cortex.context as cm
from cortex.bench import hotframe
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hot = hotframe.hot_frames(c)
qs = [f.query(form) for form in hotframe.FORMS for f in hot]
def run(side):
    cm._CHUNKED_FROM = 16384 if side == "on" else 1 << 40
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t = time.perf_counter()
    for _ in range(3):
        for q in qs: c.context(**q)
    n = 3 * len(qs)
    return "%s %.2f ms, %.0f faults/call" % (side, (time.perf_counter() - t) / n * 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / n)
for side in sys.argv[2].split(","):
    print(run(side))
