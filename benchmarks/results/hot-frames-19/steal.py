"""steal.py N PATH: like prof.py, and counts how many memories the writer counted itself."""
import random, shutil, sys, time, itertools
import cortex, cortex.workers as W
from cortex.bench.workload import Workload, Clock, START, BATCH
stolen = [0]
orig = W._count_here
def counted(enc, items):
    stolen[0] += len(items); return orig(enc, items)
W._count_here = counted
n = int(sys.argv[1]); path = sys.argv[2]
shutil.rmtree(path, ignore_errors=True)
import pickle
batches = pickle.load(open(sys.argv[3], "rb"))[: n // BATCH]
c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(7).randbytes, ingest_helper=True)
t0 = time.perf_counter(); th0 = time.thread_time()
for b in batches:
    c.write_many(b)
wall = time.perf_counter() - t0; th = time.thread_time() - th0
c.close()
print(f"n={n} ingest {n/wall:.0f}/s thread {1e6*th/n:.1f} us/mem wall {1e6*wall/n:.1f} us/mem; counted by the writer {stolen[0]/n:.1%}")
