import cProfile, pstats, io, time, json, sys
import cortex
from cortex.bench.workload import Workload
q = Workload(10_000_000, seed=7).queries(1)[0]
store=sys.argv[1]
pr=cProfile.Profile()
t=time.perf_counter(); pr.enable()
c=cortex.open(store, actor='bench-agent', mode='r')
t1=time.perf_counter()
c.context(**q)
pr.disable(); t2=time.perf_counter()
print("open", (t1-t)*1000, "call", (t2-t1)*1000)
s=io.StringIO(); pstats.Stats(pr,stream=s).sort_stats(sys.argv[2] if len(sys.argv)>2 else "tottime").print_stats(30); print(s.getvalue()[:7000]); s=io.StringIO(); pstats.Stats(pr,stream=s).print_callers("get|items|multi_get|_open_db"); print(s.getvalue()[:6000])
