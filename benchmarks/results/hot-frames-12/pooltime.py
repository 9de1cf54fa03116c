import sys, time, numpy as np
import cortex, cortex.context as cm
from cortex.bench import hotframe
T = {}
def wrap(name):
    f = getattr(cm._Ranked, name)
    def g(*a, **k):
        t = time.perf_counter(); r = f(*a, **k); T.setdefault(name, []).append((time.perf_counter() - t) * 1e6); return r
    setattr(cm._Ranked, name, g)
for n in ("_pool", "_scored", "top", "total"):
    if n != "_chunked_of": wrap(n)
ft = cm._trim
def trim(*a):
    t = time.perf_counter(); r = ft(*a); T.setdefault("_trim", []).append((time.perf_counter() - t) * 1e6); return r
cm._trim = trim
fc = cm._compose_locked
def comp(*a, **k):
    t = time.perf_counter(); r = fc(*a, **k); T.setdefault("compose", []).append((time.perf_counter() - t) * 1e6); return r
cm._compose_locked = comp
if len(sys.argv) > 2: cm._CHUNKED_FROM = 1 << 40
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hot = hotframe.hot_frames(c)
qs = [f.query(form) for form in hotframe.FORMS for f in hot]
for q in qs: c.context(**q)
T.clear()
for _ in range(10):
    for q in qs: c.context(**q)
for k, v in T.items(): print(f"{k:12s} median {np.median(v):8.1f} us  (n={len(v)}, per call {sum(v)/300:8.1f})")
