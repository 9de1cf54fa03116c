"""cold17.py PYTHON STORE RUNS LABEL: RUNS fresh interpreters of PYTHON, each imports cortex, opens STORE as a follower,
runs the first query of the 10M mix, closes; per process: ms from spawn until context() returned, and until the process ended."""
import json, subprocess, sys, time, statistics
from cortex.bench.workload import Workload
exe, store, runs, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
q = json.dumps(Workload(10_000_000, seed=7).queries(1)[0])
code = ("import cortex,json,sys,time; q=json.loads(sys.argv[2]);"
        "c=cortex.open(sys.argv[1], actor='bench-agent', mode='r'); c.context(**q); print(time.monotonic(), flush=True); c.close()")
first, whole = [], []
for _ in range(runs):
    t = time.monotonic()
    out = subprocess.run([exe, "-c", code, store, q], check=True, cwd="/tmp", capture_output=True, text=True).stdout
    end = time.monotonic()
    first.append(round((float(out.split()[0]) - t) * 1000)); whole.append(round((end - t) * 1000))
print(label, "to first context: median", statistics.median(first), first, "| whole process: median", statistics.median(whole), flush=True)
