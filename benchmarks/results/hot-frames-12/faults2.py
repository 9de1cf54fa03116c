import sys, time, resource, numpy as np, gc
import cortex, cortex.context as cm
from cortex.bench import hotframe
from cortex.index import frame
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r"); e = c._engine
hot = hotframe.hot_frames(c)
qs = [f.query(form) for form in hotframe.FORMS for f in hot]
cm._CHUNKED_FROM = 1 << 40
def run(tag):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt; t = time.perf_counter()
    for _ in range(3):
        for q in qs: c.context(**q)
    n = 3 * len(qs)
    print("%s %.2f ms, %.0f faults/call" % (tag, (time.perf_counter() - t) / n * 1e3, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / n))
run("off"); run("off"); run("off")
for f in hot:
    p = frame.prefix(int(f.verb), int(f.kind), f.ref)
    cols = e.hot.lookup(p, e.storage); e.hot.chunks(p, cols); e.hot.chunks(p, cols)
run("off after building chunks"); run("off"); 
