"""race2.py SECONDS: a writer thread flushes small batches without pause while the main thread opens
followers one after another; counts MANIFEST switches, follower opens and failures."""
import threading, time, glob, tempfile, os, sys
from cortex.storage.rocksdb import open_rocksdb
d = tempfile.mkdtemp(); path = d + "/s"
w = open_rocksdb(path, read_only=False, cache_mb=8, sync=False)
stop = False; flushes = 0; names = set()
def writer():
    global flushes
    while not stop:
        w.write({f"idx/{i:03d}".encode(): os.urandom(200) for i in range(20)}); w.db.flush(); flushes += 1
        names.update(n for n in os.listdir(path) if n.startswith("MANIFEST-"))
t = threading.Thread(target=writer); t.start()
ok = fail = 0; errs = set(); t0 = time.time()
while time.time() - t0 < float(sys.argv[1]):
    try:
        f = open_rocksdb(path, read_only=True, cache_mb=8, sync=False)
        assert f.multi_get([b"idx/000"])[0] is not None
        f.close(); ok += 1
    except Exception as e:
        fail += 1; errs.add(type(e).__name__ + ": " + str(e)[:150])
stop = True; t.join()
print(f"follower opens {ok}, failed {fail}; writer flushes {flushes}; MANIFEST files seen {len(names)}")
for e in list(errs)[:5]: print(" ", e)
w.close()
