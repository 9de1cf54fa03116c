"""writecall2.py SRC ITER: writecall.py's loop (write one memory to a hot object, then context() on it) with the
base tree (ABPKG's cortex_base) and the working tree in one process, on two copies of SRC, iterations alternating."""
import os, shutil, sys, time, numpy as np
from datetime import datetime, timedelta, timezone
sys.path.insert(0, os.environ.get("ABPKG", "/tmp/abpkg"))
import cortex, cortex_base
src, iters = sys.argv[1], int(sys.argv[2])
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
class Clock:
    def __init__(self): self.now = START + timedelta(days=370)
    def __call__(self): return self.now
res = {"base": [], "new": []}
handles = {}
clocks = {"base": Clock(), "new": Clock()}
for side, mod in (("base", cortex_base), ("new", cortex)):
    path = f"{src}-{side}"; shutil.rmtree(path, ignore_errors=True); shutil.copytree(src, path)
    handles[side] = (mod, mod.open(path, actor="w", clock=clocks[side]))
ask = {"verb": "acquire", "objects": {"service": "gpu"}, "budget_tokens": 2000}
for side, (mod, c) in handles.items(): c.context(**ask)
for i in range(iters):
    for side in (("base", "new") if i % 2 else ("new", "base")):
        mod, c = handles[side]
        clocks[side].now += timedelta(seconds=30)
        t = time.perf_counter()
        c.write(mod.Fact(statement=f"new {i}", subject="s", predicate="p"), frames=[mod.Frame("acquire", "service", "gpu")], importance=i % 11)
        b = c.context(**ask)
        res[side].append((time.perf_counter() - t) * 1e3)
for side, (mod, c) in handles.items():
    print(f"{side}: write+context p50 {np.median(res[side]):.3f} p90 {np.percentile(res[side], 90):.3f} ms, candidates {c.context(**ask).candidates}")
    c.close(); shutil.rmtree(f"{src}-{side}")
