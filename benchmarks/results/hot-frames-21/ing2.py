"""ing2.py N HELPER(0/1): like ing.py at small N, plus the share of memories the helper answered."""
import itertools
import random
import shutil
import sys
import time

import cortex
from cortex.bench.workload import BATCH, START, Clock, Workload

n = int(sys.argv[1]); helper = sys.argv[2] == "1"; path = "/tmp/p1/ing2"
shutil.rmtree(path, ignore_errors=True)
w = Workload(memories=n); it = w.writes()
bs = []
while True:
    b = list(itertools.islice(it, BATCH))
    if not b: break
    bs.append(b)
c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(7).randbytes, ingest_helper=helper)
c.write_many(bs[0]); time.sleep(2)  # helper up
import gc
import os

if os.environ.get("NOGC"): gc.disable()
gc.callbacks.append(lambda phase, info: phase == "start" and info["generation"] == 2 and GC2.append(1))
GC2 = []
busy = th = 0.0
for b in bs[1:]:
    w0 = time.perf_counter(); t0 = time.thread_time(); c.write_many(b); busy += time.perf_counter() - w0; th += time.thread_time() - t0
m = n - len(bs[0])
p = c._engine._pool
ans = p._helper.answered - len(bs[0]) if p is not None and p._helper is not None else 0
print(f"{sys.argv[2]} helper={helper} {m/busy:.0f}/s thread {1e6*th/m:.1f} us/mem, wall {1e6*busy/m:.1f} us/mem, helper answered {max(ans,0)/m:.0%} gen2 {len(GC2)}")
c.close()
