"""gct.py N: like ing.py (batches generated lazily), plus the time the cyclic GC took inside write_many."""
import gc
import itertools
import random
import shutil
import sys
import time

import cortex
from cortex.bench.workload import BATCH, START, Clock, Workload

n = int(sys.argv[1]); path = "/tmp/p1/gct"; shutil.rmtree(path, ignore_errors=True)
w = Workload(memories=n); it = w.writes()
c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(7).randbytes, ingest_helper=True)
inside = [False]; gct = {0: 0.0, 1: 0.0, 2: 0.0}; cnt = {0: 0, 1: 0, 2: 0}; t = [0.0]
def cb(phase, info):
    if not inside[0]: return
    if phase == "start": t[0] = time.perf_counter()
    else: gct[info["generation"]] += time.perf_counter() - t[0]; cnt[info["generation"]] += 1
gc.callbacks.append(cb)
busy = th = 0.0; done = 0
while True:
    b = list(itertools.islice(it, BATCH))
    if not b: break
    inside[0] = True; w0 = time.perf_counter(); t0 = time.thread_time()
    c.write_many(b)
    busy += time.perf_counter() - w0; th += time.thread_time() - t0; inside[0] = False
print(f"n={n} {n/busy:.0f}/s thread {1e6*th/n:.1f} us/mem; gc inside write_many: " +
      ", ".join(f"gen{g} {cnt[g]}x {gct[g]:.2f}s" for g in gct) + f" = {1e6*sum(gct.values())/n:.1f} us/mem")
c.close()
