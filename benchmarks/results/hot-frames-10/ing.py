"""ing.py N PATH : write_many N workload memories (helper on), generated lazily in batches; then wait
for compaction; print ingest rate, writer thread us/mem, helper us/mem, compaction+flush sec."""
import os, random, re, resource, shutil, sys, time, itertools
import cortex
from cortex.bench.workload import Workload, Clock, START, BATCH
n = int(sys.argv[1]); path = sys.argv[2]
shutil.rmtree(path, ignore_errors=True)
w = Workload(memories=n)
it = w.writes()
c = cortex.open(path, actor="bench-agent", clock=Clock(START), entropy=random.Random(7).randbytes, ingest_helper=True)
db = c._engine.storage.db
gen = 0.0; busy = 0.0; th = 0.0
t0 = time.perf_counter(); done = 0
while True:
    g0 = time.perf_counter()
    b = list(itertools.islice(it, BATCH))
    gen += time.perf_counter() - g0
    if not b: break
    w0 = time.perf_counter(); t_0 = time.thread_time()
    c.write_many(b)
    busy += time.perf_counter() - w0; th += time.thread_time() - t_0
    done += len(b)
    if done % 1_000_000 == 0:
        print(f"  {done:,}: {done/busy:.0f}/s", flush=True)
wall = time.perf_counter() - t0
w0 = time.perf_counter()
while db.property_int_value("rocksdb.num-running-compactions") or db.property_int_value("rocksdb.compaction-pending") or db.property_int_value("rocksdb.num-running-flushes"):
    time.sleep(0.5)
settle = time.perf_counter() - w0
stats = db.property_value("rocksdb.cfstats")
sumline = [l for l in stats.splitlines() if l.strip().startswith("Sum")][0].split()
l0 = [l for l in stats.splitlines() if l.strip().startswith("L0")][0].split()
files = int(sumline[1].split("/")[0])
c.close()
ch = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{os.environ.get('TAG','')} n={n} ingest {n/busy:.0f}/s (write_many {busy:.1f}s, gen {gen:.1f}s, settle {settle:.1f}s) "
      f"thread {1e6*th/n:.1f} us/mem helper {1e6*(ch.ru_utime+ch.ru_stime)/n:.1f} us/mem | "
      f"write {sumline[8]} GB, comp {sumline[14]} s (flush {l0[14]} s) = {1e6*float(sumline[14])/n:.1f} us/mem, files {files}")
