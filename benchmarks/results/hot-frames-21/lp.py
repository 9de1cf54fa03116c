"""lp.py N PATH: line-profile the writer's functions over N workload memories (helper on)."""
import itertools
import random
import shutil
import sys

import line_profiler

import cortex
from cortex import engine, index, journal, records, workers, writes
from cortex.bench.workload import BATCH, START, Clock, Workload
from cortex.storage import rocksdb

n = int(sys.argv[1]); path = sys.argv[2]
shutil.rmtree(path, ignore_errors=True)
lp = line_profiler.LineProfiler()
for f in (writes.write_many, rocksdb.RocksStorage.write, index.entries, journal.append, records.Head.encode,
          workers.FormsPool._collect, workers.FormsPool.count, engine.Engine.write, workers._Helper.queue, workers._request):
    lp.add_function(f)
w = Workload(memories=n); it = w.writes()
c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(7).randbytes, ingest_helper=True)
batches = []
while True:
    b = list(itertools.islice(it, BATCH))
    if not b: break
    batches.append(b)
lp.enable_by_count()
for b in batches: c.write_many(b)
lp.disable_by_count()
c.close()
lp.print_stats(output_unit=1e-6, stripzeros=True)
