import json, subprocess, sys, statistics
from cortex.bench.workload import Workload
store, runs = sys.argv[1], int(sys.argv[2]); n = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000_000
q = json.dumps(Workload(n, seed=7).queries(1)[0])
code = ("import time; t0=time.perf_counter(); import cortex,json,sys; t1=time.perf_counter(); q=json.loads(sys.argv[2]);"
        "c=cortex.open(sys.argv[1], actor='bench-agent', mode='r'); t2=time.perf_counter(); c.context(**q); t3=time.perf_counter(); c.close(); t4=time.perf_counter();"
        "print(round((t1-t0)*1000,1), round((t2-t1)*1000,1), round((t3-t2)*1000,1), round((t4-t3)*1000,1))")
rows=[]
for _ in range(runs):
    out = subprocess.run([sys.executable, "-c", code, store, q], check=True, cwd="/tmp", capture_output=True, text=True).stdout
    rows.append([float(x) for x in out.split()])
for i, name in enumerate(("import", "open", "first call", "close")):
    print(name, statistics.median(r[i] for r in rows))
