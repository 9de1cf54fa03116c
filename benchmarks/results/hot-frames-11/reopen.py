"""reopen.py STORE LABEL: a follower of STORE reopens its view (`RocksStorage.catch_up(reopen=True)`, what a
reader does after each of the writer's flushes) 30 times; the median and the spread in ms."""
import sys, time, statistics
from cortex.storage.rocksdb import open_rocksdb
s = open_rocksdb(sys.argv[1], read_only=True, cache_mb=256, sync=False)
ts = []
for _ in range(30):
    t = time.perf_counter(); s.catch_up(reopen=True); ts.append((time.perf_counter() - t) * 1e3)
s.close()
print(sys.argv[2], "reopen median %.1f ms, min %.1f, max %.1f" % (statistics.median(ts), min(ts), max(ts)), flush=True)
