"""gcb.py N PATH: Workload.build (the harness's own build) with gc timing per generation."""
import gc, shutil, sys, time
from cortex.bench.workload import Workload
n = int(sys.argv[1]); path = sys.argv[2]
shutil.rmtree(path, ignore_errors=True)
t = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}; start = [0.0]
def cb(phase, info):
    if phase == "start": start[0] = time.perf_counter()
    else:
        g = info["generation"]; t[g][0] += 1; t[g][1] += time.perf_counter() - start[0]
gc.callbacks.append(cb)
t0 = time.perf_counter()
ingest = Workload(memories=n).build(path, progress=False)
print(f"n={n} ingest {n/ingest:.0f}/s write_many {ingest:.1f}s total {time.perf_counter()-t0:.1f}s gc " +
      " ".join(f"g{g}: {c} in {s:.2f}s" for g, (c, s) in t.items()), flush=True)
