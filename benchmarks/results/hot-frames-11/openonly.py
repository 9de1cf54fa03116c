"""openonly.py STORE RUNS LABEL: RUNS fresh processes each time cortex.open(STORE, mode="r") alone (import excluded)."""
import subprocess, sys, statistics
store, runs, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
code = ("import time, cortex; t=time.perf_counter(); c=cortex.open(__import__('sys').argv[1], actor='bench-agent', mode='r');"
        "print((time.perf_counter()-t)*1e3); c.close()")
ts = [float(subprocess.run([sys.executable, "-c", code, store], check=True, capture_output=True, text=True, cwd="/tmp").stdout) for _ in range(runs)]
print(label, "open median %.1f ms" % statistics.median(ts), [round(t, 1) for t in ts], flush=True)
