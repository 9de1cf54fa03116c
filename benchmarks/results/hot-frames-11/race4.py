"""race4.py SECONDS PACE_MS: a writer thread writes one key a batch, flushes after each and sleeps PACE_MS;
the main thread opens followers (raw RocksStorage) one after another. Every open must see the key written
before the writer started and the newest key acknowledged before the open began.
MMS (env): the writer's MANIFEST size limit (sets the module constant when the code has one)."""
import threading, time, tempfile, os, sys
import cortex.storage.rocksdb as rdb
from cortex.storage.rocksdb import open_rocksdb
if hasattr(rdb, "_MAX_MANIFEST_BYTES"):
    rdb._MAX_MANIFEST_BYTES = int(os.environ.get("MMS", rdb._MAX_MANIFEST_BYTES))
d = tempfile.mkdtemp(); path = d + "/s"
w = open_rocksdb(path, read_only=False, cache_mb=8, sync=False)
w.write({b"first": b"1"}); w.db.flush()
stop = False; flushes = 0; acked = -1; manifests = set()
pace = float(sys.argv[2]) / 1000
def writer():
    global flushes, acked
    n = 0
    while not stop:
        w.write({f"k{n:08d}".encode(): os.urandom(100), **{f"idx/{i:03d}".encode(): os.urandom(100) for i in range(20)}})
        acked = n; n += 1
        w.db.flush(); flushes += 1
        manifests.update(x for x in os.listdir(path) if x.startswith("MANIFEST-"))
        if pace: time.sleep(pace)
t = threading.Thread(target=writer); t.start()
while acked < 0: time.sleep(0.001)
ok = fail = 0; errs = {}; t0 = time.time(); opens = []
while time.time() - t0 < float(sys.argv[1]):
    a = acked
    try:
        s = time.perf_counter()
        f = open_rocksdb(path, read_only=True, cache_mb=8, sync=False)
        opens.append(time.perf_counter() - s)
        try:
            missing = [k for k, v in zip([b"first", f"k{a:08d}".encode()], f.multi_get([b"first", f"k{a:08d}".encode()])) if v is None]
        finally:
            f.close()
        if missing:
            fail += 1; errs.setdefault(f"missing {missing[0][:6]!r}", 0); errs[f"missing {missing[0][:6]!r}"] += 1
        else:
            ok += 1
    except Exception as e:
        fail += 1; k = type(e).__name__ + ": " + str(e)[:120]; errs[k] = errs.get(k, 0) + 1
stop = True; t.join()
opens.sort()
print(f"pace {pace*1e3:.0f} ms: follower opens {ok + fail}, failed {fail}; writer flushes {flushes}; MANIFEST files {len(manifests)}; open p50 {opens[len(opens)//2]*1e3:.1f} ms p99 {opens[int(len(opens)*.99)]*1e3:.1f} ms")
for e, n in errs.items(): print(f"  {n} x {e}")
w.close()
