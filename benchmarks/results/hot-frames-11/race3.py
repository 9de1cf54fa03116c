"""race3.py SECONDS: cortex-level. A writer thread writes small write_many batches and flushes after
each; the main thread opens followers (mode="r") one after another and resolves the first memory and
the newest it knows of (via root/stats) - every open must see the first memory."""
import threading, time, tempfile, os, sys
import cortex, os
import cortex.storage.rocksdb as rdb
if hasattr(rdb, "_MAX_MANIFEST_BYTES"): rdb._MAX_MANIFEST_BYTES = int(os.environ.get("MMS", rdb._MAX_MANIFEST_BYTES))
from cortex import Write
from cortex.model import Fact
d = tempfile.mkdtemp(); path = d + "/s"
w = cortex.open(path, actor="a")
first = w.write(Fact(statement="s p o0", subject="s", predicate="p"))
stop = False; flushes = 0
def writer():
    global flushes
    n = 0
    while not stop:
        n += 1
        w.write_many([Write(Fact(statement=f"s p o{n}-{i}", subject="s", predicate="p")) for i in range(5)])
        w._engine.storage.db.flush(); flushes += 1
t = threading.Thread(target=writer); t.start()
ok = fail = 0; errs = set(); t0 = time.time()
while time.time() - t0 < float(sys.argv[1]):
    try:
        with cortex.open(path, actor="a", mode="r") as f:
            m = f.resolve(first); assert m is not None
            n = f.stats()
        ok += 1
    except Exception as e:
        fail += 1; errs.add(type(e).__name__ + ": " + str(e)[:200])
stop = True; t.join()
names = [n for n in os.listdir(path) if n.startswith("MANIFEST")]
print(f"follower opens {ok}, failed {fail}; writer flushes {flushes}; manifest now {names}")
for e in list(errs)[:5]: print(" ", e)
w.close()
