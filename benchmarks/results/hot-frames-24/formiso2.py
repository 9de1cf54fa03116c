"""Decoding and rendering 5,000 memories of the 1M store on fresh views, per memory (us)."""
import sys, time
import cortex
from cortex.records import decode_data, H_TYPE, H_DATA
from cortex.memory import _current
from cortex.records import V_DATA
c = cortex.open(sys.argv[1], actor="bench-agent")
uris = [m.uri for m in c.find(type="Event", limit=3000)] + [m.uri for m in c.find(type="Fact", limit=2000)]
def fresh():
    return [c.resolve(u) for u in uris]
ms = fresh()
t = time.perf_counter_ns()
for m in ms: m.data
print("m.data first", (time.perf_counter_ns() - t) / len(ms) / 1000)
ms = fresh()
raws = [(m._head[H_TYPE], _current(m, H_DATA, V_DATA)) for m in ms]
t = time.perf_counter_ns()
for ty, raw in raws: decode_data(ty, raw)
print("decode_data", (time.perf_counter_ns() - t) / len(ms) / 1000)
print(type(raws[0][1]), raws[0][1][:3])
ms = fresh()
t = time.perf_counter_ns()
for m in ms: m.form("full")
print("form full first", (time.perf_counter_ns() - t) / len(ms) / 1000)
ms = fresh()
t = time.perf_counter_ns()
for m in ms: m.form("medium")
print("form medium", (time.perf_counter_ns() - t) / len(ms) / 1000)
