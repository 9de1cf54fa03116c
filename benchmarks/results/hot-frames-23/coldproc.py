"""The cold-process figure alone (`cortex.bench.harness.cold_process`: a new process imports cortex,
opens the store and makes one context() call), on the workload's first query, ten runs."""
import json
import sys

from cortex.bench.harness import cold_process
from cortex.bench.workload import Workload

n, path = int(sys.argv[1]), sys.argv[2]
print(json.dumps(cold_process(path, "bench-agent", Workload(n, seed=7).queries(1)[0], runs=10)))
