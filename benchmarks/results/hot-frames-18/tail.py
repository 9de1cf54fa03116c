import sys, time, gc, numpy as np, resource
import cortex
from cortex.bench import hotframe
from cortex.bench.hotframe import FORMS
gcs = []
gc.callbacks.append(lambda phase, info: gcs.append((phase, info["generation"], time.perf_counter())))
def ru(): r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_minflt, r.ru_nivcsw, r.ru_nvcsw
with cortex.open(sys.argv[1], actor="bench-agent", mode="r") as c:
    hot = hotframe.hot_frames(c)
    for h in hot: c.context(**h.query(FORMS[0]))
    rows = []
    for r in range(100):
        form = FORMS[r % 3]
        for h in hot:
            n0 = len(gcs); f0 = ru(); t = time.perf_counter(); c.context(**h.query(form)); dt = (time.perf_counter() - t) * 1e3; f1 = ru()
            rows.append((dt, len(gcs) - n0, f1[0] - f0[0], f1[1] - f0[1], f1[2] - f0[2]))
    a = np.array(rows)
    print("p50 %.3f p99 %.3f" % (np.median(a[:, 0]), np.percentile(a[:, 0], 99)))
    slow = a[a[:, 0] > np.percentile(a[:, 0], 97)]
    print("slowest 3%: ms, gc events, minor faults, invol ctx sw, vol ctx sw")
    for row in slow[np.argsort(-slow[:, 0])]: print(np.round(row, 3))
    print("all: gc events", a[:, 1].sum(), "faults", a[:, 2].sum(), "invol", a[:, 3].sum())
