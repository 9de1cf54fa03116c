"""tail.py STORE: the harness's first pass over the 10M mix (fresh handle, 50 warm-up calls), with the GC
pauses that fell inside each call; prints the slowest 25 calls."""
import sys, time, gc
import cortex
from cortex.bench.workload import Workload
from cortex.bench.calls import timed_call
store = sys.argv[1]
qs = Workload(10_000_000, seed=7).queries(1000)
pauses = []; start = [0.0]
def cb(phase, info):
    if phase == "start": start[0] = time.perf_counter()
    else: pauses.append((start[0], time.perf_counter(), info["generation"], info.get("collected", 0)))
gc.callbacks.append(cb)
c = cortex.open(store, actor="bench-agent")
for q in qs[:50]: c.context(**q)
rows = []
for i, q in enumerate(qs):
    t0 = time.perf_counter(); call = timed_call(c, q); t1 = time.perf_counter()
    gcs = [(round((b - a) * 1e3, 1), g) for a, b, g, _ in pauses if a >= t0 and b <= t1]
    rows.append((call.ms, i, call.candidates, call.entries_read, len(q["objects"]), gcs))
ms = sorted(r[0] for r in rows)
print("p50 %.2f p99 %.2f max %.2f" % (ms[500], ms[990], ms[-1]))
print("gc pauses during the pass:", sum(1 for a, b, g, _ in pauses), "gen2:", sum(1 for a, b, g, _ in pauses if g == 2))
for r in sorted(rows, reverse=True)[:25]:
    print("%.2f ms  q%-4d candidates %-6d entries_read %-6d objects %d gc %s" % r)
