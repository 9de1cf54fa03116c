import sys, collections, numpy as np
import cortex
from cortex.bench.workload import Workload
from cortex.bench.harness import BASELINE_NOW
store, mem = sys.argv[1], int(sys.argv[2])
queries = [{**q, "now": BASELINE_NOW} for q in Workload(mem, seed=7).queries(1000)[:200]]
with cortex.open(store, actor="bench-agent", mode="r") as c:
    for q in queries: c.context(**q)
    py = collections.Counter(); cc = collections.Counter()
    def prof(frame, event, arg):
        if event == "call": py[frame.f_code.co_filename.split('/')[-1] + ":" + frame.f_code.co_name] += 1
        elif event == "c_call": cc[getattr(arg, "__qualname__", str(arg))] += 1
    sys.setprofile(prof)
    for q in queries: c.context(**q)
    sys.setprofile(None)
    n = len(queries)
    print("python calls/ctx", sum(py.values())/n, "c calls/ctx", sum(cc.values())/n)
    for k, v in py.most_common(45): print("  py %6.1f %s" % (v/n, k))
    for k, v in cc.most_common(45): print("  c  %6.1f %s" % (v/n, k))
