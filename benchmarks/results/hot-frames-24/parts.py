"""Where a hot frame's first full-form call spends its time beyond the same call again (10M; medians of
the ten hot frames, us): the token join and total, the trim, the reachable URIs, the forms."""
import sys, time, statistics
import cortex
from cortex import memory as mm, context as ctx
from cortex.index import entry
from cortex.bench import hotframe
c = cortex.open(sys.argv[1], actor="bench-agent")
hot = hotframe.hot_frames(c)
for f in hot:
    c.context(**f.query("short"))
acc = {}
def wrap(owner, name, label, cond=None):
    orig = getattr(owner, name)
    def w(*a, **k):
        if cond and not cond(a): return orig(*a, **k)
        t = time.perf_counter_ns(); r = orig(*a, **k); acc[label] = acc.get(label, 0) + time.perf_counter_ns() - t; return r
    setattr(owner, name, w)
wrap(mm.Memory, "form", "form")
wrap(ctx, "_uris", "uris")
wrap(entry.Columns, "total", "total", lambda a: a[1] == "full_tokens")
wrap(entry._Joined, "__getitem__", "join", lambda a: a[1] == "full_tokens")
wrap(ctx, "_trim", "trim")
wrap(ctx, "_compose_locked", "call")
res = {}
for rnd in ("first", "again"):
    per = []
    for f in hot:
        acc.clear(); c.context(**f.query("full")); per.append(dict(acc))
    res[rnd] = {k: statistics.median(p.get(k, 0) for p in per) / 1000 for k in per[0]}
for k in res["first"]:
    print(f"{k:6s} first {res['first'][k]:7.1f}  again {res['again'].get(k,0):7.1f} us")
