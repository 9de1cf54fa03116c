import sys, time, numpy as np
import cortex, cortex.context as cm
from cortex.bench import hotframe
if sys.argv[2] == "off": cm._CHUNKED_FROM = 1 << 40
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hot = hotframe.hot_frames(c)
qs = [f.query(form) for form in hotframe.FORMS for f in hot]
for q in qs: c.context(**q)
v = []
for _ in range(6):
    t = time.perf_counter()
    for q in qs: c.context(**q)
    v.append((time.perf_counter() - t) / len(qs) * 1e3)
print(sys.argv[2], "median %.2f" % np.median(v))
