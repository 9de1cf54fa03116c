"""cold3.py STORE RUNS LABEL [drop]: RUNS fresh interpreters, each imports cortex, opens STORE as a follower, runs
the first query of the 10M mix (q10m.json) and closes; wall time per process as the harness's _cold() takes it.
With "drop", the page cache is dropped before each process (a truly cold start; run as root)."""
import json, subprocess, sys, time, statistics
store, runs, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
drop = sys.argv[4:] == ["drop"]
q = open("/tmp/exp11/q10m.json").read()
code = ("import cortex,json,sys; q=json.loads(sys.argv[2]);"
        "c=cortex.open(sys.argv[1], actor='bench-agent', mode='r'); c.context(**q); c.close()")
ts = []
for _ in range(runs):
    if drop:
        subprocess.run("sync; echo 3 > /proc/sys/vm/drop_caches", shell=True, check=True)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, store, q], check=True, cwd="/tmp")
    ts.append(round((time.perf_counter() - t) * 1000))
print(label, ts, "median", statistics.median(ts), flush=True)
