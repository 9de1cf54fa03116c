"""grow3.py PATH FLUSHES: a writer that flushes FLUSHES small batches (each one a MANIFEST edit, plus the
compactions they start), prints the MANIFEST files, then stays open while followers are measured; ends on
stdin EOF. (The ninth pass's grow_manifest.py.)"""
import sys, os, glob, time
from cortex.storage.rocksdb import open_rocksdb
path, flushes = sys.argv[1], int(sys.argv[2])
s = open_rocksdb(path, read_only=False, cache_mb=64, sync=False)
t = time.time()
for n in range(flushes):
    s.write({f"zz-test/{i:03d}".encode(): f"v{n}".encode() for i in range(10)})
    s.db.flush()
time.sleep(3)
m = sorted(glob.glob(path + "/MANIFEST-*"))
print("manifests", [(os.path.basename(f), os.path.getsize(f)) for f in m], f"flushes took {time.time()-t:.0f} s", flush=True)
sys.stdin.read()
s.close()
