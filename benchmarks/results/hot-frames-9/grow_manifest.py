"""grow_manifest.py PATH FLUSHES : a writer that flushes FLUSHES small batches (each one a MANIFEST edit,
plus the compactions they start), then stays open while cold2.py measures followers; ends on stdin EOF."""
import sys, os, glob, time
from cortex.storage.rocksdb import open_rocksdb
path, flushes = sys.argv[1], int(sys.argv[2])
s = open_rocksdb(path, read_only=False, cache_mb=64, sync=False)
for n in range(flushes):
    s.write({f"zz-test/{i:03d}".encode(): f"v{n}".encode() for i in range(10)})
    s.db.flush()
time.sleep(3)
m = sorted(glob.glob(path + "/MANIFEST-*"))
print("manifests", [(os.path.basename(f), os.path.getsize(f)) for f in m], flush=True)
sys.stdin.read()
s.close()
