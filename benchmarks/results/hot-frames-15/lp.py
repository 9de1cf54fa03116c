import sys
from line_profiler import LineProfiler
import cortex, cortex.context as cc, cortex.index.newest as nw
from cortex.bench.workload import Workload
from cortex.bench.harness import BASELINE_NOW
store, mem = sys.argv[1], int(sys.argv[2])
queries = [{**q, "now": BASELINE_NOW} for q in Workload(mem, seed=7).queries(1000)[:200]]
lp = LineProfiler()
for name in sys.argv[3:]:
    mod, fn = name.rsplit(".", 1)
    lp.add_function(getattr(sys.modules[mod], fn))
with cortex.open(store, actor="bench-agent", mode="r") as c:
    for q in queries: c.context(**q)
    lp.enable_by_count()
    for q in queries: c.context(**q)
    lp.disable_by_count()
lp.print_stats(output_unit=1e-6)
