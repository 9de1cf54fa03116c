"""mget.py STORE MODE N: drop the page cache, then a fresh follower multi-gets N batches of 44 random head keys
(MODE sync|async), timing each batch."""
import sys, time, random, statistics, subprocess
from rocksdict import ReadOptions
from cortex.storage.rocksdb import open_rocksdb
from cortex.records import HEAD_PREFIX
store, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = open_rocksdb(store, read_only=True, cache_mb=1024, sync=False)
# sample head keys: seek to random id prefixes
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
keys = []
it = s.db.iter()
while len(keys) < n * 44:
    it.seek(HEAD_PREFIX + bytes([1, rng.randrange(0xa0, 0xa2), rng.randrange(256), rng.randrange(256)]))
    if it.valid() and it.key().startswith(HEAD_PREFIX): keys.append(it.key())
s.close()
subprocess.run("sync; echo 3 > /proc/sys/vm/drop_caches", shell=True, check=True)
s = open_rocksdb(store, read_only=True, cache_mb=1024, sync=False)
ro = ReadOptions()
if mode == "async": ro.set_async_io(True)
ts = []
for b in range(n):
    batch = sorted(keys[b * 44:(b + 1) * 44])
    t = time.perf_counter(); vals = s.db.get(batch, read_opt=ro); ts.append((time.perf_counter() - t) * 1e3)
    assert all(v is not None for v in vals)
print(mode, "batch of 44 heads, page cache dropped: median %.2f ms, max %.2f" % (statistics.median(ts), max(ts)), [round(x, 1) for x in ts[:8]])
