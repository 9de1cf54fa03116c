import collections
import itertools
import random
import shutil
import sys
import time

import cortex
from cortex.bench.workload import BATCH, START, Clock, Workload

n = int(sys.argv[1]); path = "/tmp/p1/tb"; shutil.rmtree(path, ignore_errors=True)
w = Workload(memories=n); it = w.writes()
bs = []
while True:
    b = list(itertools.islice(it, BATCH))
    if not b: break
    bs.append(b)
c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(7).randbytes, ingest_helper=True)
c.write_many(bs[0]); time.sleep(2)
h = c._engine._pool._helper
pos = collections.Counter(); waits = [0.0]
orig_tb = h.take_back_last
def tb():
    s = orig_tb()
    if s is not None: pos[(s - base[0]) // 8] += 1   # position in batch, in eighths of ~63 chunks
    return s
h.take_back_last = tb
orig_pump = h.pump
def pump(wait=0.0):
    t0 = time.perf_counter(); orig_pump(wait); 
    if wait: waits[0] += time.perf_counter() - t0
h.pump = pump
from cortex import workers as W

orig_ch = W._count_here; here = [0.0, 0]
def ch(enc, items):
    t0 = time.thread_time(); r = orig_ch(enc, items); here[0] += time.thread_time() - t0; here[1] += len(items); return r
W._count_here = ch
base = [0]; th = 0; busy = 0
for b in bs[1:]:
    base[0] = h.seq + 1
    w0 = time.perf_counter(); t0 = time.thread_time(); c.write_many(b); busy += time.perf_counter() - w0; th += time.thread_time() - t0
m = n - 1000
print(f"thread {1e6*th/m:.1f} wall {1e6*busy/m:.1f} us/mem; taken back by position (eighths of batch): {sorted(pos.items())}; waited {waits[0]:.2f}s; forms counted by the writer: {here[1]/m:.0%} of memories, {1e6*here[0]/m:.1f} us/mem of its thread")
c.close()
