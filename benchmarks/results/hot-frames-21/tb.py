"""tb.py N: ing2.py's load with the helper, plus where in each batch the writer took chunks back
(in eighths of its ~63 chunks) and how much of the writer's thread went to counting them."""
import collections
import sys
import time

from ing2 import started

n = int(sys.argv[1])
c, bs = started(n, "/tmp/p1/tb", True)
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
