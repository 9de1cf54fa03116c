"""fill_l0.py PATH TARGET : write more workload memories until level 0 holds TARGET files."""
import random, sys, itertools, time
import cortex
from cortex.bench.workload import Workload, Clock, START, BATCH
path, target = sys.argv[1], int(sys.argv[2])
c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(8).randbytes, ingest_helper=True)
db = c._engine.storage.db
it = Workload(memories=2_000_000).writes(); n = 0
while True:
    l0 = db.property_int_value("rocksdb.num-files-at-level0")
    if l0 >= target and not db.property_int_value("rocksdb.num-running-compactions"): break
    c.write_many(list(itertools.islice(it, BATCH))); n += BATCH
time.sleep(2)
print("wrote", n, "level 0:", db.property_int_value("rocksdb.num-files-at-level0"))
c.close()
