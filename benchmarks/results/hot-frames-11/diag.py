"""diag.py SECONDS: race2 with a diagnosis of each failed open: which of the view's table files are gone,
and whether the files' signature (with inodes) changed during the open."""
import threading, time, tempfile, os, sys
from cortex.storage.rocksdb import open_rocksdb
d = tempfile.mkdtemp(); path = d + "/s"
w = open_rocksdb(path, read_only=False, cache_mb=8, sync=False)
stop = False; flushes = 0
def sig():
    out = []
    for e in os.scandir(path):
        if e.name.endswith(".log") or e.name.startswith("MANIFEST") or e.name == "CURRENT":
            try: st = e.stat()
            except FileNotFoundError: continue
            out.append((e.name, st.st_size, st.st_mtime_ns, st.st_ino))
    return sorted(out)
def writer():
    global flushes
    while not stop:
        w.write({f"idx/{i:03d}".encode(): os.urandom(200) for i in range(20)}); w.db.flush(); flushes += 1
t = threading.Thread(target=writer); t.start()
ok = fail = 0; kinds = {}; t0 = time.time()
while time.time() - t0 < float(sys.argv[1]):
    s0 = sig()
    f = open_rocksdb(path, read_only=True, cache_mb=8, sync=False)
    gone = [x["name"] for x in f.db.live_files() if not os.path.exists(path + x["name"])]
    s1 = sig()
    s0n = [(a, b, c) for a, b, c, _ in s0]; s1n = [(a, b, c) for a, b, c, _ in s1]
    good = f.multi_get([b"idx/000"])[0] is not None
    f.close()
    k = (good, bool(gone), s0 != s1, s0n != s1n)
    kinds[k] = kinds.get(k, 0) + 1
stop = True; t.join()
print(f"writer flushes {flushes}")
print("(key found, view lists a gone file, sig+inode changed, sig w/o inode changed): count")
for k, v in sorted(kinds.items()): print(" ", k, v)
w.close()
