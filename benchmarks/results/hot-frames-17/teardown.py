import subprocess, sys, time, statistics, json
exe = sys.argv[1]; store = sys.argv[2]
from cortex.bench.workload import Workload
q = json.dumps(Workload(10_000_000, seed=7).queries(1)[0])
codes = {
 "pass": "import time",
 "numpy": "import time, numpy",
 "cortex": "import time, cortex",
 "rocksdict": "import time, cortex, rocksdict",
 "open+close": "import time,cortex,json,sys; c=cortex.open(sys.argv[1], actor='bench-agent', mode='r'); c.close()",
 "full": "import time,cortex,json,sys; q=json.loads(sys.argv[2]); c=cortex.open(sys.argv[1], actor='bench-agent', mode='r'); c.context(**q); c.close()",
}
for name, code in codes.items():
    ts = []
    for _ in range(12):
        out = subprocess.run([exe, "-c", code + "; print(time.monotonic())", store, q], check=True, cwd="/tmp", capture_output=True, text=True).stdout
        ts.append((time.monotonic() - float(out.split()[-1])) * 1000)
    print(f"{name:12s} exit median {statistics.median(ts):5.1f} ms")
