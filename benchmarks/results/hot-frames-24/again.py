"""Hot calls repeated in each form after one call per form: the trim and the whole call (us, medians)."""
import sys, time, statistics
import cortex
from cortex import context as ctx
from cortex.bench import hotframe
c = cortex.open(sys.argv[1], actor="bench-agent")
hot = hotframe.hot_frames(c)
acc = {}
def wrap(owner, name, label):
    orig = getattr(owner, name)
    def w(*a, **k):
        t = time.perf_counter_ns(); r = orig(*a, **k); acc[label] = acc.get(label, 0) + time.perf_counter_ns() - t; return r
    setattr(owner, name, w)
wrap(ctx, "_trim", "trim")
wrap(ctx, "_compose_locked", "call")
for form in ("short", "medium", "full"):
    for f in hot: c.context(**f.query(form))
out = []
for form in ("short", "medium", "full"):
    per = []
    for rep in range(5):
        for f in hot:
            acc.clear(); c.context(**f.query(form)); per.append(dict(acc))
    out.append(f"{form}: " + " ".join(f"{k} {statistics.median(p[k] for p in per)/1000:.1f}" for k in per[0]))
print(" | ".join(out))
