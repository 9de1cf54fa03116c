"""cold14.py STORE RUNS LABEL: RUNS fresh interpreters, each imports cortex, opens STORE as a follower, runs the
first query of the 10M mix and closes; wall time per process (as the harness's _cold() takes it)."""
import json, subprocess, sys, time, statistics
from cortex.bench.workload import Workload
store, runs, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
q = json.dumps(Workload(10_000_000, seed=7).queries(1)[0])
code = ("import cortex,json,sys; q=json.loads(sys.argv[2]);"
        "c=cortex.open(sys.argv[1], actor='bench-agent', mode='r'); c.context(**q); c.close()")
ts = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, store, q], check=True, cwd="/tmp")
    ts.append(round((time.perf_counter() - t) * 1000))
print(label, ts, "median", statistics.median(ts), flush=True)
