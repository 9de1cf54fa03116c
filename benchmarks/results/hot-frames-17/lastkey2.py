import time, sys
import cortex
from cortex.storage import rocksdb as r
from cortex.records import HEAD_PREFIX
from cortex.bench.workload import Workload
if sys.argv[2] == "skip":
    orig = r.RocksStorage.last_key
    r.RocksStorage.last_key = lambda self, prefix: None if prefix == HEAD_PREFIX else orig(self, prefix)
q = Workload(10_000_000, seed=7).queries(1)[0]
t = time.perf_counter()
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
t1 = time.perf_counter(); c.context(**q); t2 = time.perf_counter()
print(f"{sys.argv[2]} open {(t1-t)*1000:.1f} first call {(t2-t1)*1000:.1f} both {(t2-t)*1000:.1f}")
