"""ing2.py N HELPER(0/1): like ../hot-frames-9/ing.py at small N, with the batches made before timing;
prints the writer's thread and wall time a memory, the share of memories the helper answered, and how
many full GCs ran (NOGC=1: gc.disable())."""
import gc
import itertools
import os
import random
import shutil
import sys
import time

import cortex
from cortex.bench.workload import BATCH, START, Clock, Workload


def started(n, path, helper):
    """A fresh store at `path` and N workload memories in batches of 1,000; the first batch
    written (it starts the helper), then 2 s for the helper to come up."""
    shutil.rmtree(path, ignore_errors=True)
    it = Workload(memories=n).writes()
    bs = []
    while True:
        b = list(itertools.islice(it, BATCH))
        if not b:
            break
        bs.append(b)
    c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(7).randbytes, ingest_helper=helper)
    c.write_many(bs[0])
    time.sleep(2)
    return c, bs


if __name__ == "__main__":
    n = int(sys.argv[1]); helper = sys.argv[2] == "1"
    c, bs = started(n, "/tmp/p1/ing2", helper)
    if os.environ.get("NOGC"):
        gc.disable()
    GC2 = []
    gc.callbacks.append(lambda phase, info: phase == "start" and info["generation"] == 2 and GC2.append(1))
    busy = th = 0.0
    for b in bs[1:]:
        w0 = time.perf_counter(); t0 = time.thread_time(); c.write_many(b); busy += time.perf_counter() - w0; th += time.thread_time() - t0
    m = n - len(bs[0])
    p = c._engine._pool
    ans = p._helper.answered - len(bs[0]) if p is not None and p._helper is not None else 0
    print(f"{sys.argv[2]} helper={helper} {m/busy:.0f}/s thread {1e6*th/m:.1f} us/mem, wall {1e6*busy/m:.1f} us/mem, helper answered {max(ans,0)/m:.0%} gen2 {len(GC2)}")
    c.close()
