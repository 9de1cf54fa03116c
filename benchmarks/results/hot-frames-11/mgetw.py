"""mgetw.py STORE: warm multi-gets of 44 head keys (block cache holds them), sync against async_io, alternating."""
import sys, time, random, statistics
from rocksdict import ReadOptions
from cortex.storage.rocksdb import open_rocksdb
from cortex.records import HEAD_PREFIX
s = open_rocksdb(sys.argv[1], read_only=True, cache_mb=1024, sync=False)
rng = random.Random(5); keys = []
it = s.db.iter()
while len(keys) < 44 * 50:
    it.seek(HEAD_PREFIX + bytes([1, rng.randrange(0xa0, 0xa2), rng.randrange(256), rng.randrange(256)]))
    if it.valid() and it.key().startswith(HEAD_PREFIX): keys.append(it.key())
batches = [sorted(keys[i * 44:(i + 1) * 44]) for i in range(50)]
plain = ReadOptions(); asy = ReadOptions(); asy.set_async_io(True)
for b in batches: s.db.get(b, read_opt=plain)
res = {"sync": [], "async": []}
for r in range(20):
    for name, ro in (("sync", plain), ("async", asy)):
        t = time.perf_counter()
        for b in batches: s.db.get(b, read_opt=ro)
        res[name].append((time.perf_counter() - t) / 50 * 1e6)
for k, v in res.items(): print(k, "warm batch of 44: median %.1f us" % statistics.median(v))
res = {"none": [], "plain": [], "async": []}
for r in range(20):
    for name, ro in (("none", None), ("plain", plain), ("async", asy)):
        t = time.perf_counter()
        if ro is None:
            for b in batches: s.db.get(b)
        else:
            for b in batches: s.db.get(b, read_opt=ro)
        res[name].append((time.perf_counter() - t) / 50 * 1e6)
for k, v in res.items(): print(k, "warm batch of 44: median %.1f us" % statistics.median(v))
