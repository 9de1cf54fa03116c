"""hotloop.py STORE SECONDS: hot calls in a loop (for py-spy); wall and CPU time per call."""
import sys, time
import cortex
from cortex.bench import hotframe
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hot = hotframe.hot_frames(c)
qs = [f.query(form) for form in hotframe.FORMS for f in hot]
for q in qs: c.context(**q)
t = time.time(); cpu = time.process_time(); n = 0
while time.time() - t < float(sys.argv[2]):
    for q in qs: c.context(**q); n += 1
print("calls", n, "ms/call %.3f, cpu ms/call %.3f" % ((time.time() - t) / n * 1e3, (time.process_time() - cpu) / n * 1e3))
